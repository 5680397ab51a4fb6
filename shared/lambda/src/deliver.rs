//! Delivering what a commit enqueued: publish outbox entries to their target's group (then
//! ack them), create spawned children idempotently and start them (then ack the spawn).
//! harel's `TransportDriverLogic._flush_flow`, split so that the worker delivers exactly what
//! its own commit enqueued and the relay drains whatever a crash left behind.

use harel_engine::invoke::INVOKE_FQN_KEY;
use harel_model::schema::with_defaults;
use harel_model::{Event, Execution, SmolStr};
use harel_sqs::{DedupeKey, Outgoing, Transport, TransportError};
use harel_store::{ExecutionStore, SpawnEntry, StoreError};
use serde_json::Value;

use crate::driver::{DriveError, Driver, Stepped};

#[derive(Debug, thiserror::Error)]
pub enum DeliverError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error(transparent)]
    Drive(#[from] DriveError),
    #[error("spawn {seq} of {parent_id}: {reason}")]
    Spawn {
        seq: u64,
        parent_id: String,
        reason: String,
    },
}

/// Counts of one delivery pass (the benchmark reads them too).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Delivered {
    pub published: usize,
    pub children_created: usize,
    pub acked_outbox: usize,
    pub acked_spawns: usize,
    /// The `fire_at` of each timer the children's starts armed.
    pub armed: Vec<f64>,
}

impl Delivered {
    pub fn add(&mut self, other: &Delivered) {
        self.published += other.published;
        self.children_created += other.children_created;
        self.acked_outbox += other.acked_outbox;
        self.acked_spawns += other.acked_spawns;
        self.armed.extend_from_slice(&other.armed);
    }
}

/// Create the child of one spawn entry and run its start, unless it exists already (a
/// crash-and-retry re-runs the fork: the child's progress is kept). A region runs its
/// parent's machine with what the fork passed down; a submachine child (its spawn carries
/// `__invoke_fqn__`) runs the machine compiled in under that FQN, with that machine's
/// context defaults, and records the FQN (harel's `_create_spawn_flow`). An FQN this function
/// does not have is an error that loses nothing: the spawn stays pending. Returns what the
/// child's start enqueued.
pub async fn create_child<S: ExecutionStore, D: Driver>(
    store: &S,
    driver: &D,
    entry: &SpawnEntry,
) -> Result<Option<Stepped>, DeliverError> {
    if store.load(&entry.child_id).await?.is_some() {
        return Ok(None);
    }
    let spawn_error = |reason: String| DeliverError::Spawn {
        seq: entry.seq,
        parent_id: entry.parent_id.to_string(),
        reason,
    };
    let mut context = entry.context.clone();
    let submachine = match context.shift_remove(INVOKE_FQN_KEY) {
        None => None,
        Some(Value::String(fqn)) => {
            let defn = driver.definition(&fqn).ok_or_else(|| {
                spawn_error(format!(
                    "invoke {fqn:?}: no machine compiled into this function has that FQN"
                ))
            })?;
            context = with_defaults(&defn.context_schema, &context);
            Some((SmolStr::from(&defn.id), SmolStr::from(fqn)))
        }
        Some(other) => {
            return Err(spawn_error(format!(
                "{INVOKE_FQN_KEY} is not a machine name: {other}"
            )))
        }
    };
    // a child inherits its parent's priority (harel)
    let parent = store
        .load(&entry.parent_id)
        .await?
        .ok_or_else(|| spawn_error("the parent execution is gone".into()))?;
    let (definition_id, fqn) = match submachine {
        Some((id, fqn)) => (id, Some(fqn)),
        None => (parent.definition_id.clone(), None),
    };
    let mut child = Execution::new(definition_id).with_id(entry.child_id.clone());
    child.definition_fqn = fqn;
    child.root_path = entry.root_path.clone();
    child.context = context;
    child.parent_id = Some(entry.parent_id.clone());
    child.child_id = Some(entry.child_id.clone());
    child.priority = parent.priority;
    match driver.step(store, &mut child, None).await {
        Ok(stepped) => Ok(Some(stepped)),
        // another deliverer created it between our load and our insert
        Err(e) if e.is_conflict() => Ok(None),
        Err(DriveError::Store(StoreError::AlreadyExists(_))) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Publish outbox entries (seq, target, event) in one batched send, then ack each delivered
/// one. Entries without a target are acked without sending (harel). On a partial failure the
/// delivered entries are acked and the error returned: the rest stay for the relay.
pub async fn publish_outbox<S: ExecutionStore, T: Transport>(
    store: &S,
    transport: &T,
    entries: &[(u64, Option<SmolStr>, Event)],
) -> Result<Delivered, DeliverError> {
    let mut report = Delivered::default();
    let mut messages = Vec::new();
    let mut seqs = Vec::new();
    for (seq, target, event) in entries {
        match target {
            Some(group) => {
                messages.push(Outgoing::event(
                    group.clone(),
                    event,
                    DedupeKey::Outbox { seq: *seq },
                )?);
                seqs.push(*seq);
            }
            None => {
                store.ack_outbox(*seq).await?;
                report.acked_outbox += 1;
            }
        }
    }
    if messages.is_empty() {
        return Ok(report);
    }
    let sent = transport.publish_batch(&messages).await;
    let delivered: Vec<usize> = match &sent {
        Ok(()) => (0..messages.len()).collect(),
        Err(e) => e.delivered().to_vec(),
    };
    report.published += delivered.len();
    for i in delivered {
        store.ack_outbox(seqs[i]).await?;
        report.acked_outbox += 1;
    }
    sent?;
    Ok(report)
}

/// Deliver what one commit enqueued, and what the children it spawned enqueued in turn, until
/// nothing is left of that chain.
pub async fn deliver_stepped<S: ExecutionStore, T: Transport, D: Driver>(
    store: &S,
    transport: &T,
    driver: &D,
    parent_id: &str,
    stepped: Stepped,
) -> Result<Delivered, DeliverError> {
    let mut report = Delivered::default();
    // a spawn that cannot be created (an unknown submachine FQN) stays pending for the relay
    // and the operator; the rest of the chain is still delivered, then its error returned
    let mut failed: Option<DeliverError> = None;
    let mut work = vec![(parent_id.to_string(), stepped)];
    while let Some((owner, stepped)) = work.pop() {
        if !stepped.spawns.is_empty() {
            // the spawn seqs are not returned by the commit: find this step's entries
            let pending = store.pending_spawns().await?;
            for spawn in &stepped.spawns {
                let Some(entry) = pending
                    .iter()
                    .find(|e| e.parent_id == owner && e.child_id == spawn.child_id)
                else {
                    // already delivered by a concurrent relay
                    continue;
                };
                match create_child(store, driver, entry).await {
                    Ok(Some(child)) => {
                        report.children_created += 1;
                        report.armed.extend_from_slice(&child.armed);
                        work.push((entry.child_id.to_string(), child));
                    }
                    Ok(None) => {}
                    Err(e @ DeliverError::Spawn { .. }) => {
                        failed.get_or_insert(e);
                        continue;
                    }
                    Err(e) => return Err(e),
                }
                store.ack_spawn(entry.seq).await?;
                report.acked_spawns += 1;
            }
        }
        if !stepped.outbox.is_empty() {
            let sent = publish_outbox(store, transport, &stepped.outbox).await?;
            report.add(&sent);
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(report),
    }
}
