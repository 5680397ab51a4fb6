//! SQS's batch size, as the handlers chunk their sends.

/// Entries per `SendMessageBatch`.
pub const MAX: usize = harel_sqs::sqs::MAX_BATCH;
