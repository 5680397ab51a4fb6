//! The in-memory twin of the SQS FIFO queue: per-group order, deduplication within SQS's
//! five-minute window, a dead-letter list and a park log, for in-process tests of the
//! handlers.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{EntryFailure, TransportError};
use crate::message::{Outgoing, Received};
use crate::transport::{dead_letter_message, Transport, REASON_ATTRIBUTE, SOURCE_ID_ATTRIBUTE};

/// SQS FIFO's deduplication interval.
pub const DEDUPE_WINDOW: Duration = Duration::from_secs(5 * 60);

#[derive(Default)]
struct State {
    queue: VecDeque<Received>,
    dead_letters: Vec<Received>,
    /// When each dead letter was sent to the DLQ (Unix ms), by its message id.
    dead_lettered_at: HashMap<String, i64>,
    parked: Vec<(String, Duration)>,
    seen: HashMap<String, Instant>,
    /// The dead-letter queue's own deduplication window (it is a queue of its own).
    dead_letters_seen: HashMap<String, Instant>,
    next_id: u64,
    /// Test hook: fail this many coming `publish_batch` calls whole.
    fail_calls: usize,
    publish_calls: usize,
}

/// A FIFO queue in memory. Messages are kept in send order, which is the order per group.
#[derive(Default)]
pub struct MemoryTransport {
    state: Mutex<State>,
}

impl MemoryTransport {
    /// An empty queue with an empty dead-letter list (the same as `default()`).
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // a panic while holding the lock leaves plain data behind: keep using it
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remove and return every queued message, in send order.
    pub fn take_all(&self) -> Vec<Received> {
        self.lock().queue.drain(..).collect()
    }

    /// Remove and return up to `max` queued messages, in send order.
    pub fn take(&self, max: usize) -> Vec<Received> {
        let mut state = self.lock();
        let n = max.min(state.queue.len());
        state.queue.drain(..n).collect()
    }

    /// Put received messages back at the front (they were not consumed): delivered again,
    /// each counts one more receive, as SQS counts them.
    pub fn requeue_front(&self, messages: Vec<Received>) {
        let mut state = self.lock();
        for mut m in messages.into_iter().rev() {
            m.receive_count = m.receive_count.saturating_add(1);
            state.queue.push_front(m);
        }
    }

    /// How many messages wait to be taken (dead letters are kept apart and not counted).
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// Whether no message is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of every message [`dead_letter`](Transport::dead_letter) moved here, in the order
    /// they came (the reason and source id are in `attributes`); unlike
    /// [`look_at_dead_letters`](Self::look_at_dead_letters), looking does not count a receive.
    pub fn dead_letters(&self) -> Vec<Received> {
        self.lock().dead_letters.clone()
    }

    /// A look at the dead letters as an SQS receive makes it: each counts one more receive.
    pub fn look_at_dead_letters(&self) -> Vec<crate::dead_letters::DeadLetter> {
        let mut state = self.lock();
        let State {
            dead_letters,
            dead_lettered_at,
            ..
        } = &mut *state;
        dead_letters
            .iter_mut()
            .map(|m| {
                m.receive_count += 1;
                crate::dead_letters::DeadLetter {
                    message_id: m.message_id.clone(),
                    receipt_handle: m.receipt_handle.clone(),
                    group_id: m.group_id.clone(),
                    body: m.body.clone(),
                    reason: m.attribute(REASON_ATTRIBUTE).map(str::to_string),
                    source_message_id: m.attribute(SOURCE_ID_ATTRIBUTE).map(str::to_string),
                    dead_lettered_at_ms: dead_lettered_at.get(&m.message_id).copied(),
                    // stored as 1 when dead-lettered: the looks so far, this one included
                    receive_count: m.receive_count - 1,
                }
            })
            .collect()
    }

    /// Remove the dead letter `message_id` (a DLQ delete).
    pub fn remove_dead_letter(&self, message_id: &str) {
        let mut state = self.lock();
        state.dead_letters.retain(|m| m.message_id != message_id);
        state.dead_lettered_at.remove(message_id);
    }

    /// Every park made: (receipt handle, delay).
    pub fn parked(&self) -> Vec<(String, Duration)> {
        self.lock().parked.clone()
    }

    /// Make the next `calls` calls of `publish_batch` fail whole, as a network error would.
    pub fn fail_next_publishes(&self, calls: usize) {
        self.lock().fail_calls = calls;
    }

    /// How many `publish_batch` calls were made (a request count for benchmarks).
    pub fn publish_calls(&self) -> usize {
        self.lock().publish_calls
    }

    fn enqueue(
        state: &mut State,
        message: &Outgoing,
        attributes: Vec<(String, String)>,
    ) -> Option<Received> {
        let now = Instant::now();
        state
            .seen
            .retain(|_, at| now.duration_since(*at) < DEDUPE_WINDOW);
        if state.seen.contains_key(&message.dedupe_id) {
            // SQS accepts a duplicate and silently does not deliver it
            return None;
        }
        state.seen.insert(message.dedupe_id.clone(), now);
        state.next_id += 1;
        let id = state.next_id;
        Some(Received {
            message_id: format!("mem-{id}"),
            receipt_handle: format!("receipt-{id}"),
            group_id: message.group_id.clone(),
            dedupe_id: message.dedupe_id.clone(),
            body: message.body.clone(),
            attributes,
            receive_count: 1,
        })
    }
}

impl Transport for MemoryTransport {
    async fn publish_batch(&self, messages: &[Outgoing]) -> Result<(), TransportError> {
        let mut state = self.lock();
        state.publish_calls += 1;
        if state.fail_calls > 0 {
            state.fail_calls -= 1;
            return Err(TransportError::Partial {
                delivered: Vec::new(),
                failed: (0..messages.len())
                    .map(|index| EntryFailure {
                        index,
                        code: "InjectedFailure".into(),
                        message: "MemoryTransport::fail_next_publishes".into(),
                        sender_fault: false,
                    })
                    .collect(),
            });
        }
        for m in messages {
            if let Some(r) = Self::enqueue(&mut state, m, Vec::new()) {
                state.queue.push_back(r);
            }
        }
        Ok(())
    }

    async fn park(&self, receipt_handle: &str, delay: Duration) -> Result<(), TransportError> {
        self.lock().parked.push((receipt_handle.to_string(), delay));
        Ok(())
    }

    async fn dead_letter(
        &self,
        message_id: &str,
        group_id: Option<&str>,
        body: &str,
        reason: &str,
    ) -> Result<(), TransportError> {
        let (message, attributes) = dead_letter_message(message_id, group_id, body, reason)?;
        let mut state = self.lock();
        let now = Instant::now();
        state
            .dead_letters_seen
            .retain(|_, at| now.duration_since(*at) < DEDUPE_WINDOW);
        if state
            .dead_letters_seen
            .insert(message.dedupe_id.clone(), now)
            .is_some()
        {
            // the same message dead-lettered again (a retry after a crash): SQS keeps one
            return Ok(());
        }
        state.next_id += 1;
        let id = state.next_id;
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        state.dead_lettered_at.insert(format!("mem-{id}"), now_ms);
        state.dead_letters.push(Received {
            message_id: format!("mem-{id}"),
            receipt_handle: format!("receipt-{id}"),
            group_id: message.group_id,
            dedupe_id: message.dedupe_id,
            body: message.body,
            attributes,
            receive_count: 1,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use harel_model::Event;

    use super::*;
    use crate::dedupe::DedupeKey;

    #[tokio::test]
    async fn keeps_order_per_group_and_drops_duplicates() {
        let t = MemoryTransport::new();
        let e1 = Event::new("A").with_id("1");
        let e2 = Event::new("B").with_id("2");
        let batch = vec![
            Outgoing::event("g1", &e1, DedupeKey::Event).expect("valid"),
            Outgoing::event("g2", &e1, DedupeKey::Event).expect("valid"),
            Outgoing::event("g1", &e2, DedupeKey::Event).expect("valid"),
        ];
        t.publish_batch(&batch).await.expect("sent");
        // the same deliveries again: all deduplicated
        t.publish_batch(&batch).await.expect("sent");
        let got = t.take_all();
        let g1: Vec<_> = got
            .iter()
            .filter(|m| m.group_id == "g1")
            .map(|m| m.body.clone())
            .collect();
        assert_eq!(got.len(), 3);
        assert_eq!(g1, vec![e1.to_json(), e2.to_json()]);
    }

    #[tokio::test]
    async fn injected_failures_report_nothing_delivered() {
        let t = MemoryTransport::new();
        t.fail_next_publishes(1);
        let m = Outgoing::event("g", &Event::new("A"), DedupeKey::Event).expect("valid");
        let err = t.publish(m.clone()).await.expect_err("injected");
        assert!(err.delivered().is_empty());
        t.publish(m).await.expect("second call goes through");
        assert_eq!(t.len(), 1);
    }
}
