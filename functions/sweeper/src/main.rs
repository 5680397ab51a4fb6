//! The sweeper function (scheduled): fires due timers, polling within the invocation.

use std::sync::Arc;

use harel_lambda::{sweep, Driver, Role};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};

#[tokio::main]
async fn main() -> Result<(), Error> {
    harel_app::init_tracing();
    let booted = Arc::new(harel_app::boot(Role::Sweeper).await?);
    tracing::info!("sweeper ready");
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let b = booted.clone();
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
            tracing::info!(?report, "sweep done");
            Ok::<Value, Error>(json!({"fired": report.fired, "polls": report.polls}))
        }
    }))
    .await
}
