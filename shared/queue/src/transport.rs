//! The transport port: what the worker, relay and sweeper need from a queue.

use std::future::Future;
use std::time::Duration;

use crate::error::TransportError;
use crate::message::Outgoing;

/// SQS's cap on entries per `SendMessageBatch` (a sender batches by it).
pub const MAX_BATCH: usize = 10;
/// The payload cap of one batch call, kept at the long-standing 256 KiB so every endpoint
/// (older regions, emulators) accepts it.
pub const MAX_BATCH_BYTES: usize = 256 * 1024;
/// The message attribute that carries why a message was dead-lettered.
pub const REASON_ATTRIBUTE: &str = "harel-dead-letter-reason";
/// The message attribute that carries the dead-lettered message's original SQS message id.
pub const SOURCE_ID_ATTRIBUTE: &str = "harel-source-message-id";
/// The group of a dead letter whose original group is unknown or unusable.
pub const MALFORMED_GROUP: &str = "harel-malformed";

/// Publishing to groups of a FIFO queue, plus the two consumer-side moves the worker makes.
pub trait Transport: Send + Sync {
    /// Send `messages`, in order per group. `Ok` means every one was accepted; on `Err`, the
    /// error says which were delivered (`TransportError::delivered`) so a caller acks only
    /// those and leaves the rest for a retry: nothing is dropped.
    fn publish_batch(
        &self,
        messages: &[Outgoing],
    ) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// Send one message; the same promise as [`publish_batch`](Self::publish_batch) for a batch of
    /// one.
    fn publish(
        &self,
        message: Outgoing,
    ) -> impl Future<Output = Result<(), TransportError>> + Send {
        async move { self.publish_batch(std::slice::from_ref(&message)).await }
    }

    /// Hide a received message for `delay` (SQS's native park: ChangeMessageVisibility), so
    /// it comes back later instead of at once.
    fn park(
        &self,
        receipt_handle: &str,
        delay: Duration,
    ) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// Move a message that can never succeed to the dead-letter queue, with `reason` attached.
    /// `group_id` is its original group when it had a usable one.
    fn dead_letter(
        &self,
        message_id: &str,
        group_id: Option<&str>,
        body: &str,
        reason: &str,
    ) -> impl Future<Output = Result<(), TransportError>> + Send;
}

/// Visibility timeouts are whole seconds within SQS's 12-hour ceiling.
pub fn visibility_seconds(delay: Duration) -> i32 {
    const MAX: u64 = 12 * 60 * 60;
    delay.as_secs().min(MAX) as i32
}

/// The dead letter's group: the original one when SQS would accept it again.
pub fn dead_letter_group(group_id: Option<&str>) -> String {
    match group_id {
        Some(g) if crate::message::check_group_id(g).is_ok() => g.to_string(),
        _ => MALFORMED_GROUP.to_string(),
    }
}

/// What a dead letter is on the wire, for every adapter alike: the body (a placeholder for
/// an empty one, which SQS refuses), the original group when SQS would accept it again, a
/// dedupe id from the source message id (a message dead-lettered twice is kept once), and
/// the reason and source attributes (`unspecified` for an empty reason, likewise refused).
pub fn dead_letter_message(
    message_id: &str,
    group_id: Option<&str>,
    body: &str,
    reason: &str,
) -> Result<(Outgoing, Vec<(String, String)>), TransportError> {
    let body = if body.is_empty() {
        "(empty body)"
    } else {
        body
    };
    let reason = if reason.is_empty() {
        "unspecified"
    } else {
        reason
    };
    let message = Outgoing::raw(
        dead_letter_group(group_id),
        crate::dedupe::DedupeKey::Explicit(format!("dlq:{message_id}")).dedupe_id("", ""),
        body.to_string(),
    )?;
    let attributes = vec![
        (REASON_ATTRIBUTE.to_string(), reason.to_string()),
        (SOURCE_ID_ATTRIBUTE.to_string(), message_id.to_string()),
    ];
    Ok((message, attributes))
}

/// A shared transport (the worker and the test that inspects the queue hold the same one).
impl<T: Transport> Transport for std::sync::Arc<T> {
    fn publish_batch(
        &self,
        messages: &[Outgoing],
    ) -> impl Future<Output = Result<(), TransportError>> + Send {
        (**self).publish_batch(messages)
    }

    fn park(
        &self,
        receipt_handle: &str,
        delay: Duration,
    ) -> impl Future<Output = Result<(), TransportError>> + Send {
        (**self).park(receipt_handle, delay)
    }

    fn dead_letter(
        &self,
        message_id: &str,
        group_id: Option<&str>,
        body: &str,
        reason: &str,
    ) -> impl Future<Output = Result<(), TransportError>> + Send {
        (**self).dead_letter(message_id, group_id, body, reason)
    }
}
