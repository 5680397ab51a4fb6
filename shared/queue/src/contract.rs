//! The behaviour every queue adapter owes its hosts, written once and run against each one
//! (`transport_contract_tests!(make)` expands to one test per case): the in-memory twin in
//! this crate's tests, SQS on the moto server in `harel-sqs`'s. `make()` must return a fresh,
//! empty queue with its own dead-letter queue.
//!
//! What is not here, and why: the twin records a park (`MemoryTransport::parked`) instead of
//! holding the message and bringing it back, because the in-process pumps take a message
//! off the queue when they receive it; so the park case checks that a parked message is out
//! of view, and the SQS suite checks its return on its own.
//!
//! Test support: failures panic with a message naming the broken promise.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use harel_model::Event;

use crate::dead_letters::{DeadLetter, DeadLetterQueue};
use crate::dedupe::DedupeKey;
use crate::message::{Outgoing, Received};
use crate::transport::{Transport, MALFORMED_GROUP};

/// A queue under test: the transport a host publishes through, the dead-letter queue an
/// operator reads, and the consumer's side that a Lambda event source plays in production.
pub trait QueueUnderTest: Send + Sync {
    /// The adapter's publishing side, as the worker, relay and sweeper hold it.
    type Queue: Transport;
    /// The adapter's dead-letter queue, as `harel dlq` reads it.
    type DeadLetters: DeadLetterQueue;

    /// The queue the cases publish to, park on and dead-letter through.
    fn transport(&self) -> &Self::Queue;
    /// The dead-letter queue that belongs to [`transport`](Self::transport).
    fn dead_letters(&self) -> &Self::DeadLetters;

    /// Receive up to `max` visible messages without deleting them (what a consumer holds
    /// while it works: the receipt handles `park` takes).
    fn receive(&self, max: usize) -> impl Future<Output = Vec<Received>> + Send;

    /// Receive and delete every message visible now, in delivery order.
    fn drain(&self) -> impl Future<Output = Vec<Received>> + Send;
}

/// The in-memory twin: a receive takes the messages off the queue, as its pumps do.
impl QueueUnderTest for crate::memory::MemoryTransport {
    type Queue = Self;
    type DeadLetters = Self;

    fn transport(&self) -> &Self {
        self
    }

    fn dead_letters(&self) -> &Self {
        self
    }

    async fn receive(&self, max: usize) -> Vec<Received> {
        self.take(max)
    }

    async fn drain(&self) -> Vec<Received> {
        self.take_all()
    }
}

/// One test per contract case, each on a fresh queue from `$make().await`.
/// `transport_contract_tests!(make, ignore = "why")` marks every case `#[ignore]` with the
/// reason, for an adapter that needs something plain `cargo test` does not start.
#[macro_export]
macro_rules! transport_contract_tests {
    ($make:path) => {
        // `cfg(all())` is always true: no attribute, with the arm below taking one
        $crate::transport_contract_tests!($make; [cfg(all())]);
    };
    ($make:path, ignore = $why:literal) => {
        $crate::transport_contract_tests!($make; [ignore = $why]);
    };
    ($make:path; $attr:tt) => {
        $crate::transport_contract_tests!(@cases $make; $attr;
            a_batch_keeps_each_groups_order_and_bodies,
            a_repeated_dedupe_id_is_delivered_once,
            a_fan_out_reaches_every_group,
            a_batch_over_the_byte_cap_is_split_and_delivered_whole,
            a_parked_message_is_out_of_view,
            a_dead_letter_carries_its_reason_source_and_group,
            a_dead_letter_without_a_usable_group_goes_to_the_malformed_group,
            a_message_dead_lettered_twice_is_kept_once,
            an_empty_body_and_reason_are_dead_lettered_with_placeholders,
            a_deleted_dead_letter_is_gone_and_a_released_one_stays);
    };
    (@cases $make:path; $attr:tt; $($case:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #$attr
            async fn $case() {
                $crate::contract::$case(&$make().await).await;
            }
        )*
    };
}

fn unique(tag: &str) -> String {
    format!("{tag}-{}", uuid::Uuid::new_v4().simple())
}

fn event(name: &str, n: usize) -> Event {
    let mut data = serde_json::Map::new();
    data.insert("n".into(), serde_json::json!(n));
    Event::new(name).with_data(data)
}

fn message(group: &str, event: &Event) -> Outgoing {
    Outgoing::event(group, event, DedupeKey::Event).expect("a valid message")
}

async fn publish<Q: QueueUnderTest>(q: &Q, messages: &[Outgoing]) {
    if let Err(e) = q.transport().publish_batch(messages).await {
        panic!("publish_batch of {} messages failed: {e}", messages.len());
    }
}

async fn look<Q: QueueUnderTest>(q: &Q) -> Vec<DeadLetter> {
    match q.dead_letters().receive_all(Duration::from_secs(30)).await {
        Ok(letters) => letters,
        Err(e) => panic!("a look at the dead letters failed: {e}"),
    }
}

/// The bodies received per group, in delivery order.
fn by_group(received: &[Received]) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in received {
        groups
            .entry(m.group_id.clone())
            .or_default()
            .push(m.body.clone());
    }
    groups
}

/// 25 messages over 3 groups (more than one `SendMessageBatch`): each group's messages
/// arrive in the order sent, with the bodies and dedupe ids sent.
pub async fn a_batch_keeps_each_groups_order_and_bodies<Q: QueueUnderTest>(q: &Q) {
    let groups: Vec<String> = (0..3).map(|g| unique(&format!("order-{g}"))).collect();
    let sent: Vec<Outgoing> = (0..25)
        .map(|i| message(&groups[i % 3], &event(&format!("E{i}"), i)))
        .collect();
    publish(q, &sent).await;
    let received = q.drain().await;
    assert_eq!(
        received.len(),
        sent.len(),
        "every message of the batch is delivered once"
    );
    assert_eq!(
        by_group(&received),
        by_group(
            &sent
                .iter()
                .map(|m| Received {
                    message_id: String::new(),
                    receipt_handle: String::new(),
                    group_id: m.group_id.clone(),
                    dedupe_id: m.dedupe_id.clone(),
                    body: m.body.clone(),
                    attributes: Vec::new(),
                    receive_count: 1,
                })
                .collect::<Vec<_>>()
        ),
        "each group's bodies arrive in the order sent"
    );
    for m in &received {
        let original = sent
            .iter()
            .find(|s| s.body == m.body)
            .expect("a body that was sent");
        assert_eq!(m.dedupe_id, original.dedupe_id, "the dedupe id travels");
        assert_eq!(m.receive_count, 1, "a first delivery counts one receive");
    }
}

/// The same message published twice (a retried send after a lost answer) is delivered once.
pub async fn a_repeated_dedupe_id_is_delivered_once<Q: QueueUnderTest>(q: &Q) {
    let group = unique("dedupe");
    let m = message(&group, &event("Paid", 1));
    publish(q, std::slice::from_ref(&m)).await;
    publish(q, std::slice::from_ref(&m)).await;
    let received = q.drain().await;
    assert_eq!(
        received.len(),
        1,
        "a repeat within the deduplication window is accepted and not delivered"
    );
    assert_eq!(received[0].body, m.body);
}

/// One event sent to five executions (a broadcast): each group gets its copy.
pub async fn a_fan_out_reaches_every_group<Q: QueueUnderTest>(q: &Q) {
    let e = event("Broadcast", 7);
    let groups: Vec<String> = (0..5).map(|g| unique(&format!("fan-{g}"))).collect();
    let sent: Vec<Outgoing> = groups
        .iter()
        .map(|g| Outgoing::event(g, &e, DedupeKey::Event).expect("a valid message"))
        .collect();
    publish(q, &sent).await;
    let received = by_group(&q.drain().await);
    assert_eq!(
        received.keys().cloned().collect::<Vec<_>>(),
        {
            let mut g = groups.clone();
            g.sort();
            g
        },
        "every group of the fan-out gets the event, though the event id is one"
    );
    assert!(received.values().all(|bodies| bodies == &[e.to_json()]));
}

/// Three messages of 100 KiB (over one batch's 256 KiB): split, every one delivered whole.
pub async fn a_batch_over_the_byte_cap_is_split_and_delivered_whole<Q: QueueUnderTest>(q: &Q) {
    let group = unique("bytes");
    let sent: Vec<Outgoing> = (0..3)
        .map(|i| {
            let mut data = serde_json::Map::new();
            data.insert("pad".into(), serde_json::json!("x".repeat(100 * 1024)));
            data.insert("n".into(), serde_json::json!(i));
            message(&group, &Event::new(format!("Big{i}")).with_data(data))
        })
        .collect();
    publish(q, &sent).await;
    let received = q.drain().await;
    assert_eq!(
        received.iter().map(|m| &m.body).collect::<Vec<_>>(),
        sent.iter().map(|m| &m.body).collect::<Vec<_>>(),
        "each big message arrives whole, in order"
    );
}

/// A parked message is hidden: a consumer's next receive does not see it.
pub async fn a_parked_message_is_out_of_view<Q: QueueUnderTest>(q: &Q) {
    let group = unique("park");
    publish(q, &[message(&group, &event("Later", 1))]).await;
    let held = q.receive(1).await;
    assert_eq!(held.len(), 1, "the message is received");
    if let Err(e) = q
        .transport()
        .park(&held[0].receipt_handle, Duration::from_secs(60))
        .await
    {
        panic!("park of a received message failed: {e}");
    }
    assert!(
        q.drain().await.is_empty(),
        "a message parked for a minute is out of view"
    );
}

/// A dead letter keeps the body and the group, and says why and which message it was.
pub async fn a_dead_letter_carries_its_reason_source_and_group<Q: QueueUnderTest>(q: &Q) {
    let group = unique("dlq");
    let body = event("Broken", 1).to_json();
    q.transport()
        .dead_letter("source-1", Some(&group), &body, "unknown execution")
        .await
        .expect("dead_letter");
    let letters = look(q).await;
    assert_eq!(letters.len(), 1, "one dead letter: {letters:?}");
    let letter = &letters[0];
    assert_eq!(letter.group_id, group);
    assert_eq!(letter.body, body);
    assert_eq!(letter.reason.as_deref(), Some("unknown execution"));
    assert_eq!(letter.source_message_id.as_deref(), Some("source-1"));
    assert!(
        letter.dead_lettered_at_ms.is_some_and(|ms| ms > 0),
        "it says when it was dead-lettered"
    );
    assert!(q.drain().await.is_empty(), "nothing went to the main queue");
}

/// No group, or one SQS would refuse: the dead letter lands in the malformed group.
pub async fn a_dead_letter_without_a_usable_group_goes_to_the_malformed_group<Q: QueueUnderTest>(
    q: &Q,
) {
    q.transport()
        .dead_letter("no-group", None, "not json", "malformed: not JSON")
        .await
        .expect("dead_letter without a group");
    q.transport()
        .dead_letter("bad-group", Some("a group with spaces"), "{}", "malformed")
        .await
        .expect("dead_letter with an unusable group");
    let letters = look(q).await;
    assert_eq!(letters.len(), 2, "both are kept: {letters:?}");
    assert!(letters.iter().all(|l| l.group_id == MALFORMED_GROUP));
    assert!(letters.iter().all(|l| l.execution_id().is_none()));
}

/// A worker that dead-letters a message and crashes before deleting it dead-letters it again
/// on the next delivery: the dead-letter queue keeps it once.
pub async fn a_message_dead_lettered_twice_is_kept_once<Q: QueueUnderTest>(q: &Q) {
    let group = unique("twice");
    let source = unique("source");
    for _ in 0..2 {
        q.transport()
            .dead_letter(&source, Some(&group), "{}", "cannot succeed")
            .await
            .expect("dead_letter");
    }
    let letters = look(q).await;
    assert_eq!(
        letters.len(),
        1,
        "one dead letter per source message: {letters:?}"
    );
}

/// SQS refuses an empty body or attribute value: a dead letter of an empty message with no
/// reason is still kept, saying so.
pub async fn an_empty_body_and_reason_are_dead_lettered_with_placeholders<Q: QueueUnderTest>(
    q: &Q,
) {
    let group = unique("empty");
    q.transport()
        .dead_letter("empty-source", Some(&group), "", "")
        .await
        .expect("dead_letter of an empty message");
    let letters = look(q).await;
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(letters[0].body, "(empty body)");
    assert_eq!(letters[0].reason.as_deref(), Some("unspecified"));
}

/// An operator deletes one dead letter and releases the other: the next look finds the
/// released one only.
pub async fn a_deleted_dead_letter_is_gone_and_a_released_one_stays<Q: QueueUnderTest>(q: &Q) {
    let (a, b) = (unique("keep"), unique("drop"));
    for (source, group) in [("src-keep", &a), ("src-drop", &b)] {
        q.transport()
            .dead_letter(source, Some(group), "{}", "cannot succeed")
            .await
            .expect("dead_letter");
    }
    let letters = look(q).await;
    assert_eq!(letters.len(), 2, "{letters:?}");
    let (drop, keep): (Vec<_>, Vec<_>) = letters.into_iter().partition(|l| l.group_id == b);
    q.dead_letters().delete(&drop[0]).await.expect("delete");
    q.dead_letters().release(&keep).await.expect("release");
    let again = look(q).await;
    assert_eq!(
        again
            .iter()
            .map(|l| l.group_id.as_str())
            .collect::<Vec<_>>(),
        vec![a.as_str()],
        "the deleted one is gone, the released one is back in view"
    );
}
