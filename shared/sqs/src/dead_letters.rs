//! The dead-letter queue on SQS: [`DeadLetterQueue`] (the port, in `harel-queue`) over
//! `aws-sdk-sqs`. A look is a pass of receives held for a while, then released (SQS has no
//! peek): see the port's notes for what that costs.

use aws_sdk_sqs::types::{ChangeMessageVisibilityBatchRequestEntry, MessageSystemAttributeName};
use aws_sdk_sqs::Client;

use harel_queue::dead_letters::{DeadLetter, DeadLetterQueue};
use harel_queue::error::TransportError;
use harel_queue::transport::{visibility_seconds, REASON_ATTRIBUTE, SOURCE_ID_ATTRIBUTE};
use std::time::Duration;

/// Receives of one pass before it stops (10 messages each): a bound, not a page size.
const MAX_RECEIVES: usize = 100;

/// The DLQ on SQS.
#[derive(Clone, Debug)]
pub struct SqsDeadLetters {
    client: Client,
    url: String,
}

impl SqsDeadLetters {
    /// The dead-letter queue at `url` (the main queue's DLQ), reached with `client`; no call is
    /// made here.
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        SqsDeadLetters {
            client,
            url: url.into(),
        }
    }

    /// The dead-letter queue's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    async fn receive_batch(&self, hold: Duration) -> Result<Vec<DeadLetter>, TransportError> {
        let out = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(10)
            .wait_time_seconds(0)
            .visibility_timeout(visibility_seconds(hold).max(1))
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .message_attribute_names("All")
            .send()
            .await
            .map_err(TransportError::sdk)?;
        Ok(out
            .messages()
            .iter()
            .map(|m| {
                let system = |name: MessageSystemAttributeName| {
                    m.attributes().and_then(|a| a.get(&name)).cloned()
                };
                let attribute = |name: &str| {
                    m.message_attributes()
                        .and_then(|a| a.get(name))
                        .and_then(|v| v.string_value())
                        .map(str::to_string)
                };
                DeadLetter {
                    message_id: m.message_id().unwrap_or_default().to_string(),
                    receipt_handle: m.receipt_handle().unwrap_or_default().to_string(),
                    group_id: system(MessageSystemAttributeName::MessageGroupId)
                        .unwrap_or_default(),
                    body: m.body().unwrap_or_default().to_string(),
                    reason: attribute(REASON_ATTRIBUTE),
                    source_message_id: attribute(SOURCE_ID_ATTRIBUTE),
                    dead_lettered_at_ms: system(MessageSystemAttributeName::SentTimestamp)
                        .and_then(|v| v.parse().ok()),
                    receive_count: crate::sqs::receive_count(
                        &system(MessageSystemAttributeName::ApproximateReceiveCount)
                            .unwrap_or_default(),
                    ),
                }
            })
            .collect())
    }
}

impl DeadLetterQueue for SqsDeadLetters {
    async fn receive_all(&self, hold: Duration) -> Result<Vec<DeadLetter>, TransportError> {
        let mut all: Vec<DeadLetter> = Vec::new();
        for _ in 0..MAX_RECEIVES {
            let batch = self.receive_batch(hold).await?;
            if batch.is_empty() {
                break;
            }
            for letter in batch {
                if !all.iter().any(|l| l.message_id == letter.message_id) {
                    all.push(letter);
                }
            }
        }
        Ok(all)
    }

    async fn release(&self, letters: &[DeadLetter]) -> Result<(), TransportError> {
        for chunk in letters.chunks(10) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    ChangeMessageVisibilityBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(&l.receipt_handle)
                        .visibility_timeout(0)
                        .build()
                        .map_err(|e| TransportError::request(format!("building a release: {e}")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let out = self
                .client
                .change_message_visibility_batch()
                .queue_url(&self.url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(TransportError::sdk)?;
            if let Some(f) = out.failed().first() {
                // not lost: it comes back by itself when the hold runs out
                tracing::warn!(
                    code = f.code(),
                    "a dead letter was not released; it is visible again after the hold"
                );
            }
        }
        Ok(())
    }

    async fn delete(&self, letter: &DeadLetter) -> Result<(), TransportError> {
        self.client
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(&letter.receipt_handle)
            .send()
            .await
            .map_err(TransportError::sdk)?;
        Ok(())
    }
}
