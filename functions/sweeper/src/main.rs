//! The sweeper function (scheduled): fires due timers, polling within the invocation; one
//! EMF metrics document per invocation on stdout (with each timer's lag).

use std::sync::Arc;

use harel_lambda::logging::invocation_span;
use harel_lambda::metrics::{now_ms, sweeper_metrics};
use harel_lambda::{sweep, Driver, Role};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};
use tracing::Instrument;

#[tokio::main]
async fn main() -> Result<(), Error> {
    harel_app::init_tracing();
    let booted = Arc::new(harel_app::boot(Role::Sweeper).await?);
    tracing::info!("sweeper ready");
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let b = booted.clone();
        let span = invocation_span("sweeper", &event.context.request_id);
        async move {
            let deadline = b.work_deadline(event.context.deadline);
            let report = sweep(
                &b.store,
                &b.transport,
                || b.driver.now(),
                b.config.sweep_interval,
                b.config.sweep_window,
                deadline,
            )
            .await?;
            tracing::info!(
                fired = report.fired,
                polls = report.polls,
                out_of_time = report.out_of_time,
                "sweep done"
            );
            sweeper_metrics(&report, now_ms()).emit();
            Ok::<Value, Error>(json!({"fired": report.fired, "polls": report.polls}))
        }
        .instrument(span)
    }))
    .await
}
