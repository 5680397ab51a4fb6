//! What an idempotent call can fail with (Powertools' exceptions, plus the 400 KB limit).

use crate::jmes::JmesError;
use crate::keys::KeyError;
use crate::persistence::PersistenceError;
use crate::record::InvalidStatus;

#[derive(Debug, thiserror::Error)]
pub enum IdempotencyError {
    /// `raise_on_no_idempotency_key` and the key selected nothing.
    #[error("No data found to create a hashed idempotency_key")]
    KeyMissing,
    #[error(transparent)]
    Jmes(#[from] JmesError),
    #[error("Payload does not match stored record for this event key")]
    Validation,
    #[error("{0}")]
    AlreadyInProgress(String),
    /// The record changed between the put and the read; retried twice before surfacing.
    #[error("{0}")]
    InconsistentState(&'static str),
    #[error(transparent)]
    InvalidStatus(#[from] InvalidStatus),
    /// A request failed; `context` is Powertools' message for the step.
    #[error("{context} - ({source})")]
    Persistence {
        context: &'static str,
        source: PersistenceError,
    },
    /// The result cannot be stored; the in-progress record has been removed so that a retry
    /// runs again instead of waiting for it to time out.
    #[error("the result of {key} makes a {size}-byte record, over DynamoDB's 400 KB item limit ({limit} bytes); the record was removed")]
    ResultTooLarge {
        key: String,
        size: usize,
        limit: usize,
    },
    #[error("the handler's result is not JSON: {0}")]
    Serialize(serde_json::Error),
    #[error("the stored result of {key} does not fit the handler's result type: {source}")]
    Replay {
        key: String,
        source: serde_json::Error,
    },
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
    Handler(E),
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
