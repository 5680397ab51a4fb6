//! The driver (harel `driving.DriverLogic` + `FailOnActionError`): runs the engine for one
//! event or start, calls the actions, routes their errors and commits the step with
//! everything it enqueued. How the enqueued work is then delivered (inline, or through a
//! queue) is [`crate::delivery`]'s. Its parts: `host` (the engine's host during a step: the
//! action calls and their idempotency keys) and `versions` (which version of a machine an
//! execution runs, pinning, keeping a version's definitions item).

use std::collections::HashMap;
use std::sync::Arc;

use harel_engine::{error_event, has_error_handler, EngineError, StepEffects};
use harel_model::{Definition, Event, Execution, Spawn, Status, TimerOp};
use harel_store::{Commit, DomainEvent, ExecutionStore, OutboxEntry};
use serde_json::Value;

use crate::actions::ActionRegistry;
use crate::clock::{Clock, SystemClock};
use crate::trace::trace_step;
use crate::versions::Versions;
use crate::RuntimeError;

mod host;
mod versions;

pub(crate) use host::ActionKeys;
use host::DriverHost;

/// What happens to an action (or expression) error no `on error` in the model handles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ActionErrorPolicy {
    /// The execution fails terminally: FAILED with `error` = `Type: message`, committed
    /// (the dead letter). harel's production policy.
    #[default]
    Fail,
    /// The error reaches the caller and the step is not committed.
    Raise,
}

/// A failure being recovered from: (type, message).
type Failure = (String, String);

/// The effects a step commits and the actions it ran.
#[derive(Default)]
struct StepPlan {
    fx: StepEffects,
    actions: Vec<String>,
    published: Vec<DomainEvent>,
}

/// What one committed step enqueued, for its host to deliver.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommitReceipt {
    /// The outbox entries the commit wrote, with their seqs.
    pub outbox: Vec<OutboxEntry>,
    /// The children the commit asked for (their spawn seqs are found in `pending_spawns`).
    pub spawns: Vec<Spawn>,
    /// The `fire_at` of each timer the commit armed (a queue host wakes its sweeper for one
    /// due before the next tick).
    pub armed: Vec<f64>,
}

impl CommitReceipt {
    /// Nothing to deliver (armed timers are the store's, not the host's).
    pub fn is_empty(&self) -> bool {
        self.outbox.is_empty() && self.spawns.is_empty()
    }
}

/// The engine with its machines, actions and clock: runs one step of an execution and commits
/// it in one transaction. Every host shares it: the embedded runner ([`crate::DurableRunner`],
/// which then delivers inline), the queue worker and the relay (which deliver through the
/// transport), the control plane's redrive.
#[derive(Clone)]
pub struct Driver {
    definitions: HashMap<String, Arc<Definition>>,
    /// Shared by the clones: a function builds one driver per process, so what it read from
    /// the store once is there for every later event.
    versions: Arc<Versions>,
    /// Pin a new execution to the deployed version (see [`Driver::with_pinning`]).
    pinning: bool,
    registry: ActionRegistry,
    clock: Arc<dyn Clock>,
    policy: ActionErrorPolicy,
    trace: bool,
}

fn error_message((kind, message): &Failure, cause: Option<&Failure>) -> String {
    match cause {
        None => format!("{kind}: {message}"),
        Some((ck, cm)) => format!("{kind}: {message} (while recovering from {ck}: {cm})"),
    }
}

impl Driver {
    /// `definitions` (each with the submachines it carries, by their FQN: a spawn names one
    /// of those) and `registry` (from `ActionRegistry::with_stdlib()` plus the application's
    /// actions: `join all|any` needs `harel.lib.join_success`), on the system clock, with
    /// harel's production policy (FAILED) and no trace.
    pub fn new(definitions: Vec<Definition>, registry: ActionRegistry) -> Self {
        Self::with_registered(crate::register(definitions), registry)
    }

    /// Over definitions already registered (by [`crate::register`]): shared, not copied.
    pub fn with_registered(
        definitions: HashMap<String, Arc<Definition>>,
        registry: ActionRegistry,
    ) -> Self {
        Driver {
            versions: Arc::new(Versions::of(&definitions)),
            pinning: true,
            definitions,
            registry,
            clock: Arc::new(SystemClock),
            policy: ActionErrorPolicy::Fail,
            trace: false,
        }
    }

    /// On `clock` instead of the system clock: what stamps commits and arms timers (a
    /// [`ManualClock`](crate::ManualClock) in tests and `harel run`).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Whether a new execution is pinned to the deployed version of its machine (the
    /// default) and that version kept in the store. Off for a store that dies with the
    /// process (an in-memory run outlives no deploy), which then writes harel's document
    /// byte for byte. A pinned execution runs on its version either way.
    pub fn with_pinning(mut self, pinning: bool) -> Self {
        self.pinning = pinning;
        self
    }

    /// With `policy` for action errors the model does not handle (harel's `FailOnActionError`,
    /// [`ActionErrorPolicy::Fail`], by default).
    pub fn with_policy(mut self, policy: ActionErrorPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// harel's `trace=True`: each step's commit carries its trace entry (the store keeps the
    /// ring).
    pub fn with_trace(mut self, trace: bool) -> Self {
        self.trace = trace;
        self
    }

    /// With `registry`'s actions in place of the ones given to [`Driver::new`].
    pub fn with_registry(mut self, registry: ActionRegistry) -> Self {
        self.registry = registry;
        self
    }

    /// The actions, to bind more after the driver is built (this driver only: its clones keep
    /// theirs).
    pub fn registry_mut(&mut self) -> &mut ActionRegistry {
        &mut self.registry
    }

    /// The clock (epoch seconds) commits are stamped with.
    pub fn now(&self) -> f64 {
        self.clock.now()
    }

    /// The machine registered as `id` (a top-level machine by its name, a submachine by its
    /// FQN).
    pub fn definition(&self, id: &str) -> Option<&Arc<Definition>> {
        self.definitions.get(id)
    }

    /// The ids every deployed machine is registered under (top-level names and submachine FQNs),
    /// in no particular order.
    pub fn machine_ids(&self) -> impl Iterator<Item = &str> {
        self.definitions.keys().map(String::as_str)
    }

    /// harel `_resolve_machine`: a submachine by its FQN among the registered definitions
    /// (inline and imported machines are registered under their FQN).
    pub(crate) fn resolve_machine(&self, fqn: &str) -> Result<&Arc<Definition>, RuntimeError> {
        self.definitions
            .get(fqn)
            .ok_or_else(|| RuntimeError::UnresolvedSubmachine(fqn.to_string()))
    }

    /// Every (machine, action) a machine (or a submachine it carries) names that no action
    /// is bound to: a host checks it at start, so a missing binding stops it then instead of
    /// failing executions.
    pub fn unbound_actions(&self) -> Vec<(String, String)> {
        let mut missing = Vec::new();
        for defn in self.definitions.values() {
            for node in &defn.nodes {
                let hooks = [&node.on_enter, &node.on_exit, &node.on_activity];
                let selectors = node
                    .transitions
                    .iter()
                    .filter_map(|t| t.selector.as_ref().map(|s| &s.action));
                for action in hooks.into_iter().flatten().chain(selectors) {
                    if !self.registry.contains(&action.function) {
                        missing.push((defn.id.clone(), action.function.clone()));
                    }
                }
            }
        }
        missing.sort();
        missing.dedup();
        missing
    }

    /// Every (machine, problem) of a `harel.lib.publish` binding whose inputs it would refuse
    /// at run time (the language checks no action's inputs): a host checks it at start.
    pub fn invalid_action_inputs(&self) -> Vec<(String, String)> {
        let mut bad = Vec::new();
        for defn in self.definitions.values() {
            for node in &defn.nodes {
                let hooks = [&node.on_enter, &node.on_exit, &node.on_activity];
                for action in hooks.into_iter().flatten() {
                    if action.function == crate::stdlib::PUBLISH {
                        if let Some(problem) = crate::stdlib::publish_inputs_error(&action.inputs) {
                            bad.push((defn.id.clone(), format!("{}: {problem}", node.full_path)));
                        }
                    }
                }
            }
        }
        bad.sort();
        bad.dedup();
        bad
    }

    /// The policy for an unhandled failure.
    fn on_action_error(&self, exe: &mut Execution, message: String) -> Result<(), RuntimeError> {
        match self.policy {
            ActionErrorPolicy::Fail => {
                tracing::error!(execution = %exe.id, error = %message, "unhandled action error; failing the execution");
                exe.status = Status::Failed;
                exe.error = Some(message);
                Ok(())
            }
            ActionErrorPolicy::Raise => Err(RuntimeError::ActionFailed(message)),
        }
    }

    /// Run the engine for one step, serving its effects; an action or expression error goes
    /// to an `on error` in scope (with `_error` in the context), else to the policy, and
    /// the failed attempt's partial effects are dropped.
    async fn drive(
        &self,
        defn: &Definition,
        exe: &mut Execution,
        event: Option<&Event>,
        keys: &mut ActionKeys,
    ) -> Result<StepPlan, RuntimeError> {
        let mut original: Option<Failure> = None;
        let mut recovery: Option<Event> = None;
        loop {
            let mut host = DriverHost {
                registry: &self.registry,
                clock: self.clock.as_ref(),
                execution_id: exe.id.to_string(),
                keys: &mut *keys,
                actions: Vec::new(),
                published: Vec::new(),
            };
            let result = match (&recovery, event) {
                (Some(ev), _) | (None, Some(ev)) => {
                    harel_engine::process(defn, exe, ev, &mut host).await
                }
                (None, None) => harel_engine::start(defn, exe, &mut host).await,
            };
            let actions = host.actions;
            let (failure, on_exit) = match result {
                Ok(fx) => {
                    return Ok(StepPlan {
                        fx,
                        actions,
                        published: host.published,
                    })
                }
                Err(EngineError::Action { error, kind, .. }) => (
                    (error.kind, error.message),
                    kind == harel_engine::CallKind::Exit,
                ),
                Err(EngineError::Expression(e)) => (
                    (harel_engine::ExpressionError::TYPE_NAME.to_string(), e.0),
                    false,
                ),
                Err(other) => return Err(other.into()),
            };
            if let Some(cause) = &original {
                // already recovering: no second attempt
                self.on_action_error(exe, error_message(&failure, Some(cause)))?;
                return Ok(StepPlan::default());
            }
            if on_exit {
                // an on_exit must always succeed: leaving applied un-undoable effects, and
                // routing away would re-run this very hook; straight to the policy
                self.on_action_error(exe, error_message(&failure, None))?;
                return Ok(StepPlan::default());
            }
            let ev = error_event(&failure.0, &failure.1);
            if has_error_handler(defn, exe, &ev)? {
                exe.context
                    .insert("_error".into(), Value::Object(ev.data.clone()));
                original = Some(failure);
                recovery = Some(ev);
                continue;
            }
            self.on_action_error(exe, error_message(&failure, None))?;
            return Ok(StepPlan::default());
        }
    }

    /// Run `event` on `exe` (None: start it, harel's `engine.start`), route an action error
    /// by the policy (`on error`, else FAILED), and commit the step atomically with its
    /// emits, spawns, timer operations, the event's processed mark and its trace. Nothing is
    /// delivered: the caller delivers what is returned. On an error nothing was written (a
    /// refused mark condition: the event was committed by another writer) and `exe` must be
    /// reloaded.
    pub async fn step<S: ExecutionStore>(
        &self,
        store: &S,
        exe: &mut Execution,
        event: Option<&Event>,
    ) -> Result<CommitReceipt, RuntimeError> {
        let keep = match self.pin_new(exe) {
            Some(version) => self.to_keep(store, &version).await?,
            None => None,
        };
        let defn = self.resolve(store, exe).await?;
        let defn = defn.as_ref();
        let event_id = event.map(|ev| ev.id.clone());
        let from_path = exe.active_path.clone();
        let mut keys = ActionKeys::new(&exe.id, event_id.as_deref().unwrap_or("start"));
        let StepPlan {
            fx,
            actions,
            published,
        } = self.drive(defn, exe, event, &mut keys).await?;
        let now = self.clock.now();
        let trace = self.trace.then(|| {
            trace_step(
                event,
                from_path.as_deref(),
                exe,
                &actions,
                now,
                &fx.assigned,
            )
        });
        exe.stamp(now);
        let armed = fx
            .timers
            .iter()
            .filter_map(|op| match op {
                TimerOp::Schedule { fire_at, .. } => Some(*fire_at),
                TimerOp::Cancel { .. } => None,
            })
            .collect();
        let emits = fx.emits.clone();
        let spawns = fx.spawns.clone();
        let commit = Commit {
            emits: fx.emits,
            processed_event_id: event_id,
            timers: fx.timers,
            spawns: fx.spawns,
            trace,
            published,
        };
        let seqs = match &keep {
            Some(doc) => {
                let seqs = store.commit_keeping(exe, commit, doc).await?;
                self.known_kept(&doc.version);
                seqs
            }
            None => store.commit(exe, commit).await?,
        };
        if seqs.len() != emits.len() {
            return Err(RuntimeError::Store(harel_store::StoreError::other(
                format!(
                    "the store returned {} outbox seqs for {} emits",
                    seqs.len(),
                    emits.len()
                ),
            )));
        }
        let outbox = seqs
            .into_iter()
            .zip(emits)
            .map(|(seq, (target_id, event))| OutboxEntry {
                seq,
                target_id,
                event,
            })
            .collect();
        Ok(CommitReceipt {
            outbox,
            spawns,
            armed,
        })
    }
}
