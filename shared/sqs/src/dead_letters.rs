//! Reading and moving the dead-letter queue: the operator's side of what the worker's
//! [`Transport::dead_letter`](crate::Transport::dead_letter) and SQS's own redrive policy
//! put there.
//!
//! SQS has no peek. A look at the DLQ is a pass of receives with a short visibility timeout
//! ([`DeadLetterQueue::receive_all`]), after which the caller deletes what it moved and
//! releases the rest ([`DeadLetterQueue::release`]: visible again at once). What that costs,
//! said plainly: every look adds one to each message's `ApproximateReceiveCount`, and on a
//! FIFO queue a receive hands out at most the first batch of a group while that batch is
//! held, so one pass sees at most the first 10 dead letters of each execution (the rest
//! come into view as those are redriven or deleted). The DLQ's own redrive policy is not
//! set by the template, so the receives never move a dead letter on.

use std::future::Future;
use std::time::Duration;

use aws_sdk_sqs::types::{ChangeMessageVisibilityBatchRequestEntry, MessageSystemAttributeName};
use aws_sdk_sqs::Client;
use serde::Serialize;
use serde_json::Value;

use crate::error::TransportError;
use crate::inbound::{parse, Inbound, Malformed, CREATE_KIND};
use crate::memory::MemoryTransport;
use crate::message::Outgoing;
use crate::transport::{
    visibility_seconds, MALFORMED_GROUP, REASON_ATTRIBUTE, SOURCE_ID_ATTRIBUTE,
};

/// How long a look holds the messages it received before releasing them (long enough for
/// a redrive's send and delete, short enough that a crashed look frees them soon).
pub const LOOK_HOLD: Duration = Duration::from_secs(30);
/// Receives of one pass before it stops (10 messages each): a bound, not a page size.
const MAX_RECEIVES: usize = 100;

/// One message on the dead-letter queue, as a look found it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeadLetter {
    /// The DLQ's message id (what `harel dlq show|redrive|delete` take).
    pub message_id: String,
    #[serde(skip)]
    pub receipt_handle: String,
    /// The message group: the target execution, or [`MALFORMED_GROUP`] when the original had
    /// none usable.
    pub group_id: String,
    pub body: String,
    /// The worker's `harel-dead-letter-reason`; none when SQS's redrive policy moved it (the
    /// worker failed it `maxReceiveCount` times without deciding it could never succeed).
    pub reason: Option<String>,
    /// The original message's id on the main queue, when the worker moved it.
    pub source_message_id: Option<String>,
    /// When it was sent to the DLQ, Unix milliseconds (SQS's `SentTimestamp`).
    pub dead_lettered_at_ms: Option<i64>,
    /// SQS's `ApproximateReceiveCount` on the DLQ, this look included: each look adds one.
    pub receive_count: u32,
}

impl DeadLetter {
    /// The execution it was meant for (none for a malformed message's group).
    pub fn execution_id(&self) -> Option<&str> {
        (self.group_id != MALFORMED_GROUP).then_some(self.group_id.as_str())
    }

    /// The event kind the body names (`harel:create` for a create), when it reads as JSON
    /// with a string `kind`.
    pub fn event_kind(&self) -> Option<String> {
        let value: Value = serde_json::from_str(&self.body).ok()?;
        value.get("kind")?.as_str().map(str::to_string)
    }

    /// Whether it is a create message (its execution does not exist yet when it is due).
    pub fn is_create(&self) -> bool {
        self.event_kind().as_deref() == Some(CREATE_KIND)
    }

    /// The message that puts it back on the main queue: the same body in the same group
    /// (the execution), a fresh deduplication id (SQS would drop a resend of the original's
    /// within five minutes, and the dead letter's own id is not the main queue's), and no
    /// reason attribute. A message the worker could not read is refused with why: it would
    /// only come straight back.
    pub fn redrive_message(&self) -> Result<(Inbound, Outgoing), Malformed> {
        let Some(group) = self.execution_id() else {
            return Err(Malformed(format!(
                "it has no usable message group (it is in {MALFORMED_GROUP}): the worker cannot tell which execution it is for"
            )));
        };
        let (_, inbound) = parse(Some(group), &self.body)?;
        let dedupe = format!("redrive:{}", uuid::Uuid::new_v4().simple());
        let outgoing = Outgoing::raw(group, dedupe, self.body.clone())
            .map_err(|e| Malformed(e.to_string()))?;
        Ok((inbound, outgoing))
    }
}

/// The dead-letter queue as the operator's tools use it.
pub trait DeadLetterQueue: Send + Sync {
    /// One look: every message it can see, each held for `hold` (release or delete them).
    fn receive_all(
        &self,
        hold: Duration,
    ) -> impl Future<Output = Result<Vec<DeadLetter>, TransportError>> + Send;

    /// Make `letters` visible again at once.
    fn release(
        &self,
        letters: &[DeadLetter],
    ) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// Remove `letter` for good.
    fn delete(
        &self,
        letter: &DeadLetter,
    ) -> impl Future<Output = Result<(), TransportError>> + Send;
}

/// The DLQ on SQS.
#[derive(Clone, Debug)]
pub struct SqsDeadLetters {
    client: Client,
    url: String,
}

impl SqsDeadLetters {
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        SqsDeadLetters {
            client,
            url: url.into(),
        }
    }

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

/// The in-memory twin's dead letters (what its `dead_letter` kept).
impl DeadLetterQueue for MemoryTransport {
    async fn receive_all(&self, _hold: Duration) -> Result<Vec<DeadLetter>, TransportError> {
        Ok(self.look_at_dead_letters())
    }

    async fn release(&self, _letters: &[DeadLetter]) -> Result<(), TransportError> {
        Ok(())
    }

    async fn delete(&self, letter: &DeadLetter) -> Result<(), TransportError> {
        self.remove_dead_letter(&letter.message_id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use harel_model::Event;

    use super::*;
    use crate::transport::Transport;

    fn letter(group: &str, body: &str) -> DeadLetter {
        DeadLetter {
            message_id: "m".into(),
            receipt_handle: "r".into(),
            group_id: group.into(),
            body: body.into(),
            reason: Some("why".into()),
            source_message_id: None,
            dead_lettered_at_ms: None,
            receive_count: 1,
        }
    }

    #[test]
    fn a_redrive_keeps_the_group_and_body_with_a_fresh_dedupe_id() {
        let body = Event::new("Pay").with_id("e1").to_json();
        let l = letter("order-1", &body);
        let (inbound, a) = l.redrive_message().expect("redrivable");
        let (_, b) = l.redrive_message().expect("redrivable");
        assert!(matches!(inbound, Inbound::Event(e) if e.kind == "Pay"));
        assert_eq!(
            (a.group_id.as_str(), a.body.as_str()),
            ("order-1", body.as_str())
        );
        assert_ne!(a.dedupe_id, b.dedupe_id, "each redrive is a new message");
        assert_eq!(l.event_kind().as_deref(), Some("Pay"));
    }

    #[test]
    fn a_malformed_dead_letter_is_refused_with_why() {
        let no_group = letter(MALFORMED_GROUP, r#"{"kind":"Pay"}"#);
        let err = no_group.redrive_message().expect_err("no execution");
        assert!(err.0.contains("no usable message group"), "{err}");
        let not_json = letter("order-1", "{oops");
        let err = not_json.redrive_message().expect_err("not JSON");
        assert!(err.0.contains("not JSON"), "{err}");
        assert_eq!(not_json.event_kind(), None);
    }

    #[tokio::test]
    async fn the_memory_twin_lists_and_deletes_what_was_dead_lettered() {
        let t = MemoryTransport::new();
        let body = Event::new("Pay").with_id("e1").to_json();
        t.dead_letter("src-1", Some("order-1"), &body, "bad data")
            .await
            .expect("dead-lettered");
        let seen = t.receive_all(LOOK_HOLD).await.expect("look");
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].reason.as_deref(), Some("bad data"));
        assert_eq!(seen[0].source_message_id.as_deref(), Some("src-1"));
        assert_eq!(seen[0].execution_id(), Some("order-1"));
        assert!(seen[0].dead_lettered_at_ms.is_some());
        let again = t.receive_all(LOOK_HOLD).await.expect("look");
        assert_eq!(again[0].receive_count, 2, "every look is a receive");
        let (_, out) = seen[0].redrive_message().expect("redrivable");
        t.publish(out).await.expect("sent");
        t.delete(&seen[0]).await.expect("deleted");
        assert!(t.receive_all(LOOK_HOLD).await.expect("look").is_empty());
        assert_eq!(t.take_all()[0].body, body);
    }
}
