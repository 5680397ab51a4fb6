//! The whole-handler wrapper, driven as lambda_runtime drives a service.

use std::future::poll_fn;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use harel_idempotency::record::now_millis;
use harel_idempotency::{
    idempotent, DynamoDbPersistenceLayer, Idempotency, IdempotencyConfig, IdempotencyLayer,
    MemoryClient,
};
use lambda_runtime::tower::{Layer, Service};
use lambda_runtime::{service_fn, Context, LambdaEvent};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Deserialize)]
struct Order {
    order_id: String,
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Receipt {
    order_id: String,
    run: usize,
}

async fn call<S>(service: &mut S, event: Value) -> Result<S::Response, S::Error>
where
    S: Service<LambdaEvent<Value>>,
{
    poll_fn(|cx| service.poll_ready(cx)).await?;
    let mut context = Context::default();
    context.deadline = u64::try_from(now_millis() + 30_000).expect("positive");
    service.call(LambdaEvent::new(event, context)).await
}

fn store(client: &Arc<MemoryClient>) -> Idempotency<Arc<MemoryClient>> {
    let config = IdempotencyConfig::default().event_key_jmespath("order_id");
    Idempotency::new(
        DynamoDbPersistenceLayer::new(Arc::clone(client), "fake"),
        config,
        "handler",
    )
    .expect("config")
}

#[tokio::test]
async fn idempotent_handler_runs_once_per_event_and_records_the_deadline() {
    let client = Arc::new(MemoryClient::new("id"));
    let runs = Arc::new(AtomicUsize::new(0));
    let handler = {
        let runs = Arc::clone(&runs);
        service_fn(move |event: LambdaEvent<Order>| {
            let runs = Arc::clone(&runs);
            async move {
                let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
                Ok::<_, lambda_runtime::Error>(Receipt {
                    order_id: event.payload.order_id,
                    run,
                })
            }
        })
    };
    let mut service = idempotent(handler, store(&client));
    let first = call(&mut service, json!({"order_id": "o1", "x": 1}))
        .await
        .expect("first");
    let again = call(&mut service, json!({"order_id": "o1", "x": 2}))
        .await
        .expect("replay");
    assert_eq!(first, again);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let items = client.items();
    assert_eq!(items.len(), 1);
    let lease: i64 = items[0]["in_progress_expiration"]
        .as_n()
        .expect("N")
        .parse()
        .expect("int");
    assert!((lease - (now_millis() + 30_000)).abs() < 5_000);
    let key = items[0]["id"].as_s().expect("S");
    let function = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "test-func".into());
    assert!(key.starts_with(&format!("{function}.handler#")), "{key}");
}

#[tokio::test]
async fn layer_form_and_errors() {
    let client = Arc::new(MemoryClient::new("id"));
    let failing = service_fn(|_: LambdaEvent<Value>| async {
        Err::<Value, lambda_runtime::Error>("handler failed".into())
    });
    let mut service = IdempotencyLayer::new(store(&client)).layer(failing);
    let err = call(&mut service, json!({"order_id": "o2"}))
        .await
        .expect_err("fails");
    assert_eq!(err.to_string(), "handler failed");
    assert!(
        client.items().is_empty(),
        "the failed call's record is deleted"
    );

    // an event that does not fit the handler's type is refused before any request
    let typed = service_fn(|e: LambdaEvent<Order>| async move {
        Ok::<_, lambda_runtime::Error>(e.payload.order_id)
    });
    let mut service = idempotent(typed, store(&client));
    let calls_before = client.calls();
    assert!(call(&mut service, json!({"nope": 1})).await.is_err());
    assert_eq!(client.calls(), calls_before);
}

/// `lambda_runtime::run(idempotent(handler, idempotency))` type-checks as the Go package's
/// `lambda.Start(idempotency.Idempotent(handle, store))` reads (not run: it needs the Lambda API).
#[allow(dead_code)]
async fn runs_under_lambda_runtime(
    idempotency: Idempotency<aws_sdk_dynamodb::Client>,
) -> Result<(), lambda_runtime::Error> {
    async fn handler(event: LambdaEvent<Order>) -> Result<Receipt, lambda_runtime::Error> {
        Ok(Receipt {
            order_id: event.payload.order_id,
            run: 1,
        })
    }
    lambda_runtime::run(idempotent(service_fn(handler), idempotency)).await
}
