//! The in-process harness: MemoryStore + MemoryTransport + the engine driver with a manual
//! clock, and a pump that plays the Lambda event source (batches of up to 10, failed records
//! put back in front, as SQS redelivers them).

#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use harel_lambda::{BatchOutcome, Config, Record, Role, Worker};
use harel_model::Definition;
use harel_queue::{MemoryTransport, Received};
use harel_runtime::Driver;
use harel_runtime::{ActionRegistry, ManualClock};

pub(crate) mod shared;
pub(crate) use shared::Shared;

pub(crate) type TestWorker = Worker<Shared, Arc<MemoryTransport>, harel_idempotency::MemoryClient>;

pub(crate) fn flow() -> Definition {
    let text = include_str!("../machines/flow.json");
    let config: serde_json::Value = serde_json::from_str(text).expect("flow.json is JSON");
    harel_model::build::build_definition(&config, "Flow", None).expect("Flow builds")
}

pub(crate) fn config() -> Config {
    let env = [
        ("AWS_REGION", "us-east-1"),
        ("HAREL_TABLE_PREFIX", "t_"),
        ("HAREL_QUEUE_URL", "http://localhost/1/q.fifo"),
        ("HAREL_DLQ_URL", "http://localhost/1/dlq.fifo"),
        ("IDEMPOTENCY_TABLE", "idem"),
    ];
    Config::from_lookup(Role::Worker, |k| {
        env.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    })
    .expect("test config")
}

pub(crate) struct Harness {
    pub worker: Arc<TestWorker>,
    pub transport: Arc<MemoryTransport>,
    pub clock: ManualClock,
    pub counted: Arc<AtomicUsize>,
    /// The sweeper wakes the worker asked for.
    pub waker: Arc<harel_lambda::MemoryWaker>,
}

pub(crate) fn actions(counted: Arc<AtomicUsize>) -> ActionRegistry {
    let mut actions = ActionRegistry::with_stdlib();
    actions.register_fn("flow.count", move |ctx, _ev, _inputs| {
        counted.fetch_add(1, Ordering::SeqCst);
        let n = ctx
            .context
            .get("shipped")
            .and_then(|v| v.as_i64())
            .unwrap_or(0);
        ctx.context
            .insert("shipped".into(), serde_json::json!(n + 1));
        Ok(serde_json::Value::Null)
    });
    actions.register_fn("flow.explode", |_ctx, _ev, _inputs| {
        Err(harel_engine::ActionError::new(
            "RuntimeError",
            "the crate fell",
        ))
    });
    actions
}

pub(crate) fn harness(idempotent: bool) -> Harness {
    let transport = Arc::new(MemoryTransport::new());
    let clock = ManualClock::new(1_000.0);
    let counted = Arc::new(AtomicUsize::new(0));
    let driver =
        Driver::new(vec![flow()], actions(counted.clone())).with_clock(Arc::new(clock.clone()));
    let idempotency = idempotent.then(|| {
        let layer = harel_idempotency::DynamoDbPersistenceLayer::new(
            harel_idempotency::MemoryClient::new("id"),
            "idem",
        );
        let config =
            harel_idempotency::IdempotencyConfig::default().event_key_jmespath("messageId");
        harel_idempotency::Idempotency::new(layer, config, "worker").expect("idempotency config")
    });
    let waker = Arc::new(harel_lambda::MemoryWaker::default());
    let worker = Arc::new(
        Worker::new(
            Shared::default(),
            transport.clone(),
            driver,
            idempotency,
            config(),
        )
        .with_waker(waker.clone()),
    );
    Harness {
        worker,
        transport,
        clock,
        counted,
        waker,
    }
}

pub(crate) fn record(m: &Received) -> Record {
    Record::from(m)
}

impl Harness {
    /// Send a raw message as a client would.
    pub(crate) async fn send(&self, group: &str, body: String) {
        use harel_queue::Transport;
        let dedupe = uuid::Uuid::new_v4().to_string();
        self.transport
            .publish(harel_queue::Outgoing::raw(group, dedupe, body).expect("valid group"))
            .await
            .expect("sent");
    }

    pub(crate) async fn send_event(&self, group: &str, event: harel_model::Event) {
        self.send(group, event.to_json()).await;
    }

    /// Deliver queued messages to the worker until the queue is empty (at most `rounds`
    /// batches); failed records go back in front. Returns every batch outcome.
    pub(crate) async fn pump(&self, rounds: usize) -> Vec<BatchOutcome> {
        let mut outcomes = Vec::new();
        for _ in 0..rounds {
            let batch = self.transport.take(10);
            if batch.is_empty() {
                break;
            }
            let outcome = self
                .worker
                .handle_batch(batch.iter().map(record).collect(), None)
                .await;
            let failed = outcome.failed_ids();
            let back: Vec<Received> = batch
                .into_iter()
                .filter(|m| failed.contains(&m.message_id))
                .collect();
            let stuck = !back.is_empty();
            self.transport.requeue_front(back);
            outcomes.push(outcome);
            if stuck {
                break;
            }
        }
        outcomes
    }

    pub(crate) async fn exe(&self, id: &str) -> harel_model::Execution {
        use harel_store::prelude::*;
        self.worker
            .store
            .load(id)
            .await
            .expect("load")
            .expect("exists")
    }
}
