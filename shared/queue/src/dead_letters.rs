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

use serde::Serialize;
use serde_json::Value;

use crate::error::TransportError;
use crate::inbound::{parse, Inbound, Malformed, CREATE_KIND};
use crate::memory::MemoryTransport;
use crate::message::Outgoing;
use crate::transport::MALFORMED_GROUP;

/// How long a look holds the messages it received before releasing them (long enough for
/// a redrive's send and delete, short enough that a crashed look frees them soon).
pub const LOOK_HOLD: Duration = Duration::from_secs(30);

/// One message on the dead-letter queue, as a look found it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeadLetter {
    /// The DLQ's message id (what `harel dlq show|redrive|delete` take).
    pub message_id: String,
    /// The handle of this look's receive: what `release` and `delete` take (not serialized:
    /// it means nothing outside this look).
    #[serde(skip)]
    pub receipt_handle: String,
    /// The message group: the target execution, or [`MALFORMED_GROUP`] when the original had
    /// none usable.
    pub group_id: String,
    /// The original message body, untouched (the Event JSON, or whatever the worker could not read).
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
