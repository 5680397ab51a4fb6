//! examples/webhook_payment end to end, in memory: Stripe deliveries signed here (the
//! simulator of harel's example, with real signatures) go through the example's hooks file
//! and drive payment.stm: happy path, declined, abandoned by timeout, the same delivery
//! twice, an unrouted event type, a forged and a stale signature.

use std::path::Path;
use std::sync::Arc;

use harel_hooks::signature::sign;
use harel_hooks::{Hooks, HooksFile, Outcome};
use harel_model::{Execution, Status};
use harel_runtime::{DurableRunner, ManualClock};
use harel_store::prelude::*;
use harel_store::MemoryStore;
use http::{HeaderMap, HeaderValue};
use serde_json::{json, Value};

const SECRET: &str = "whsec_example_simulator";
const T0: f64 = 1_765_000_000.0;

fn example() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/webhook_payment"
    ))
}

struct Shop {
    runner: DurableRunner<MemoryStore>,
    clock: ManualClock,
    hooks: Hooks,
    next: u32,
}

/// The simulator: Stripe event payloads as Stripe shapes them, signed as Stripe signs them.
impl Shop {
    async fn new() -> Shop {
        let definition =
            harel_lang::load_file(&example().join("payment.stm"), Some("payment")).unwrap();
        let definition = Arc::new(definition);
        let file = HooksFile::load(&example().join("hooks.yaml")).unwrap();
        file.check(&|name| (name == "payment").then(|| definition.clone()))
            .unwrap();
        std::env::set_var("STRIPE_WEBHOOK_SECRET", SECRET);
        let hooks = Hooks::resolve(file, None).await.unwrap();
        let clock = ManualClock::new(T0);
        let runner = DurableRunner::new(MemoryStore::new(), [(*definition).clone()])
            .with_clock(Arc::new(clock.clone()));
        Shop {
            runner,
            clock,
            hooks,
            next: 0,
        }
    }

    async fn order(&self, id: &str) -> Execution {
        self.runner.create("payment", None, Some(id)).await.unwrap()
    }

    fn event(&mut self, kind: &str, order: &str, object: Value) -> Value {
        self.next += 1;
        let mut pi =
            json!({"id": format!("pi_{}", self.next), "metadata": {"harel_order_id": order}});
        pi.as_object_mut()
            .unwrap()
            .extend(object.as_object().unwrap().clone());
        json!({"id": format!("evt_{}", self.next), "type": kind, "data": {"object": pi}})
    }

    fn succeeded(&mut self, order: &str, amount: i64) -> Value {
        self.event(
            "payment_intent.succeeded",
            order,
            json!({"amount_received": amount}),
        )
    }

    fn failed(&mut self, order: &str, reason: &str) -> Value {
        self.event(
            "payment_intent.payment_failed",
            order,
            json!({"last_payment_error": {"message": reason}}),
        )
    }

    /// POST /hooks/stripe: verify and map, then send what the hook answered.
    async fn deliver(&self, payload: &Value, secret: &str, signed_at: f64) -> Result<Outcome, u16> {
        let body = serde_json::to_vec(payload).unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(
            "stripe-signature",
            HeaderValue::from_str(&sign::stripe(secret.as_bytes(), signed_at as i64, &body))
                .unwrap(),
        );
        let out = self
            .hooks
            .handle("stripe", &headers, &body, self.clock.now_secs())
            .map_err(|r| r.status())?;
        if let Outcome::Deliver(d) = &out {
            self.runner.process(&d.execution, &d.event).await.unwrap();
        }
        Ok(out)
    }

    async fn get(&self, id: &str) -> Execution {
        self.runner.get(id).await.unwrap().unwrap()
    }
}

trait Secs {
    fn now_secs(&self) -> i64;
}
impl Secs for ManualClock {
    fn now_secs(&self) -> i64 {
        harel_runtime::Clock::now(self) as i64
    }
}

fn at(exe: &Execution) -> (&str, Status, Option<&str>) {
    (
        exe.active_path.as_deref().unwrap_or(""),
        exe.status,
        exe.outcome.as_deref(),
    )
}

#[tokio::test]
async fn happy_path() {
    let mut shop = Shop::new().await;
    shop.order("order-1").await;
    let paid = shop.succeeded("order-1", 4999);
    let out = shop.deliver(&paid, SECRET, T0).await.unwrap();
    let Outcome::Deliver(d) = out else {
        panic!("{out:?}")
    };
    assert_eq!(d.event.id, "evt_1");
    assert_eq!(
        json!(d.event.data),
        json!({"payment_id": "pi_1", "amount": 4999})
    );
    assert_eq!(
        at(&shop.get("order-1").await),
        ("Done", Status::Done, Some("success"))
    );
}

#[tokio::test]
async fn declined() {
    let mut shop = Shop::new().await;
    shop.order("order-2").await;
    let declined = shop.failed("order-2", "Your card was declined.");
    shop.deliver(&declined, SECRET, T0).await.unwrap();
    let exe = shop.get("order-2").await;
    assert_eq!(at(&exe), ("Failed", Status::Done, Some("failed")));
}

#[tokio::test]
async fn abandoned_by_timeout() {
    let shop = Shop::new().await;
    shop.order("order-3").await;
    shop.clock.advance(14.0);
    assert_eq!(shop.runner.fire_due_timers().await.unwrap(), 0);
    shop.clock.advance(1.0);
    assert_eq!(shop.runner.fire_due_timers().await.unwrap(), 1);
    assert_eq!(
        at(&shop.get("order-3").await),
        ("Expired", Status::Done, Some("abandoned"))
    );
}

#[tokio::test]
async fn the_same_delivery_twice_is_absorbed() {
    let mut shop = Shop::new().await;
    shop.order("order-4").await;
    // Stripe retries a delivery it did not see acknowledged: the retry is signed anew,
    // later, but carries the same event id, and no second step is committed
    let paid = shop.succeeded("order-4", 100);
    shop.deliver(&paid, SECRET, T0).await.unwrap();
    let first = shop.get("order-4").await;
    shop.clock.advance(60.0);
    let retried = shop.deliver(&paid, SECRET, T0 + 60.0).await.unwrap();
    let Outcome::Deliver(d) = retried else {
        panic!()
    };
    assert_eq!(d.event.id, "evt_1", "a retry carries the same event id");
    let second = shop.get("order-4").await;
    assert_eq!(
        second.version, first.version,
        "no second step was committed"
    );
    assert_eq!(second.processed_events, first.processed_events);
    assert!(shop
        .runner
        .store()
        .is_processed("order-4", "evt_1")
        .await
        .unwrap());
}

#[tokio::test]
async fn unrouted_forged_and_stale_deliveries_change_nothing() {
    let mut shop = Shop::new().await;
    let before = shop.order("order-5").await;
    let refund = shop.event("charge.refunded", "order-5", json!({}));
    let out = shop.deliver(&refund, SECRET, T0).await.unwrap();
    assert!(matches!(out, Outcome::Ignored { .. }), "{out:?}");
    let paid = shop.succeeded("order-5", 1);
    assert_eq!(
        shop.deliver(&paid, "whsec_attacker", T0).await.unwrap_err(),
        401
    );
    assert_eq!(
        shop.deliver(&paid, SECRET, T0 - 301.0).await.unwrap_err(),
        401
    );
    let after = shop.get("order-5").await;
    assert_eq!(at(&after), ("AwaitingPayment", Status::Running, None));
    assert_eq!(after.version, before.version);
}
