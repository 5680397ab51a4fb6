//! `harel run --store dynamodb` and `harel show` against DynamoDB (moto), read back by harel
//! Python's own store: `scripts/with-moto.sh cargo test -p harel-cli --test run_dynamodb`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").expect(
        "this test needs a moto server: run it under scripts/with-moto.sh (AWS_ENDPOINT_URL is not set)",
    )
}

fn harel(args: &[&str]) -> Output {
    harel_with(args, &[])
}

/// `harel` with these variables set.
fn harel_with(args: &[&str], vars: &[(&str, &str)]) -> Output {
    endpoint();
    Command::new(env!("CARGO_BIN_EXE_harel"))
        .current_dir(workspace())
        .envs(vars.iter().copied())
        .args(args)
        .output()
        .expect("harel starts")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// harel Python's `DynamoDBStore` reading the same tables (the store compatibility script).
fn harel_python_read(prefix: &str, id: &str) -> Value {
    let python = std::env::var("HAREL_PYTHON")
        .expect("HAREL_PYTHON is not set: run under scripts/with-moto.sh");
    let script = workspace().join("shared/dynamodb/tests/py/harel_side.py");
    let out = Command::new(python)
        .arg(script)
        .args([&endpoint(), prefix, "read", id])
        .output()
        .expect("python runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
fn run_creates_then_continues_an_execution_harel_python_can_read() {
    let prefix = format!("run{}", std::process::id());
    let o = harel(&[
        "run",
        "examples/order.stm",
        "--store",
        "dynamodb",
        "--table-prefix",
        &prefix,
        "--execution-id",
        "ord-1",
        "-e",
        "PlaceOrder",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let ran: Value = serde_json::from_str(text(&o.stdout).trim()).expect("one JSON document");
    assert_eq!(ran["id"], "ord-1");
    assert_eq!(ran["active_path"], "Checkout.AwaitingPayment");

    // show --json carries the stored document: the same one
    let o = harel(&[
        "show",
        "ord-1",
        "--store",
        "dynamodb",
        "--table-prefix",
        &prefix,
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let shown: Value = serde_json::from_str(text(&o.stdout).trim()).expect("JSON");
    assert_eq!(shown["execution"], ran);

    // harel Python loads it, with its armed checkout timer
    let py = harel_python_read(&prefix, "ord-1");
    assert_eq!(py["execution"]["active_path"], "Checkout.AwaitingPayment");
    assert_eq!(py["execution"]["version"], ran["version"]);
    let timers = py["timers"].as_array().expect("list");
    assert_eq!(timers.len(), 1, "{timers:?}");
    assert_eq!(timers[0][1], "Checkout");

    // the same id continues the execution
    let o = harel(&[
        "run",
        "examples/order.stm",
        "--store",
        "dynamodb",
        "--table-prefix",
        &prefix,
        "--execution-id",
        "ord-1",
        "-e",
        "PaymentAuthorized",
        "-e",
        "Delivered",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "(loaded)             -> Checkout.AwaitingPayment\n\
         PaymentAuthorized    -> Fulfilment.Packing\n\
         Delivered            -> Completed\n\
         status: DONE  outcome: success\n"
    );
    let py = harel_python_read(&prefix, "ord-1");
    assert_eq!(py["execution"]["status"], "DONE");
    assert_eq!(py["execution"]["outcome"], "success");
    assert_eq!(
        py["timers"],
        serde_json::json!([]),
        "the timer was cancelled on leaving Checkout"
    );

    // a seed for an existing execution, and an unknown id for show, are refused clearly
    let o = harel(&[
        "run",
        "examples/order.stm",
        "--store",
        "dynamodb",
        "--table-prefix",
        &prefix,
        "--execution-id",
        "ord-1",
        "--seed",
        "{\"items\": 2}",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("--seed only sets the context of a new execution"),
        "{}",
        text(&o.stderr)
    );
    let o = harel(&[
        "show",
        "ord-404",
        "--store",
        "dynamodb",
        "--table-prefix",
        &prefix,
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("no execution \"ord-404\""),
        "{}",
        text(&o.stderr)
    );
}

/// `HAREL_COMMIT_MODE=lean`, as the functions of a lean stack read it: the run's commits keep
/// their dedupe marks in the execution item and write no `processed` item; a value that is
/// no mode is refused before anything is opened.
#[test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
fn run_follows_the_stacks_commit_mode() {
    let prefix = format!("lean{}", std::process::id());
    let run = |mode: &str, event: &str| {
        harel_with(
            &[
                "run",
                "examples/order.stm",
                "--store",
                "dynamodb",
                "--table-prefix",
                &prefix,
                "--execution-id",
                "ord-lean",
                "-e",
                event,
            ],
            &[("HAREL_COMMIT_MODE", mode)],
        )
    };
    let o = run("fast", "PlaceOrder");
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("HAREL_COMMIT_MODE=\"fast\": expected compat"),
        "{}",
        text(&o.stderr)
    );
    let o = run("lean", "PlaceOrder");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = run("lean", "PaymentAuthorized");
    assert!(o.status.success(), "{}", text(&o.stderr));

    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(async {
        let client = aws_sdk_dynamodb::Client::new(&harel_testkit::sdk_config().await);
        let processed = client
            .scan()
            .table_name(format!("{prefix}_processed"))
            .send()
            .await
            .expect("scan");
        assert_eq!(processed.items().len(), 0, "no processed item in lean mode");
        let item = client
            .get_item()
            .table_name(format!("{prefix}_executions"))
            .key(
                "id",
                aws_sdk_dynamodb::types::AttributeValue::S("ord-lean".into()),
            )
            .send()
            .await
            .expect("get")
            .item()
            .cloned()
            .expect("stored");
        let marks = item.keys().filter(|k| k.starts_with("mark")).count();
        assert!(marks >= 2, "the two events' marks in the item: {item:?}");
    });
}
