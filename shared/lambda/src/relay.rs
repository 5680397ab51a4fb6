//! The relay (scheduled): drain pending spawns and outbox entries, oldest first, until done or
//! the invocation's remaining time runs low. Spawns: create the child idempotently, start it,
//! ack. Outbox: publish with the seq's dedupe id, then ack. A crash anywhere leaves the
//! entries pending for the next run; a resend within five minutes is dropped by SQS (same
//! dedupe id) and any later copy by the target's processed mark.

use std::time::{Duration, Instant};

use harel_sqs::Transport;
use harel_store::ExecutionStore;

use crate::deliver::{create_child, publish_outbox, DeliverError, Delivered};
use crate::driver::Driver;
use crate::sqs_batch;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
        for entry in &spawns {
            if Instant::now() >= deadline {
                return Ok(out_of_time(report));
            }
            // a child's own start emits land in the outbox: the next pass publishes them
            if create_child(store, driver, entry).await?.is_some() {
                report.delivered.children_created += 1;
            }
            store.ack_spawn(entry.seq).await?;
            report.delivered.acked_spawns += 1;
        }
        let entries: Vec<_> = outbox
            .into_iter()
            .map(|e| (e.seq, e.target_id, e.event))
            .collect();
        for chunk in entries.chunks(sqs_batch::MAX) {
            if Instant::now() >= deadline {
                return Ok(out_of_time(report));
            }
            let sent = publish_outbox(store, transport, chunk).await?;
            report.delivered.add(&sent);
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
