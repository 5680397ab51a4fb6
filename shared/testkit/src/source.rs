//! The event source a worker is fed by, as Lambda's SQS event source mapping does it:
//! receive up to 10, hand them over as one batch, delete what succeeded; what failed comes
//! back (at once here, instead of after the visibility timeout), except a parked message,
//! which stays hidden as long as the worker asked.

use std::sync::Arc;
use std::time::Duration;

use harel_idempotency::Client as IdempotencyClient;
use harel_lambda::{Record, RecordError, RecordOutcome, Worker};
use harel_sqs::{MemoryTransport, Received, SqsTransport, Transport};
use harel_store::ExecutionStore;

/// What became of one record: its message id and the worker's answer.
pub type Outcome = (String, Result<RecordOutcome, RecordError>);

/// How many batches a pump hands over before it calls the queue undrainable.
const MAX_BATCHES: usize = 50;

/// The worker's records for `received`, in order.
pub fn records(received: &[Received]) -> Vec<Record> {
    received.iter().map(Record::from).collect()
}

/// One batch from `source` to `worker`; the records' outcomes in batch order (empty: the
/// queue had nothing visible).
pub async fn pump_once<S, T, C>(
    source: &SqsTransport,
    worker: &Arc<Worker<S, T, C>>,
) -> Vec<Outcome>
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
    C: IdempotencyClient + 'static,
{
    let got = source
        .receive(10, Duration::ZERO, Duration::from_secs(30))
        .await
        .expect("receive");
    if got.is_empty() {
        return Vec::new();
    }
    let outcome = worker.handle_batch(records(&got), None).await;
    for (m, (_, result)) in got.iter().zip(&outcome.records) {
        match result {
            Ok(_) => source
                .delete(source.queue_url(), &m.receipt_handle)
                .await
                .expect("delete"),
            // hidden for as long as the worker parked it
            Err(RecordError::Parked(_)) => {}
            Err(_) => source
                .park(&m.receipt_handle, Duration::ZERO)
                .await
                .expect("release"),
        }
    }
    outcome.records
}

/// Batches until the queue is empty; every record must succeed. What became of each, in
/// order.
pub async fn pump<S, T, C>(
    source: &SqsTransport,
    worker: &Arc<Worker<S, T, C>>,
) -> Vec<RecordOutcome>
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
    C: IdempotencyClient + 'static,
{
    let mut all = Vec::new();
    for _ in 0..MAX_BATCHES {
        let batch = pump_once(source, worker).await;
        if batch.is_empty() {
            return all;
        }
        all.extend(succeeded(batch));
    }
    panic!("the queue never drained");
}

/// The in-memory twin of `pump`: batches from `transport` until it is empty; every record
/// must succeed.
pub async fn memory_pump<S, T, C>(
    transport: &MemoryTransport,
    worker: &Arc<Worker<S, T, C>>,
) -> Vec<RecordOutcome>
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
    C: IdempotencyClient + 'static,
{
    let mut all = Vec::new();
    for _ in 0..MAX_BATCHES {
        let got = transport.take(10);
        if got.is_empty() {
            return all;
        }
        let outcome = worker.handle_batch(records(&got), None).await;
        all.extend(succeeded(outcome.records));
    }
    panic!("the queue never drained");
}

fn succeeded(batch: Vec<Outcome>) -> Vec<RecordOutcome> {
    if batch.iter().any(|(_, r)| r.is_err()) {
        panic!("a record failed: {batch:?}");
    }
    batch.into_iter().filter_map(|(_, r)| r.ok()).collect()
}
