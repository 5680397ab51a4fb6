//! The store over an injected client: the in-memory fake (no DynamoDB needed).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use harel_idempotency::memory::Calls;
use harel_idempotency::record::now_millis;
use harel_idempotency::{
    DynamoDbPersistenceLayer, Idempotency, IdempotencyConfig, IdempotencyError, MemoryClient,
    RunError,
};
use serde_json::{json, Value};

#[derive(Debug, thiserror::Error)]
#[error("boom")]
struct Boom;

fn idempotency(
    client: Arc<MemoryClient>,
    config: IdempotencyConfig,
) -> Idempotency<Arc<MemoryClient>> {
    let store = DynamoDbPersistenceLayer::new(client, "fake");
    Idempotency::with_key_prefix(store, config, "fake").expect("config")
}

#[tokio::test]
async fn first_call_replay_and_failure_over_the_fake() {
    let client = Arc::new(MemoryClient::new("id"));
    let idem = idempotency(Arc::clone(&client), IdempotencyConfig::default());
    let runs = AtomicUsize::new(0);
    let call = |v: Value| {
        let runs = &runs;
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Boom>(v)
        }
    };
    let out = idem
        .run(&json!({"a": 1}), None, || call(json!({"r": 1})))
        .await;
    assert_eq!(out.expect("first"), json!({"r": 1}));
    assert_eq!(
        client.calls(),
        Calls {
            get: 0,
            put: 1,
            update: 1,
            delete: 0
        }
    );
    let out = idem
        .run(&json!({"a": 1}), None, || call(json!("unused")))
        .await;
    assert_eq!(out.expect("replay"), json!({"r": 1}));
    assert_eq!(
        client.calls(),
        Calls {
            get: 0,
            put: 2,
            update: 1,
            delete: 0
        }
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let out: Result<Value, _> = idem
        .run(&json!({"a": 2}), None, || async { Err(Boom) })
        .await;
    assert!(matches!(out, Err(RunError::Handler(Boom))));
    assert_eq!(client.calls().delete, 1);
    assert_eq!(client.items().len(), 1);
}

#[tokio::test]
async fn without_all_old_a_replay_falls_back_to_one_read() {
    let client = Arc::new(MemoryClient::new("id"));
    client.omit_item_on_condition_failure(true);
    let idem = idempotency(Arc::clone(&client), IdempotencyConfig::default());
    let out = idem
        .run(&json!(1), None, || async { Ok::<_, Boom>(json!("x")) })
        .await;
    out.expect("first");
    let before = client.calls();
    let out = idem
        .run(&json!(1), None, || async { Ok::<_, Boom>(json!("y")) })
        .await;
    assert_eq!(out.expect("replay"), json!("x"));
    let after = client.calls();
    assert_eq!((after.put - before.put, after.get - before.get), (1, 1));
}

#[tokio::test]
async fn concurrent_duplicates_run_once_over_an_atomic_table() {
    let client = Arc::new(MemoryClient::new("id"));
    let idem = Arc::new(idempotency(
        Arc::clone(&client),
        IdempotencyConfig::default(),
    ));
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (idem, runs) = (Arc::clone(&idem), Arc::clone(&runs));
        tasks.push(tokio::spawn(async move {
            idem.run(&json!({"k": 1}), Some(now_millis() + 10_000), || async {
                runs.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok::<_, Boom>(json!(1))
            })
            .await
        }));
    }
    let mut in_progress = 0;
    for t in tasks {
        match t.await.expect("task") {
            Ok(v) => assert_eq!(v, json!(1)),
            Err(RunError::Idempotency(IdempotencyError::AlreadyInProgress(_))) => in_progress += 1,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(in_progress >= 1);
}

#[tokio::test]
async fn replay_follows_python_truthiness_and_hook() {
    // Powertools returns None for a falsy stored result ({} here); matched
    let client = Arc::new(MemoryClient::new("id"));
    let idem = idempotency(Arc::clone(&client), IdempotencyConfig::default());
    let first = idem
        .run(&json!("e"), None, || async { Ok::<_, Boom>(json!({})) })
        .await;
    assert_eq!(first.expect("first"), json!({}));
    let replay = idem
        .run(&json!("e"), None, || async {
            Ok::<_, Boom>(json!({"no": 1}))
        })
        .await;
    assert_eq!(replay.expect("replay"), Value::Null);

    let hooked = idempotency(Arc::clone(&client), IdempotencyConfig::default()).with_response_hook(
        Arc::new(|value, record| json!({"replayed": value, "key": record.idempotency_key})),
    );
    let out = hooked
        .run(&json!("e"), None, || async { Ok::<_, Boom>(json!(0)) })
        .await;
    let out = out.expect("hooked replay");
    assert_eq!(out["replayed"], Value::Null);
    assert!(out["key"].as_str().expect("key").starts_with("fake#"));
}

#[tokio::test]
async fn a_replay_that_does_not_fit_the_result_type_is_a_clear_error() {
    let client = Arc::new(MemoryClient::new("id"));
    let idem = idempotency(Arc::clone(&client), IdempotencyConfig::default());
    let out = idem
        .run(&json!(7), None, || async { Ok::<_, Boom>(json!("text")) })
        .await;
    out.expect("first");
    let out: Result<u32, RunError<Boom>> = idem.run(&json!(7), None, || async { Ok(1) }).await;
    match out {
        Err(RunError::Idempotency(e @ IdempotencyError::Replay { .. })) => {
            assert!(e.to_string().contains("does not fit"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}
