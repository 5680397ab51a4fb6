//! What a client and the scheduled functions do around the worker, as the tests drive them.

use std::time::{Duration, Instant};

use harel_idempotency::Client as IdempotencyClient;
use harel_lambda::{RelayReport, Worker};
use harel_sqs::{Outgoing, Transport};
use harel_store::ExecutionStore;

/// Send `body` to the group `group` as a client would: a fresh deduplication id each time,
/// so sending the same body twice delivers it twice.
pub async fn send<T: Transport>(transport: &T, group: &str, body: String) {
    let dedupe = uuid::Uuid::new_v4().to_string();
    transport
        .publish(Outgoing::raw(group, dedupe, body).expect("a valid group id"))
        .await
        .expect("send");
}

/// One relay invocation over the worker's store, transport and driver (30 s to run).
pub async fn relay<S, T, C>(worker: &Worker<S, T, C>) -> RelayReport
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
    C: IdempotencyClient + 'static,
{
    harel_lambda::relay(
        &worker.store,
        &worker.transport,
        &worker.driver,
        Instant::now() + Duration::from_secs(30),
    )
    .await
    .expect("relay")
}
