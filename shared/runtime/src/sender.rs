//! The sending side (harel `hosting.SenderLogic`): what a client puts on the queue to create
//! an execution, feed it events or deliver what a control command enqueued, over the
//! [`Transport`] port. The CLI, the HTTP API and the tests build their messages here, so the
//! wire shape and the deduplication ids have one home.
//!
//! Deduplication: a create is deduplicated by its execution id (`create-{id}`), an event by
//! (execution, event id). Sending the same create or the same event twice within SQS FIFO's
//! five-minute window delivers it once; after that the worker's own checks absorb it (a
//! create for an existing id is a no-op, an event already processed is skipped).

use harel_model::{Event, Object};
use harel_queue::{check_group_id, DedupeKey, Outgoing, Transport, TransportError};
use sha2::{Digest, Sha256};

/// Builds and publishes the create and event messages.
#[derive(Clone, Debug)]
pub struct Sender<T> {
    transport: T,
}

/// The create message for `execution_id` (its group and its deterministic dedupe id): the
/// queue's wire protocol owns it.
pub use harel_queue::create_message;

/// The messages for `events`, in order, to `execution_id`, each deduplicated by its event id.
pub fn event_messages(
    execution_id: &str,
    events: &[Event],
) -> Result<Vec<Outgoing>, TransportError> {
    events
        .iter()
        .map(|ev| Outgoing::event(execution_id, ev, DedupeKey::Event))
        .collect()
}

/// A stable id derived from a client's idempotency key: the same key names the same
/// execution (or event) on every retry, so the queue's dedupe id and the worker's checks
/// absorb the repeat. `scope` keeps the ids of different uses of one key apart.
pub fn id_from_key(scope: &str, key: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update((scope.len() as u64).to_be_bytes());
    hasher.update(scope.as_bytes());
    hasher.update(key.as_bytes());
    let digest = hasher.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("idem-{hex}")
}

/// Whether `id` can name an execution: it is the queue's group id (SQS's rules).
pub fn check_execution_id(id: &str) -> Result<(), TransportError> {
    check_group_id(id)
}

impl<T: Transport> Sender<T> {
    /// A sender publishing through `transport`.
    pub fn new(transport: T) -> Self {
        Sender { transport }
    }

    /// The transport it publishes through (its queue URL, for a CLI's report).
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// Enqueue the create of `execution_id` running `machine` from `context` (the worker
    /// fills the schema's defaults, checks it and runs the start).
    pub async fn create(
        &self,
        machine: &str,
        context: Object,
        execution_id: &str,
    ) -> Result<(), TransportError> {
        self.transport
            .publish(create_message(machine, context, execution_id)?)
            .await
    }

    /// Enqueue `events` for `execution_id`, in order, in one batch.
    pub async fn send(&self, execution_id: &str, events: &[Event]) -> Result<(), TransportError> {
        self.transport
            .publish_batch(&event_messages(execution_id, events)?)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harel_queue::inbound::{parse, Inbound};
    use harel_queue::MemoryTransport;

    #[tokio::test]
    async fn a_create_sent_twice_is_one_message() {
        let sender = Sender::new(MemoryTransport::new());
        sender.create("Order", Object::new(), "o-1").await.unwrap();
        sender.create("Order", Object::new(), "o-1").await.unwrap();
        let got = sender.transport().take_all();
        assert_eq!(got.len(), 1);
        match parse(Some(&got[0].group_id), &got[0].body).unwrap().1 {
            Inbound::Create(c) => assert_eq!(
                (c.definition_id.as_str(), c.execution_id.as_str()),
                ("Order", "o-1")
            ),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn events_go_in_order_and_a_repeat_is_dropped() {
        let sender = Sender::new(MemoryTransport::new());
        let a = Event::new("A");
        let b = Event::new("B");
        sender.send("x", &[a.clone(), b]).await.unwrap();
        sender.send("x", std::slice::from_ref(&a)).await.unwrap();
        let kinds: Vec<_> = sender
            .transport()
            .take_all()
            .into_iter()
            .map(|m| serde_json::from_str::<Event>(&m.body).unwrap().kind)
            .collect();
        assert_eq!(kinds, ["A", "B"]);
    }

    #[test]
    fn keys_name_stable_valid_ids() {
        let a = id_from_key("create", "k-1");
        assert_eq!(a, id_from_key("create", "k-1"));
        assert_ne!(a, id_from_key("create", "k-2"));
        assert_ne!(a, id_from_key("event", "k-1"));
        assert!(check_execution_id(&a).is_ok());
    }
}
