//! Interoperability with Powertools for AWS Lambda (Python), for real: the Python side runs
//! `powertools_side.py` with `$HAREL_PYTHON` on the same moto table. Run under
//! `scripts/with-moto.sh`.

mod common;

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{create_table, get, s, sdk_client};
use harel_idempotency::record::now_millis;
use harel_idempotency::{
    DynamoDbPersistenceLayer, HashFunction, Idempotency, IdempotencyConfig, IdempotencyError,
    KeyMaker, RunError,
};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

#[derive(Debug, thiserror::Error)]
#[error("boom")]
struct Boom;

fn python() -> String {
    std::env::var("HAREL_PYTHON").expect(
        "HAREL_PYTHON is not set: run these tests as `scripts/with-moto.sh cargo test -p harel-idempotency`",
    )
}

fn script() -> String {
    format!("{}/tests/powertools_side.py", env!("CARGO_MANIFEST_DIR"))
}

fn command(args: &[&str]) -> tokio::process::Command {
    common::endpoint();
    let mut cmd = tokio::process::Command::new(python());
    cmd.arg(script())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // boto3 reads the region from AWS_DEFAULT_REGION
        .env(
            "AWS_DEFAULT_REGION",
            std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".into()),
        );
    cmd
}

async fn finish(mut child: tokio::process::Child, stdin: &Value) -> Value {
    let mut input = child.stdin.take().expect("piped stdin");
    input
        .write_all(stdin.to_string().as_bytes())
        .await
        .expect("write stdin");
    drop(input);
    let out = child.wait_with_output().await.expect("python runs");
    assert!(
        out.status.success(),
        "powertools_side.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("python prints JSON")
}

async fn py(args: &[&str], stdin: &Value) -> Value {
    finish(command(args).spawn().expect("spawn python"), stdin).await
}

fn config(jmespath: &str) -> IdempotencyConfig {
    IdempotencyConfig::default().event_key_jmespath(jmespath)
}

async fn rust_side(table: &str, prefix: &str, config: IdempotencyConfig) -> Idempotency {
    let store = DynamoDbPersistenceLayer::new(sdk_client().await, table);
    Idempotency::with_key_prefix(store, config, prefix).expect("config")
}

async fn wait_for_item(raw: &aws_sdk_dynamodb::Client, table: &str, key: &str) {
    for _ in 0..200 {
        let found = get(raw, table, HashMap::from([("id".to_owned(), s(key))])).await;
        if found.is_some() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no record appeared for {key}");
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn hash_vectors_agree_with_python_byte_for_byte() {
    let payloads = json!([
        {"b": 1, "a": {"z": [1, 2, {"y": null, "x": true}], "m": false}},
        {"text": "café ü 日本 😀 \u{1} \u{7f} \"q\" \\ / \n\t", "é": 1, "z": 2, "Z": 3, "ä": 4},
        {"floats": [1.0, 2.5, 0.1, 1e16, 1e-7, 123456789.123, 1e22, 5e-324, 1.7976931348623157e308, -0.0, 1e-4, 12345678901234567.0]},
        {"ints": [0, -1, 9007199254740993_i64, 9223372036854775807_i64, 18446744073709551615_u64, -9223372036854775808_i64]},
        {"id": "abc", "amount": 12.5, "nested": {"id": 7}},
        {"id": 0, "amount": false},
        {"id": null, "amount": null},
        {},
        [],
        {"Records": [{"messageId": "m1", "body": "{\"x\": {\"b\": 2, \"a\": 1.0}, \"y\": \"é\"}"}]},
        {"messageId": "m2", "body": "{\"x\": [3, \"日\"], \"z\": null}"},
        {"messageId": "m3", "body": "{\"y\": 1}"},
    ]);
    let expressions = [
        "",
        "id",
        "amount",
        "[id, amount]",
        "{i: id, a: amount}",
        "nested",
        "powertools_json(body).x",
        "Records[0].powertools_json(body)",
        "powertools_json(body)",
    ];
    let mut compared = 0;
    let mut errors = 0;
    for hash in ["md5", "sha256"] {
        for expression in expressions {
            let mut args = vec!["keys", "--prefix", "vec.prefix", "--hash", hash];
            if !expression.is_empty() {
                args.extend(["--jmespath", expression, "--validation", expression]);
            }
            let python_side = py(&args, &payloads).await;
            let config = IdempotencyConfig {
                event_key_jmespath: expression.into(),
                payload_validation_jmespath: expression.into(),
                hash_function: hash.parse::<HashFunction>().expect("hash name"),
                ..IdempotencyConfig::default()
            };
            let keys = KeyMaker::new(&config, "vec.prefix").expect("compiles");
            for (payload, expected) in payloads
                .as_array()
                .expect("list")
                .iter()
                .zip(python_side.as_array().expect("list"))
            {
                // Python fails on some selections (powertools_json of a missing body); both
                // sides must then agree there is an error
                let ours = keys.idempotency_key(payload);
                if let Some(error) = expected.get("error") {
                    assert!(ours.is_err(), "Python failed ({error}), Rust gave {ours:?} for {payload} with {expression:?}");
                    errors += 1;
                    continue;
                }
                let key = ours.expect("Rust computes a key where Python did");
                assert_eq!(
                    json!(key),
                    expected["key"],
                    "key of {payload} with {expression:?} ({hash})"
                );
                let validation = keys.payload_hash(payload).expect("validation hash");
                assert_eq!(
                    json!(validation),
                    expected["validation"],
                    "{payload} {expression:?}"
                );
                compared += 1;
            }
        }
    }
    eprintln!("hash vectors: {compared} keys agree with Python, {errors} fail on both sides");
    assert_eq!(compared + errors, 2 * 9 * 12);
    assert!(compared > 150, "compared {compared}, errors {errors}");
}

/// Payloads as both sides parse them from event text: number spellings must give the same
/// key (`1E2` and `1.50` are floats, a big int stays exact up to u64). Known exceptions, left
/// out: the text `-0` (serde_json reads -0.0, Python the int 0) and integers beyond 64 bits
/// (serde_json reads a float, Python an exact int).
#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn keys_of_parsed_event_text_agree_with_python() {
    let text = r#"[{"n": 1E2}, {"n": 1.50}, {"n": -0.0}, {"n": 2e-5},
        {"n": 18446744073709551615}, {"n": -9223372036854775808}, {"n": 0.30000000000000004},
        {"s": "\ud83d\ude00 \u00e9 \u2028"}, {"dup": 1, "dup": 2}]"#;
    let mut child = command(&["keys", "--prefix", "t"])
        .spawn()
        .expect("spawn python");
    let mut input = child.stdin.take().expect("piped stdin");
    input.write_all(text.as_bytes()).await.expect("write");
    drop(input);
    let out = child.wait_with_output().await.expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let python_side: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let payloads: Value = serde_json::from_str(text).expect("Rust parses the same text");
    let keys = KeyMaker::new(&IdempotencyConfig::default(), "t").expect("compiles");
    for (payload, expected) in payloads
        .as_array()
        .expect("list")
        .iter()
        .zip(python_side.as_array().expect("list"))
    {
        let key = keys.idempotency_key(payload).expect("key");
        assert_eq!(json!(key), expected["key"], "{payload}");
    }
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn python_records_and_rust_replays_then_the_reverse() {
    let raw = sdk_client().await;
    let table = create_table(&raw, "id", None).await;
    let result = json!({"total": 12.5, "items": ["é", 1, null, true], "nested": {"b": 1, "a": 2}});
    let result_text = result.to_string();

    let event = json!({"order": "py-first", "other": 1});
    let out = py(
        &[
            "run",
            "--table",
            &table,
            "--prefix",
            "shared",
            "--jmespath",
            "order",
            "--result",
            &result_text,
        ],
        &event,
    )
    .await;
    assert_eq!(out["ran"], json!(true), "{out}");
    assert_eq!(out["error"], Value::Null, "{out}");

    let ours = rust_side(&table, "shared", config("order")).await;
    let runs = AtomicUsize::new(0);
    let replay: Result<Value, RunError<Boom>> = ours
        .run(&json!({"order": "py-first", "other": 2}), None, || async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(json!("rust ran"))
        })
        .await;
    assert_eq!(replay.expect("replays Python's result"), result);
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // the reverse: Rust records, Python replays without running
    let event = json!({"order": "rust-first"});
    let first: Result<Value, RunError<Boom>> = ours
        .run(&event, Some(now_millis() + 30_000), || async {
            Ok(result.clone())
        })
        .await;
    first.expect("rust records");
    let out = py(
        &[
            "run",
            "--table",
            &table,
            "--prefix",
            "shared",
            "--jmespath",
            "order",
            "--result",
            "\"python ran\"",
        ],
        &event,
    )
    .await;
    assert_eq!(out["ran"], json!(false), "{out}");
    assert_eq!(out["result"], result, "{out}");
    // and both stored the result as the same text
    let key = ours.key_for(&event).expect("k").expect("k");
    let item = get(&raw, &table, HashMap::from([("id".to_owned(), s(&key))]))
        .await
        .expect("stored");
    let python_text = py(
        &["keys", "--prefix", "shared", "--jmespath", "order"],
        &json!([event]),
    )
    .await;
    assert_eq!(python_text[0]["key"], json!(key));
    assert_eq!(
        item["data"],
        s(r#"{"items": ["\u00e9", 1, null, true], "nested": {"a": 2, "b": 1}, "total": 12.5}"#)
    );
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn in_progress_records_block_the_other_side() {
    let raw = sdk_client().await;
    let table = create_table(&raw, "id", None).await;
    let ours = rust_side(&table, "lock", config("id")).await;

    // Rust holds the key while Python tries
    let event = json!({"id": "rust-holds"});
    let key = ours.key_for(&event).expect("k").expect("k");
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let holder = async {
        let out: Result<Value, RunError<Boom>> = ours
            .run(&event, Some(now_millis() + 60_000), || async {
                released.await.expect("released");
                Ok(json!("rust done"))
            })
            .await;
        out
    };
    let python_try = async {
        wait_for_item(&raw, &table, &key).await;
        let out = py(
            &[
                "run",
                "--table",
                &table,
                "--prefix",
                "lock",
                "--jmespath",
                "id",
                "--result",
                "1",
            ],
            &event,
        )
        .await;
        release.send(()).expect("holder waits");
        out
    };
    let (held, python_out) = tokio::join!(holder, python_try);
    assert_eq!(held.expect("rust finishes"), json!("rust done"));
    assert_eq!(python_out["ran"], json!(false), "{python_out}");
    assert_eq!(
        python_out["error"]["type"],
        json!("IdempotencyAlreadyInProgressError"),
        "{python_out}"
    );

    // Python holds the key while Rust tries
    let event = json!({"id": "python-holds"});
    let key = ours.key_for(&event).expect("k").expect("k");
    let child = command(&[
        "run",
        "--table",
        &table,
        "--prefix",
        "lock",
        "--jmespath",
        "id",
        "--result",
        "\"py done\"",
        "--sleep",
        "2",
        "--remaining-ms",
        "60000",
    ])
    .spawn()
    .expect("spawn python");
    let stdin = event.clone();
    let python_run = tokio::spawn(async move { finish(child, &stdin).await });
    wait_for_item(&raw, &table, &key).await;
    let runs = AtomicUsize::new(0);
    let out: Result<Value, RunError<Boom>> = ours
        .run(&event, None, || async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(json!("rust ran"))
        })
        .await;
    match out {
        Err(RunError::Idempotency(IdempotencyError::AlreadyInProgress(msg))) => {
            assert!(msg.contains(&key), "{msg}")
        }
        other => panic!("expected in progress, got {other:?}"),
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let python_out = python_run.await.expect("python task");
    assert_eq!(python_out["ran"], json!(true), "{python_out}");
    // once Python completed, Rust replays its result
    let out: Result<Value, RunError<Boom>> = ours
        .run(&event, None, || async { Ok(json!("rust ran")) })
        .await;
    assert_eq!(out.expect("replay"), json!("py done"));
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn validation_and_composite_keys_across_languages() {
    let raw = sdk_client().await;
    let table = create_table(&raw, "id", Some("sk")).await;
    let out = py(
        &[
            "run",
            "--table",
            &table,
            "--prefix",
            "comp",
            "--jmespath",
            "id",
            "--validation",
            "amount",
            "--sort-key",
            "sk",
            "--static-pk",
            "shared-pk",
            "--result",
            "{\"v\": 1}",
        ],
        &json!({"id": "c1", "amount": 10}),
    )
    .await;
    assert_eq!(out["ran"], json!(true), "{out}");

    let store = DynamoDbPersistenceLayer::new(raw.clone(), &table)
        .with_sort_key_attr("sk")
        .with_static_pk_value("shared-pk");
    let config = config("id").payload_validation_jmespath("amount");
    let ours = Idempotency::with_key_prefix(store, config, "comp").expect("config");
    let replay: Result<Value, RunError<Boom>> = ours
        .run(&json!({"id": "c1", "amount": 10}), None, || async {
            Ok(json!(0))
        })
        .await;
    assert_eq!(replay.expect("replay"), json!({"v": 1}));
    let mismatch: Result<Value, RunError<Boom>> = ours
        .run(&json!({"id": "c1", "amount": 11}), None, || async {
            Ok(json!(0))
        })
        .await;
    assert!(matches!(
        mismatch,
        Err(RunError::Idempotency(IdempotencyError::Validation))
    ));
}
