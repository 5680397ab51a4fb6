//! The sweeper function (scheduled): fires due timers, polling within the invocation.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use harel_lambda::{sweep, Driver, Role};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};

fn remaining(deadline_ms: u64) -> Duration {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    Duration::from_millis(deadline_ms.saturating_sub(now))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    harel_app::init_tracing();
    let booted = Arc::new(harel_app::boot(Role::Sweeper).await?);
    tracing::info!("sweeper ready");
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let b = booted.clone();
        async move {
            let deadline = harel_lambda::relay::deadline_with_reserve(
                remaining(event.context.deadline),
                b.config.time_reserve,
            );
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
