//! The api function on moto, through the worker: API Gateway (HTTP API, payload 2.0) events
//! go through lambda_http's own adapter (what `lambda_http::run` does with each invocation)
//! to the router the function boots (`harel_app::boot_with(Role::Api, ..)`, the function's
//! wiring), and the real worker is pumped from the moto queue. Every refusal is answered with
//! its status and leaves the queue empty. Run under scripts/with-moto.sh.

use std::sync::Arc;

use harel_lambda::Role;
use harel_model::Status;
use harel_store::prelude::*;
use harel_testkit::{config_from, pump, pump_once, MotoStack};
use serde_json::json;

mod common;
use common::Function;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn the_api_function_through_the_worker() {
    let stack = MotoStack::new("api").await;
    let settings = stack.settings(&[]);
    let pairs: Vec<(&str, &str)> = settings
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let booted = harel_app::aws::boot_with(Role::Api, config_from(Role::Api, &pairs), &stack.sdk)
        .await
        .expect("the api function boots");
    let backend = harel_api::Backend::new(booted.store, booted.transport, booted.driver);
    let api = Function {
        router: harel_api::router(Arc::new(backend)),
    };
    let worker = stack.worker(harel_app::aws::driver().expect("the app"), &[]);
    let source = stack.source();
    let store = stack.store();

    // create, twice under one Idempotency-Key: one id, one create on the queue
    let key = [("idempotency-key", "checkout-4711")];
    let body = r#"{"machine": "Order", "context": {"items": 2}}"#;
    let (s1, first) = api
        .invoke_with("POST", "/executions", Some(body), &key)
        .await;
    let (s2, second) = api
        .invoke_with("POST", "/executions", Some(body), &key)
        .await;
    assert_eq!((s1, s2), (202, 202), "{first} {second}");
    assert_eq!(first["id"], second["id"]);
    assert!(first["version"].is_string());
    let id = first["id"].as_str().unwrap().to_string();
    let handled = pump(&source, &worker).await;
    assert_eq!(
        handled.len(),
        1,
        "the repeat was deduplicated by the queue: {handled:?}"
    );
    let exe = store
        .load(&id)
        .await
        .unwrap()
        .expect("the worker created it");
    assert_eq!(exe.status, Status::Running);
    assert_eq!(exe.context["items"], 2);
    // after the create: the repeat is answered from the table, nothing is sent
    let (s3, third) = api
        .invoke_with("POST", "/executions", Some(body), &key)
        .await;
    assert_eq!((s3, &third["id"]), (202, &first["id"]));
    assert!(pump_once(&source, &worker).await.is_empty());

    // send a list, in order
    let events =
        r#"[{"kind": "PlaceOrder"}, {"kind": "PaymentAuthorized", "data": {"amount": 30.0}}]"#;
    let (status, sent) = api
        .invoke("POST", &format!("/executions/{id}/events"), Some(events))
        .await;
    assert_eq!(status, 202, "{sent}");
    assert_eq!(pump(&source, &worker).await.len(), 2);

    // show: harel's JSON, the version, the timers
    let (status, shown) = api.invoke("GET", &format!("/executions/{id}"), None).await;
    assert_eq!(status, 200);
    assert_eq!(shown["execution"]["active_path"], "Fulfilment.Packing");
    assert_eq!(shown["version"], first["version"]);
    assert!(shown["timers"].is_array());

    // list through the index
    let (status, page) = api
        .invoke(
            "GET",
            "/executions?machine=Order&status=RUNNING&limit=10",
            None,
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == id.as_str()),
        "{page}"
    );

    // control: suspend parks the backlog, resume lets it through, terminate ends it
    let (status, out) = api
        .invoke("POST", &format!("/executions/{id}/suspend"), None)
        .await;
    assert_eq!(
        (status, out["status"].as_str()),
        (200, Some("SUSPENDED")),
        "{out}"
    );
    let (status, out) = api
        .invoke("POST", &format!("/executions/{id}/resume"), Some("{}"))
        .await;
    assert_eq!(
        (status, out["status"].as_str()),
        (200, Some("RUNNING")),
        "{out}"
    );

    // every refusal: its status, and nothing on the queue
    let refusals: Vec<(&str, String, Option<String>, u16, &str)> = vec![
        (
            "POST",
            "/executions".into(),
            Some(r#"{"machine": "Nope"}"#.into()),
            404,
            "unknown_machine",
        ),
        (
            "POST",
            "/executions".into(),
            Some(r#"{"machine": "Order", "context": {"items": "x"}}"#.into()),
            400,
            "invalid_context",
        ),
        (
            "POST",
            "/executions".into(),
            Some("{\"machine\": ".into()),
            400,
            "malformed_json",
        ),
        (
            "POST",
            "/executions".into(),
            Some(
                json!({"machine": "Order", "context": {"pad": "x".repeat(260 * 1024)}}).to_string(),
            ),
            413,
            "body_too_large",
        ),
        (
            "POST",
            "/executions".into(),
            Some(json!({"machine": "Order", "id": id}).to_string()),
            409,
            "execution_exists",
        ),
        (
            "POST",
            "/executions/ghost/events".into(),
            Some(r#"{"kind": "PlaceOrder"}"#.into()),
            404,
            "unknown_execution",
        ),
        (
            "POST",
            format!("/executions/{id}/events"),
            Some(r#"{"kind": "Teleport"}"#.into()),
            400,
            "undeclared_event",
        ),
        (
            "POST",
            format!("/executions/{id}/events"),
            Some(r#"[{"kind": "Shipped"}, {"kind": "Shipped", "data": {"carrier": 7}}]"#.into()),
            400,
            "invalid_event_data",
        ),
        (
            "GET",
            "/executions/ghost".into(),
            None,
            404,
            "unknown_execution",
        ),
        (
            "GET",
            "/executions?limit=0".into(),
            None,
            400,
            "invalid_query",
        ),
        (
            "POST",
            "/executions/ghost/cancel".into(),
            None,
            404,
            "unknown_execution",
        ),
    ];
    for (method, path, body, status, code) in &refusals {
        let (got, answer) = api.invoke(method, path, body.as_deref()).await;
        assert_eq!(
            (got, answer["error"]["code"].as_str()),
            (*status, Some(*code)),
            "{method} {path}: {answer}"
        );
        assert!(
            pump_once(&source, &worker).await.is_empty(),
            "{method} {path} enqueued something"
        );
    }

    let (status, out) = api
        .invoke("POST", &format!("/executions/{id}/terminate"), None)
        .await;
    assert_eq!(
        (status, out["status"].as_str()),
        (200, Some("CANCELLED")),
        "{out}"
    );
    let (status, closed) = api
        .invoke(
            "POST",
            &format!("/executions/{id}/events"),
            Some(r#"{"kind": "Delivered"}"#),
        )
        .await;
    assert_eq!(
        (status, closed["error"]["code"].as_str()),
        (409, Some("execution_closed"))
    );
    assert!(pump_once(&source, &worker).await.is_empty());
}
