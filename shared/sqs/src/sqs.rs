//! `SqsTransport`: harel's `SqsTransport` (`harel/engine/transport/sqs.py`) over
//! `aws-sdk-sqs`, with batched sends (up to 10 per `SendMessageBatch`) and deterministic
//! deduplication ids in place of harel's per-send uuid.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_sqs::types::{
    MessageAttributeValue, MessageSystemAttributeName, QueueAttributeName,
    SendMessageBatchRequestEntry,
};
use aws_sdk_sqs::Client;

use harel_queue::error::{EntryFailure, TransportError};
pub use harel_queue::message::receive_count;
use harel_queue::message::{Outgoing, Received};
use harel_queue::transport::{dead_letter_message, visibility_seconds, Transport};
pub use harel_queue::transport::{MAX_BATCH, MAX_BATCH_BYTES};
/// Resends of entries SQS failed for reasons of its own (not the sender's fault).
const ENTRY_RETRIES: u32 = 3;
const RETRY_BASE: Duration = Duration::from_millis(100);

/// A FIFO queue on SQS as the [`Transport`] the worker, relay and sweeper publish through, plus
/// the consumer calls tools and tests need (receive, delete). Cheap to clone (the SDK client is).
#[derive(Clone, Debug)]
pub struct SqsTransport {
    client: Client,
    queue_url: String,
    dlq_url: Option<String>,
}

impl SqsTransport {
    /// The queue at `queue_url`, reached with `client`; no call is made here. Dead-lettering fails
    /// until [`with_dead_letter_queue`](Self::with_dead_letter_queue) names a DLQ.
    pub fn new(client: Client, queue_url: impl Into<String>) -> Self {
        SqsTransport {
            client,
            queue_url: queue_url.into(),
            dlq_url: None,
        }
    }

    /// Where `dead_letter` sends; without it, dead-lettering is an error (never a drop).
    pub fn with_dead_letter_queue(mut self, dlq_url: impl Into<String>) -> Self {
        self.dlq_url = Some(dlq_url.into());
        self
    }

    /// The SDK client it calls SQS with (for calls the port does not cover).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The URL of the main queue it publishes to.
    pub fn queue_url(&self) -> &str {
        &self.queue_url
    }

    /// Create (or find) the FIFO queue `name` (".fifo" is appended when missing) and return
    /// its URL: harel's `SqsTransport.create`, without its connect-retry loop (the SDK retries).
    pub async fn create_fifo_queue(client: &Client, name: &str) -> Result<String, TransportError> {
        let name = if name.ends_with(".fifo") {
            name.to_string()
        } else {
            format!("{name}.fifo")
        };
        let out = client
            .create_queue()
            .queue_name(&name)
            .attributes(QueueAttributeName::FifoQueue, "true")
            .send()
            .await
            .map_err(TransportError::sdk)?;
        out.queue_url().map(str::to_string).ok_or_else(|| {
            TransportError::request(format!("CreateQueue {name}: no QueueUrl in the answer"))
        })
    }

    /// Receive up to `max` (1..=10) messages from `queue_url` (a consumer's `claim`; the
    /// Lambda event source does this for the worker, tests and tools do it themselves).
    pub async fn receive_from(
        &self,
        queue_url: &str,
        max: i32,
        wait: Duration,
        visibility: Duration,
    ) -> Result<Vec<Received>, TransportError> {
        let out = self
            .client
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(max.clamp(1, 10))
            .wait_time_seconds(wait.as_secs().min(20) as i32)
            .visibility_timeout(visibility_seconds(visibility))
            .message_system_attribute_names(MessageSystemAttributeName::MessageGroupId)
            .message_system_attribute_names(MessageSystemAttributeName::MessageDeduplicationId)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .message_attribute_names("All")
            .send()
            .await
            .map_err(TransportError::sdk)?;
        let mut received = Vec::new();
        for m in out.messages() {
            let system = m.attributes();
            let get = |name: MessageSystemAttributeName| {
                system
                    .and_then(|a| a.get(&name))
                    .cloned()
                    .unwrap_or_default()
            };
            let mut attributes: Vec<(String, String)> = m
                .message_attributes()
                .map(|a| {
                    a.iter()
                        .filter_map(|(k, v)| v.string_value().map(|s| (k.clone(), s.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            attributes.sort();
            received.push(Received {
                message_id: m.message_id().unwrap_or_default().to_string(),
                receipt_handle: m.receipt_handle().unwrap_or_default().to_string(),
                group_id: get(MessageSystemAttributeName::MessageGroupId),
                dedupe_id: get(MessageSystemAttributeName::MessageDeduplicationId),
                body: m.body().unwrap_or_default().to_string(),
                attributes,
                receive_count: receive_count(&get(
                    MessageSystemAttributeName::ApproximateReceiveCount,
                )),
            });
        }
        Ok(received)
    }

    /// [`receive_from`](Self::receive_from) the main queue: up to `max` messages, waiting up to
    /// `wait` (at most 20 s) for one, each hidden from other receives for `visibility` (delete
    /// it before then).
    pub async fn receive(
        &self,
        max: i32,
        wait: Duration,
        visibility: Duration,
    ) -> Result<Vec<Received>, TransportError> {
        self.receive_from(&self.queue_url.clone(), max, wait, visibility)
            .await
    }

    /// harel's `ack`.
    pub async fn delete(
        &self,
        queue_url: &str,
        receipt_handle: &str,
    ) -> Result<(), TransportError> {
        self.client
            .delete_message()
            .queue_url(queue_url)
            .receipt_handle(receipt_handle)
            .send()
            .await
            .map_err(TransportError::sdk)?;
        Ok(())
    }

    /// One `SendMessageBatch` of `entries` (indices into `messages`); returns the failures.
    async fn send_chunk(
        &self,
        messages: &[Outgoing],
        entries: &[usize],
    ) -> Result<Vec<EntryFailure>, TransportError> {
        let mut request = Vec::with_capacity(entries.len());
        for &index in entries {
            let m = &messages[index];
            let entry = SendMessageBatchRequestEntry::builder()
                .id(index.to_string())
                .message_body(&m.body)
                .message_group_id(&m.group_id)
                .message_deduplication_id(&m.dedupe_id)
                .build()
                .map_err(|e| TransportError::request(format!("building a batch entry: {e}")))?;
            request.push(entry);
        }
        let out = self
            .client
            .send_message_batch()
            .queue_url(&self.queue_url)
            .set_entries(Some(request))
            .send()
            .await
            .map_err(TransportError::sdk)?;
        let mut failures = Vec::new();
        for f in out.failed() {
            let index = f
                .id()
                .parse::<usize>()
                .ok()
                .filter(|i| entries.contains(i))
                .ok_or_else(|| {
                    TransportError::request(format!(
                        "SendMessageBatch reported a failure for unknown entry {:?}",
                        f.id()
                    ))
                })?;
            failures.push(EntryFailure {
                index,
                code: f.code().to_string(),
                message: f.message().unwrap_or_default().to_string(),
                sender_fault: f.sender_fault(),
            });
        }
        // an entry neither successful nor failed would be lost silently: count it failed
        let answered: Vec<&str> = out
            .successful()
            .iter()
            .map(|s| s.id())
            .chain(out.failed().iter().map(|f| f.id()))
            .collect();
        for &index in entries {
            if !answered.contains(&index.to_string().as_str()) {
                failures.push(EntryFailure {
                    index,
                    code: "NoAnswer".into(),
                    message: "SendMessageBatch answered neither success nor failure".into(),
                    sender_fault: false,
                });
            }
        }
        Ok(failures)
    }
}

/// Split `indices` into batch calls: at most `MAX_BATCH` entries and `MAX_BATCH_BYTES` of body
/// each (a single larger body goes alone, and SQS says whether it fits).
fn chunks(messages: &[Outgoing], indices: &[usize]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut bytes = 0;
    for &i in indices {
        let size = messages[i].body.len();
        let start_new = match out.last() {
            None => true,
            Some(last) => last.len() == MAX_BATCH || bytes + size > MAX_BATCH_BYTES,
        };
        if start_new {
            out.push(Vec::new());
            bytes = 0;
        }
        bytes += size;
        out.last_mut().expect("a chunk was just pushed").push(i);
    }
    out
}

impl Transport for SqsTransport {
    async fn publish_batch(&self, messages: &[Outgoing]) -> Result<(), TransportError> {
        let mut pending: Vec<usize> = (0..messages.len()).collect();
        let mut delivered: Vec<usize> = Vec::new();
        let mut final_failures: Vec<EntryFailure> = Vec::new();
        let mut attempt = 0;
        while !pending.is_empty() {
            let mut retry: Vec<EntryFailure> = Vec::new();
            // groups with a message a failed call left unsent: their later messages are held
            // back (FIFO: none may overtake it); other groups' messages still go
            let mut held: Vec<(&str, String)> = Vec::new();
            for chunk in chunks(messages, &pending) {
                let (blocked, chunk): (Vec<usize>, Vec<usize>) = chunk
                    .into_iter()
                    .partition(|i| held.iter().any(|(g, _)| *g == messages[*i].group_id));
                for index in blocked {
                    let cause = held
                        .iter()
                        .find(|(g, _)| *g == messages[index].group_id)
                        .map(|(_, m)| m.clone())
                        .unwrap_or_default();
                    final_failures.push(EntryFailure {
                        index,
                        code: "RequestFailed".into(),
                        message: format!(
                            "held behind an unsent earlier message of its group: {cause}"
                        ),
                        sender_fault: false,
                    });
                }
                if chunk.is_empty() {
                    continue;
                }
                match self.send_chunk(messages, &chunk).await {
                    Ok(failures) => {
                        delivered.extend(
                            chunk
                                .iter()
                                .filter(|i| !failures.iter().any(|f| f.index == **i)),
                        );
                        for f in failures {
                            if f.sender_fault {
                                final_failures.push(f);
                            } else {
                                retry.push(f);
                            }
                        }
                    }
                    Err(e) => {
                        // the SDK already retried the call: this chunk is undelivered, and
                        // its groups' later messages are held behind it (one SQS refuses, as
                        // a body over its size limit, must not stop the other groups)
                        let message = e.to_string();
                        for &index in &chunk {
                            let group = messages[index].group_id.as_str();
                            if !held.iter().any(|(g, _)| *g == group) {
                                held.push((group, message.clone()));
                            }
                        }
                        final_failures.extend(chunk.into_iter().map(|index| EntryFailure {
                            index,
                            code: "RequestFailed".into(),
                            message: message.clone(),
                            sender_fault: false,
                        }));
                    }
                }
            }
            // a retryable entry of a held group is not resent ahead of the unsent message
            let (blocked, retry): (Vec<EntryFailure>, Vec<EntryFailure>) = retry
                .into_iter()
                .partition(|f| held.iter().any(|(g, _)| *g == messages[f.index].group_id));
            final_failures.extend(blocked);
            attempt += 1;
            if retry.is_empty() {
                break;
            }
            if attempt > ENTRY_RETRIES {
                final_failures.extend(retry);
                break;
            }
            tracing::warn!(
                count = retry.len(),
                attempt,
                "SendMessageBatch entries failed; resending"
            );
            tokio::time::sleep(RETRY_BASE * 2u32.pow(attempt - 1)).await;
            pending = retry.into_iter().map(|f| f.index).collect();
            pending.sort_unstable();
        }
        if final_failures.is_empty() {
            return Ok(());
        }
        delivered.sort_unstable();
        final_failures.sort_by_key(|f| f.index);
        if delivered.is_empty() && final_failures.len() == 1 && messages.len() == 1 {
            let f = &final_failures[0];
            if f.code == "RequestFailed" {
                return Err(TransportError::request(f.message.clone()));
            }
        }
        Err(TransportError::Partial {
            delivered,
            failed: final_failures,
        })
    }

    async fn park(&self, receipt_handle: &str, delay: Duration) -> Result<(), TransportError> {
        self.client
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(visibility_seconds(delay))
            .send()
            .await
            .map_err(TransportError::sdk)?;
        Ok(())
    }

    async fn dead_letter(
        &self,
        message_id: &str,
        group_id: Option<&str>,
        body: &str,
        reason: &str,
    ) -> Result<(), TransportError> {
        let dlq = self.dlq_url.as_deref().ok_or_else(|| {
            TransportError::request("no dead-letter queue configured (HAREL_DLQ_URL)")
        })?;
        let (message, attributes) = dead_letter_message(message_id, group_id, body, reason)?;
        let attributes = attributes
            .into_iter()
            .map(|(name, value)| {
                MessageAttributeValue::builder()
                    .data_type("String")
                    .string_value(value)
                    .build()
                    .map(|v| (name, v))
                    .map_err(|e| {
                        TransportError::request(format!("building a message attribute: {e}"))
                    })
            })
            .collect::<Result<HashMap<_, _>, _>>()?;
        self.client
            .send_message()
            .queue_url(dlq)
            .message_body(message.body)
            .message_group_id(message.group_id)
            .message_deduplication_id(message.dedupe_id)
            .set_message_attributes(Some(attributes))
            .send()
            .await
            .map_err(TransportError::sdk)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(body_len: usize) -> Outgoing {
        Outgoing::raw("g", "d".into(), "x".repeat(body_len)).expect("valid group")
    }

    #[test]
    fn receive_counts_read_as_sqs_sends_them() {
        assert_eq!(receive_count("3"), 3);
        assert_eq!(receive_count(""), 1);
        assert_eq!(receive_count("0"), 1);
        assert_eq!(receive_count("many"), 1);
    }

    #[test]
    fn chunks_respect_count_and_size() {
        let messages: Vec<Outgoing> = (0..23).map(|_| msg(10)).collect();
        let idx: Vec<usize> = (0..23).collect();
        let sizes: Vec<usize> = chunks(&messages, &idx).iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![10, 10, 3]);

        let big: Vec<Outgoing> = vec![msg(200 * 1024), msg(100 * 1024), msg(300 * 1024), msg(1)];
        let c = chunks(&big, &[0, 1, 2, 3]);
        assert_eq!(c, vec![vec![0], vec![1], vec![2], vec![3]]);
    }
}
