//! One record through the idempotency layer, keyed on the SQS message id, then the
//! runtime's worker logic (`harel_runtime::worker::WorkerLogic::handle`).

use harel_idempotency::{Client as IdempotencyClient, RunError};
use harel_queue::Transport;
use harel_runtime::worker::{Observer, Record, RecordError, RecordOutcome};
use harel_store::ExecutionStore;

use super::Worker;

impl<S, T, C> Worker<S, T, C>
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
    C: IdempotencyClient + 'static,
{
    pub(super) async fn handle_idempotent(
        &self,
        record: &Record,
        deadline_ms: Option<i64>,
        observer: &Observer,
    ) -> Result<RecordOutcome, RecordError> {
        let Some(idempotency) = &self.idempotency else {
            return self.logic.handle(record, observer).await;
        };
        match idempotency
            .run(&record.idempotency_payload(), deadline_ms, || {
                self.logic.handle(record, observer)
            })
            .await
        {
            Ok(handled) => Ok(handled),
            Err(RunError::Handler(e)) => Err(e),
            Err(RunError::Idempotency(e)) => Err(RecordError::Idempotency(Box::new(e))),
        }
    }

    /// One record, without the idempotency layer.
    pub async fn handle(&self, record: &Record) -> Result<RecordOutcome, RecordError> {
        self.logic.handle(record, &Observer::default()).await
    }
}
