//! The store over an injected client: the in-memory fake (no DynamoDB needed).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::operation::delete_item::DeleteItemInput;
use aws_sdk_dynamodb::operation::get_item::GetItemInput;
use aws_sdk_dynamodb::operation::put_item::PutItemInput;
use aws_sdk_dynamodb::operation::update_item::UpdateItemInput;
use aws_sdk_dynamodb::types::AttributeValue;
use harel_idempotency::memory::Calls;
use harel_idempotency::record::now_millis;
use harel_idempotency::{
    Client, ClientError, DynamoDbPersistenceLayer, Idempotency, IdempotencyConfig,
    IdempotencyError, Item, MemoryClient, RunError,
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

/// A DynamoDB whose answer to the first PutItem is lost after the table applied it, as when
/// a timeout, a reset connection or a stalled answer makes the SDK send the put again: that
/// put goes to the table twice and the call sees the second answer.
struct ResentPut(Arc<MemoryClient>, std::sync::atomic::AtomicBool);

impl Client for ResentPut {
    async fn get_item(&self, input: GetItemInput) -> Result<Option<Item>, ClientError> {
        self.0.get_item(input).await
    }

    async fn put_item(&self, input: PutItemInput) -> Result<(), ClientError> {
        if !self.1.swap(true, Ordering::SeqCst) {
            let first = self.0.put_item(input.clone()).await;
            assert!(
                first.is_ok(),
                "the first attempt claims the free key: {first:?}"
            );
        }
        self.0.put_item(input).await
    }

    async fn update_item(&self, input: UpdateItemInput) -> Result<(), ClientError> {
        self.0.update_item(input).await
    }

    async fn delete_item(&self, input: DeleteItemInput) -> Result<(), ClientError> {
        self.0.delete_item(input).await
    }
}

#[tokio::test]
async fn a_put_sent_twice_finds_its_own_claim_and_runs() {
    // the soak's one failed record in 68,000 (docs/src/soak.md): Powertools fails such a call as
    // "already in progress" and its own record blocks the key until the deadline
    let client = Arc::new(MemoryClient::new("id"));
    let store =
        DynamoDbPersistenceLayer::new(ResentPut(Arc::clone(&client), Default::default()), "fake");
    let idem =
        Idempotency::with_key_prefix(store, IdempotencyConfig::default(), "fake").expect("config");
    let runs = AtomicUsize::new(0);
    let out = idem
        .run(&json!({"m": 1}), Some(now_millis() + 10_000), || async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Boom>(json!({"done": true}))
        })
        .await;
    assert_eq!(out.expect("the call runs"), json!({"done": true}));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(client.calls().put, 2, "the put went to the table twice");
    let items = client.items();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["status"], AttributeValue::S("COMPLETED".into()));
    assert!(
        !items[0].contains_key("in_progress_claim"),
        "completing removes the claim token: {:?}",
        items[0]
    );

    // and the record replays as any other
    let replay = idem
        .run(&json!({"m": 1}), None, || async { Ok::<_, Boom>(json!(0)) })
        .await;
    assert_eq!(replay.expect("replay"), json!({"done": true}));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(client.calls().put, 3);
}

#[tokio::test]
async fn another_calls_claim_refuses_even_with_the_same_deadline() {
    // two calls of one invocation (one deadline) on the same key: the record is not the
    // second call's although every Powertools attribute of it matches what that call writes
    let client = Arc::new(MemoryClient::new("id"));
    let idem = Arc::new(idempotency(
        Arc::clone(&client),
        IdempotencyConfig::default(),
    ));
    let deadline = Some(now_millis() + 10_000);
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let (finish_tx, finish_rx) = tokio::sync::oneshot::channel::<()>();
    let first = {
        let idem = Arc::clone(&idem);
        tokio::spawn(async move {
            idem.run(&json!({"m": 2}), deadline, || async {
                started_tx.send(()).expect("the test waits");
                finish_rx.await.expect("the test finishes it");
                Ok::<_, Boom>(json!(1))
            })
            .await
        })
    };
    started_rx.await.expect("the first call runs");
    let second = idem
        .run(&json!({"m": 2}), deadline, || async {
            Ok::<_, Boom>(json!(2))
        })
        .await;
    assert!(
        matches!(
            second,
            Err(RunError::Idempotency(IdempotencyError::AlreadyInProgress(
                _
            )))
        ),
        "{second:?}"
    );
    finish_tx.send(()).expect("the first call waits");
    assert_eq!(first.await.expect("task").expect("first"), json!(1));
}

#[test]
fn a_claim_attribute_named_like_another_is_refused() {
    let store = DynamoDbPersistenceLayer::new(Arc::new(MemoryClient::new("id")), "fake")
        .with_claim_attr("status");
    let refused = Idempotency::with_key_prefix(store, IdempotencyConfig::default(), "fake");
    match refused {
        Err(IdempotencyError::Config(why)) => assert_eq!(
            why,
            "claim_attr [status] is already the name of another attribute"
        ),
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("accepted"),
    }
}
