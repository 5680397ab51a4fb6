//! What became of a record, what the worker saw handling it, and why it failed.

use std::sync::Mutex;

use harel_queue::TransportError;
use harel_runtime::admission::Skip;
use harel_runtime::{DeliverError, RuntimeError};
use harel_store::StoreError;
use serde::{Deserialize, Serialize};

/// What became of a record that needs no retry (stored by the idempotency layer, so a replay
/// answers the same).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Handled {
    /// The engine ran and the step was committed.
    Processed {
        execution_id: String,
    },
    /// A domain event published to the execution's live regions.
    Broadcast {
        execution_id: String,
        regions: usize,
    },
    Created {
        execution_id: String,
    },
    /// A create for an id that exists: nothing done.
    AlreadyExists {
        execution_id: String,
    },
    /// Nothing to do (unknown execution, processed already, cancelled, not started...).
    Skipped {
        execution_id: String,
        /// Stored as its text (as before it was a type: records written then still read).
        #[serde(with = "skip_text")]
        reason: Skip,
    },
    /// Could never succeed: moved to the dead-letter queue with the reason.
    DeadLettered {
        reason: String,
    },
}

impl Handled {
    /// The outcome's name, as logged (the reason of a skip or a dead letter is not: it may
    /// quote the message's data).
    pub fn name(&self) -> &'static str {
        match self {
            Handled::Processed { .. } => "processed",
            Handled::Broadcast { .. } => "broadcast",
            Handled::Created { .. } => "created",
            Handled::AlreadyExists { .. } => "already_exists",
            Handled::Skipped { .. } => "skipped",
            Handled::DeadLettered { .. } => "dead_lettered",
        }
    }
}

/// What the worker saw while handling one record, for the metrics: the machine, the
/// transactions it committed, whether the step left the execution FAILED, and timings. A
/// record the idempotency layer answered from its store did nothing and saw nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    pub machine: Option<String>,
    /// The machine version the execution is pinned to (None: unpinned, or not known: a
    /// create whose step did not commit).
    pub version: Option<String>,
    pub event_kind: Option<String>,
    pub commits: usize,
    /// The step's commit found the event's dedupe mark already written (another writer
    /// applied it after this one's read): acknowledged, nothing applied twice.
    pub duplicate: bool,
    pub failed_execution: bool,
    /// A `Timeout`: its processing time less its due time (`fire_at`), in milliseconds.
    pub timer_lag_ms: Option<f64>,
    /// A step that enqueued outbox entries: from its commit to their publication.
    pub outbox_age_ms: Option<f64>,
    /// The `fire_at` of each timer the record's commits armed.
    pub armed: Vec<f64>,
}

/// Filled in while a record is handled (the idempotency layer owns the handler's future,
/// so the observation cannot be its return value).
#[derive(Default)]
pub(super) struct Observer(Mutex<Observed>);

impl Observer {
    pub(super) fn with(&self, f: impl FnOnce(&mut Observed)) {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()));
    }

    pub(super) fn take(&self) -> Observed {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Why a record is reported failed (SQS redelivers it, and with it the rest of its group).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("execution {0} is SUSPENDED: parked")]
    Parked(String),
    /// Another writer changed the execution since it was read (its version moved on).
    #[error("conflict: {0}")]
    Conflict(#[source] StoreError),
    #[error(transparent)]
    Store(StoreError),
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The engine or the driver refused the step (nothing was committed).
    #[error(transparent)]
    Drive(RuntimeError),
    #[error("idempotency: {0}")]
    Idempotency(#[source] harel_idempotency::IdempotencyError),
    #[error("not processed: an earlier record of group {0} failed")]
    Blocked(String),
    /// The task handling the record's group panicked before reporting it.
    #[error("worker task failed: the record's task panicked")]
    Panicked,
}

impl From<StoreError> for RecordError {
    fn from(e: StoreError) -> Self {
        match e.is_conflict() {
            true => RecordError::Conflict(e),
            false => RecordError::Store(e),
        }
    }
}

impl From<RuntimeError> for RecordError {
    fn from(e: RuntimeError) -> Self {
        match e {
            RuntimeError::Store(s) => s.into(),
            other => RecordError::Drive(other),
        }
    }
}

impl From<DeliverError> for RecordError {
    fn from(e: DeliverError) -> Self {
        match e {
            DeliverError::Store(s) => s.into(),
            DeliverError::Transport(t) => RecordError::Transport(t),
            DeliverError::Spawn { source, .. } => RecordError::Drive(source),
        }
    }
}

/// The result of one batch.
#[derive(Debug, Default)]
pub struct BatchOutcome {
    /// Every record, in batch order, with what became of it.
    pub records: Vec<(String, Result<Handled, RecordError>)>,
    /// What was seen handling each record, in the same order.
    pub observed: Vec<Observed>,
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

    pub fn to_response(&self) -> aws_lambda_events::event::sqs::SqsBatchResponse {
        let mut response = aws_lambda_events::event::sqs::SqsBatchResponse::default();
        for id in self.failed_ids() {
            let mut failure = aws_lambda_events::event::sqs::BatchItemFailure::default();
            failure.item_identifier = id;
            response.batch_item_failures.push(failure);
        }
        response
    }
}

/// A skip reason in a stored outcome: its text.
mod skip_text {
    use harel_runtime::admission::Skip;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(skip: &Skip, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(skip)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Skip, D::Error> {
        let text = String::deserialize(deserializer)?;
        Skip::from_text(&text)
            .ok_or_else(|| D::Error::custom(format!("unknown skip reason {text:?}")))
    }
}
