//! The sample events of the example application (events/worker-shop-*.json, the SQS event
//! shape `sam local invoke` and `cargo lambda invoke` send) are what the worker accepts: each
//! file played in order through the worker (in memory) takes the order where the walkthrough
//! says.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_lambda_events::sqs::SqsEvent;
use harel_lambda::{relay, Record, Role, Worker};
use harel_model::{Execution, Status};
use harel_runtime::Driver;
use harel_runtime::{Clock, ManualClock};
use harel_sqs::MemoryTransport;
use harel_store::prelude::*;
use harel_store::MemoryStore;
use harel_testkit::{config_from, memory_pump};
use serde_json::json;

type MemoryWorker = Worker<MemoryStore, Arc<MemoryTransport>, harel_idempotency::MemoryClient>;

struct Local {
    worker: Arc<MemoryWorker>,
    transport: Arc<MemoryTransport>,
    clock: ManualClock,
}

fn local() -> Local {
    let config = config_from(
        Role::Worker,
        &[
            ("AWS_REGION", "us-east-1"),
            ("HAREL_TABLE_PREFIX", "harel"),
            ("HAREL_QUEUE_URL", "http://localhost/1/harel.fifo"),
            ("HAREL_DLQ_URL", "http://localhost/1/harel-dlq.fifo"),
            ("IDEMPOTENCY_TABLE", "harel_idempotency"),
        ],
    );
    // the samples' SentTimestamp: 2026-01-01T00:00:00Z
    let clock = ManualClock::new(1_767_225_600.0);
    let driver = Driver::new(
        harel_app::machines::definitions().expect("machines"),
        harel_app::actions::actions(),
    )
    .with_clock(Arc::new(clock.clone()));
    let transport = Arc::new(MemoryTransport::new());
    let worker = Arc::new(Worker::new(
        MemoryStore::new(),
        transport.clone(),
        driver,
        None,
        config,
    ));
    Local {
        worker,
        transport,
        clock,
    }
}

fn sample(name: &str) -> Vec<Record> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../events")
        .join(format!("worker-{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let event: SqsEvent = serde_json::from_str(&text).expect("an SQS event");
    event
        .records
        .iter()
        .map(harel_lambda::worker::sqs_record)
        .collect()
}

impl Local {
    async fn play(&self, name: &str) {
        let outcome = self.worker.handle_batch(sample(name), None).await;
        assert!(
            outcome.failed_ids().is_empty(),
            "{name}: {:?}",
            outcome.records
        );
        // what the step sent (the regions' Finished) comes back through the queue
        memory_pump(&self.transport, &self.worker).await;
    }

    async fn order(&self) -> Execution {
        self.worker
            .store
            .load("shop-1")
            .await
            .expect("load")
            .expect("shop-1 exists")
    }
}

#[tokio::test]
async fn the_samples_walk_an_order_to_each_of_its_ends() {
    let ok = local();
    for (name, at) in [
        ("shop-1-create", "Cart"),
        ("shop-2-place", "Checkout.AwaitingPayment"),
        ("shop-3-declined", "Checkout.RetryWait"),
        ("shop-4-retry", "Checkout.AwaitingPayment"),
        ("shop-5-authorized", "Shipping"),
        ("shop-6-delivered", "Completed"),
    ] {
        ok.play(name).await;
        assert_eq!(
            ok.order().await.active_path.as_deref(),
            Some(at),
            "after {name}"
        );
    }
    let done = ok.order().await;
    assert_eq!(
        (done.status, done.outcome.as_deref()),
        (Status::Done, Some("success"))
    );
    assert_eq!(done.context["invoice_no"], json!("INV-shop-1"));

    let late = local();
    for name in ["shop-1-create", "shop-2-place", "shop-payment-timeout"] {
        late.play(name).await;
    }
    let abandoned = late.order().await;
    assert_eq!(abandoned.outcome.as_deref(), Some("abandoned"));
    assert_eq!(abandoned.context["released"], json!(3));

    let cancelled = local();
    for name in ["shop-1-create", "shop-2-place", "shop-5-authorized"] {
        cancelled.play(name).await;
    }
    // `harel cancel shop-1`: CANCELLING, and the control plane's Cancel in the outbox; the
    // sample Cancel is that message as the worker receives it
    let defn = cancelled
        .worker
        .driver
        .definition("ShopOrder")
        .expect("compiled in");
    harel_control::cancel(
        &cancelled.worker.store,
        defn,
        "shop-1",
        cancelled.clock.now(),
    )
    .await
    .expect("cancel");
    assert_eq!(cancelled.order().await.status, Status::Cancelling);
    cancelled.play("shop-6-delivered").await;
    assert_eq!(
        cancelled.order().await.active_path.as_deref(),
        Some("Shipping"),
        "a CANCELLING order drains its backlog without acting"
    );
    cancelled.play("shop-cancel").await;
    let gone = cancelled.order().await;
    assert_eq!(gone.outcome.as_deref(), Some("cancelled"), "{gone:?}");
    assert_eq!(gone.context["voided_invoice"], json!("INV-shop-1"));
    assert_eq!(gone.context["refunded_cents"], json!(6000));
    // the control plane's own Cancel, relayed later, finds the order finished: a no-op
    relay(
        &cancelled.worker.store,
        &*cancelled.transport,
        &cancelled.worker.driver,
        Instant::now() + Duration::from_secs(5),
    )
    .await
    .expect("relay");
    cancelled.play("shop-6-delivered").await;
    let after = cancelled.order().await;
    // (only the version moves: each event's processed mark is committed)
    assert_eq!(
        (after.status, &after.active_path, &after.context),
        (gone.status, &gone.active_path, &gone.context)
    );
}
