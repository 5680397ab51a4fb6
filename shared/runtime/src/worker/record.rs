//! One queue message, as the worker needs it: from a Lambda event, a receive, or any host's
//! own queue.

use serde_json::Value;

/// One SQS record, as the worker needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// SQS's message id (what the idempotency key is computed from).
    pub message_id: String,
    /// The receipt handle of this delivery, needed to park the message.
    pub receipt_handle: String,
    /// The `MessageGroupId`, the target execution (None: the message had none, and is
    /// dead-lettered as malformed).
    pub group_id: Option<String>,
    /// The message body: Event JSON, or a create message.
    pub body: String,
    /// SQS's `ApproximateReceiveCount` (1: the first delivery): how many times the message
    /// was handed out, parks included; it sets how long a parked message is hidden.
    pub receive_count: u32,
}

impl Record {
    /// A record on its first delivery.
    pub fn new(
        message_id: impl Into<String>,
        receipt_handle: impl Into<String>,
        group_id: Option<String>,
        body: impl Into<String>,
    ) -> Self {
        Record {
            message_id: message_id.into(),
            receipt_handle: receipt_handle.into(),
            group_id,
            body: body.into(),
            receive_count: 1,
        }
    }

    /// A message as `SqsTransport::receive` (or the in-memory twin) hands it over: the
    /// record the event source would make of it.
    pub fn from_received(message: &harel_queue::Received) -> Self {
        Record {
            message_id: message.message_id.clone(),
            receipt_handle: message.receipt_handle.clone(),
            group_id: Some(message.group_id.clone()),
            body: message.body.clone(),
            receive_count: message.receive_count,
        }
    }

    /// What the idempotency key is computed from (`messageId`, as Powertools' SQS examples).
    pub fn idempotency_payload(&self) -> Value {
        serde_json::json!({"messageId": self.message_id})
    }
}

impl From<&harel_queue::Received> for Record {
    fn from(message: &harel_queue::Received) -> Self {
        Record::from_received(message)
    }
}
