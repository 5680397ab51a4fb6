//! The HTTP API's request bodies on input nobody wrote by hand: the create, send and control
//! routes over the in-memory store and queue never panic and never hang (each case under
//! `harel_fuzzing`'s deadline), answer every body with a 2xx or a 4xx whose
//! `{"error": {"code", "message"}}` says why (never a 5xx: nothing here can fail but the
//! body), and enqueue nothing when they refuse. Inputs: random bytes, JSON token soup with
//! the bodies' field names, and real bodies mutated. The fast tier runs a few hundred cases
//! per property; `scripts/fuzz.sh` more.

use std::sync::{Arc, LazyLock};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use harel_api::Backend;
use harel_fuzzing::check;
use harel_fuzzing::strategies::{mutated, random_bytes, token_soup, Bytes};
use harel_model::Definition;
use harel_queue::MemoryTransport;
use harel_runtime::{ActionRegistry, Driver, DurableRunner};
use harel_store::MemoryStore;
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

static MACHINES: LazyLock<Vec<Definition>> = LazyLock::new(|| {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/order.stm");
    vec![harel_lang::load_file(std::path::Path::new(file), Some("Order")).expect("order.stm")]
});

/// The routes that read a body, each on a running execution `o-1`.
const ROUTES: &[&str] = &[
    "/executions",
    "/executions/o-1/events",
    "/executions/o-1/cancel",
    "/executions/o-1/redrive",
    "/executions/o-1/suspend",
    "/executions/o-1/resume",
    "/executions/o-1/terminate",
];

const SEEDS: &[&str] = &[
    r#"{"machine": "Order", "id": "o-2", "context": {"items": 2, "declines": 0}}"#,
    r#"{"machine": "Order"}"#,
    r#"[{"kind": "PlaceOrder"}, {"kind": "PaymentAuthorized", "data": {"amount": 12.5}, "id": "e-1"}]"#,
    r#"{"kind": "PaymentDeclined", "data": {"reason": "card"}}"#,
    r#"{"reason": {"why": "customer asked", "n": [1, 2.5, null, true]}}"#,
    r#"{"to": "Order.Checkout.AwaitingPayment"}"#,
    "{}",
    "",
];

const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\"",
    "\"machine\"",
    "\"Order\"",
    "\"Nope\"",
    "\"id\"",
    "\"o-1\"",
    "\"a:b\"",
    "\"context\"",
    "\"items\"",
    "\"declines\"",
    "\"kind\"",
    "\"PlaceOrder\"",
    "\"PaymentAuthorized\"",
    "\"Cancel\"",
    "\"harel:create\"",
    "\"data\"",
    "\"amount\"",
    "\"reason\"",
    "\"to\"",
    "\"Order.Cart\"",
    "1",
    "-1",
    "2.5",
    "1e999",
    "-0",
    "18446744073709551616",
    "true",
    "null",
    "\"\\u0000\"",
    "\"\\ud800\"",
    "\\",
    "é",
    "\u{feff}",
    " ",
];

/// One case: a fresh store with `o-1` running, the body POSTed to every route.
fn post_everywhere(body: Vec<u8>) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("a runtime: {e}"))?;
    runtime.block_on(async move {
        let store = Arc::new(MemoryStore::new());
        let runner = DurableRunner::with_driver(
            Arc::clone(&store),
            Driver::new(MACHINES.clone(), ActionRegistry::with_stdlib()),
        );
        runner
            .create("Order", None, Some("o-1"))
            .await
            .map_err(|e| format!("the execution: {e}"))?;
        let queue = Arc::new(MemoryTransport::new());
        let router = harel_api::router(Arc::new(Backend::new(
            Arc::clone(&store),
            Arc::clone(&queue),
            Driver::new(MACHINES.clone(), ActionRegistry::with_stdlib()),
        )));
        for route in ROUTES {
            let request = Request::builder()
                .method(Method::POST)
                .uri(*route)
                .header("content-type", "application/json")
                .body(Body::from(body.clone()))
                .map_err(|e| format!("a request: {e}"))?;
            let response = router
                .clone()
                .oneshot(request)
                .await
                .map_err(|e| format!("{route}: {e}"))?;
            let status = response.status();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("{route}: the answer's body: {e}"))?
                .to_bytes();
            let answer: Value = serde_json::from_slice(&bytes).map_err(|e| {
                format!(
                    "{route}: {status} answered with no JSON ({e}): {}",
                    String::from_utf8_lossy(&bytes)
                )
            })?;
            if status.is_server_error() {
                return Err(format!("{route}: {status}: {answer}"));
            }
            if status.is_success() {
                queue.take_all();
                continue;
            }
            let code = answer["error"]["code"].as_str().unwrap_or_default();
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            if code.is_empty() || message.trim().is_empty() {
                return Err(format!(
                    "{route}: {status} without a code and a reason: {answer}"
                ));
            }
            if status == StatusCode::BAD_REQUEST
                && code == "malformed_json"
                && !message.contains("line")
            {
                return Err(format!(
                    "{route}: malformed JSON without its place: {answer}"
                ));
            }
            if !queue.is_empty() {
                return Err(format!("{route}: refused ({code}) yet enqueued something"));
            }
        }
        Ok(())
    })
}

#[test]
fn random_bytes_are_answered() {
    check(
        "api bodies random bytes",
        200,
        random_bytes(200),
        |b: Bytes| post_everywhere(b.0),
    );
}

#[test]
fn json_token_soup_is_answered() {
    check(
        "api bodies token soup",
        200,
        token_soup(TOKENS, 40),
        |text: String| post_everywhere(text.into_bytes()),
    );
}

#[test]
fn mutated_bodies_are_answered() {
    let seeds = SEEDS.iter().map(|s| s.as_bytes().to_vec()).collect();
    check(
        "api bodies mutated",
        200,
        mutated(seeds, TOKENS, 6, 24),
        |b: Bytes| post_everywhere(b.0),
    );
}

/// Bodies as deep as the limit lets them be: serde_json refuses past 128 levels, so a deep
/// body is a 400 with the place, not a stack overflow.
#[test]
fn deep_bodies_are_refused_with_the_place() {
    let n = 100_000;
    for body in [
        format!(
            "{{\"machine\": \"Order\", \"context\": {{\"items\": {}1{}}}}}",
            "[".repeat(n),
            "]".repeat(n)
        ),
        format!("{}{}", "[".repeat(n), "]".repeat(n)),
    ] {
        harel_fuzzing::within(harel_fuzzing::CASE_DEADLINE, move || {
            post_everywhere(body.into_bytes())
        })
        .expect("answered in time")
        .expect("every answer says why");
    }
}
