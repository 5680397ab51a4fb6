//! How an SDK failure becomes a `StoreError`: throttling, transient faults and transaction
//! conflicts are retryable; everything else is reported as it is. A CAS miss is never decided
//! here (that is `commit`'s job, from the cancellation reasons).

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use harel_store::StoreError;

use crate::codec::CodecError;

/// Error codes DynamoDB documents as transient: retry with backoff.
///
/// `IdempotentParameterMismatchException` too: a commit's `ClientRequestToken` reused by a
/// different request within DynamoDB's 10 minutes. The tokens digest the whole write, so it
/// takes two byte-identical writes; reloading and deciding again is the safe answer.
pub(crate) const RETRYABLE_CODES: [&str; 10] = [
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "TransactionConflictException",
    "TransactionInProgressException",
    "LimitExceededException",
    "ReplicatedWriteConflictException",
    "IdempotentParameterMismatchException",
];

/// Cancellation reason codes of a `TransactionCanceledException` that are transient.
pub const RETRYABLE_REASONS: [&str; 4] = [
    "TransactionConflict",
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
    "RequestLimitExceeded",
];

/// A one-line account of an SDK error: its code and message when the service answered.
pub fn describe<E: ProvideErrorMetadata + std::error::Error + 'static, R: std::fmt::Debug>(
    err: &SdkError<E, R>,
) -> String {
    match (err.code(), err.message()) {
        (Some(code), Some(msg)) => format!("{code}: {msg}"),
        (Some(code), None) => code.to_string(),
        _ => format!("{}", aws_sdk_dynamodb::error::DisplayErrorContext(err)),
    }
}

/// The `StoreError` for a failed request of `op` on `table` (or tables), the SDK's error
/// kept as its source. The table is named because DynamoDB's own message often names none
/// ("Requested resource not found").
pub fn classify<E, R>(op: &str, table: &str, err: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let text = format!("DynamoDB {op} on {table}: {}", describe(&err));
    let transient = match &err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => true,
        SdkError::ResponseError(_) => true,
        _ => err.code().is_some_and(|c| RETRYABLE_CODES.contains(&c)),
    };
    let classified = match transient {
        true => StoreError::retryable(text),
        false => StoreError::other(text),
    };
    classified.with_source(err)
}

/// A stored item of `table` that does not decode: `StoreError::Corrupt`, naming the table and the
/// attribute.
pub fn corrupt(table: &str, err: CodecError) -> StoreError {
    StoreError::Corrupt(format!("{table}: {err}"))
}
