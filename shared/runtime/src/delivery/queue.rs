//! Delivery through a queue (harel's `TransportDriverLogic`): outbox entries are published to
//! their target's message group with the seq's dedupe id, then acked; spawns are created and
//! started here (a child's start is this process's write), then acked; a broadcast publishes
//! the event to each live region's group. The worker delivers exactly what its own commit
//! enqueued ([`deliver_stepped`]), the relay whatever a crash left behind ([`relay`]), the
//! control plane what a cooperative cancel enqueued ([`publish_outbox`]).
//!
//! A crash anywhere leaves the entries pending for the next relay run; a resend within five
//! minutes is dropped by SQS (same dedupe id) and any later copy by the target's processed
//! mark.

use std::collections::HashSet;
use std::time::Instant;

use harel_model::{Event, Execution, SmolStr};
use harel_queue::{DedupeKey, Outgoing, Transport, TransportError};
use harel_store::{Commit, ExecutionStore, OutboxEntry, SpawnEntry, StoreError};

use super::{create_child, restart_ttl, Delivered};
use crate::driver::{CommitReceipt, Driver};
use crate::RuntimeError;

/// Why a delivery stopped. The entries not delivered stay pending for the relay's next run;
/// a resend is dropped by the queue's dedupe or the target's processed mark.
#[derive(Debug, thiserror::Error)]
pub enum DeliverError {
    /// Reading, acknowledging or committing in the store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Publishing to the queue failed (the entries it reports delivered are acknowledged).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// A spawn that cannot be created (an unknown submachine, a start the engine refuses):
    /// it stays pending for the relay and the operator.
    #[error("spawn {seq} of {parent_id}: {}", spawn_reason(source))]
    Spawn {
        /// The spawn intent's seq (`SpawnEntry::seq`).
        seq: u64,
        /// The execution that asked for the child.
        parent_id: SmolStr,
        /// Why the child could not be created or started.
        source: RuntimeError,
    },
}

/// Why a spawn failed, in a queue host's words: an unknown submachine is one the function was
/// not deployed with.
fn spawn_reason(source: &RuntimeError) -> String {
    match source {
        RuntimeError::UnresolvedSubmachine(fqn) => {
            format!(
                "invoke {fqn:?}: no machine compiled into or loaded by this function has that FQN"
            )
        }
        other => other.to_string(),
    }
}

/// [`create_child`] for a queue host: a store error is the store's (retried), anything else
/// is this spawn's.
async fn create_queued_child<S: ExecutionStore>(
    driver: &Driver,
    store: &S,
    entry: &SpawnEntry,
) -> Result<Option<CommitReceipt>, DeliverError> {
    match create_child(driver, store, entry).await {
        Ok(created) => Ok(created),
        Err(RuntimeError::Store(e)) => Err(DeliverError::Store(e)),
        Err(source) => Err(DeliverError::Spawn {
            seq: entry.seq,
            parent_id: entry.parent_id.clone(),
            source,
        }),
    }
}

/// Publish outbox entries in one batched send, then ack each delivered one. Entries without
/// a target are acked without sending (harel). On a partial failure the delivered entries are
/// acked and the error returned: the rest stay for the relay.
pub async fn publish_outbox<S: ExecutionStore, T: Transport>(
    store: &S,
    transport: &T,
    entries: &[OutboxEntry],
) -> Result<Delivered, DeliverError> {
    let mut report = Delivered::default();
    let mut messages = Vec::new();
    let mut seqs = Vec::new();
    for entry in entries {
        match &entry.target_id {
            Some(group) => {
                messages.push(Outgoing::event(
                    group.clone(),
                    &entry.event,
                    DedupeKey::Outbox { seq: entry.seq },
                )?);
                seqs.push(entry.seq);
            }
            None => {
                store.ack_outbox(entry.seq).await?;
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

/// Deliver what one commit of `owner_id` enqueued, and what the children it spawned enqueued
/// in turn, until nothing is left of that chain.
pub async fn deliver_stepped<S: ExecutionStore, T: Transport>(
    store: &S,
    transport: &T,
    driver: &Driver,
    owner_id: &str,
    stepped: CommitReceipt,
) -> Result<Delivered, DeliverError> {
    let mut report = Delivered::default();
    // a spawn that cannot be created stays pending for the relay and the operator; the rest
    // of the chain is still delivered, then its error returned
    let mut failed: Option<DeliverError> = None;
    let mut work = vec![(SmolStr::from(owner_id), stepped)];
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
                match create_queued_child(driver, store, entry).await {
                    Ok(Some(child)) => {
                        report.children_created += 1;
                        report.armed.extend_from_slice(&child.armed);
                        work.push((entry.child_id.clone(), child));
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

/// Broadcast `event` to `exe`'s live `regions` ([`super::route`]): publish it to each
/// region's group, then commit the parent's processed mark with its `ttl` restarted (the mark
/// makes a redelivered copy a no-op instead of a second broadcast). Returns the `fire_at` of
/// the re-armed `ttl`. A refused mark is the store's error (`is_already_processed`): another
/// writer broadcast it first.
pub async fn broadcast<S: ExecutionStore, T: Transport>(
    store: &S,
    transport: &T,
    driver: &Driver,
    exe: &mut Execution,
    event: &Event,
    regions: &[Execution],
) -> Result<Option<f64>, DeliverError> {
    // the machine before anything is published: a store that cannot answer now must not
    // leave the regions told and the parent's ttl unrestarted; a machine this host does not
    // have restarts no ttl (the worker dead-letters what it cannot check)
    let defn = match driver.resolve(store, exe).await {
        Ok(defn) => Some(defn),
        Err(RuntimeError::Store(e)) => return Err(DeliverError::Store(e)),
        Err(_) => None,
    };
    let messages = regions
        .iter()
        .map(|region| Outgoing::event(region.id.clone(), event, DedupeKey::Event))
        .collect::<Result<Vec<_>, _>>()?;
    transport.publish_batch(&messages).await?;
    let now = driver.now();
    let timer = defn.and_then(|defn| restart_ttl(&defn, exe, now));
    let armed = match &timer {
        Some(harel_model::TimerOp::Schedule { fire_at, .. }) => Some(*fire_at),
        _ => None,
    };
    exe.stamp(now);
    let commit = Commit {
        processed_event_id: Some(event.id.clone()),
        timers: timer.into_iter().collect(),
        ..Commit::default()
    };
    store.commit(exe, commit).await?;
    Ok(armed)
}

/// What one relay run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RelayReport {
    /// What the run delivered, over all its passes.
    pub delivered: Delivered,
    /// Stopped because the time ran low, with work left.
    pub out_of_time: bool,
    /// Passes over the pending spawns and outbox (a child's start can add entries: the next pass
    /// delivers them).
    pub passes: usize,
}

/// The relay: drain pending spawns and outbox entries, oldest first, until nothing is pending
/// or `deadline` is reached (the caller keeps its own reserve).
pub async fn relay<S: ExecutionStore, T: Transport>(
    store: &S,
    transport: &T,
    driver: &Driver,
    deadline: Instant,
) -> Result<RelayReport, DeliverError> {
    let mut report = RelayReport::default();
    loop {
        let spawns = store.pending_spawns().await?;
        let outbox = store.pending_outbox().await?;
        if spawns.is_empty() && outbox.is_empty() {
            tracing::info!(
                published = report.delivered.published,
                children_created = report.delivered.children_created,
                passes = report.passes,
                "relay done"
            );
            return Ok(report);
        }
        report.passes += 1;
        // an entry that fails (one SQS refuses as too large, a spawn that cannot be created)
        // must not hold back the others: the pass goes on and the first error is returned
        // at its end, the failed entries left pending for the next run
        let mut failed: Option<DeliverError> = None;
        for entry in &spawns {
            if Instant::now() >= deadline {
                return Ok(out_of_time(report));
            }
            // a child's own start emits land in the outbox: the next pass publishes them
            match create_queued_child(driver, store, entry).await {
                Ok(created) => {
                    if created.is_some() {
                        report.delivered.children_created += 1;
                    }
                    store.ack_spawn(entry.seq).await?;
                    report.delivered.acked_spawns += 1;
                }
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        // groups with an entry left unsent in this pass: their later entries wait too, so
        // none overtakes it (FIFO per target)
        let mut held: HashSet<Option<SmolStr>> = HashSet::new();
        let mut rest = outbox.as_slice();
        while !rest.is_empty() {
            if Instant::now() >= deadline {
                return Ok(out_of_time(report));
            }
            let mut chunk = Vec::new();
            let mut taken = 0;
            for entry in rest {
                if chunk.len() == harel_queue::transport::MAX_BATCH {
                    break;
                }
                taken += 1;
                if !held.contains(&entry.target_id) {
                    chunk.push(entry.clone());
                }
            }
            rest = &rest[taken..];
            match publish_outbox(store, transport, &chunk).await {
                Ok(sent) => report.delivered.add(&sent),
                Err(e) => {
                    held.extend(chunk.into_iter().map(|entry| entry.target_id));
                    failed.get_or_insert(e);
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
    }
}

fn out_of_time(mut report: RelayReport) -> RelayReport {
    report.out_of_time = true;
    tracing::warn!(
        published = report.delivered.published,
        children_created = report.delivered.children_created,
        "relay stopped with work left: the time ran low"
    );
    report
}
