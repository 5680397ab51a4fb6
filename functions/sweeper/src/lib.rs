//! The sweeper function: scheduled once a minute (fires the timers due in the minute ahead,
//! returning at once when none is) and woken by the worker (`{"harel:wake": {"until": T}}`:
//! a timer armed between two ticks); one EMF metrics document per invocation on stdout (with
//! each timer's lag). A scheduled tick first starts the schedules due (`HAREL_SCHEDULES_FILE`,
//! `harel_app::sweeper`).

use std::sync::Arc;

use harel_lambda::failure::failed;
use harel_lambda::metrics::{now_ms, sweeper_metrics};
use harel_lambda::Role;
use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;

/// Boots the sweeper (configuration, machines, clients: a refusal here fails the cold start)
/// and serves Lambda's Runtime API until the process ends. Its own binary calls it, and so
/// does the one binary of every function (`harel-bootstrap`), when Lambda names it.
pub async fn run() -> Result<(), Error> {
    let started = harel_app::cold_start(Role::Sweeper, "sweeper").await?;
    let metrics = started.metrics;
    let booted = Arc::new(started.services);
    harel_app::serve("sweeper", move |event: LambdaEvent<Value>, cold_start| {
        let b = booted.clone();
        let metrics = metrics.clone();
        async move {
            let deadline = b.work_deadline(event.context.deadline);
            let run = harel_app::sweeper::invoke(&b, &event.payload, deadline)
                .await
                .map_err(|e| failed("sweep failed", e))?;
            let report = &run.sweep;
            let ticked = run.schedules.as_ref();
            tracing::info!(
                woken = run.woken,
                fired = report.fired,
                polls = report.polls,
                looks = report.looks,
                compat_scans = report.compat_scans,
                out_of_time = report.out_of_time,
                scheduled_starts = ticked.map(|t| t.started.len()),
                schedules_due = ticked.map(|t| t.due),
                "sweep done"
            );
            sweeper_metrics(report, now_ms())
                .with_settings(&metrics)
                .with_cold_start(cold_start)
                .emit();
            Ok::<Value, Error>(run.answer())
        }
    })
    .await
}
