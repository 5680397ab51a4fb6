//! The bus port on EventBridge: `PutEvents` for the committed events, and a standard SQS
//! queue for the ones that cannot be put (the body is the event as committed, the reason in
//! the `harel-dead-letter-reason` attribute, as the worker's dead letters carry theirs).

use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use aws_sdk_sqs::types::MessageAttributeValue;
use harel_runtime::delivery::events::{BusError, EntryFailure, EventBus};
use harel_store::BusEvent;

/// The message attribute with why an event was dead-lettered.
pub const REASON_ATTRIBUTE: &str = "harel-dead-letter-reason";

/// `bus` (a name or an ARN) and its dead-letter queue.
#[derive(Clone, Debug)]
pub struct EventBridgeBus {
    client: aws_sdk_eventbridge::Client,
    bus: String,
    sqs: aws_sdk_sqs::Client,
    dlq_url: String,
}

impl EventBridgeBus {
    /// Puts events on `bus` with `client`; an event it cannot put is sent with `sqs` to the
    /// standard queue at `dlq_url`, with its reason.
    pub fn new(
        client: aws_sdk_eventbridge::Client,
        bus: impl Into<String>,
        sqs: aws_sdk_sqs::Client,
        dlq_url: impl Into<String>,
    ) -> Self {
        EventBridgeBus {
            client,
            bus: bus.into(),
            sqs,
            dlq_url: dlq_url.into(),
        }
    }

    fn entry(&self, event: &BusEvent) -> PutEventsRequestEntry {
        let secs = event.time.max(0.0);
        PutEventsRequestEntry::builder()
            .event_bus_name(&self.bus)
            .source(&event.source)
            .detail_type(&event.detail_type)
            .detail(serde_json::Value::Object(event.detail.clone()).to_string())
            .time(aws_smithy_types::DateTime::from_secs_f64(secs))
            .resources(format!("harel:execution/{}", event.execution_id))
            .build()
    }
}

fn describe<E: std::error::Error>(err: &E) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl EventBus for EventBridgeBus {
    async fn put(&self, events: &[BusEvent]) -> Result<Vec<Option<EntryFailure>>, BusError> {
        let entries = events.iter().map(|e| self.entry(e)).collect();
        let answer = self
            .client
            .put_events()
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(|e| BusError::Put(describe(&e)))?;
        let results = answer.entries();
        if results.len() != events.len() {
            return Err(BusError::Put(format!(
                "PutEvents answered {} entries for {}",
                results.len(),
                events.len()
            )));
        }
        Ok(results
            .iter()
            .map(|r| {
                r.error_code().map(|code| EntryFailure {
                    code: code.to_string(),
                    message: r.error_message().unwrap_or_default().to_string(),
                })
            })
            .collect())
    }

    async fn dead_letter(&self, event: &BusEvent, reason: &str) -> Result<(), BusError> {
        let failed = |message: String| BusError::DeadLetter {
            event_id: event.event_id.clone(),
            message,
        };
        let body = serde_json::to_string(event).map_err(|e| failed(e.to_string()))?;
        let attribute = MessageAttributeValue::builder()
            .data_type("String")
            .string_value(reason)
            .build()
            .map_err(|e| failed(e.to_string()))?;
        self.sqs
            .send_message()
            .queue_url(&self.dlq_url)
            .message_body(body)
            .message_attributes(REASON_ATTRIBUTE, attribute)
            .send()
            .await
            .map_err(|e| failed(describe(&e)))?;
        Ok(())
    }
}
