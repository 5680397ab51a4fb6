//! Each function's metrics from what its invocation reported: the worker's batch, the
//! relay's and the sweeper's reports.

use aws_lambda_events::sqs::SqsMessage;

use super::catalog::*;
use super::invocation::InvocationMetrics;
use crate::relay::RelayReport;
use crate::sweeper::SweepReport;
use crate::worker::{BatchOutcome, RecordError, RecordOutcome};

/// The worker's metrics for one batch: what became of each record (and of its execution),
/// with what the SQS event said of each (`messages`, matched by message id; a record
/// without one counts as a first delivery of unknown age).
pub fn worker_metrics(
    outcome: &BatchOutcome,
    messages: &[SqsMessage],
    timestamp_ms: u64,
) -> InvocationMetrics {
    let mut metrics = InvocationMetrics::new("worker", timestamp_ms);
    for metric in [
        EVENTS_PROCESSED,
        EVENTS_SKIPPED,
        RECORDS_FAILED,
        COMMITS,
        CONFLICTS,
        DUPLICATES,
        REDELIVERIES,
        FAILED_EXECUTIONS,
        DLQ_MOVES,
    ] {
        metrics.count(None, metric, 0);
    }
    for (i, (message_id, result)) in outcome.records.iter().enumerate() {
        let observed = outcome.observed.get(i).cloned().unwrap_or_default();
        let machine = observed.machine.as_deref();
        let version = observed.version.as_deref();
        if let (Some(m), Some(v)) = (machine, version) {
            metrics.version_scope(m, v);
        }
        match result {
            Ok(RecordOutcome::DeadLettered { .. }) => {
                metrics.count_pinned(machine, version, DLQ_MOVES, 1)
            }
            Ok(RecordOutcome::Skipped { .. } | RecordOutcome::AlreadyExists { .. }) => {
                metrics.count(machine, EVENTS_SKIPPED, 1)
            }
            Ok(
                RecordOutcome::Processed { .. }
                | RecordOutcome::Broadcast { .. }
                | RecordOutcome::Created { .. },
            ) => metrics.count_pinned(machine, version, EVENTS_PROCESSED, 1),
            Err(e) => {
                metrics.count_pinned(machine, version, RECORDS_FAILED, 1);
                if matches!(e, RecordError::Conflict(_)) {
                    metrics.count(machine, CONFLICTS, 1);
                }
            }
        }
        if observed.commits > 0 {
            metrics.count(machine, COMMITS, observed.commits as u64);
        }
        if observed.failed_execution {
            metrics.count_pinned(machine, version, FAILED_EXECUTIONS, 1);
        }
        if observed.duplicate {
            metrics.count(machine, DUPLICATES, 1);
        }
        if let Some(lag) = observed.timer_lag_ms {
            metrics.time(machine, TIMER_LAG, lag);
        }
        if let Some(age) = observed.outbox_age_ms {
            metrics.time(machine, OUTBOX_AGE, age);
        }
        let message = messages
            .iter()
            .find(|m| m.message_id.as_deref().unwrap_or_default() == message_id);
        if let Some(message) = message {
            // read as the worker's Record reads it
            let receive_count = attribute(message, "ApproximateReceiveCount");
            if harel_queue::message::receive_count(receive_count) > 1 {
                metrics.count(machine, REDELIVERIES, 1);
            }
            if let Ok(sent) = attribute(message, "SentTimestamp").parse::<u64>() {
                metrics.time(
                    machine,
                    MESSAGE_AGE,
                    timestamp_ms.saturating_sub(sent) as f64,
                );
            }
        }
    }
    metrics
}

fn attribute<'m>(message: &'m SqsMessage, name: &str) -> &'m str {
    message.attributes.get(name).map_or("", String::as_str)
}

/// The relay's metrics for one invocation.
pub fn relay_metrics(report: &RelayReport, timestamp_ms: u64) -> InvocationMetrics {
    let mut metrics = InvocationMetrics::new("relay", timestamp_ms);
    metrics.count(None, OUTBOX_RELAYED, report.delivered.published as u64);
    metrics.count(
        None,
        CHILDREN_RELAYED,
        report.delivered.children_created as u64,
    );
    metrics.count(None, COMMITS, report.delivered.children_created as u64);
    metrics.count(None, OUT_OF_TIME, u64::from(report.out_of_time));
    metrics
}

/// The sweeper's metrics for one invocation.
pub fn sweeper_metrics(report: &SweepReport, timestamp_ms: u64) -> InvocationMetrics {
    let mut metrics = InvocationMetrics::new("sweeper", timestamp_ms);
    metrics.count(None, TIMERS_FIRED, report.fired as u64);
    metrics.count(None, SWEEP_POLLS, report.polls as u64);
    metrics.count(None, OUT_OF_TIME, u64::from(report.out_of_time));
    for lag in &report.timer_lag_ms {
        metrics.time(None, TIMER_LAG, *lag as f64);
    }
    metrics
}
