//! The Rust side of `scripts/bench-idempotency.sh`: requests and write units of a first call,
//! a replay and a failure, on a new table of the moto server. Prints one JSON document with
//! the table name, so the Python side can run on the same table.

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;

use common::counting::{Counting, Counts};
use harel_idempotency::record::now_millis;
use harel_idempotency::{DynamoDbPersistenceLayer, Idempotency, IdempotencyConfig, RunError};
use serde_json::{json, Value};

#[derive(Debug, thiserror::Error)]
#[error("handler failed")]
struct Failed;

fn counts_json(c: Counts) -> Value {
    json!({
        "calls": {"GetItem": c.get, "PutItem": c.put, "UpdateItem": c.update, "DeleteItem": c.delete},
        "write_units": c.write_units,
    })
}

#[tokio::main]
async fn main() {
    let raw = common::sdk_client().await;
    let table = common::create_table(&raw, "id", None).await;
    let counting = Arc::new(Counting::new(raw, &table, &["id"]).measuring_units());
    let store = DynamoDbPersistenceLayer::new(Arc::clone(&counting), &table);
    let idem = Idempotency::with_key_prefix(store, IdempotencyConfig::default(), "bench-rust")
        .expect("default config is valid");
    let result: Value =
        serde_json::from_str(&std::env::args().nth(1).unwrap_or_else(|| "null".into()))
            .expect("the result argument is JSON");
    let deadline = Some(now_millis() + 30_000);
    let event = json!({"order": "bench-1"});

    let first: Result<Value, RunError<Failed>> = idem
        .run(&event, deadline, || async { Ok(result.clone()) })
        .await;
    first.expect("first call");
    let first = counting.counts();
    counting.reset();

    let replay: Result<Value, RunError<Failed>> = idem
        .run(&event, deadline, || async { Ok(json!("not run")) })
        .await;
    assert_eq!(replay.expect("replay"), result);
    let replay = counting.counts();
    counting.reset();

    let failure: Result<Value, RunError<Failed>> = idem
        .run(&json!({"order": "bench-2"}), deadline, || async {
            Err(Failed)
        })
        .await;
    assert!(matches!(failure, Err(RunError::Handler(Failed))));
    let failure = counting.counts();

    println!(
        "{}",
        json!({
            "table": table,
            "first": counts_json(first),
            "replay": counts_json(replay),
            "failure": counts_json(failure),
        })
    );
}
