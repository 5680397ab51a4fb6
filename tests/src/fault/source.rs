//! The harness plays Lambda's SQS event source mapping: receive from the FIFO queue, hand the
//! worker `SqsEvent` records (with `MessageGroupId` and `ApproximateReceiveCount`), delete the
//! records it reports done; a failed or dead invocation's records come back after their
//! visibility timeout.

use std::collections::HashMap;
use std::time::Duration;

use aws_lambda_events::sqs::SqsMessage;
use aws_sdk_sqs::types::MessageSystemAttributeName;
use harel_lambda::Record;

use super::FaultError;

/// One message as [`receive`] got it, kept for the worker's record and for its settling
/// ([`delete`], [`release`]).
#[derive(Clone, Debug)]
pub struct Received {
    /// The message as Lambda's SQS event would carry it: body, `MessageGroupId`,
    /// `ApproximateReceiveCount` and the other system attributes, the message attributes,
    /// `eventSource` `aws:sqs`.
    pub message: SqsMessage,
}

impl Received {
    /// The worker's record of it, built as the worker function builds it from its event.
    pub fn record(&self) -> Record {
        harel_lambda::worker::sqs_record(&self.message)
    }
    /// SQS's message id (the worker's idempotency key; `""` if SQS gave none).
    pub fn message_id(&self) -> &str {
        self.message.message_id.as_deref().unwrap_or_default()
    }
    /// The handle of this receive, which [`delete`] and [`release`] need (`""` if none).
    pub fn receipt_handle(&self) -> &str {
        self.message.receipt_handle.as_deref().unwrap_or_default()
    }
    /// Its FIFO message group (the target execution's id for harel's messages; `""` if none).
    pub fn group(&self) -> &str {
        self.message
            .attributes
            .get("MessageGroupId")
            .map(String::as_str)
            .unwrap_or_default()
    }
}

fn sqs_err<E, R>(what: &'static str) -> impl Fn(aws_sdk_sqs::error::SdkError<E, R>) -> FaultError
where
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    move |e| {
        FaultError::Aws(format!(
            "{what}: {}",
            aws_sdk_sqs::error::DisplayErrorContext(e)
        ))
    }
}

/// The event source's calls, one at a time on the moto server. moto's FIFO `ReceiveMessage`
/// decides which groups are busy from a snapshot taken when the call starts and takes no
/// lock: two receives at once (the storm's concurrent pollers) can hand out a group's later
/// message while an earlier one, just received by the other call, is in flight. A worker
/// then processes a group out of order, which SQS never does (found by the long storm: a
/// region's `Cancel` before the `PaymentFailed` sent ahead of it, a parent's `Finished`
/// before a redelivered domain event).
static EVENT_SOURCE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Up to 10 messages, hidden for `visibility`.
pub async fn receive(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    visibility: Duration,
) -> Result<Vec<Received>, FaultError> {
    let _alone = EVENT_SOURCE.lock().await;
    let out = sqs
        .receive_message()
        .queue_url(queue_url)
        .max_number_of_messages(10)
        .visibility_timeout(visibility.as_secs() as i32)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .message_attribute_names("All")
        .send()
        .await
        .map_err(sqs_err("ReceiveMessage"))?;
    let mut got = Vec::new();
    for m in out.messages() {
        let attributes: HashMap<String, String> = m
            .attributes()
            .map(|a| {
                a.iter()
                    .map(|(k, v)| (k.as_str().to_string(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let mut message = SqsMessage::default();
        message.message_id = m.message_id().map(str::to_string);
        message.receipt_handle = m.receipt_handle().map(str::to_string);
        message.body = m.body().map(str::to_string);
        message.attributes = attributes;
        if let Some(attrs) = m.message_attributes() {
            for (k, v) in attrs {
                let mut a = aws_lambda_events::sqs::SqsMessageAttribute::default();
                a.string_value = v.string_value().map(str::to_string);
                a.data_type = Some(v.data_type().to_string());
                message.message_attributes.insert(k.clone(), a);
            }
        }
        message.event_source = Some("aws:sqs".into());
        got.push(Received { message });
    }
    Ok(got)
}

/// Done: delete it. A stale receipt handle (another receive took it since) is not an error
/// of the worker's: SQS's answer is ignored, the message comes back and is deduplicated.
pub async fn delete(sqs: &aws_sdk_sqs::Client, queue_url: &str, m: &Received) {
    let _alone = EVENT_SOURCE.lock().await;
    let _ = sqs
        .delete_message()
        .queue_url(queue_url)
        .receipt_handle(m.receipt_handle())
        .send()
        .await;
}

/// Make it visible again after `after` (a reported failure, or the time a dead invocation's
/// messages wait out their visibility timeout).
pub async fn release(sqs: &aws_sdk_sqs::Client, queue_url: &str, m: &Received, after: Duration) {
    let _alone = EVENT_SOURCE.lock().await;
    let _ = sqs
        .change_message_visibility()
        .queue_url(queue_url)
        .receipt_handle(m.receipt_handle())
        .visibility_timeout(after.as_secs() as i32)
        .send()
        .await;
}

/// (visible, in flight, delayed) messages.
pub async fn depth(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
) -> Result<(u64, u64, u64), FaultError> {
    use aws_sdk_sqs::types::QueueAttributeName as A;
    let out = sqs
        .get_queue_attributes()
        .queue_url(queue_url)
        .attribute_names(A::ApproximateNumberOfMessages)
        .attribute_names(A::ApproximateNumberOfMessagesNotVisible)
        .attribute_names(A::ApproximateNumberOfMessagesDelayed)
        .send()
        .await
        .map_err(sqs_err("GetQueueAttributes"))?;
    let get = |name: A| -> u64 {
        out.attributes()
            .and_then(|a| a.get(&name))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Ok((
        get(A::ApproximateNumberOfMessages),
        get(A::ApproximateNumberOfMessagesNotVisible),
        get(A::ApproximateNumberOfMessagesDelayed),
    ))
}

/// A client's send: the dedupe id is the event's id, so a client retry is dropped by SQS.
pub async fn send(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    group: &str,
    dedupe_id: &str,
    body: String,
) -> Result<(), FaultError> {
    sqs.send_message()
        .queue_url(queue_url)
        .message_group_id(group)
        .message_deduplication_id(dedupe_id)
        .message_body(body)
        .send()
        .await
        .map_err(sqs_err("SendMessage"))?;
    Ok(())
}
