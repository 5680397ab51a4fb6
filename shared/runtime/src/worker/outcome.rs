//! What became of a record, what the worker saw handling it (for a host's metrics), and why
//! it failed.

use std::sync::Mutex;

use crate::admission::Skip;
use crate::{DeliverError, RuntimeError};
use harel_queue::TransportError;
use harel_store::StoreError;
use serde::{Deserialize, Serialize};

/// What became of a record that needs no retry (stored by the idempotency layer, so a replay
/// answers the same).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RecordOutcome {
    /// The engine ran and the step was committed.
    Processed {
        /// The execution the event was for.
        execution_id: String,
    },
    /// A domain event published to the execution's live regions.
    Broadcast {
        /// The execution (the regions' parent) the event was sent to.
        execution_id: String,
        /// How many regions it was published to.
        regions: usize,
    },
    /// A create message made the execution and committed its start.
    Created {
        /// The new execution.
        execution_id: String,
    },
    /// A create for an id that exists: nothing done.
    AlreadyExists {
        /// The id the create asked for.
        execution_id: String,
    },
    /// Nothing to do (unknown execution, processed already, cancelled, not started...).
    Skipped {
        /// The execution the message was for (its group).
        execution_id: String,
        /// Why nothing was done.
        /// Stored as its text (as before it was a type: records written then still read).
        #[serde(with = "skip_text")]
        reason: Skip,
    },
    /// Could never succeed: moved to the dead-letter queue with the reason.
    DeadLettered {
        /// Stored as its text (the `harel-dead-letter-reason` attribute's), read back as
        /// [`DeadLetterReason::Recorded`].
        #[serde(with = "reason_text")]
        reason: DeadLetterReason,
    },
}

/// Why a message can never succeed. Its `Display` is the text the dead letter carries in
/// its `harel-dead-letter-reason` attribute (and the operator reads in `harel dlq`).
#[derive(Clone, Debug, PartialEq)]
pub enum DeadLetterReason {
    /// The message cannot be read: no group, a body that is not JSON or not a harel Event, a
    /// create for another group. The text says which.
    Malformed(String),
    /// A create for a machine this worker does not have.
    UnknownMachine(String),
    /// A create whose context does not fit the machine's declaration.
    InvalidContext {
        /// The execution the create was for.
        execution_id: String,
        /// What the schema check said.
        why: String,
    },
    /// An event whose data does not fit its declaration in the execution's machine.
    RefusedEvent {
        /// The event's kind.
        kind: String,
        /// The execution it was sent to.
        execution_id: String,
        /// What the schema check said.
        why: String,
    },
    /// The step would pass DynamoDB's item or transaction limits, on every retry too (nothing
    /// was written).
    TooLarge {
        /// The execution the step was for.
        execution_id: String,
        /// The event's kind; none for a create.
        event: Option<String>,
        /// Which limit, as the store said it.
        why: String,
    },
    /// A reason read back from a stored outcome (an idempotency record): its text.
    Recorded(String),
}

impl std::fmt::Display for DeadLetterReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeadLetterReason::Malformed(text) | DeadLetterReason::Recorded(text) => {
                f.write_str(text)
            }
            DeadLetterReason::UnknownMachine(machine) => {
                write!(
                    f,
                    "unknown machine {machine:?}: it is not compiled into this worker"
                )
            }
            DeadLetterReason::InvalidContext { execution_id, why } => {
                write!(f, "create {execution_id}: invalid context: {why}")
            }
            DeadLetterReason::RefusedEvent {
                kind,
                execution_id,
                why,
            }
            | DeadLetterReason::TooLarge {
                execution_id,
                event: Some(kind),
                why,
            } => write!(f, "event {kind} for {execution_id}: {why}"),
            DeadLetterReason::TooLarge {
                execution_id,
                event: None,
                why,
            } => write!(f, "create {execution_id}: {why}"),
        }
    }
}

impl RecordOutcome {
    /// The outcome's name, as logged (the reason of a skip or a dead letter is not: it may
    /// quote the message's data).
    pub fn name(&self) -> &'static str {
        match self {
            RecordOutcome::Processed { .. } => "processed",
            RecordOutcome::Broadcast { .. } => "broadcast",
            RecordOutcome::Created { .. } => "created",
            RecordOutcome::AlreadyExists { .. } => "already_exists",
            RecordOutcome::Skipped { .. } => "skipped",
            RecordOutcome::DeadLettered { .. } => "dead_lettered",
        }
    }
}

/// What the worker saw while handling one record, for the metrics: the machine, the
/// transactions it committed, whether the step left the execution FAILED, and timings. A
/// record the idempotency layer answered from its store did nothing and saw nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observation {
    /// The execution's machine (its `definition_id`), once it is known.
    pub machine: Option<String>,
    /// The machine version the execution is pinned to (None: unpinned, or not known: a
    /// create whose step did not commit).
    pub version: Option<String>,
    /// The kind of the event handled (`harel:create` for a create).
    pub event_kind: Option<String>,
    /// Store transactions committed for the record: its step, and the start of each child
    /// its delivery created.
    pub commits: usize,
    /// The step's commit found the event's dedupe mark already written (another writer
    /// applied it after this one's read): acknowledged, nothing applied twice.
    pub duplicate: bool,
    /// The step left the execution FAILED (an unhandled action error under the `Fail`
    /// policy): the host counts it, as harel's dead letter.
    pub failed_execution: bool,
    /// A `Timeout`: its processing time less its due time (`fire_at`), in milliseconds.
    pub timer_lag_ms: Option<f64>,
    /// A step that enqueued outbox entries: from its commit to their publication.
    pub outbox_age_ms: Option<f64>,
    /// The `fire_at` of each timer the record's commits armed.
    pub armed: Vec<f64>,
}

/// Filled in while a record is handled (a host's idempotency layer owns the handler's
/// future, so the observation cannot be its return value). The host turns it into metrics:
/// the worker logic records facts, and knows nothing of how they are reported.
#[derive(Default)]
pub struct Observer(Mutex<Observation>);

impl Observer {
    /// Record facts: `f` gets the observation so far to change.
    pub fn with(&self, f: impl FnOnce(&mut Observation)) {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// The observation so far, leaving an empty one behind (the host reads it once the
    /// record is handled).
    pub fn take(&self) -> Observation {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Why a record is reported failed (SQS redelivers it, and with it the rest of its group).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The execution (its id given) is SUSPENDED: the message was hidden for the park
    /// policy's delay, to be checked again then.
    #[error("execution {0} is SUSPENDED: parked")]
    Parked(String),
    /// Another writer changed the execution since it was read (its version moved on).
    #[error("conflict: {0}")]
    Conflict(#[source] StoreError),
    /// The store failed (anything but a conflict): retried with the message.
    #[error(transparent)]
    Store(StoreError),
    /// Publishing, parking or dead-lettering on the queue failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The engine or the driver refused the step (nothing was committed).
    #[error(transparent)]
    Drive(RuntimeError),
    /// The host's idempotency layer failed (its store could not be read or written).
    #[error("idempotency: {0}")]
    Idempotency(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Not tried: an earlier record of the same group (given) failed in this batch, and FIFO
    /// order holds the rest of the group back until it succeeds.
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

/// A dead-letter reason in a stored outcome: its text.
mod reason_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::DeadLetterReason;

    pub(super) fn serialize<S: Serializer>(
        reason: &DeadLetterReason,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(reason)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<DeadLetterReason, D::Error> {
        String::deserialize(deserializer).map(DeadLetterReason::Recorded)
    }
}

/// A skip reason in a stored outcome: its text.
mod skip_text {
    use crate::admission::Skip;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_letter_reason_reads_as_the_attribute_it_travels_in() {
        let texts: Vec<String> = [
            DeadLetterReason::Malformed("body is not JSON".into()),
            DeadLetterReason::UnknownMachine("Nope".into()),
            DeadLetterReason::InvalidContext {
                execution_id: "o-1".into(),
                why: "items: expected int".into(),
            },
            DeadLetterReason::RefusedEvent {
                kind: "Ship".into(),
                execution_id: "o-1".into(),
                why: "carrier: expected str".into(),
            },
            DeadLetterReason::TooLarge {
                execution_id: "o-1".into(),
                event: None,
                why: "item over 400 KB".into(),
            },
            DeadLetterReason::TooLarge {
                execution_id: "o-1".into(),
                event: Some("Add".into()),
                why: "item over 400 KB".into(),
            },
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            texts,
            [
                "body is not JSON",
                "unknown machine \"Nope\": it is not compiled into this worker",
                "create o-1: invalid context: items: expected int",
                "event Ship for o-1: carrier: expected str",
                "create o-1: item over 400 KB",
                "event Add for o-1: item over 400 KB",
            ]
        );
    }

    #[test]
    fn a_stored_dead_letter_outcome_reads_back_with_its_text() {
        let handled = RecordOutcome::DeadLettered {
            reason: DeadLetterReason::UnknownMachine("Nope".into()),
        };
        let stored = serde_json::to_value(&handled).expect("serialize");
        assert_eq!(
            stored,
            serde_json::json!({
                "outcome": "dead_lettered",
                "reason": "unknown machine \"Nope\": it is not compiled into this worker",
            })
        );
        let back: RecordOutcome = serde_json::from_value(stored).expect("deserialize");
        assert_eq!(
            back,
            RecordOutcome::DeadLettered {
                reason: DeadLetterReason::Recorded(
                    "unknown machine \"Nope\": it is not compiled into this worker".into()
                ),
            }
        );
    }
}
