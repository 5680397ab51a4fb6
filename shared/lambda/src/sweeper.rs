//! The sweeper (scheduled): publish a `Timeout` (harel's stable id) for each due timer to its
//! execution's group, then delete the timer with the `fire_at` guard, so a re-armed timer
//! survives a stale sweep. An EventBridge schedule fires at most once a minute, so one
//! invocation polls every `interval` for `window`: timers fire within about `interval` of
//! their time, at the cost of an invocation that lives for the window (billed duration) and
//! one `due_timers` query per poll.

use std::time::{Duration, Instant};

use harel_sqs::{DedupeKey, Outgoing, Transport, TransportError};
use harel_store::{ExecutionStore, StoreError};

use crate::sqs_batch;

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Transport(#[from] TransportError),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub fired: usize,
    pub polls: usize,
    /// Per fired timer: how late it was published, in milliseconds (`now` less its due time).
    pub timer_lag_ms: Vec<u64>,
    /// Stopped by the invocation's deadline before the window ended.
    pub out_of_time: bool,
}

/// One sweep at `now`: returns how many timers fired.
pub async fn sweep_once<S: ExecutionStore, T: Transport>(
    store: &S,
    transport: &T,
    now: f64,
) -> Result<usize, SweepError> {
    let mut report = SweepReport::default();
    fire_due(store, transport, now, &mut report).await?;
    Ok(report.fired)
}

/// One sweep at `now`, counted into `report`.
pub async fn fire_due<S: ExecutionStore, T: Transport>(
    store: &S,
    transport: &T,
    now: f64,
    report: &mut SweepReport,
) -> Result<(), SweepError> {
    let due = store.due_timers(now).await?;
    let fired_before = report.fired;
    for chunk in due.chunks(sqs_batch::MAX) {
        let messages = chunk
            .iter()
            .map(|t| {
                let event = harel_engine::timeout_event(&t.execution_id, &t.path, t.fire_at);
                Outgoing::event(t.execution_id.clone(), &event, DedupeKey::Timer)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let sent = transport.publish_batch(&messages).await;
        let delivered: Vec<usize> = match &sent {
            Ok(()) => (0..messages.len()).collect(),
            Err(e) => e.delivered().to_vec(),
        };
        // published before deleted: a crash between the two re-publishes the same Timeout
        // id, which the target's processed mark drops
        for i in delivered {
            let t = &chunk[i];
            store
                .delete_timer(&t.execution_id, &t.path, t.fire_at)
                .await?;
            report.fired += 1;
            report
                .timer_lag_ms
                .push(((now - t.fire_at) * 1000.0).max(0.0) as u64);
        }
        sent?;
    }
    if !due.is_empty() {
        tracing::info!(
            due = due.len(),
            fired = report.fired - fired_before,
            "timers fired"
        );
    }
    Ok(())
}

/// Sweep every `interval` until `window` has passed or `deadline` comes near.
pub async fn sweep<S: ExecutionStore, T: Transport>(
    store: &S,
    transport: &T,
    clock: impl Fn() -> f64,
    interval: Duration,
    window: Duration,
    deadline: Instant,
) -> Result<SweepReport, SweepError> {
    let started = Instant::now();
    let mut report = SweepReport::default();
    loop {
        fire_due(store, transport, clock(), &mut report).await?;
        report.polls += 1;
        let next = Instant::now() + interval;
        if next >= deadline {
            report.out_of_time = next.duration_since(started) <= window;
            return Ok(report);
        }
        if next.duration_since(started) > window {
            return Ok(report);
        }
        tokio::time::sleep(interval).await;
    }
}
