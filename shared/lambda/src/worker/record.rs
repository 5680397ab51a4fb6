//! An SQS record of a Lambda event as the worker's [`Record`].

use harel_runtime::worker::Record;

/// The record the worker handles, from one SQS message of the Lambda event.
pub fn sqs_record(message: &aws_lambda_events::sqs::SqsMessage) -> Record {
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
        let record = sqs_record(&message(serde_json::json!({
            "MessageGroupId": "g",
            "ApproximateReceiveCount": "3",
        })));
        assert_eq!(record.group_id.as_deref(), Some("g"));
        assert_eq!(record.receive_count, 3);
        // absent (never from Lambda): the first delivery
        let record = sqs_record(&message(serde_json::json!({})));
        assert_eq!(record.receive_count, 1);
    }
}
