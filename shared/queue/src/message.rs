//! What goes on the queue: harel's message shape (body = the Event JSON, group = the target
//! execution id) plus a deterministic deduplication id.

use harel_model::Event;

use crate::dedupe::DedupeKey;
use crate::error::TransportError;

/// SQS's limit on `MessageGroupId` and `MessageDeduplicationId`.
pub const MAX_ID_LEN: usize = 128;

/// One message to publish.
#[derive(Clone, Debug, PartialEq)]
pub struct Outgoing {
    /// The target execution id: SQS FIFO delivers one message of a group at a time, which
    /// makes the worker the single writer of that execution.
    pub group_id: String,
    /// SQS's `MessageDeduplicationId`: a second message with the same id within five minutes is
    /// dropped (see [`DedupeKey`]).
    pub dedupe_id: String,
    /// The Event JSON, exactly as harel's `event.model_dump_json()` would be read back.
    pub body: String,
}

impl Outgoing {
    /// `event` for the execution `group_id`, deduplicated by `key`.
    pub fn event(
        group_id: impl Into<String>,
        event: &Event,
        key: DedupeKey,
    ) -> Result<Self, TransportError> {
        let group_id = group_id.into();
        check_group_id(&group_id)?;
        let dedupe_id = key.dedupe_id(&group_id, &event.id);
        Ok(Outgoing {
            group_id,
            dedupe_id,
            body: event.to_json(),
        })
    }

    /// A message whose body is not an Event (the create message, a dead letter).
    pub fn raw(
        group_id: impl Into<String>,
        dedupe_id: String,
        body: String,
    ) -> Result<Self, TransportError> {
        let group_id = group_id.into();
        check_group_id(&group_id)?;
        Ok(Outgoing {
            group_id,
            dedupe_id,
            body,
        })
    }
}

/// SQS accepts 1..=128 characters of ASCII letters, digits and punctuation in a group id;
/// anything else would be rejected by the service after the commit, so it is refused here
/// with the reason, before anything is sent.
pub fn check_group_id(group_id: &str) -> Result<(), TransportError> {
    let valid = !group_id.is_empty()
        && group_id.len() <= MAX_ID_LEN
        && group_id.bytes().all(|b| b.is_ascii_graphic());
    if valid {
        Ok(())
    } else {
        Err(TransportError::InvalidGroup(group_id.to_string()))
    }
}

/// A message as a consumer receives it (the in-memory twin's and `SqsTransport::receive`'s
/// shape; Lambda hands the worker the same fields in an SQS event record).
#[derive(Clone, Debug, PartialEq)]
pub struct Received {
    /// SQS's id for this message (what a dead letter's `harel-source-message-id` refers to).
    pub message_id: String,
    /// The handle of this receive, needed to delete or [`park`](crate::Transport::park) it.
    pub receipt_handle: String,
    /// The `MessageGroupId`: the target execution id.
    pub group_id: String,
    /// The `MessageDeduplicationId` it was sent with.
    pub dedupe_id: String,
    /// The body as sent: Event JSON, or a create message (see [`inbound`](crate::inbound)).
    pub body: String,
    /// String message attributes (the dead-letter reason travels as one).
    pub attributes: Vec<(String, String)>,
    /// SQS's `ApproximateReceiveCount`: 1 on the first delivery, one more on each later
    /// one (a park included).
    pub receive_count: u32,
}

impl Received {
    /// The string message attribute `name`, if the message carries one (e.g.
    /// [`REASON_ATTRIBUTE`](crate::REASON_ATTRIBUTE) on a dead letter).
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// SQS's `ApproximateReceiveCount` attribute; 1 (this delivery) when absent or unreadable.
pub fn receive_count(attribute: &str) -> u32 {
    attribute.trim().parse::<u32>().map_or(1, |n| n.max(1))
}
