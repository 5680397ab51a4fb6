//! The batch's result as Lambda reports it: a partial batch response.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse};
use harel_runtime::worker::{Observation, RecordError, RecordOutcome};

/// The result of one batch.
#[derive(Debug, Default)]
pub struct BatchOutcome {
    /// Every record, in batch order, with what became of it.
    pub records: Vec<(String, Result<RecordOutcome, RecordError>)>,
    /// What was seen handling each record, in the same order.
    pub observed: Vec<Observation>,
}

impl BatchOutcome {
    /// The message ids to report in `batchItemFailures`.
    pub fn failed_ids(&self) -> Vec<String> {
        self.records
            .iter()
            .filter(|(_, r)| r.is_err())
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The partial batch response Lambda expects: the failed records' message ids, which SQS
    /// redelivers; the others are deleted.
    pub fn to_response(&self) -> SqsBatchResponse {
        let mut response = SqsBatchResponse::default();
        for id in self.failed_ids() {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            response.batch_item_failures.push(failure);
        }
        response
    }
}
