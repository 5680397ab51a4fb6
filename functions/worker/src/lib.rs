//! The worker function: SQS FIFO batches in, a partial batch response out; one EMF metrics
//! document per invocation (and machine) on stdout.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use harel_lambda::metrics::{now_ms, worker_metrics};
use harel_lambda::{Record, Role};
use lambda_runtime::{Error, LambdaEvent};

/// Boots the worker (configuration, machines, clients: a refusal here fails the cold start)
/// and serves Lambda's Runtime API until the process ends. Its own binary calls it, and so
/// does the one binary of every function (`harel-bootstrap`), when Lambda names it.
pub async fn run() -> Result<(), Error> {
    let started = harel_app::cold_start(Role::Worker, "worker").await?;
    let metrics = started.metrics;
    let remote = started.services.remote.clone();
    let worker = started.services.into_worker();
    harel_app::serve("worker", move |event: LambdaEvent<SqsEvent>, cold_start| {
        let worker = worker.clone();
        let remote = remote.clone();
        let metrics = metrics.clone();
        async move {
            let messages = &event.payload.records;
            let records: Vec<Record> = messages
                .iter()
                .map(harel_lambda::worker::sqs_record)
                .collect();
            let deadline = i64::try_from(event.context.deadline).ok();
            let outcome = worker.handle_batch(records, deadline).await;
            let failed = outcome.failed_ids().len();
            tracing::info!(records = outcome.records.len(), failed, "batch done");
            let mut metrics = worker_metrics(&outcome, messages, now_ms())
                .with_settings(&metrics)
                .with_cold_start(cold_start);
            if let Some(remote) = &remote {
                harel_app::aws::record_remote(&mut metrics, remote.take_stats());
            }
            metrics.emit();
            Ok::<SqsBatchResponse, Error>(outcome.to_response())
        }
    })
    .await
}
