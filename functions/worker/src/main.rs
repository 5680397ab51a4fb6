//! The worker function: SQS FIFO batches in, a partial batch response out.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use harel_lambda::{Record, Role};
use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    harel_app::init_tracing();
    let worker = harel_app::boot(Role::Worker).await?.into_worker();
    tracing::info!("worker ready");
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let worker = worker.clone();
        async move {
            let records: Vec<Record> = event.payload.records.iter().map(Record::from_sqs).collect();
            let deadline = i64::try_from(event.context.deadline).ok();
            let outcome = worker.handle_batch(records, deadline).await;
            for (id, result) in &outcome.records {
                match result {
                    Ok(handled) => {
                        tracing::info!(message_id = %id, outcome = ?handled, "record done")
                    }
                    Err(e) => tracing::warn!(message_id = %id, error = %e, "record failed"),
                }
            }
            Ok::<SqsBatchResponse, Error>(outcome.to_response())
        }
    }))
    .await
}
