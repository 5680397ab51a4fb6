//! The store against DynamoDB (the moto server): run under `scripts/with-moto.sh`.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::counting::Counting;
use common::{create_table, get, n, put, s, sdk_client};
use harel_idempotency::record::{now_millis, now_seconds};
use harel_idempotency::{
    DynamoDbPersistenceLayer, Idempotency, IdempotencyConfig, IdempotencyError, Item, RunError,
};
use serde_json::{json, Value};

#[derive(Debug, thiserror::Error)]
#[error("boom")]
struct Boom;

type Outcome = Result<Value, RunError<Boom>>;

fn idempotency_error(outcome: Outcome) -> IdempotencyError {
    match outcome {
        Err(RunError::Idempotency(e)) => e,
        other => panic!("expected an idempotency error, got {other:?}"),
    }
}

/// A handler that counts its runs and returns `result`.
async fn counted(runs: &AtomicUsize, result: Value) -> Result<Value, Boom> {
    runs.fetch_add(1, Ordering::SeqCst);
    Ok(result)
}

struct Fixture {
    raw: aws_sdk_dynamodb::Client,
    table: String,
    idem: Idempotency<Arc<Counting>>,
    counting: Arc<Counting>,
}

async fn fixture(config: IdempotencyConfig) -> Fixture {
    let raw = sdk_client().await;
    let table = create_table(&raw, "id", None).await;
    let counting = Arc::new(Counting::new(raw.clone(), &table, &["id"]));
    let store = DynamoDbPersistenceLayer::new(Arc::clone(&counting), &table);
    let idem = Idempotency::with_key_prefix(store, config, "test").expect("valid config");
    Fixture {
        raw,
        table,
        idem,
        counting,
    }
}

fn key_item(key: &str) -> Item {
    HashMap::from([("id".to_owned(), s(key))])
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn first_call_then_replay_costs_one_put_and_no_read() {
    let f = fixture(IdempotencyConfig::default().event_key_jmespath("order")).await;
    let runs = AtomicUsize::new(0);
    let payload = json!({"order": "o-1", "noise": 1});

    let first: Outcome = f
        .idem
        .run(&payload, Some(now_millis() + 30_000), || {
            counted(&runs, json!({"ok": 1}))
        })
        .await;
    assert_eq!(first.expect("first call"), json!({"ok": 1}));
    let c = f.counting.counts();
    assert_eq!((c.put, c.update, c.get, c.delete), (1, 1, 0, 0));

    let key = f.idem.key_for(&payload).expect("key").expect("has key");
    let item = get(&f.raw, &f.table, key_item(&key)).await.expect("stored");
    assert_eq!(item["status"], s("COMPLETED"));
    assert_eq!(item["data"], s("{\"ok\": 1}"));
    assert!(item.contains_key("in_progress_expiration"));
    let expiry: i64 = item["expiration"].as_n().expect("N").parse().expect("int");
    assert!(
        (expiry - (now_seconds() + 3600)).abs() <= 2,
        "expiry {expiry}"
    );

    f.counting.reset();
    let replay: Outcome = f
        .idem
        .run(&json!({"order": "o-1", "noise": 2}), None, || {
            counted(&runs, json!("not used"))
        })
        .await;
    assert_eq!(replay.expect("replay"), json!({"ok": 1}));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let c = f.counting.counts();
    assert_eq!((c.put, c.update, c.get, c.delete), (1, 0, 0, 0), "{c:?}");
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn concurrent_duplicates_run_the_handler_once() {
    let f = Arc::new(fixture(IdempotencyConfig::default()).await);
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (f, runs) = (Arc::clone(&f), Arc::clone(&runs));
        tasks.push(tokio::spawn(async move {
            let outcome: Outcome = f
                .idem
                .run(
                    &json!({"same": true}),
                    Some(now_millis() + 30_000),
                    || async {
                        runs.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        Ok(json!("done"))
                    },
                )
                .await;
            outcome
        }));
    }
    let mut ok = 0;
    let mut in_progress = 0;
    for task in tasks {
        match task.await.expect("task") {
            Ok(v) => {
                assert_eq!(v, json!("done"));
                ok += 1;
            }
            Err(RunError::Idempotency(IdempotencyError::AlreadyInProgress(msg))) => {
                assert!(msg.starts_with("Execution already in progress with idempotency key: ="));
                in_progress += 1;
            }
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    let runs = runs.load(Ordering::SeqCst);
    let won = f.counting.counts().put_won;
    // the layer runs the handler only after winning the conditional put
    assert_eq!(runs, won, "ok {ok}, in progress {in_progress}");
    if won > 1 {
        // moto evaluates a put's condition and writes the item without a lock, so under
        // concurrent requests it can accept two conditional puts for one key (DynamoDB
        // cannot); the in-memory client's test asserts exactly one run strictly
        eprintln!("moto accepted {won} conditional puts for one key: its writes are not atomic");
    } else {
        assert_eq!(runs, 1);
    }
    assert_eq!(ok + in_progress, 8);
    assert!(ok >= 1);
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn expired_record_runs_again() {
    let f = fixture(IdempotencyConfig::default()).await;
    let payload = json!({"x": 1});
    let key = f.idem.key_for(&payload).expect("key").expect("has key");
    let mut item = key_item(&key);
    item.insert("expiration".into(), n(now_seconds() - 10));
    item.insert("status".into(), s("COMPLETED"));
    item.insert("data".into(), s("\"old\""));
    put(&f.raw, &f.table, item).await;

    let runs = AtomicUsize::new(0);
    let out: Outcome = f
        .idem
        .run(&payload, None, || counted(&runs, json!("new")))
        .await;
    assert_eq!(out.expect("runs"), json!("new"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn in_progress_blocks_until_its_invocation_times_out() {
    let f = fixture(IdempotencyConfig::default()).await;
    let runs = AtomicUsize::new(0);
    let plant = |payload: &Value, in_progress_ms: Option<i64>| {
        let key = f.idem.key_for(payload).expect("key").expect("has key");
        let mut item = key_item(&key);
        item.insert("expiration".into(), n(now_seconds() + 3600));
        item.insert("status".into(), s("INPROGRESS"));
        if let Some(ms) = in_progress_ms {
            item.insert("in_progress_expiration".into(), n(ms));
        }
        item
    };

    // still running elsewhere
    let live = json!({"case": "live"});
    put(&f.raw, &f.table, plant(&live, Some(now_millis() + 60_000))).await;
    let out: Outcome = f.idem.run(&live, None, || counted(&runs, json!(1))).await;
    assert!(matches!(
        idempotency_error(out),
        IdempotencyError::AlreadyInProgress(_)
    ));

    // no in-progress expiry (Powertools without a Lambda context): blocks too
    let unbounded = json!({"case": "unbounded"});
    put(&f.raw, &f.table, plant(&unbounded, None)).await;
    let out: Outcome = f
        .idem
        .run(&unbounded, None, || counted(&runs, json!(1)))
        .await;
    assert!(matches!(
        idempotency_error(out),
        IdempotencyError::AlreadyInProgress(_)
    ));
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // the invocation that held it timed out: taken over
    let dead = json!({"case": "dead"});
    put(&f.raw, &f.table, plant(&dead, Some(now_millis() - 1))).await;
    let out: Outcome = f.idem.run(&dead, None, || counted(&runs, json!(2))).await;
    assert_eq!(out.expect("takeover"), json!(2));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn failure_deletes_the_record_and_a_retry_runs() {
    let f = fixture(IdempotencyConfig::default()).await;
    let payload = json!({"job": 9});
    let key = f.idem.key_for(&payload).expect("key").expect("has key");
    let out: Result<Value, RunError<Boom>> =
        f.idem.run(&payload, None, || async { Err(Boom) }).await;
    assert!(matches!(out, Err(RunError::Handler(Boom))));
    let c = f.counting.counts();
    assert_eq!((c.put, c.delete, c.update, c.get), (1, 1, 0, 0));
    assert!(get(&f.raw, &f.table, key_item(&key)).await.is_none());

    let runs = AtomicUsize::new(0);
    let out: Outcome = f
        .idem
        .run(&payload, None, || counted(&runs, json!("second")))
        .await;
    assert_eq!(out.expect("retry"), json!("second"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn validation_mismatch_is_refused() {
    let config = IdempotencyConfig::default()
        .event_key_jmespath("id")
        .payload_validation_jmespath("amount");
    let f = fixture(config).await;
    let runs = AtomicUsize::new(0);
    let out: Outcome = f
        .idem
        .run(&json!({"id": "a", "amount": 1}), None, || {
            counted(&runs, json!(1))
        })
        .await;
    out.expect("first");
    let key = f.idem.key_for(&json!({"id": "a"})).expect("k").expect("k");
    let item = get(&f.raw, &f.table, key_item(&key)).await.expect("stored");
    let expected = f
        .idem
        .key_maker()
        .payload_hash(&json!({"amount": 1}))
        .expect("hash");
    assert_eq!(item["validation"], s(&expected));

    let out: Outcome = f
        .idem
        .run(&json!({"id": "a", "amount": 2}), None, || {
            counted(&runs, json!(1))
        })
        .await;
    let err = idempotency_error(out);
    assert!(matches!(err, IdempotencyError::Validation), "{err:?}");
    assert_eq!(
        err.to_string(),
        "Payload does not match stored record for this event key"
    );
    // same amount: replays
    let out: Outcome = f
        .idem
        .run(&json!({"id": "a", "amount": 1}), None, || {
            counted(&runs, json!(5))
        })
        .await;
    assert_eq!(out.expect("replay"), json!(1));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn renamed_attributes() {
    let raw = sdk_client().await;
    let table = create_table(&raw, "pk", None).await;
    let store = DynamoDbPersistenceLayer::new(raw.clone(), &table)
        .with_key_attr("pk")
        .with_expiry_attr("ttl")
        .with_in_progress_expiry_attr("lease")
        .with_status_attr("state")
        .with_data_attr("result")
        .with_validation_key_attr("check");
    let config = IdempotencyConfig::default().payload_validation_jmespath("v");
    let idem = Idempotency::with_key_prefix(store, config, "renamed").expect("config");
    let payload = json!({"v": 1});
    let out: Outcome = idem
        .run(&payload, Some(now_millis() + 10_000), || async {
            Ok(json!([1, 2]))
        })
        .await;
    out.expect("runs");
    let key = idem.key_for(&payload).expect("k").expect("k");
    let item = get(&raw, &table, HashMap::from([("pk".to_owned(), s(&key))]))
        .await
        .expect("stored");
    let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["check", "lease", "pk", "result", "state", "ttl"]);
    assert_eq!(item["result"], s("[1, 2]"));
    let replay: Outcome = idem.run(&payload, None, || async { Ok(json!(0)) }).await;
    assert_eq!(replay.expect("replay"), json!([1, 2]));
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn composite_keys_with_default_and_static_partition_values() {
    let raw = sdk_client().await;
    let table = create_table(&raw, "pk", Some("sk")).await;
    let function = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_default();
    for (store, partition) in [
        (
            DynamoDbPersistenceLayer::new(raw.clone(), &table)
                .with_key_attr("pk")
                .with_sort_key_attr("sk"),
            format!("idempotency#{function}"),
        ),
        (
            DynamoDbPersistenceLayer::new(raw.clone(), &table)
                .with_key_attr("pk")
                .with_sort_key_attr("sk")
                .with_static_pk_value("mine"),
            "mine".to_owned(),
        ),
    ] {
        let idem =
            Idempotency::with_key_prefix(store, IdempotencyConfig::default(), "c").expect("config");
        let payload = json!({"p": partition});
        let runs = AtomicUsize::new(0);
        let out: Outcome = idem
            .run(&payload, None, || counted(&runs, json!("v")))
            .await;
        out.expect("runs");
        let key = idem.key_for(&payload).expect("k").expect("k");
        let item = get(
            &raw,
            &table,
            HashMap::from([("pk".to_owned(), s(&partition)), ("sk".to_owned(), s(&key))]),
        )
        .await
        .expect("stored under the partition value and the key");
        assert_eq!(item["status"], s("COMPLETED"));
        let out: Outcome = idem
            .run(&payload, None, || counted(&runs, json!("w")))
            .await;
        assert_eq!(out.expect("replay"), json!("v"));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
    let same = DynamoDbPersistenceLayer::new(raw.clone(), &table)
        .with_key_attr("k")
        .with_sort_key_attr("k");
    assert!(matches!(
        Idempotency::with_key_prefix(same, IdempotencyConfig::default(), "c"),
        Err(IdempotencyError::Config(_))
    ));
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn local_cache_replays_without_requests() {
    let f = fixture(IdempotencyConfig::default().use_local_cache(2)).await;
    let runs = AtomicUsize::new(0);
    let payload = json!({"cached": 1});
    let out: Outcome = f
        .idem
        .run(&payload, None, || counted(&runs, json!("c")))
        .await;
    out.expect("first");
    assert_eq!(f.idem.cached_records(), 1);
    f.counting.reset();
    for _ in 0..3 {
        let out: Outcome = f
            .idem
            .run(&payload, None, || counted(&runs, json!("x")))
            .await;
        assert_eq!(out.expect("cached replay"), json!("c"));
    }
    assert_eq!(f.counting.counts().requests(), 0);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // LRU bound
    for i in 0..3 {
        let out: Outcome = f
            .idem
            .run(&json!({"other": i}), None, || counted(&runs, json!(i)))
            .await;
        out.expect("other");
    }
    assert_eq!(f.idem.cached_records(), 2);
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn result_over_400_kb_is_refused_and_the_record_removed() {
    let f = fixture(IdempotencyConfig::default()).await;
    // over DynamoDB's limit by our own count: refused before any update
    let payload = json!({"big": 1});
    let key = f.idem.key_for(&payload).expect("k").expect("k");
    let huge = "x".repeat(500 * 1024);
    let out: Outcome = f
        .idem
        .run(&payload, None, || async { Ok(json!(huge)) })
        .await;
    let err = idempotency_error(out);
    assert!(
        matches!(err, IdempotencyError::ResultTooLarge { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("400"), "{err}");
    let c = f.counting.counts();
    assert_eq!((c.put, c.update, c.delete), (1, 0, 1));
    assert!(get(&f.raw, &f.table, key_item(&key)).await.is_none());

    // under our count but over the emulator's (moto refuses past 405000 bytes): the update
    // fails and the record is removed all the same
    let payload = json!({"big": 2});
    let key = f.idem.key_for(&payload).expect("k").expect("k");
    let large = "y".repeat(406_000);
    let out: Outcome = f
        .idem
        .run(&payload, None, || async { Ok(json!(large)) })
        .await;
    let err = idempotency_error(out);
    assert!(
        matches!(err, IdempotencyError::ResultTooLarge { .. }),
        "{err:?}"
    );
    assert!(get(&f.raw, &f.table, key_item(&key)).await.is_none());

    // a retry with a small result runs normally
    let out: Outcome = f
        .idem
        .run(&payload, None, || async { Ok(json!("small")) })
        .await;
    assert_eq!(out.expect("retry"), json!("small"));
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn no_key_passes_through_or_raises() {
    let f = fixture(IdempotencyConfig::default().event_key_jmespath("missing")).await;
    let runs = AtomicUsize::new(0);
    for _ in 0..2 {
        let out: Outcome = f
            .idem
            .run(&json!({"a": 1}), None, || counted(&runs, json!(1)))
            .await;
        out.expect("passes through");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(f.counting.counts().requests(), 0);

    let strict = fixture(
        IdempotencyConfig::default()
            .event_key_jmespath("missing")
            .raise_on_no_idempotency_key(true),
    )
    .await;
    let out: Outcome = strict
        .idem
        .run(&json!({"a": 1}), None, || counted(&runs, json!(1)))
        .await;
    let err = idempotency_error(out);
    assert_eq!(
        err.to_string(),
        "No data found to create a hashed idempotency_key"
    );
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_put_the_sdk_sends_again_after_its_answer_was_lost_runs_once() {
    // the SDK's standard retry of a conditional put that DynamoDB had applied: the second
    // attempt is refused by the record the first wrote; the call must know it as its own
    let raw = sdk_client().await;
    let table = create_table(&raw, "id", None).await;
    let http = common::lost_answer::LoseFirstPutAnswer::new();
    let conf = aws_sdk_dynamodb::config::Builder::from(
        &aws_config::defaults(aws_config::BehaviorVersion::latest())
            .endpoint_url(common::endpoint())
            .load()
            .await,
    )
    .http_client(http.http_client())
    .retry_config(
        aws_smithy_types::retry::RetryConfig::standard()
            .with_initial_backoff(Duration::from_millis(1)),
    )
    .build();
    let client = aws_sdk_dynamodb::Client::from_conf(conf);
    let store = DynamoDbPersistenceLayer::new(client, &table);
    let idem = Idempotency::with_key_prefix(
        store,
        IdempotencyConfig::default().event_key_jmespath("messageId"),
        "lost",
    )
    .expect("config");
    let runs = AtomicUsize::new(0);
    let payload = json!({"messageId": "m-1"});
    let out: Outcome = idem
        .run(&payload, Some(now_millis() + 30_000), || {
            counted(&runs, json!({"ok": true}))
        })
        .await;
    assert_eq!(out.expect("the call runs"), json!({"ok": true}));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(
        http.puts.load(Ordering::SeqCst),
        2,
        "the SDK sent the put twice"
    );
    let key = idem.key_for(&payload).expect("key").expect("has key");
    let item = get(&raw, &table, key_item(&key)).await.expect("stored");
    assert_eq!(item["status"], s("COMPLETED"));
    assert!(!item.contains_key("in_progress_claim"), "{item:?}");
}
