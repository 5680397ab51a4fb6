//! What an idempotent call can fail with (Powertools' exceptions, plus the 400 KB limit).

use crate::jmes::JmesError;
use crate::keys::KeyError;
use crate::persistence::PersistenceError;
use crate::record::InvalidStatus;

/// Why an idempotent call did not run or record its handler; the messages are Powertools'
/// exceptions' where it has one.
#[derive(Debug, thiserror::Error)]
pub enum IdempotencyError {
    /// `raise_on_no_idempotency_key` and the key selected nothing.
    #[error("No data found to create a hashed idempotency_key")]
    KeyMissing,
    /// An expression of the configuration does not compile or fails on the payload.
    #[error(transparent)]
    Jmes(#[from] JmesError),
    /// The payload's validation hash differs from the stored record's
    /// (`payload_validation_jmespath`): same key, different request.
    #[error("Payload does not match stored record for this event key")]
    Validation,
    /// Another call holds the key and has not finished nor timed out; the message names the key.
    /// Retry later.
    #[error("{0}")]
    AlreadyInProgress(String),
    /// The record changed between the put and the read; retried twice before surfacing.
    #[error("{0}")]
    InconsistentState(&'static str),
    /// A stored record's status is not one Powertools writes.
    #[error(transparent)]
    InvalidStatus(#[from] InvalidStatus),
    /// A request failed; `context` is Powertools' message for the step.
    #[error("{context} - ({source})")]
    Persistence {
        /// Powertools' message for the step that failed, e.g. `"Failed to save in progress record
        /// to idempotency store"`.
        context: &'static str,
        /// What the store reported.
        source: PersistenceError,
    },
    /// The result cannot be stored; the in-progress record has been removed so that a retry
    /// runs again instead of waiting for it to time out.
    #[error("the result of {key} makes a {size}-byte record, over DynamoDB's 400 KB item limit ({limit} bytes); the record was removed")]
    ResultTooLarge {
        /// The idempotency key whose result did not fit.
        key: String,
        /// The completed record's size, in bytes as DynamoDB counts them.
        size: usize,
        /// DynamoDB's item limit, in bytes.
        limit: usize,
    },
    /// The handler ran but its result does not serialize to JSON, so it is not stored: the key
    /// stays in progress until its invocation times out or the record expires.
    #[error("the handler's result is not JSON: {0}")]
    Serialize(serde_json::Error),
    /// A stored result (a repeat's answer) does not deserialize into the handler's result type: the
    /// type changed since the record was written.
    #[error("the stored result of {key} does not fit the handler's result type: {source}")]
    Replay {
        /// The idempotency key of the stored record.
        key: String,
        /// Why the stored JSON does not fit.
        source: serde_json::Error,
    },
    /// The configuration or the store cannot work (a cache of 0 items, clashing attribute names).
    #[error("invalid idempotency configuration: {0}")]
    Config(String),
}

impl IdempotencyError {
    pub(crate) fn persistence(context: &'static str, source: impl Into<PersistenceError>) -> Self {
        IdempotencyError::Persistence {
            context,
            source: source.into(),
        }
    }
}

impl From<KeyError> for IdempotencyError {
    fn from(error: KeyError) -> Self {
        match error {
            KeyError::Missing => IdempotencyError::KeyMissing,
            KeyError::Jmes(e) => IdempotencyError::Jmes(e),
        }
    }
}

/// The outcome of an idempotent call that did not return a result: the handler's own error,
/// passed through untouched after its record was deleted, or the layer's.
#[derive(Debug)]
pub enum RunError<E> {
    /// The handler failed; its record was deleted so that a retry runs it again.
    Handler(E),
    /// The layer failed: the handler may not have run (see [`IdempotencyError`]).
    Idempotency(IdempotencyError),
}

impl<E> From<IdempotencyError> for RunError<E> {
    fn from(error: IdempotencyError) -> Self {
        RunError::Idempotency(error)
    }
}

impl<E: std::fmt::Display> std::fmt::Display for RunError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Handler(e) => e.fmt(f),
            RunError::Idempotency(e) => e.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for RunError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Handler(e) => Some(e),
            RunError::Idempotency(e) => Some(e),
        }
    }
}
