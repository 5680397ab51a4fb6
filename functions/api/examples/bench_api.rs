//! What one API request costs in AWS requests, on moto: the api function's router over
//! DynamoDB and SQS clients that count every request (and the read capacity DynamoDB reports),
//! beside what the worker then spends on the same create or event: creates, sends, reads,
//! control, a Stripe webhook (examples/webhook_payment, signed as Stripe signs) and a callback
//! token's completion (tests/fixtures/ingress/transfer.stm). Run by scripts/bench-api.sh
//! (under scripts/with-moto.sh).

use std::collections::BTreeMap;
use std::sync::Arc;

use harel_dynamodb::DynamoDbStore;
use harel_lambda::Worker;
use harel_sqs::SqsTransport;
use harel_testkit::{pump, MotoStack, Recorder};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

const STRIPE_SECRET: &str = "whsec_bench";
const CALLBACK_SECRET: &str = "0123456789abcdef0123456789abcdef-bench";

/// Requests by operation and the read capacity units the answers report, since the last
/// take, for one pair of clients.
fn take(counter: &Recorder) -> (BTreeMap<String, usize>, f64) {
    let tally = counter.take();
    (tally.by_operation(), tally.consumed_units())
}

fn counted(stack: &MotoStack) -> (DynamoDbStore, SqsTransport, Recorder) {
    let counter = Recorder::new();
    let ddb = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&stack.sdk)
            .http_client(counter.http_client())
            .build(),
    );
    let sqs = aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(&stack.sdk)
            .http_client(counter.http_client())
            .build(),
    );
    let store = DynamoDbStore::new(ddb, &stack.prefix).expect("prefix");
    (
        store,
        SqsTransport::new(sqs, &stack.queue).with_dead_letter_queue(&stack.dlq),
        counter,
    )
}

async fn call(router: &harel_api::axum::Router, method: &str, uri: &str, body: &str) -> Value {
    call_with(router, method, uri, body, &[]).await
}

async fn call_with(
    router: &harel_api::axum::Router,
    method: &str,
    uri: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> Value {
    let mut request = harel_api::axum::http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json");
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let request = request
        .body(harel_api::axum::body::Body::from(body.to_string()))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    assert!(
        response.status().is_success(),
        "{method} {uri}: {}",
        response.status()
    );
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

struct Row {
    what: &'static str,
    api: (BTreeMap<String, usize>, f64),
    worker: Option<(BTreeMap<String, usize>, f64)>,
}

fn per(n: usize, (ops, units): &(BTreeMap<String, usize>, f64)) -> String {
    let total: usize = ops.values().sum();
    let detail: Vec<String> = ops
        .iter()
        .map(|(op, c)| format!("{op} {:.1}", *c as f64 / n as f64))
        .collect();
    format!(
        "{:>5.1} req {:>5.2} RCU  ({})",
        total as f64 / n as f64,
        units / n as f64,
        detail.join(", ")
    )
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let stack = MotoStack::new("bapi").await;
    let (store, transport, api_counter) = counted(&stack);
    // the app's machines and, as a machines layer would bring them, the webhook example's and
    // a callback token's; the hooks file's secret and the callback secret given here
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let layer = std::env::temp_dir().join(format!("harel-bench-api-{}", stack.prefix));
    std::fs::create_dir_all(&layer).expect("a temporary directory");
    for file in [
        "examples/webhook_payment/payment.stm",
        "tests/fixtures/ingress/transfer.stm",
    ] {
        let from = root.join(file);
        std::fs::copy(&from, layer.join(from.file_name().unwrap())).expect("a machine");
    }
    std::env::set_var("STRIPE_WEBHOOK_SECRET", STRIPE_SECRET);
    std::env::set_var(harel_hooks::callback::SECRET_VAR, CALLBACK_SECRET);
    let (driver, _) = harel_app::aws::driver_with(Some(&layer), None, None, false)
        .await
        .expect("the api's machines");
    let hooks = harel_hooks::HooksFile::load(&root.join("examples/webhook_payment/hooks.yaml"))
        .expect("the example's hooks");
    let ingress = harel_api::Ingress {
        hooks: Some(
            harel_hooks::Hooks::resolve(hooks, None)
                .await
                .expect("its secret"),
        ),
        callback_key: harel_hooks::CallbackKey::from_env(None)
            .await
            .expect("the callback secret"),
        metrics: Arc::new(harel_api::HookCounts::new()),
    };
    let router = harel_api::router(Arc::new(
        harel_api::Backend::new(store, transport, driver).with_ingress(ingress),
    ));
    let (wstore, wtransport, worker_counter) = counted(&stack);
    let (worker_driver, _) = harel_app::aws::driver_with(Some(&layer), None, None, true)
        .await
        .expect("the worker's machines");
    let worker = Arc::new(Worker::new(
        wstore,
        wtransport,
        worker_driver,
        None::<harel_idempotency::Idempotency<harel_idempotency::MemoryClient>>,
        stack.config(&[]),
    ));
    let source = stack.source();
    let mut rows = Vec::new();

    for i in 0..n {
        call(
            &router,
            "POST",
            "/executions",
            &format!(r#"{{"machine": "Order", "id": "b-{i}"}}"#),
        )
        .await;
    }
    let api = take(&api_counter);
    pump(&source, &worker).await;
    rows.push(Row {
        what: "create",
        api,
        worker: Some(take(&worker_counter)),
    });

    for i in 0..n {
        call(
            &router,
            "POST",
            &format!("/executions/b-{i}/events"),
            r#"{"kind": "PlaceOrder"}"#,
        )
        .await;
    }
    let api = take(&api_counter);
    pump(&source, &worker).await;
    rows.push(Row {
        what: "send (1 event)",
        api,
        worker: Some(take(&worker_counter)),
    });

    for i in 0..n {
        call(&router, "GET", &format!("/executions/b-{i}"), "").await;
    }
    rows.push(Row {
        what: "show",
        api: take(&api_counter),
        worker: None,
    });
    for _ in 0..n {
        call(
            &router,
            "GET",
            "/executions?machine=Order&status=RUNNING&limit=10",
            "",
        )
        .await;
    }
    rows.push(Row {
        what: "list (page of 10)",
        api: take(&api_counter),
        worker: None,
    });
    for i in 0..n {
        call(&router, "POST", &format!("/executions/b-{i}/suspend"), "").await;
    }
    rows.push(Row {
        what: "suspend",
        api: take(&api_counter),
        worker: None,
    });

    // webhooks: n orders waiting for their payment, then one signed Stripe delivery each
    for i in 0..n {
        call(
            &router,
            "POST",
            "/executions",
            &format!(r#"{{"machine": "payment", "id": "order-{i}"}}"#),
        )
        .await;
    }
    take(&api_counter);
    pump(&source, &worker).await;
    take(&worker_counter);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let delivery = |i: usize| {
        serde_json::json!({"id": format!("evt_{i}"), "type": "payment_intent.succeeded",
            "data": {"object": {"id": format!("pi_{i}"), "amount_received": 100,
                                "metadata": {"harel_order_id": format!("order-{i}")}}}})
        .to_string()
    };
    for i in 0..n {
        let body = delivery(i);
        let signature =
            harel_hooks::signature::sign::stripe(STRIPE_SECRET.as_bytes(), now, body.as_bytes());
        call_with(
            &router,
            "POST",
            "/hooks/stripe",
            &body,
            &[("stripe-signature", &signature)],
        )
        .await;
    }
    let api = take(&api_counter);
    pump(&source, &worker).await;
    rows.push(Row {
        what: "webhook (Stripe)",
        api,
        worker: Some(take(&worker_counter)),
    });
    // the same deliveries again, the orders DONE: answered `duplicate`, nothing enqueued
    for i in 0..n {
        let body = delivery(i);
        let signature =
            harel_hooks::signature::sign::stripe(STRIPE_SECRET.as_bytes(), now, body.as_bytes());
        call_with(
            &router,
            "POST",
            "/hooks/stripe",
            &body,
            &[("stripe-signature", &signature)],
        )
        .await;
    }
    rows.push(Row {
        what: "webhook, a retry",
        api: take(&api_counter),
        worker: None,
    });

    // callback tokens: n transfers waiting, each completed once
    for i in 0..n {
        call(
            &router,
            "POST",
            "/executions",
            &format!(r#"{{"machine": "transfer", "id": "t-{i}"}}"#),
        )
        .await;
    }
    pump(&source, &worker).await;
    let mut tokens = Vec::with_capacity(n);
    for i in 0..n {
        let shown = call(&router, "GET", &format!("/executions/t-{i}"), "").await;
        tokens.push(
            shown["execution"]["context"]["token"]
                .as_str()
                .expect("the token")
                .to_string(),
        );
    }
    take(&api_counter);
    take(&worker_counter);
    for token in &tokens {
        call(
            &router,
            "POST",
            &format!("/callbacks/{token}"),
            r#"{"data": {"reference": "R"}}"#,
        )
        .await;
    }
    let api = take(&api_counter);
    pump(&source, &worker).await;
    rows.push(Row {
        what: "callback complete",
        api,
        worker: Some(take(&worker_counter)),
    });
    let _ = std::fs::remove_dir_all(&layer);

    println!("AWS requests (and DynamoDB read capacity units reported) per API request, mean of {n}, on moto");
    println!(
        "{:<18} {:<58} worker, for the same message",
        "request", "api function"
    );
    for row in &rows {
        let worker = row
            .worker
            .as_ref()
            .map(|w| per(n, w))
            .unwrap_or_else(|| "-".into());
        println!("{:<18} {:<58} {}", row.what, per(n, &row.api), worker);
    }
}
