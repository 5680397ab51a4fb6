//! The router over the in-memory store and queue: every route, every refusal with its status
//! and code, and on every refusal an empty queue. The worker's side is the embedded runner
//! draining the queue (the moto test in functions/api runs the real worker).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use axum::Router;
use harel_api::Backend;
use harel_model::{Event, Object};
use harel_queue::inbound::{parse, Inbound};
use harel_queue::MemoryTransport;
use harel_runtime::{Action, ActionContext, ActionFuture, ActionRegistry, Driver, DurableRunner};
use harel_store::MemoryStore;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

/// order.stm's actions are stand-ins: here they do nothing.
struct NoOp;

impl Action for NoOp {
    fn call<'a>(
        &'a self,
        _ctx: ActionContext<'a>,
        _event: Option<&'a Event>,
        _inputs: &'a Object,
    ) -> ActionFuture<'a> {
        Box::pin(std::future::ready(Ok(Value::Null)))
    }
}

struct Api {
    router: Router,
    queue: Arc<MemoryTransport>,
    runner: DurableRunner<Arc<MemoryStore>>,
}

fn machines() -> Vec<harel_model::Definition> {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/order.stm");
    vec![harel_lang::load_file(std::path::Path::new(file), Some("Order")).expect("order.stm")]
}

fn api() -> Api {
    let store = Arc::new(MemoryStore::new());
    let queue = Arc::new(MemoryTransport::new());
    let backend = Backend::new(
        Arc::clone(&store),
        Arc::clone(&queue),
        Driver::new(machines(), ActionRegistry::with_stdlib()),
    );
    let mut actions = ActionRegistry::with_stdlib();
    actions.set_fallback(Arc::new(NoOp));
    let runner = DurableRunner::with_driver(store, Driver::new(machines(), actions));
    Api {
        router: harel_api::router(Arc::new(backend)),
        queue,
        runner,
    }
}

impl Api {
    async fn call(
        &self,
        method: Method,
        uri: &str,
        body: &str,
        headers: &[(&str, &str)],
    ) -> (StatusCode, Value) {
        let mut request = Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let response = self
            .router
            .clone()
            .oneshot(request.body(Body::from(body.to_string())).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let value = serde_json::from_slice(&bytes)
            .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, value)
    }

    async fn post(&self, uri: &str, body: &str) -> (StatusCode, Value) {
        self.call(Method::POST, uri, body, &[]).await
    }

    async fn get(&self, uri: &str) -> (StatusCode, Value) {
        self.call(Method::GET, uri, "", &[]).await
    }

    /// What the worker would do with the queue: each message through the runner.
    async fn drain(&self) -> usize {
        let messages = self.queue.take_all();
        for m in &messages {
            match parse(Some(&m.group_id), &m.body).unwrap().1 {
                Inbound::Create(c) => {
                    self.runner
                        .create(&c.definition_id, Some(c.context), Some(&c.execution_id))
                        .await
                        .unwrap();
                }
                Inbound::Event(e) => {
                    self.runner.process(&m.group_id, &e).await.unwrap();
                }
            }
        }
        messages.len()
    }

    /// A refusal: its status and code, and nothing enqueued.
    async fn refused(
        &self,
        method: Method,
        uri: &str,
        body: &str,
        status: StatusCode,
        code: &str,
    ) -> String {
        let (got, value) = self.call(method, uri, body, &[]).await;
        assert_eq!(got, status, "{uri} {body:.80}: {value}");
        assert_eq!(value["error"]["code"], code, "{value}");
        assert!(
            self.queue.is_empty(),
            "{uri} {body:.80}: a refusal enqueued something"
        );
        value["error"]["message"].as_str().unwrap().to_string()
    }

    async fn created(&self, body: Value) -> String {
        let (status, value) = self.post("/executions", &body.to_string()).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{value}");
        assert_eq!(self.drain().await, 1);
        value["id"].as_str().unwrap().to_string()
    }
}

#[tokio::test]
async fn create_send_show_list() {
    let api = api();
    let (status, created) = api
        .post(
            "/executions",
            r#"{"machine": "Order", "id": "o-1", "context": {"items": 2}}"#,
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(created["id"], "o-1");
    assert_eq!(created["machine"], "Order");
    let version = created["version"].as_str().expect("the deployed version");
    assert_eq!(version.len(), 16);
    assert_eq!(api.queue.len(), 1);
    api.drain().await;

    let (status, sent) = api
        .post(
            "/executions/o-1/events",
            r#"[{"kind": "PlaceOrder"}, {"kind": "PaymentAuthorized", "data": {"amount": 12.5}}]"#,
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{sent}");
    assert_eq!(sent["events"].as_array().unwrap().len(), 2);
    assert_eq!(api.drain().await, 2);

    let (status, shown) = api.get("/executions/o-1").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown["execution"]["status"], "RUNNING");
    assert_eq!(shown["execution"]["context"]["items"], 2);
    assert_eq!(shown["version"], version);
    assert!(shown["timers"].is_array());

    let (status, page) = api
        .get("/executions?status=RUNNING,DONE&machine=Order&limit=5")
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["items"][0]["id"], "o-1");
    let (_, none) = api.get("/executions?status=DONE").await;
    assert_eq!(none["items"], json!([]));
}

#[tokio::test]
async fn an_idempotency_key_names_one_execution_and_enqueues_once() {
    let api = api();
    let key = [
        ("idempotency-key", "order-77"),
        ("content-type", "application/json"),
    ];
    let body = r#"{"machine": "Order"}"#;
    let (s1, first) = api.call(Method::POST, "/executions", body, &key).await;
    let (s2, second) = api.call(Method::POST, "/executions", body, &key).await;
    assert_eq!((s1, s2), (StatusCode::ACCEPTED, StatusCode::ACCEPTED));
    assert_eq!(first["id"], second["id"]);
    // before the worker ran: the same dedupe id, so the queue kept one
    assert_eq!(api.queue.len(), 1);
    api.drain().await;
    // after: answered from the store, nothing sent
    let (s3, third) = api.call(Method::POST, "/executions", body, &key).await;
    assert_eq!(s3, StatusCode::ACCEPTED);
    assert_eq!(third["id"], first["id"]);
    assert_eq!(api.queue.publish_calls(), 2);
    assert!(api.queue.is_empty());
    // without the key an existing id is a conflict
    let id = first["id"].as_str().unwrap();
    api.refused(
        Method::POST,
        "/executions",
        &json!({"machine": "Order", "id": id}).to_string(),
        StatusCode::CONFLICT,
        "execution_exists",
    )
    .await;
    // events under a key get the same ids on a retry
    let ev = r#"{"kind": "PlaceOrder"}"#;
    let (_, a) = api
        .call(Method::POST, &format!("/executions/{id}/events"), ev, &key)
        .await;
    let (_, b) = api
        .call(Method::POST, &format!("/executions/{id}/events"), ev, &key)
        .await;
    assert_eq!(a["events"][0]["id"], b["events"][0]["id"]);
    assert_eq!(api.queue.len(), 1);
}

#[tokio::test]
async fn bad_creates_are_refused_and_enqueue_nothing() {
    let api = api();
    let post = Method::POST;
    api.refused(
        post.clone(),
        "/executions",
        r#"{"machine": "Nope"}"#,
        StatusCode::NOT_FOUND,
        "unknown_machine",
    )
    .await;
    let why = api
        .refused(
            post.clone(),
            "/executions",
            r#"{"machine": "Order", "context": {"items": "three"}}"#,
            StatusCode::BAD_REQUEST,
            "invalid_context",
        )
        .await;
    assert!(why.contains("items"), "{why}");
    let why = api
        .refused(
            post.clone(),
            "/executions",
            "{\"machine\": \n \"Order\",",
            StatusCode::BAD_REQUEST,
            "malformed_json",
        )
        .await;
    assert!(why.contains("line 2 column"), "{why}");
    api.refused(
        post.clone(),
        "/executions",
        r#"{"machine": "Order", "colour": 1}"#,
        StatusCode::BAD_REQUEST,
        "invalid_body",
    )
    .await;
    api.refused(
        post.clone(),
        "/executions",
        r#"{"context": {}}"#,
        StatusCode::BAD_REQUEST,
        "invalid_body",
    )
    .await;
    api.refused(
        post.clone(),
        "/executions",
        r#"{"machine": "Order", "id": "has space"}"#,
        StatusCode::BAD_REQUEST,
        "invalid_id",
    )
    .await;
    let big = json!({"machine": "Order", "context": {"note": "x".repeat(300 * 1024)}}).to_string();
    api.refused(
        post,
        "/executions",
        &big,
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
    )
    .await;
    assert_eq!(api.queue.publish_calls(), 0);
}

#[tokio::test]
async fn bad_events_are_refused_and_enqueue_nothing() {
    let api = api();
    let id = api.created(json!({"machine": "Order", "id": "o-2"})).await;
    let uri = format!("/executions/{id}/events");
    let post = Method::POST;
    api.refused(
        post.clone(),
        "/executions/nobody/events",
        r#"{"kind": "PlaceOrder"}"#,
        StatusCode::NOT_FOUND,
        "unknown_execution",
    )
    .await;
    let why = api
        .refused(
            post.clone(),
            &uri,
            r#"{"kind": "Teleport"}"#,
            StatusCode::BAD_REQUEST,
            "undeclared_event",
        )
        .await;
    assert!(
        why.contains("Teleport") && why.contains("PlaceOrder"),
        "{why}"
    );
    // one bad event of a list: none of them is sent
    api.refused(
        post.clone(),
        &uri,
        r#"[{"kind": "PlaceOrder"}, {"kind": "PaymentAuthorized", "data": {"amount": "lots"}}]"#,
        StatusCode::BAD_REQUEST,
        "invalid_event_data",
    )
    .await;
    api.refused(
        post.clone(),
        &uri,
        r#"{"kind": "harel:create"}"#,
        StatusCode::BAD_REQUEST,
        "invalid_event",
    )
    .await;
    api.refused(
        post.clone(),
        &uri,
        r#"[]"#,
        StatusCode::BAD_REQUEST,
        "invalid_body",
    )
    .await;
    api.refused(
        post.clone(),
        &uri,
        r#""PlaceOrder""#,
        StatusCode::BAD_REQUEST,
        "invalid_body",
    )
    .await;
    api.refused(
        post.clone(),
        &uri,
        r#"{"kind": "PlaceOrder""#,
        StatusCode::BAD_REQUEST,
        "malformed_json",
    )
    .await;
    // a finished execution takes no more events
    api.post(&uri, r#"{"kind": "CancelOrder"}"#).await;
    api.drain().await;
    let why = api
        .refused(
            post,
            &uri,
            r#"{"kind": "PlaceOrder"}"#,
            StatusCode::CONFLICT,
            "execution_closed",
        )
        .await;
    assert!(why.contains("DONE"), "{why}");
}

#[tokio::test]
async fn control_through_the_control_plane() {
    let api = api();
    let id = api.created(json!({"machine": "Order", "id": "o-3"})).await;
    let (status, out) = api.post(&format!("/executions/{id}/suspend"), "").await;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(
        (out["status"].as_str(), out["changed"].as_bool()),
        (Some("SUSPENDED"), Some(true))
    );
    let (_, out) = api.post(&format!("/executions/{id}/resume"), "{}").await;
    assert_eq!(out["status"], "RUNNING");
    api.refused(
        Method::POST,
        &format!("/executions/{id}/redrive"),
        "",
        StatusCode::BAD_REQUEST,
        "malformed_json",
    )
    .await;
    api.refused(
        Method::POST,
        &format!("/executions/{id}/suspend"),
        r#"{"force": true}"#,
        StatusCode::BAD_REQUEST,
        "invalid_body",
    )
    .await;
    api.refused(
        Method::POST,
        "/executions/ghost/terminate",
        "",
        StatusCode::NOT_FOUND,
        "unknown_execution",
    )
    .await;
    api.refused(
        Method::POST,
        "/executions/ghost/cancel",
        "",
        StatusCode::NOT_FOUND,
        "unknown_execution",
    )
    .await;
    let (_, out) = api
        .post(
            &format!("/executions/{id}/cancel"),
            r#"{"reason": {"by": "test"}}"#,
        )
        .await;
    assert_eq!(out["command"], "cancel");
    // order.stm has no Cancel transition: forceful
    assert_eq!(out["status"], "CANCELLED", "{out}");
    let (_, out) = api.post(&format!("/executions/{id}/terminate"), "").await;
    assert_eq!(out["changed"], false);
}

#[tokio::test]
async fn listing_queries_are_checked() {
    let api = api();
    let get = Method::GET;
    api.refused(
        get.clone(),
        "/executions?limit=0",
        "",
        StatusCode::BAD_REQUEST,
        "invalid_query",
    )
    .await;
    api.refused(
        get.clone(),
        "/executions?limit=many",
        "",
        StatusCode::BAD_REQUEST,
        "invalid_query",
    )
    .await;
    api.refused(
        get.clone(),
        "/executions?status=SLEEPING",
        "",
        StatusCode::BAD_REQUEST,
        "invalid_query",
    )
    .await;
    api.refused(
        get.clone(),
        "/executions?colour=red",
        "",
        StatusCode::BAD_REQUEST,
        "invalid_query",
    )
    .await;
    api.refused(
        get.clone(),
        "/executions?cursor=garbage",
        "",
        StatusCode::BAD_REQUEST,
        "invalid_cursor",
    )
    .await;
    api.refused(
        get.clone(),
        "/executions/ghost",
        "",
        StatusCode::NOT_FOUND,
        "unknown_execution",
    )
    .await;
    api.refused(get, "/nowhere", "", StatusCode::NOT_FOUND, "no_route")
        .await;
    api.refused(
        Method::DELETE,
        "/executions",
        "",
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    )
    .await;
}

/// openapi.yaml and the router agree: every operation the spec names is routed, every other
/// method on its paths is 405, and a path it does not name is 404.
#[tokio::test]
async fn the_spec_is_the_router() {
    let api = api();
    let spec = harel_api::spec::openapi();
    let paths = spec["paths"].as_object().expect("paths");
    let methods = ["get", "post", "put", "patch", "delete"];
    for (path, ops) in paths {
        let uri = path
            .replace("{id}", "some-id")
            .replace("{name}", "some-hook")
            .replace("{token}", "some-token");
        for method in methods {
            let (status, value) = api
                .call(method.to_uppercase().parse().unwrap(), &uri, "", &[])
                .await;
            if ops.get(method).is_some() {
                assert!(
                    status != StatusCode::METHOD_NOT_ALLOWED
                        && value["error"]["code"] != "no_route",
                    "{method} {path} is in the spec but not routed: {status} {value}"
                );
                let documented = ops[method]["responses"].as_object().unwrap();
                assert!(
                    documented.contains_key(status.as_str()),
                    "{method} {path} answered {status}, which the spec does not list: {value}"
                );
            } else {
                assert_eq!(
                    status,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {path} is routed but not in the spec"
                );
            }
        }
    }
    for extra in [
        "/executions/some-id/pause",
        "/executions/some-id/events/1",
        "/hooks",
    ] {
        let (status, _) = api.post(extra, "").await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{extra}");
    }
    let (status, yaml) = api.get("/openapi.yaml").await;
    assert_eq!(status, StatusCode::OK);
    assert!(yaml.as_str().unwrap().starts_with("openapi: 3"));
    let (_, json) = api.get("/openapi.json").await;
    assert_eq!(&json, spec);
}

/// Found by schemathesis: an explicit null is not an absent field, and serde reads a struct
/// from an array too; both are refused.
#[tokio::test]
async fn nulls_and_arrays_are_not_objects() {
    let api = api();
    let id = api.created(json!({"machine": "Order", "id": "o-9"})).await;
    let bad = StatusCode::BAD_REQUEST;
    for (uri, body) in [
        (
            "/executions".to_string(),
            r#"{"machine": "Order", "id": null}"#,
        ),
        ("/executions".to_string(), r#"["Order"]"#),
        (format!("/executions/{id}/suspend"), "[]"),
        (format!("/executions/{id}/cancel"), r#"{"reason": null}"#),
        (format!("/executions/{id}/events"), "[[]]"),
        (
            format!("/executions/{id}/events"),
            r#"{"kind": "PlaceOrder", "data": null}"#,
        ),
    ] {
        api.refused(Method::POST, &uri, body, bad, "invalid_body")
            .await;
    }
    // found by schemathesis: whitespace alone is no JSON (only no bytes at all is no body)
    for (uri, body) in [
        (format!("/executions/{id}/suspend"), "\n"),
        (format!("/executions/{id}/cancel"), " "),
    ] {
        api.refused(Method::POST, &uri, body, bad, "malformed_json")
            .await;
    }
    // found by schemathesis: a key with a space is not one of the keys the spec allows
    let key = [("idempotency-key", "two words")];
    let (status, _) = api
        .call(Method::POST, "/executions", r#"{"machine": "Order"}"#, &key)
        .await;
    assert_eq!(status, bad);
    assert!(api.queue.is_empty());
}
