//! The relay function (scheduled): drains pending outbox entries and spawns.

use std::sync::Arc;

use harel_lambda::{relay, Role};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};

#[tokio::main]
async fn main() -> Result<(), Error> {
    harel_app::init_tracing();
    let booted = Arc::new(harel_app::boot(Role::Relay).await?);
    tracing::info!("relay ready");
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let b = booted.clone();
        async move {
            let deadline = b.work_deadline(event.context.deadline);
            let report = relay(&b.store, &b.transport, &b.driver, deadline).await?;
            tracing::info!(?report, "relay done");
            Ok::<Value, Error>(json!({
                "published": report.delivered.published,
                "children_created": report.delivered.children_created,
                "acked_outbox": report.delivered.acked_outbox,
                "acked_spawns": report.delivered.acked_spawns,
                "out_of_time": report.out_of_time,
            }))
        }
    }))
    .await
}
