//! The sweeper's minute tick for schedules: start what fell due since each schedule's mark.
//!
//! Per tick: one read of every mark (DynamoDB: one `BatchGetItem` per 100 schedules); for each
//! schedule with a fire in (mark, now], at most one start, of the latest fire (`catch_up:
//! once` folds missed fires into it; `catch_up: skip` starts nothing for a fire seen more than
//! [`LATE_AFTER`] late), held back by `overlap: skip` while the execution the previous start
//! created still runs (one read of it). The create is sent first (its id is the fire's, its
//! deduplication id the id's), then the mark is moved with a conditional write from the
//! value read. A tick retried after a crash, or two ticks at once, send the same create: SQS
//! drops the copy within five minutes, and the worker does nothing for an id that exists, so
//! each fire starts one execution; the loser's mark write fails its condition and writes
//! nothing. An idle tick (nothing due) is the one read.
//!
//! A schedule seen for the first time starts from the tick's minute (fires before it are
//! not caught up) and gets its mark (one write, once).

use chrono::{DateTime, TimeZone, Utc};
use harel_model::Status;
use harel_queue::transport::MAX_BATCH;
use harel_queue::{Outgoing, Transport, TransportError};
use harel_store::{ExecutionStore, StoreError};

use crate::file::{CatchUp, Overlap, Schedule, Schedules};
use crate::marks::{Mark, MarkError, Marks};

/// The span a tick covers for a schedule with no mark yet: the minute to now.
pub const FIRST_SPAN_SECONDS: i64 = 60;
/// A fire seen later than this after its time was missed (the ticks are a minute apart).
pub const LATE_AFTER: i64 = 120;

/// Why a tick failed. Nothing is lost: a schedule whose mark was not moved is due again at
/// the next tick, which sends the same create (same execution id), started at most once.
#[derive(Debug, thiserror::Error)]
pub enum TickError {
    /// Reading or moving a mark failed.
    #[error(transparent)]
    Marks(#[from] MarkError),
    /// Reading the execution the previous start created (for `overlap: skip`) failed.
    #[error("schedules: reading the previous start: {0}")]
    Store(#[from] StoreError),
    /// Sending a create to the queue failed (the marks of the creates that were sent are
    /// moved before this is returned).
    #[error("schedules: sending a create: {0}")]
    Transport(#[from] TransportError),
}

/// What one tick did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Schedules with a fire due.
    pub due: usize,
    /// The executions whose creates were sent.
    pub started: Vec<String>,
    /// Fires folded into a start by `catch_up: once` (beyond the one started).
    pub caught_up: u64,
    /// Schedules whose due fires were all missed and dropped (`catch_up: skip`).
    pub skipped_missed: usize,
    /// Schedules whose fire was dropped while the previous start runs (`overlap: skip`).
    pub skipped_overlap: usize,
    /// Mark writes another tick won (its creates are the same ones, sent once more).
    pub raced: usize,
    /// Marks written.
    pub marks_written: usize,
    /// Previous starts read (`overlap: skip`).
    pub status_reads: usize,
}

/// A mark to move, and the start that goes with it (if any).
struct Step<'a> {
    schedule: &'a Schedule,
    previous: Option<Mark>,
    next: Mark,
    start: Option<String>,
}

/// One tick at `now` (epoch seconds).
pub async fn tick<M: Marks, S: ExecutionStore, T: Transport>(
    schedules: &Schedules,
    marks: &M,
    store: &S,
    transport: &T,
    now: f64,
) -> Result<TickReport, TickError> {
    let mut report = TickReport::default();
    if schedules.entries.is_empty() {
        return Ok(report);
    }
    let now_s = now.floor() as i64;
    let now_t = at(now_s);
    let names: Vec<&str> = schedules.names().collect();
    let mut stored = marks.read(&names).await?;
    let mut steps = Vec::new();
    for schedule in &schedules.entries {
        let previous = stored.remove(&schedule.name);
        let after = previous
            .as_ref()
            .map_or(now_s - FIRST_SPAN_SECONDS, |m| m.through);
        let Some(fires) = schedule.when.fires_between(at(after), now_t, schedule.zone) else {
            if previous.is_none() {
                steps.push(Step {
                    schedule,
                    next: Mark {
                        through: now_s,
                        execution_id: None,
                    },
                    previous,
                    start: None,
                });
            }
            continue;
        };
        report.due += 1;
        let latest = fires.latest.timestamp();
        let last_start = previous.as_ref().and_then(|m| m.execution_id.clone());
        let done = |execution_id| Mark {
            through: latest,
            execution_id,
        };
        if schedule.catch_up == CatchUp::Skip && now_s - latest > LATE_AFTER {
            tracing::info!(schedule = %schedule.name, missed = fires.count, "missed fires skipped (catch_up: skip)");
            report.skipped_missed += 1;
            steps.push(Step {
                schedule,
                previous,
                next: done(last_start),
                start: None,
            });
            continue;
        }
        if schedule.overlap == Overlap::Skip {
            if let Some(running) = still_running(store, last_start.as_deref(), &mut report).await? {
                tracing::info!(schedule = %schedule.name, execution_id = %running, "fire skipped: the previous start still runs (overlap: skip)");
                report.skipped_overlap += 1;
                steps.push(Step {
                    schedule,
                    previous,
                    next: done(last_start),
                    start: None,
                });
                continue;
            }
        }
        let id = schedule.execution_id(fires.latest);
        report.caught_up += fires.count - 1;
        steps.push(Step {
            schedule,
            previous,
            next: done(Some(id.clone())),
            start: Some(id),
        });
    }
    let sent = send_starts(transport, &steps).await;
    for (i, step) in steps.iter().enumerate() {
        if step.start.is_some() && !sent.delivered.contains(&i) {
            // not sent: the mark stays, the next tick sends it again (same id)
            continue;
        }
        if marks
            .advance(&step.schedule.name, step.previous.as_ref(), &step.next)
            .await?
        {
            report.marks_written += 1;
        } else {
            report.raced += 1;
        }
        if let Some(id) = &step.start {
            tracing::info!(schedule = %step.schedule.name, machine = %step.schedule.machine, execution_id = %id, "scheduled start sent");
            report.started.push(id.clone());
        }
    }
    match sent.error {
        Some(e) => Err(e.into()),
        None => Ok(report),
    }
}

fn at(epoch_seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(epoch_seconds, 0)
        .single()
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// The previous start's id if it exists and has not finished (absent: not created yet or
/// expired; either way nothing runs).
async fn still_running<S: ExecutionStore>(
    store: &S,
    last_start: Option<&str>,
    report: &mut TickReport,
) -> Result<Option<String>, StoreError> {
    let Some(id) = last_start else {
        return Ok(None);
    };
    report.status_reads += 1;
    Ok(store.load(id).await?.and_then(|exe| {
        let running = !matches!(
            exe.status,
            Status::Done | Status::Cancelled | Status::Failed
        );
        running.then(|| id.to_string())
    }))
}

struct Sent {
    /// Indexes into the steps whose creates SQS accepted.
    delivered: Vec<usize>,
    error: Option<TransportError>,
}

/// Send the steps' creates, ten to a `SendMessageBatch`.
async fn send_starts<T: Transport>(transport: &T, steps: &[Step<'_>]) -> Sent {
    let mut out = Sent {
        delivered: Vec::new(),
        error: None,
    };
    let mut starts: Vec<(usize, Outgoing)> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        if let Some(id) = &step.start {
            let s = step.schedule;
            match harel_queue::create_message(&s.machine, s.context.clone(), id) {
                Ok(message) => starts.push((i, message)),
                Err(e) => {
                    out.error.get_or_insert(e);
                }
            }
        }
    }
    for chunk in starts.chunks(MAX_BATCH) {
        let messages: Vec<Outgoing> = chunk.iter().map(|(_, m)| m.clone()).collect();
        match transport.publish_batch(&messages).await {
            Ok(()) => out.delivered.extend(chunk.iter().map(|(i, _)| *i)),
            Err(e) => {
                out.delivered
                    .extend(e.delivered().iter().map(|&k| chunk[k].0));
                out.error.get_or_insert(e);
            }
        }
    }
    out
}
