//! Firing durable timers through the queue, for any host's sweeper (the Lambda one is
//! scheduled once a minute, and woken by the worker): publish a `Timeout`
//! (harel's stable id) for each due timer to its execution's group, then delete the timer with
//! the `fire_at` guard, so a re-armed timer survives a stale sweep.
//!
//! An invocation covers the timers due up to its plan's `until` (a tick: the minute ahead).
//! It first looks at the earliest due time in that window (one cheap index read); nothing due
//! and it returns at once, so an idle stack pays one short invocation a minute. Otherwise it
//! sleeps toward that time (at most `max_sleep` at a time, so a timer armed meanwhile is
//! seen), fires, and looks again. A timer armed while no sweeper runs, due before the next
//! tick, is the worker's to announce: it wakes a sweeper (`harel_lambda::wake` on Lambda).
//!
//! Concurrent sweepers (a tick and a wake, two wakes) are harmless: both may publish the same
//! timer, but its `Timeout` id is stable (SQS drops the second copy within five minutes, the
//! target's processed mark any later one) and the guarded delete of a fired timer is a no-op.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use harel_queue::{DedupeKey, Outgoing, Transport, TransportError};
use harel_store::{DueAndNext, DueTimer, StoreError, Timers};

use harel_queue::transport::MAX_BATCH;

/// Why a sweep stopped: the timers already published and deleted stay fired; the rest stay
/// armed for the next sweep.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// Reading or deleting timers failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Publishing a `Timeout` failed (the timers the queue took were deleted before this was
    /// returned).
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// What one sweeper invocation did (its log line and metrics).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Timers fired: their `Timeout` published and the timer deleted.
    pub fired: usize,
    /// Fire passes: looks that found timers due.
    pub polls: usize,
    /// Looks at the index (each one `due_and_next` read: what is due, and the next due time).
    pub looks: usize,
    /// Compatibility Scans run (0 or 1).
    pub compat_scans: usize,
    /// Per fired timer: how late it was published, in milliseconds (`now` less its due time).
    pub timer_lag_ms: Vec<u64>,
    /// Stopped by the invocation's deadline before the window ended.
    pub out_of_time: bool,
}

/// One sweep at `now` of everything due, the compatibility Scan's timers included: returns
/// how many timers fired.
pub async fn sweep_once<S: Timers, T: Transport>(
    store: &S,
    transport: &T,
    now: f64,
) -> Result<usize, SweepError> {
    let mut report = SweepReport::default();
    fire_due(store, transport, now, &mut report).await?;
    let legacy = store.legacy_due_timers(now).await?;
    fire(store, transport, now, legacy, &mut report).await?;
    Ok(report.fired)
}

/// One sweep at `now` through the store's time index, counted into `report`.
pub async fn fire_due<S: Timers, T: Transport>(
    store: &S,
    transport: &T,
    now: f64,
    report: &mut SweepReport,
) -> Result<(), SweepError> {
    let due = store.due_timers(now).await?;
    fire(store, transport, now, due, report).await
}

/// Publish each timer's `Timeout` and delete the timer.
async fn fire<S: Timers, T: Transport>(
    store: &S,
    transport: &T,
    now: f64,
    due: Vec<DueTimer>,
    report: &mut SweepReport,
) -> Result<(), SweepError> {
    let fired_before = report.fired;
    for chunk in due.chunks(MAX_BATCH) {
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

/// What one sweeper invocation covers.
#[derive(Clone, Debug)]
pub struct SweepPlan {
    /// Timers due up to this time (epoch seconds, the clock's) are this invocation's to fire;
    /// later ones belong to a later tick (or wake).
    pub until: f64,
    /// Run the compatibility Scan (timers harel Python armed, outside the index) first.
    pub compat: bool,
    /// The longest sleep between two looks while a timer is due within the window: a timer
    /// armed meanwhile, due before the one slept toward, fires within about this much.
    pub max_sleep: Duration,
    /// Stop before this instant (the invocation's deadline less its reserve).
    pub deadline: Instant,
}

impl SweepPlan {
    /// A scheduled tick at `now`: the `window` ahead, the compatibility Scan on the minutes
    /// `compat_every_minutes` divides (0: never).
    pub fn scheduled(
        now: f64,
        window: Duration,
        compat_every_minutes: u64,
        max_sleep: Duration,
        deadline: Instant,
    ) -> Self {
        SweepPlan {
            until: now + window.as_secs_f64(),
            compat: compat_due(now, compat_every_minutes),
            max_sleep,
            deadline,
        }
    }

    /// A wake from the worker: up to `until`, at most `window` ahead of `now`; no
    /// compatibility Scan (the ticks run it).
    pub fn woken(
        now: f64,
        until: f64,
        window: Duration,
        max_sleep: Duration,
        deadline: Instant,
    ) -> Self {
        SweepPlan {
            until: until.min(now + window.as_secs_f64()),
            compat: false,
            max_sleep,
            deadline,
        }
    }
}

/// Whether the tick at `now` runs the compatibility Scan: on the minutes (since the epoch)
/// that `every_minutes` divides. Decided from the clock alone, so nothing is stored, and
/// every tick of such a minute (a retried one too) agrees.
pub fn compat_due(now: f64, every_minutes: u64) -> bool {
    every_minutes > 0 && ((now / 60.0).floor() as u64).is_multiple_of(every_minutes)
}

/// The pause after a fire pass that found nothing new to fire: the index (eventually
/// consistent) may still show a timer just deleted.
const SETTLE: Duration = Duration::from_millis(200);

/// Fire what is due within the plan, sleeping toward each next due time (never longer than
/// `max_sleep`), and return as soon as nothing more is due before `until`. Each look is one
/// pass over the index (the store's `due_and_next`: the due timers and the next due time
/// together): an idle invocation makes one and returns, a busy one fires what the look found
/// and looks once more.
pub async fn sweep<S: Timers, T: Transport>(
    store: &S,
    transport: &T,
    clock: impl Fn() -> f64,
    plan: SweepPlan,
) -> Result<SweepReport, SweepError> {
    let mut report = SweepReport::default();
    let mut fired = HashSet::new();
    if plan.compat {
        let now = clock();
        let legacy = store.legacy_due_timers(now).await?;
        report.compat_scans += 1;
        fire(store, transport, now, legacy, &mut report).await?;
    }
    loop {
        report.looks += 1;
        let now = clock();
        // one pass: what is due now and when the next comes, from the same reads
        let DueAndNext { due, next } = store.due_and_next(now, plan.until).await?;
        let wait = if !due.is_empty() {
            let before = report.fired;
            // the index may still show a timer this invocation fired and deleted (it is
            // eventually consistent): publishing it again would be dropped, but looping on
            // it would spin
            let due: Vec<DueTimer> = due
                .into_iter()
                .filter(|t| {
                    fired.insert((t.execution_id.clone(), t.path.clone(), t.fire_at.to_bits()))
                })
                .collect();
            fire(store, transport, now, due, &mut report).await?;
            report.polls += 1;
            if report.fired > before {
                continue;
            }
            SETTLE
        } else {
            match next {
                None => return Ok(report),
                // due by now though this look found nothing due: the index is catching up
                Some(next) if next <= now => SETTLE,
                Some(next) => Duration::from_secs_f64(next - now).min(plan.max_sleep),
            }
        };
        if Instant::now() + wait >= plan.deadline {
            report.out_of_time = true;
            return Ok(report);
        }
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compatibility_scan_runs_on_every_nth_minute_only() {
        let minute = |m: u64| (m * 60) as f64;
        let on: Vec<u64> = (0..12)
            .filter(|&m| compat_due(minute(m) + 0.9, 5))
            .collect();
        assert_eq!(on, vec![0, 5, 10]);
        assert!((0..12).all(|m| compat_due(minute(m) + 59.0, 1)));
        assert!(!(0..12).any(|m| compat_due(minute(m), 0)), "0 turns it off");
        let plan = SweepPlan::scheduled(
            minute(10),
            Duration::from_secs(60),
            5,
            Duration::from_secs(1),
            Instant::now(),
        );
        assert!(plan.compat);
        assert_eq!(plan.until, minute(11));
        let woken = SweepPlan::woken(
            minute(10),
            minute(30),
            Duration::from_secs(60),
            Duration::from_secs(1),
            Instant::now(),
        );
        assert!(!woken.compat, "wakes leave the Scan to the ticks");
        assert_eq!(
            woken.until,
            minute(11),
            "a wake sweeps at most the window ahead"
        );
    }
}
