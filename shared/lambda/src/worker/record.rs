//! One SQS record, as the worker needs it: from the Lambda event or from a receive.

use serde_json::Value;

/// One SQS record, as the worker needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub message_id: String,
    pub receipt_handle: String,
    pub group_id: Option<String>,
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

    pub fn from_sqs(message: &aws_lambda_events::sqs::SqsMessage) -> Self {
        Record {
            message_id: message.message_id.clone().unwrap_or_default(),
            receipt_handle: message.receipt_handle.clone().unwrap_or_default(),
            group_id: message.attributes.get("MessageGroupId").cloned(),
            body: message.body.clone().unwrap_or_default(),
            receive_count: harel_queue::message::receive_count(
                message
                    .attributes
                    .get("ApproximateReceiveCount")
                    .map_or("", String::as_str),
            ),
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
    pub(super) fn idempotency_payload(&self) -> Value {
        serde_json::json!({"messageId": self.message_id})
    }
}

impl From<&harel_queue::Received> for Record {
    fn from(message: &harel_queue::Received) -> Self {
        Record::from_received(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(attributes: serde_json::Value) -> aws_lambda_events::sqs::SqsMessage {
        serde_json::from_value(serde_json::json!({
            "messageId": "m-1",
            "receiptHandle": "rh",
            "body": "{}",
            "attributes": attributes,
            "messageAttributes": {},
        }))
        .expect("an SQS record")
    }

    #[test]
    fn a_record_carries_sqss_receive_count() {
        let record = Record::from_sqs(&message(serde_json::json!({
            "MessageGroupId": "g",
            "ApproximateReceiveCount": "3",
        })));
        assert_eq!(record.group_id.as_deref(), Some("g"));
        assert_eq!(record.receive_count, 3);
        // absent (never from Lambda): the first delivery
        let record = Record::from_sqs(&message(serde_json::json!({})));
        assert_eq!(record.receive_count, 1);
    }
}
