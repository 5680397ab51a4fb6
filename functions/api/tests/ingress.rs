//! The outside world in, through the api function on moto and the real worker: webhooks
//! (`POST /hooks/{name}`) signed here as Stripe, GitHub and a generic HMAC provider sign them,
//! and callback tokens (`POST /callbacks/{token}[/fail]`) made by the worker's
//! `harel.lib.callback_token`. The function is booted as in Lambda (`boot_with(Role::Api)`,
//! `HAREL_HOOKS_FILE`, `HAREL_CALLBACK_SECRET`); every refusal leaves the queue empty.
//! Run under scripts/with-moto.sh.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use harel_api::{HookCounts, HookOutcome, Ingress};
use harel_hooks::callback::{self, Claims};
use harel_hooks::signature::{sign, Algorithm, Encoding};
use harel_hooks::{CallbackKey, Secret};
use harel_lambda::Role;
use harel_model::{Execution, Status};
use harel_store::prelude::*;
use harel_testkit::{config_from, pump, pump_once, MotoStack, MotoWorker};
use serde_json::{json, Value};

mod common;
use common::Function;

const STRIPE_SECRET: &str = "whsec_api_function_test";
const GITHUB_SECRET: &str = "github-api-function-test";
const IDENTITY_SECRET: &str = "identity-api-function-test";
const CALLBACK_SECRET: &str = "0123456789abcdef0123456789abcdef-api-test";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64
}

/// The api function over one moto stack, the worker beside it, and the webhook counts.
struct Rig {
    api: Function,
    counts: Arc<HookCounts>,
    worker: Arc<MotoWorker>,
    stack: MotoStack,
}

/// The machines layer of this stack: examples/webhook_payment's payment.stm, the fixtures'
/// machines, and a hooks file of the example's `stripe` entry and the fixtures' others.
fn layer(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("harel-api-ingress-{prefix}"));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let example = root().join("examples/webhook_payment");
    let fixtures = root().join("tests/fixtures/ingress");
    std::fs::copy(example.join("payment.stm"), dir.join("payment.stm")).expect("payment.stm");
    for machine in ["review.stm", "signup.stm", "transfer.stm"] {
        std::fs::copy(fixtures.join(machine), dir.join(machine)).expect("a fixture");
    }
    let hooks = std::fs::read_to_string(example.join("hooks.yaml")).expect("the example's hooks")
        + &std::fs::read_to_string(fixtures.join("hooks.yaml")).expect("the fixtures' hooks");
    std::fs::write(dir.join("hooks.yaml"), hooks).expect("hooks.yaml");
    dir
}

async fn rig(tag: &str) -> Rig {
    // the hooks file names its secrets as env: references; every test sets the same values
    std::env::set_var("STRIPE_WEBHOOK_SECRET", STRIPE_SECRET);
    std::env::set_var("GITHUB_WEBHOOK_SECRET", GITHUB_SECRET);
    std::env::set_var("IDENTITY_WEBHOOK_SECRET", IDENTITY_SECRET);
    std::env::set_var(callback::SECRET_VAR, CALLBACK_SECRET);
    let stack = MotoStack::new(tag).await;
    let dir = layer(&stack.prefix);
    let dir_text = dir.display().to_string();
    let hooks_text = dir.join("hooks.yaml").display().to_string();
    let settings = stack.settings(&[
        ("HAREL_DEFINITIONS_DIR", &dir_text),
        ("HAREL_HOOKS_FILE", &hooks_text),
    ]);
    let pairs: Vec<(&str, &str)> = settings
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let booted = harel_app::aws::boot_with(Role::Api, config_from(Role::Api, &pairs), &stack.sdk)
        .await
        .expect("the api function boots with its hooks and its callback secret");
    assert!(booted.hooks.is_some() && booted.callback_key.is_some());
    let counts = Arc::new(HookCounts::new());
    let ingress = Ingress {
        hooks: booted.hooks,
        callback_key: booted.callback_key,
        metrics: counts.clone(),
    };
    let backend = harel_api::Backend::new(booted.store, booted.transport, booted.driver)
        .with_ingress(ingress);
    // the worker runs the same layer, its callback tokens made with the same secret
    let (driver, _) = harel_app::aws::driver_with(Some(&dir), None, None, true)
        .await
        .expect("the worker's machines");
    let worker = stack.worker(driver, &[]);
    Rig {
        api: Function {
            router: harel_api::router(Arc::new(backend)),
        },
        counts,
        worker,
        stack,
    }
}

impl Rig {
    async fn pump(&self) -> usize {
        pump(&self.stack.source(), &self.worker).await.len()
    }

    /// Nothing is on the queue.
    async fn nothing_enqueued(&self, what: &str) {
        assert!(
            pump_once(&self.stack.source(), &self.worker)
                .await
                .is_empty(),
            "{what} enqueued something"
        );
    }

    async fn load(&self, id: &str) -> Execution {
        self.stack
            .store()
            .load(id)
            .await
            .expect("load")
            .unwrap_or_else(|| panic!("{id} exists"))
    }

    async fn create(&self, machine: &str, id: &str) {
        let (status, body) = self
            .api
            .invoke(
                "POST",
                "/executions",
                Some(&json!({"machine": machine, "id": id}).to_string()),
            )
            .await;
        assert_eq!(status, 202, "{body}");
        assert_eq!(self.pump().await, 1);
    }

    async fn hook(&self, name: &str, body: &str, headers: &[(&str, &str)]) -> (u16, Value) {
        self.api
            .invoke_with("POST", &format!("/hooks/{name}"), Some(body), headers)
            .await
    }

    /// A Stripe delivery of `payload`, signed with `secret` at `t`.
    async fn stripe(&self, payload: &Value, secret: &str, t: i64) -> (u16, Value) {
        let body = payload.to_string();
        let signature = sign::stripe(secret.as_bytes(), t, body.as_bytes());
        self.hook("stripe", &body, &[("stripe-signature", &signature)])
            .await
    }
}

fn at(exe: &Execution) -> (&str, Status, Option<&str>) {
    (
        exe.active_path.as_deref().unwrap_or(""),
        exe.status,
        exe.outcome.as_deref(),
    )
}

/// A Stripe event as Stripe shapes it, for order `order`.
fn stripe_event(id: &str, kind: &str, order: &str, object: Value) -> Value {
    let mut pi = json!({"id": format!("pi_{id}"), "metadata": {"harel_order_id": order}});
    pi.as_object_mut()
        .unwrap()
        .extend(object.as_object().unwrap().clone());
    json!({"id": id, "type": kind, "data": {"object": pi}})
}

/// examples/webhook_payment over HTTP: happy path, declined, abandoned by its timeout, the
/// same delivery twice; then an unrouted type, forged, missing and stale signatures, an
/// unknown hook and an unknown execution, none of which enqueues anything.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn the_stripe_walkthrough_through_the_api_function() {
    let rig = rig("apihook").await;

    // happy path, the delivery sent twice before the worker ran (Stripe retried): both
    // accepted with the Stripe event id, one processed
    rig.create("payment", "order-1").await;
    let paid = stripe_event(
        "evt_1",
        "payment_intent.succeeded",
        "order-1",
        json!({"amount_received": 4999}),
    );
    let (s1, first) = rig.stripe(&paid, STRIPE_SECRET, now()).await;
    let (s2, second) = rig.stripe(&paid, STRIPE_SECRET, now()).await;
    assert_eq!((s1, s2), (202, 202), "{first} {second}");
    assert_eq!(first["status"], "accepted");
    assert_eq!(
        first["event"],
        json!({"id": "evt_1", "kind": "PaymentSucceeded"})
    );
    assert_eq!(second["event"]["id"], "evt_1");
    assert_eq!(rig.pump().await, 1, "the queue deduplicated the retry");
    let order = rig.load("order-1").await;
    assert_eq!(at(&order), ("Done", Status::Done, Some("success")));
    // and once more, the execution DONE: a duplicate, nothing enqueued
    let (status, third) = rig.stripe(&paid, STRIPE_SECRET, now()).await;
    assert_eq!((status, third["status"].as_str()), (202, Some("duplicate")));
    rig.nothing_enqueued("a duplicate delivery").await;
    assert_eq!(rig.load("order-1").await.version, order.version);

    // declined
    rig.create("payment", "order-2").await;
    let declined = stripe_event(
        "evt_2",
        "payment_intent.payment_failed",
        "order-2",
        json!({"last_payment_error": {"message": "Your card was declined."}}),
    );
    assert_eq!(rig.stripe(&declined, STRIPE_SECRET, now()).await.0, 202);
    rig.pump().await;
    assert_eq!(
        at(&rig.load("order-2").await),
        ("Failed", Status::Done, Some("failed"))
    );

    // abandoned: no webhook within its 15 s; the sweeper fires the timeout
    rig.create("payment", "order-3").await;
    let store = rig.stack.store();
    let fired = harel_lambda::sweep_once(&store, &rig.stack.transport(), now() as f64 + 16.0)
        .await
        .expect("sweep");
    assert_eq!(fired, 1);
    rig.pump().await;
    assert_eq!(
        at(&rig.load("order-3").await),
        ("Expired", Status::Done, Some("abandoned"))
    );
    // a payment arriving after that is acknowledged, ignored, counted
    let late = stripe_event(
        "evt_3",
        "payment_intent.succeeded",
        "order-3",
        json!({"amount_received": 1}),
    );
    let (status, answer) = rig.stripe(&late, STRIPE_SECRET, now()).await;
    assert_eq!(
        (status, answer["status"].as_str()),
        (200, Some("ignored")),
        "{answer}"
    );
    rig.nothing_enqueued("a payment for an expired order").await;

    // an event type the file does not route: 200 with the reason, counted
    rig.create("payment", "order-4").await;
    let refund = stripe_event("evt_4", "charge.refunded", "order-4", json!({}));
    let (status, answer) = rig.stripe(&refund, STRIPE_SECRET, now()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["status"], "ignored");
    assert_eq!(answer["provider_kind"], "charge.refunded");
    assert!(
        answer["reason"].as_str().unwrap().contains("not routed"),
        "{answer}"
    );
    assert_eq!(rig.counts.get("stripe", HookOutcome::Ignored), 2);
    rig.nothing_enqueued("an unrouted event").await;

    // refused: 401 for a forged, a missing and a stale signature; nothing enqueued
    let pay4 = stripe_event(
        "evt_5",
        "payment_intent.succeeded",
        "order-4",
        json!({"amount_received": 2}),
    );
    let body = pay4.to_string();
    let refusals: Vec<(Vec<(&str, String)>, &str)> = vec![
        (
            vec![(
                "stripe-signature",
                sign::stripe(b"whsec_attacker", now(), body.as_bytes()),
            )],
            "bad_signature",
        ),
        (vec![], "missing_signature"),
        (
            vec![(
                "stripe-signature",
                sign::stripe(STRIPE_SECRET.as_bytes(), now() - 301, body.as_bytes()),
            )],
            "stale_signature",
        ),
    ];
    for (headers, code) in &refusals {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, answer) = rig.hook("stripe", &body, &headers).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (401, Some(*code)),
            "{answer}"
        );
        rig.nothing_enqueued(code).await;
    }
    assert_eq!(rig.counts.get("stripe", HookOutcome::Refused), 3);
    assert_eq!(
        at(&rig.load("order-4").await),
        ("AwaitingPayment", Status::Running, None)
    );

    // an unknown hook (counted under one name), an unknown execution (the provider retries)
    let (status, answer) = rig.hook("paypal", &body, &[]).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (404, Some("unknown_hook"))
    );
    assert_eq!(
        rig.counts
            .get(harel_api::UNKNOWN_HOOK, HookOutcome::Refused),
        1
    );
    let ghost = stripe_event(
        "evt_6",
        "payment_intent.succeeded",
        "order-ghost",
        json!({"amount_received": 3}),
    );
    let (status, answer) = rig.stripe(&ghost, STRIPE_SECRET, now()).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (404, Some("unknown_execution")),
        "{answer}"
    );
    rig.nothing_enqueued("refusals").await;
    assert_eq!(rig.counts.get("stripe", HookOutcome::Delivered), 4);
}

/// GitHub's scheme (the delivery id from X-GitHub-Delivery, the event type from a header,
/// the execution created by the first delivery) and the generic hmac one (base64, a signed
/// timestamp).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn github_and_generic_hmac_webhooks_through_the_api_function() {
    let rig = rig("apigh").await;
    let pr = |action: &str, merged: bool| {
        json!({"action": action, "number": 7,
               "pull_request": {"number": 7, "merged": merged, "title": "Add webhooks"}})
        .to_string()
    };
    let github = |body: &str, event: &str, delivery: &str, secret: &str| {
        vec![
            ("x-github-event".to_string(), event.to_string()),
            ("x-github-delivery".to_string(), delivery.to_string()),
            (
                "x-hub-signature-256".to_string(),
                sign::github(secret.as_bytes(), body.as_bytes()),
            ),
        ]
    };
    let send = |headers: Vec<(String, String)>, body: String| {
        let rig = &rig;
        async move {
            let headers: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            rig.hook("github", &body, &headers).await
        }
    };

    // the first delivery creates pr-7 and delivers its event in one batch
    let opened = pr("opened", false);
    let (status, answer) = send(
        github(&opened, "pull_request", "d-1", GITHUB_SECRET),
        opened,
    )
    .await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["created"], true);
    assert_eq!(answer["execution"], "pr-7");
    assert_eq!(
        answer["event"]["id"], "d-1",
        "the delivery id is the event id"
    );
    assert_eq!(rig.pump().await, 2, "the create, then the event");
    assert_eq!(at(&rig.load("pr-7").await), ("Open", Status::Running, None));

    // GitHub's ping: not routed, acknowledged
    let ping = json!({"zen": "Keep it logically awesome."}).to_string();
    let (status, answer) = send(github(&ping, "ping", "d-2", GITHUB_SECRET), ping).await;
    assert_eq!((status, answer["status"].as_str()), (200, Some("ignored")));
    assert_eq!(rig.counts.get("github", HookOutcome::Ignored), 1);

    // a forged one changes nothing
    let closed = pr("closed", true);
    let (status, _) = send(
        github(&closed, "pull_request", "d-3", "not-the-secret"),
        closed.clone(),
    )
    .await;
    assert_eq!(status, 401);
    rig.nothing_enqueued("a forged GitHub delivery").await;

    // merged: the execution exists, so no second create
    let (status, answer) = send(
        github(&closed, "pull_request", "d-3", GITHUB_SECRET),
        closed,
    )
    .await;
    assert_eq!(
        (status, &answer["created"]),
        (202, &json!(false)),
        "{answer}"
    );
    assert_eq!(rig.pump().await, 1);
    assert_eq!(
        at(&rig.load("pr-7").await),
        ("Merged", Status::Done, Some("success"))
    );

    // the generic scheme: HMAC-SHA256 over "{timestamp}.{body}", base64, in X-Signature
    rig.create("signup", "su-1").await;
    let verified = json!({"event_id": "ev-77", "type": "user.verified",
                          "user": {"signup_id": "su-1", "email": "ada@example.com"}})
    .to_string();
    let signed = |secret: &str, t: i64| {
        let payload = format!("{t}.{verified}");
        sign::hmac(
            Algorithm::Sha256,
            Encoding::Base64,
            secret.as_bytes(),
            payload.as_bytes(),
        )
    };
    for (secret, t, code) in [
        ("wrong", now(), "bad_signature"),
        (IDENTITY_SECRET, now() - 3600, "stale_signature"),
    ] {
        let (status, answer) = rig
            .hook(
                "identity",
                &verified,
                &[
                    ("x-signature", &signed(secret, t)),
                    ("x-timestamp", &t.to_string()),
                ],
            )
            .await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (401, Some(code)),
            "{answer}"
        );
        rig.nothing_enqueued(code).await;
    }
    let t = now();
    let (status, answer) = rig
        .hook(
            "identity",
            &verified,
            &[
                ("x-signature", &signed(IDENTITY_SECRET, t)),
                ("x-timestamp", &t.to_string()),
            ],
        )
        .await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["event"], json!({"id": "ev-77", "kind": "Verified"}));
    rig.pump().await;
    let signup = rig.load("su-1").await;
    assert_eq!(at(&signup), ("Active", Status::Done, Some("success")));
}

fn key() -> CallbackKey {
    CallbackKey::new(Secret::new(CALLBACK_SECRET, "test")).expect("long enough")
}

/// Callback tokens the worker made: completed, failed, reused, expired, forged, for an
/// unknown execution and for one that moved on.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn callback_tokens_through_the_api_function() {
    let rig = rig("apicb").await;
    let token_of = |exe: &Execution| {
        exe.context["token"]
            .as_str()
            .expect("the token in the context")
            .to_string()
    };
    let call = |path: String, body: Value| {
        let rig = &rig;
        async move { rig.api.invoke("POST", &path, Some(&body.to_string())).await }
    };

    // completed, twice before the worker ran: one event id, one step
    rig.create("transfer", "t-1").await;
    let token = token_of(&rig.load("t-1").await);
    let done = json!({"data": {"reference": "R-1"}});
    let (s1, first) = call(format!("/callbacks/{token}"), done.clone()).await;
    let (s2, second) = call(format!("/callbacks/{token}"), done.clone()).await;
    assert_eq!((s1, s2), (202, 202), "{first} {second}");
    assert_eq!(first["event"]["kind"], "Confirmed");
    assert_eq!(first["event"]["id"], second["event"]["id"]);
    assert!(first["event"]["id"].as_str().unwrap().starts_with("cb:"));
    assert_eq!(rig.pump().await, 1);
    let t1 = rig.load("t-1").await;
    assert_eq!(at(&t1), ("Approved", Status::Done, Some("success")));
    assert_eq!(t1.processed_events, 1);

    // reused once it is DONE, completed or failed: the same event id, nothing enqueued
    for path in [
        format!("/callbacks/{token}"),
        format!("/callbacks/{token}/fail"),
    ] {
        let (status, again) = call(path.clone(), json!({})).await;
        assert_eq!(
            (status, again["status"].as_str()),
            (202, Some("duplicate")),
            "{path}"
        );
        assert_eq!(again["event"]["id"], first["event"]["id"]);
        rig.nothing_enqueued("a reused token").await;
    }

    // failed
    rig.create("transfer", "t-2").await;
    let token2 = token_of(&rig.load("t-2").await);
    let (status, failed) = call(
        format!("/callbacks/{token2}/fail"),
        json!({"error": "insufficient funds"}),
    )
    .await;
    assert_eq!(
        (status, failed["event"]["kind"].as_str()),
        (202, Some("CallbackFailed"))
    );
    rig.pump().await;
    let t2 = rig.load("t-2").await;
    assert_eq!(at(&t2), ("Rejected", Status::Done, Some("failed")));

    // refusals on a waiting execution: nothing enqueued for any
    rig.create("transfer", "t-3").await;
    let token3 = token_of(&rig.load("t-3").await);
    let claims = |execution: &str, exp: i64| Claims {
        execution: execution.into(),
        event: "Confirmed".into(),
        fail_event: "CallbackFailed".into(),
        exp,
        nonce: "0123456789abcdef0123456789abcdef".into(),
    };
    let other = CallbackKey::new(Secret::new("another-stack-secret-another-stack!!", "other"))
        .expect("long enough");
    // t-1's token with its claims rewritten to name t-3, its signature kept
    let (payload, sig) = token.split_once('.').unwrap();
    let mut rewritten: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    rewritten["x"] = json!("t-3");
    let moved = format!(
        "{}.{sig}",
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&rewritten).unwrap())
    );
    let cases = [
        (
            callback::issue(&key(), &claims("t-3", now() - 10)),
            json!({"data": {"reference": "R-3"}}),
            410,
            "token_expired",
        ),
        (
            callback::issue(&other, &claims("t-3", now() + 600)),
            json!({"data": {"reference": "R-3"}}),
            401,
            "bad_token",
        ),
        (
            moved,
            json!({"data": {"reference": "R-3"}}),
            401,
            "bad_token",
        ),
        ("not-a-token".to_string(), json!({}), 401, "bad_token"),
        (
            callback::issue(&key(), &claims("ghost", now() + 600)),
            json!({"data": {"reference": "R-3"}}),
            404,
            "unknown_execution",
        ),
        (
            token3.clone(),
            json!({"data": {"reference": 3}}),
            400,
            "invalid_event_data",
        ),
        (token3.clone(), json!({"datum": {}}), 400, "invalid_body"),
    ];
    for (token, body, status, code) in cases {
        let (got, answer) = call(format!("/callbacks/{token}"), body).await;
        assert_eq!(
            (got, answer["error"]["code"].as_str()),
            (status, Some(code)),
            "{answer}"
        );
        rig.nothing_enqueued(code).await;
    }
    assert_eq!(
        at(&rig.load("t-3").await),
        ("Waiting", Status::Running, None)
    );

    // too late: the wait timed out before the token was used
    let fired = harel_lambda::sweep_once(
        &rig.stack.store(),
        &rig.stack.transport(),
        now() as f64 + 7201.0,
    )
    .await
    .expect("sweep");
    assert_eq!(fired, 1);
    rig.pump().await;
    assert_eq!(
        at(&rig.load("t-3").await),
        ("Expired", Status::Done, Some("abandoned"))
    );
    let (status, answer) = call(
        format!("/callbacks/{token3}"),
        json!({"data": {"reference": "R-3"}}),
    )
    .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (409, Some("execution_closed")),
        "{answer}"
    );
    rig.nothing_enqueued("a completion after the timeout").await;
}
