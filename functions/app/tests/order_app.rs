//! The example application (examples/shop_order.stm, machine `ShopOrder`, Rust actions in
//! src/shop.rs) end to end on the moto server (`scripts/with-moto.sh cargo test -p
//! harel-app --test order_app`): the worker, relay and sweeper logic over the DynamoDB store
//! and SQS FIFO, with a manual clock whose due timers the sweeper fires. To its success
//! terminal (a declined card retried after its backoff), to its timeout and decline
//! terminals, and cancelled with cleanup through the control plane.

use std::sync::Arc;

use harel_lambda::{fire_due, SweepReport};
use harel_model::{Event, Execution, Object, Status};
use harel_runtime::Driver;
use harel_runtime::{Clock, ManualClock};
use harel_sqs::create_body;
use harel_sqs::SqsTransport;
use harel_store::prelude::*;
use harel_testkit::{pump, relay, send, MotoStack, MotoWorker};
use serde_json::{json, Value};

type AppWorker = MotoWorker;

struct App {
    worker: Arc<AppWorker>,
    /// The event source and the clients' sends, on a client of its own.
    source: SqsTransport,
    clock: ManualClock,
}

async fn app() -> App {
    let moto = MotoStack::new("shop").await;
    let clock = ManualClock::new(1_767_225_600.0);
    let driver = Driver::new(
        harel_app::machines::definitions().expect("machines"),
        harel_app::actions::actions(),
    )
    .with_clock(Arc::new(clock.clone()));
    App {
        worker: moto.worker(driver, &[]),
        source: moto.source(),
        clock,
    }
}

fn object(v: Value) -> Object {
    v.as_object().cloned().expect("an object")
}

impl App {
    async fn create(&self, id: &str, context: Value) {
        self.send(id, create_body("ShopOrder", object(context), Some(id)))
            .await;
    }

    async fn event(&self, id: &str, kind: &str, data: Value) {
        self.send(id, Event::new(kind).with_data(object(data)).to_json())
            .await;
    }

    async fn send(&self, group: &str, body: String) {
        send(&self.source, group, body).await;
    }

    /// The Lambda event source: batches to the worker until the queue is empty; every
    /// record must succeed.
    async fn pump(&self) {
        pump(&self.source, &self.worker).await;
    }

    /// Move the clock, fire the timers then due (the sweeper) and process their `Timeout`s.
    async fn advance(&self, seconds: f64) -> usize {
        self.clock.advance(seconds);
        let mut report = SweepReport::default();
        fire_due(
            &self.worker.store,
            &self.worker.transport,
            self.clock.now(),
            &mut report,
        )
        .await
        .expect("sweep");
        self.pump().await;
        report.fired
    }

    async fn relay(&self) {
        relay(&self.worker).await;
    }

    async fn load(&self, id: &str) -> Execution {
        self.worker
            .store
            .load(id)
            .await
            .expect("load")
            .expect("exists")
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn an_order_is_paid_after_a_declined_card_fulfilled_and_delivered() {
    let app = app().await;
    let id = "order-ok";
    app.create(id, json!({"items": 3, "unit_price": 20.0}))
        .await;
    app.event(id, "PlaceOrder", json!({})).await;
    app.event(
        id,
        "PaymentDeclined",
        json!({"reason": "insufficient funds"}),
    )
    .await;
    app.pump().await;
    let waiting = app.load(id).await;
    assert_eq!(waiting.active_path.as_deref(), Some("Checkout.RetryWait"));
    assert_eq!(waiting.context["retry_in"], json!(30), "the first backoff");
    assert_eq!(waiting.context["reserved"], json!(3));
    // the backoff's timer, not yet due, then due: the payment is asked again
    assert_eq!(app.advance(29.0).await, 0);
    assert_eq!(app.advance(2.0).await, 1);
    let again = app.load(id).await;
    assert_eq!(
        again.active_path.as_deref(),
        Some("Checkout.AwaitingPayment")
    );
    assert_eq!(again.context["payment_attempts"], json!(2));

    app.event(id, "PaymentAuthorized", json!({"amount": 60.0}))
        .await;
    // the regions start, finish and hand their results back within the worker's delivery;
    // their Finished events come through the queue
    app.pump().await;
    app.relay().await;
    app.pump().await;
    let shipping = app.load(id).await;
    assert_eq!(
        shipping.active_path.as_deref(),
        Some("Shipping"),
        "{shipping:?}"
    );
    app.event(id, "Delivered", json!({})).await;
    app.pump().await;

    let done = app.load(id).await;
    assert_eq!(done.status, Status::Done, "{done:?}");
    assert_eq!(done.outcome.as_deref(), Some("success"));
    let ctx = &done.context;
    assert_eq!(ctx["subtotal_cents"], json!(6000));
    assert_eq!(ctx["shipping_cents"], json!(0), "free from 50");
    assert_eq!(ctx["total_cents"], json!(6000));
    assert_eq!(ctx["paid_cents"], json!(6000));
    assert_eq!(ctx["payment_attempts"], json!(2));
    let payments = ctx["payments"].as_array().expect("payments");
    assert_eq!(payments.len(), 2);
    assert_ne!(
        payments[0]["idempotency_key"], payments[1]["idempotency_key"],
        "each attempt has its own key"
    );
    assert_eq!(ctx["declines"], json!(1));
    assert!(
        ctx.get("payment_retries").is_none(),
        "reset_backoff cleared the counter on leaving Checkout: {ctx:?}"
    );
    assert_eq!(ctx["parcel"], json!(format!("PCL-{id}")));
    assert_eq!(ctx["invoice_no"], json!(format!("INV-{id}")));
    assert_eq!(ctx["carrier"], json!("DHL"));
    assert_eq!((&ctx["shipped"], &ctx["reserved"]), (&json!(3), &json!(0)));
    let regions = ctx["region_results"].as_object().expect("region results");
    assert_eq!(regions.len(), 2);
    assert!(regions.values().all(|r| r["outcome"] == "success"));
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn an_unpaid_order_is_abandoned_and_a_thrice_declined_one_declined() {
    let app = app().await;
    app.create("order-late", json!({"items": 2})).await;
    app.event("order-late", "PlaceOrder", json!({})).await;
    app.create("order-broke", json!({"items": 1})).await;
    app.event("order-broke", "PlaceOrder", json!({})).await;
    app.event("order-broke", "PaymentDeclined", json!({})).await;
    app.pump().await;
    // the second decline after the first backoff (30 s), the third after the second (60 s)
    assert_eq!(app.advance(31.0).await, 1);
    app.event("order-broke", "PaymentDeclined", json!({})).await;
    app.pump().await;
    assert_eq!(app.load("order-broke").await.context["retry_in"], json!(60));
    assert_eq!(app.advance(61.0).await, 1);
    app.event("order-broke", "PaymentDeclined", json!({})).await;
    app.pump().await;
    let broke = app.load("order-broke").await;
    assert_eq!(
        (broke.status, broke.outcome.as_deref()),
        (Status::Done, Some("declined")),
        "{broke:?}"
    );
    assert_eq!(broke.context["released"], json!(1));
    assert_eq!(broke.context["payment_attempts"], json!(3));

    // 15 minutes without a payment: the Checkout budget runs out
    app.advance(900.0).await;
    let late = app.load("order-late").await;
    assert_eq!(late.status, Status::Done, "{late:?}");
    assert_eq!(late.outcome.as_deref(), Some("abandoned"));
    assert_eq!(late.active_path.as_deref(), Some("Abandoned"));
    assert_eq!(late.context["released"], json!(2));
    assert_eq!(late.context["reserved"], json!(0));
    assert_eq!(late.context["total_cents"], json!(2 * 1250 + 490));
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_cancelled_order_releases_its_stock_voids_its_invoice_and_refunds() {
    let app = app().await;
    let id = "order-cancel";
    app.create(id, json!({"items": 2, "unit_price": 5.0})).await;
    app.event(id, "PlaceOrder", json!({})).await;
    app.event(id, "PaymentAuthorized", json!({})).await;
    app.pump().await;
    app.relay().await;
    app.pump().await;
    assert_eq!(app.load(id).await.active_path.as_deref(), Some("Shipping"));

    let defn = app
        .worker
        .driver
        .definition("ShopOrder")
        .expect("compiled in");
    let outcome = harel_control::cancel(&app.worker.store, defn, id, app.clock.now())
        .await
        .expect("cancel");
    assert_eq!(
        outcome.mode,
        Some(harel_control::CancelMode::Cooperative),
        "{outcome:?}"
    );
    assert_eq!(app.load(id).await.status, Status::Cancelling);
    // a Delivered still queued is drained as a no-op; the Cancel (in the outbox, written
    // with the CANCELLING commit) is delivered by the relay and runs the cleanup
    app.event(id, "Delivered", json!({})).await;
    app.pump().await;
    app.relay().await;
    app.pump().await;

    let cancelled = app.load(id).await;
    // harel: the injected Cancel resumes the machine, whose own terminal ends it DONE
    assert_eq!(cancelled.status, Status::Done, "{cancelled:?}");
    assert_eq!(cancelled.outcome.as_deref(), Some("cancelled"));
    assert_eq!(cancelled.active_path.as_deref(), Some("Cancelled"));
    let ctx = &cancelled.context;
    assert_eq!(ctx["released"], json!(2), "{ctx:?}");
    assert_eq!((&ctx["reserved"], &ctx["shipped"]), (&json!(0), &json!(0)));
    assert_eq!(ctx["voided_invoice"], json!(format!("INV-{id}")));
    assert_eq!(ctx["refunded_cents"], json!(1000 + 490));
}
