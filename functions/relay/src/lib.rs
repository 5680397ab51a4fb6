//! The relay function (scheduled): drains pending outbox entries and spawns; one EMF
//! metrics document per invocation on stdout.

use std::sync::Arc;

use harel_lambda::failure::failed;
use harel_lambda::metrics::{now_ms, relay_metrics};
use harel_lambda::{relay, Role};
use lambda_runtime::{Error, LambdaEvent};
use serde_json::{json, Value};

/// Boots the relay (configuration, machines, clients: a refusal here fails the cold start)
/// and serves Lambda's Runtime API until the process ends. Its own binary calls it, and so
/// does the one binary of every function (`harel-bootstrap`), when Lambda names it.
pub async fn run() -> Result<(), Error> {
    let started = harel_app::cold_start(Role::Relay, "relay").await?;
    let metrics = started.metrics;
    let booted = Arc::new(started.services);
    harel_app::serve("relay", move |event: LambdaEvent<Value>, cold_start| {
        let b = booted.clone();
        let metrics = metrics.clone();
        async move {
            let deadline = b.work_deadline(event.context.deadline);
            // a child's first step may call a remote action: it stops in time to commit
            let invocation_deadline =
                harel_runtime::invocation::deadline_from_epoch_ms(event.context.deadline);
            let report = harel_runtime::invocation::within(
                Some(invocation_deadline),
                relay(&b.store, &b.transport, &b.driver, deadline),
            )
            .await
            .map_err(|e| failed("relay failed", e))?;
            // the events last: a child created above has its own status change to put
            let events = match &b.bus {
                Some(bus) => harel_lambda::relay::publish_events(&b.store, bus, deadline)
                    .await
                    .map_err(|e| failed("putting events failed", e))?,
                None => Default::default(),
            };
            let mut metrics = relay_metrics(&report, now_ms())
                .with_settings(&metrics)
                .with_cold_start(cold_start);
            if let Some(remote) = &b.remote {
                harel_app::aws::record_remote(&mut metrics, remote.take_stats());
            }
            metrics.emit();
            Ok::<Value, Error>(json!({
                "published": report.delivered.published,
                "children_created": report.delivered.children_created,
                "acked_outbox": report.delivered.acked_outbox,
                "acked_spawns": report.delivered.acked_spawns,
                "out_of_time": report.out_of_time || events.out_of_time,
                "events_put": events.put,
                "events_dead_lettered": events.dead_lettered,
                "events_deferred": events.deferred,
            }))
        }
    })
    .await
}
