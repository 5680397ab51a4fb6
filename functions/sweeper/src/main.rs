//! The sweeper function: scheduled once a minute (fires the timers due in the minute ahead,
//! returning at once when none is) and woken by the worker (`{"harel:wake": {"until": T}}`:
//! a timer armed between two ticks); one EMF metrics document per invocation on stdout (with
//! each timer's lag).

use std::sync::Arc;

use harel_lambda::logging::Invocation;
use harel_lambda::metrics::{now_ms, sweeper_metrics, MetricsSettings};
use harel_lambda::wake::wake_until;
use harel_lambda::{sweep, Role, SweepPlan};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};
use tracing::Instrument;

#[tokio::main]
async fn main() -> Result<(), Error> {
    harel_app::init_tracing();
    let booted = Arc::new(harel_app::boot(Role::Sweeper).await?);
    // POWERTOOLS_METRICS_NAMESPACE and POWERTOOLS_SERVICE_NAME, checked before the first event
    let metrics = std::sync::Arc::new(MetricsSettings::from_env()?);
    tracing::info!("sweeper ready");
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let b = booted.clone();
        let metrics = metrics.clone();
        let invocation = Invocation::new(
            "sweeper",
            &event.context.request_id,
            event.context.xray_trace_id.as_deref(),
        );
        let cold_start = invocation.cold_start;
        let span = invocation.span();
        async move {
            let deadline = b.work_deadline(event.context.deadline);
            let now = b.driver.now();
            let c = &b.config;
            let plan = match wake_until(&event.payload) {
                Some(until) => {
                    SweepPlan::woken(now, until, c.sweep_window, c.sweep_interval, deadline)
                }
                None => SweepPlan::scheduled(
                    now,
                    c.sweep_window,
                    c.compat_sweep_minutes,
                    c.sweep_interval,
                    deadline,
                ),
            };
            let woken = wake_until(&event.payload).is_some();
            let report = sweep(&b.store, &b.transport, || b.driver.now(), plan).await?;
            tracing::info!(
                woken,
                fired = report.fired,
                polls = report.polls,
                looks = report.looks,
                compat_scans = report.compat_scans,
                out_of_time = report.out_of_time,
                "sweep done"
            );
            sweeper_metrics(&report, now_ms())
                .with_settings(&metrics)
                .with_cold_start(cold_start)
                .emit();
            Ok::<Value, Error>(
                json!({"fired": report.fired, "polls": report.polls, "looks": report.looks}),
            )
        }
        .instrument(span)
    }))
    .await
}
