//! How a committed step is delivered: the rules every host shares, decided here once.
//!
//! A step commits its emits (outbox), its spawns and its timers with the execution. What
//! follows is delivery, and it follows the same rules whoever hosts the engine:
//! - an event for an execution with live orthogonal regions goes to the regions, unless it is
//!   one of the [`CONTROL_EVENTS`] the execution handles itself ([`route`]); the broadcast is
//!   activity for the parent's `ttl`, restarted from now ([`restart_ttl`]);
//! - a spawn becomes a child execution built from its parent and its entry, then started
//!   ([`create_child`]): a region runs its parent's machine, a submachine child the machine
//!   its spawn names;
//! - outbox entries go to their target's execution.
//!
//! Two hosts apply them: [`inline`] delivers by running the targets' steps in process (the
//! embedded runner, harel's `DurableLogic`), [`queue`] by publishing to the targets' message
//! groups (the worker, the relay and the control plane, harel's `TransportDriverLogic`).

use harel_engine::invoke::INVOKE_FQN_KEY;
use harel_engine::{ttl_delay, TTL_PATH};
use harel_model::schema::with_defaults;
use harel_model::{Definition, Event, Execution, SmolStr, TimerOp};
use harel_store::{ExecutionStore, SpawnEntry, StoreError, StoreResult};
use serde_json::Value;

use crate::driver::{CommitReceipt, Driver};
use crate::RuntimeError;

pub mod events;
pub mod inline;
pub mod queue;

/// Events an execution handles itself, never broadcast to its regions (harel's
/// `runtime._CONTROL`).
pub const CONTROL_EVENTS: [&str; 6] = [
    "Start", "Reset", "Cancel", "SetState", "Finished", "Timeout",
];

/// Where an event for an execution goes (harel's `route_flow`).
#[derive(Debug)]
pub enum Route {
    /// To the execution itself.
    Itself,
    /// To each of its live orthogonal regions (never empty).
    Regions(Vec<Execution>),
}

/// A domain event goes to `exe`'s live regions (not finished, not submachine children) when
/// it has some; a control event, or an execution without live regions, takes it itself.
pub async fn route<S: ExecutionStore>(
    store: &S,
    exe: &Execution,
    event: &Event,
) -> StoreResult<Route> {
    if CONTROL_EVENTS.contains(&event.kind.as_str()) {
        return Ok(Route::Itself);
    }
    let mut live = Vec::new();
    for (cid, cs) in &exe.children {
        if !cs.finished && !cs.submachine {
            if let Some(child) = store.load(cid).await? {
                live.push(child);
            }
        }
    }
    Ok(match live.is_empty() {
        true => Route::Itself,
        false => Route::Regions(live),
    })
}

/// A broadcast never runs `process` on the parent, but it is activity for its `ttl`: the
/// timer to re-arm (and `expires_at` set) when its machine has one.
pub fn restart_ttl(defn: &Definition, exe: &mut Execution, now: f64) -> Option<TimerOp> {
    let fire_at = now + ttl_delay(defn, exe)?;
    exe.expires_at = Some(fire_at);
    Some(TimerOp::Schedule {
        path: TTL_PATH.into(),
        fire_at,
    })
}

/// The child execution of one spawn entry (harel's `_create_spawn_flow`): an orthogonal
/// region runs its parent's machine with only what the fork passed down; a submachine child
/// runs the machine named by the `__invoke_fqn__` its spawn carries, with that machine's
/// context defaults, and records the FQN so any host can resolve it again. Either inherits
/// the parent's priority. A pinned parent's children run on its version (a submachine it
/// carries is in that version; one it only names, compiled in alongside, on that machine's
/// version deployed now); an unpinned parent's (harel Python's, or from before versions) run
/// unpinned, on the deployed definition, as the parent does.
async fn spawned_child<S: ExecutionStore>(
    driver: &Driver,
    store: &S,
    parent: &Execution,
    entry: &SpawnEntry,
) -> Result<Execution, RuntimeError> {
    let mut context = entry.context.clone();
    let mut pin = parent.pinned_version().map(str::to_string);
    let (definition_id, fqn) = match context.shift_remove(INVOKE_FQN_KEY) {
        None => (parent.definition_id.clone(), None),
        Some(Value::String(fqn)) => {
            let carried = match &pin {
                Some(version) => driver
                    .bundle(store, &parent.definition_id, version)
                    .await?
                    .get(&fqn)
                    .cloned(),
                None => None,
            };
            let defn = match carried {
                Some(defn) => defn,
                None => {
                    // compiled in alongside, not carried: a pinned parent's child starts on
                    // that machine's deployed version, an unpinned parent's runs unpinned
                    if pin.is_some() {
                        pin = driver.current_version(&fqn).map(str::to_string);
                    }
                    std::sync::Arc::clone(driver.resolve_machine(&fqn)?)
                }
            };
            context = with_defaults(&defn.context_schema, &context);
            (SmolStr::from(&defn.id), Some(SmolStr::from(fqn)))
        }
        Some(other) => {
            return Err(RuntimeError::UnresolvedSubmachine(format!(
                "{INVOKE_FQN_KEY} of spawn {:?} is not a name: {other}",
                entry.child_id
            )))
        }
    };
    let mut child = Execution::new(definition_id).with_id(entry.child_id.clone());
    child.definition_fqn = fqn;
    child.root_path = entry.root_path.clone();
    child.context = context;
    child.parent_id = Some(entry.parent_id.clone());
    child.child_id = Some(entry.child_id.clone());
    child.priority = parent.priority;
    if let Some(version) = pin {
        if parent.pinned_version() == Some(version.as_str()) {
            // the parent's commits reference it: it is kept (a version is kept with, or
            // before, the first commit that references it)
            driver.known_kept(&version);
        }
        child.pin_version(&version);
    }
    Ok(child)
}

/// Create the child of one spawn entry and commit its start, unless it exists already (a
/// crash-and-retry re-runs the fork: the child's progress is kept, `None`). Returns what the
/// start enqueued. A submachine no machine here has is an error that loses nothing: the spawn
/// stays pending.
pub async fn create_child<S: ExecutionStore>(
    driver: &Driver,
    store: &S,
    entry: &SpawnEntry,
) -> Result<Option<CommitReceipt>, RuntimeError> {
    if store.load(&entry.child_id).await?.is_some() {
        return Ok(None);
    }
    let parent = store
        .load(&entry.parent_id)
        .await?
        .ok_or_else(|| RuntimeError::NotFound(entry.parent_id.to_string()))?;
    let mut child = spawned_child(driver, store, &parent, entry).await?;
    match driver.step(store, &mut child, None).await {
        Ok(stepped) => Ok(Some(stepped)),
        // another deliverer created it between our load and our insert
        Err(RuntimeError::Store(e)) if e.is_conflict() => Ok(None),
        Err(RuntimeError::Store(StoreError::AlreadyExists(_))) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Counts of deliveries (the relay's report; the benchmarks read them too).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Delivered {
    /// Messages sent to the queue (a broadcast sends one per live region's group).
    pub published: usize,
    /// Children created and started from spawn intents (one found existing is not counted).
    pub children_created: usize,
    /// Outbox entries acknowledged (sent, or dropped for having no target).
    pub acked_outbox: usize,
    /// Spawn intents acknowledged (the child created now or found already there).
    pub acked_spawns: usize,
    /// The `fire_at` of each timer the children's starts armed.
    pub armed: Vec<f64>,
}

impl Delivered {
    /// Add `other`'s counts to these (summing the deliveries of several steps or passes).
    pub fn add(&mut self, other: &Delivered) {
        self.published += other.published;
        self.children_created += other.children_created;
        self.acked_outbox += other.acked_outbox;
        self.acked_spawns += other.acked_spawns;
        self.armed.extend_from_slice(&other.armed);
    }
}
