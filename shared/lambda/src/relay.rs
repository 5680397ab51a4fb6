//! The relay (scheduled): drain pending spawns and outbox entries, oldest first, until done or
//! the invocation's remaining time runs low. Spawns: create the child idempotently, start it,
//! ack. Outbox: publish with the seq's dedupe id, then ack. A crash anywhere leaves the
//! entries pending for the next run; a resend within five minutes is dropped by SQS (same
//! dedupe id) and any later copy by the target's processed mark.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use harel_sqs::Transport;
use harel_store::ExecutionStore;

use crate::deliver::{create_child, publish_outbox, DeliverError, Delivered};
use crate::driver::Driver;
use crate::sqs_batch;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RelayReport {
    pub delivered: Delivered,
    /// Stopped because the time ran low, with work left.
    pub out_of_time: bool,
    pub passes: usize,
}

/// Drain until nothing is pending or `deadline` (minus nothing: the caller keeps its reserve)
/// is reached.
pub async fn relay<S: ExecutionStore, T: Transport, D: Driver>(
    store: &S,
    transport: &T,
    driver: &D,
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
            match create_child(store, driver, entry).await {
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
        let entries: Vec<_> = outbox
            .into_iter()
            .map(|e| (e.seq, e.target_id, e.event))
            .collect();
        // groups with an entry left unsent in this pass: their later entries wait too, so
        // none overtakes it (FIFO per target)
        let mut held: HashSet<Option<harel_model::SmolStr>> = HashSet::new();
        let mut rest = entries.as_slice();
        while !rest.is_empty() {
            if Instant::now() >= deadline {
                return Ok(out_of_time(report));
            }
            let mut chunk = Vec::new();
            let mut taken = 0;
            for entry in rest {
                if chunk.len() == sqs_batch::MAX {
                    break;
                }
                taken += 1;
                if !held.contains(&entry.1) {
                    chunk.push(entry.clone());
                }
            }
            rest = &rest[taken..];
            match publish_outbox(store, transport, &chunk).await {
                Ok(sent) => report.delivered.add(&sent),
                Err(e) => {
                    held.extend(chunk.into_iter().map(|(_, target, _)| target));
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

/// The deadline of an invocation that must end `reserve` before Lambda's.
pub fn deadline_with_reserve(remaining: Duration, reserve: Duration) -> Instant {
    Instant::now() + remaining.saturating_sub(reserve)
}
