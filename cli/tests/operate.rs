//! The operator commands against a stack on the moto server
//! (`scripts/with-moto.sh cargo test -p harel-cli --test operate`): the built `harel` binary
//! creates, sends, shows, lists, traces and controls executions that an in-process worker
//! (the functions' own logic, on the same tables and queue) runs; text and `--json`.

use std::process::{Command, Output};

use std::time::Duration;

use harel_dynamodb::DynamoDbStore;
use harel_runtime::Driver;
use harel_runtime::DurableRunner;

use harel_store::prelude::*;
use harel_testkit::Deployed;
use serde_json::Value;

const CONTROL_MACHINES: &str = "../shared/control/tests/machines/control.stm";
const ORDER: &str = "../functions/app/machines/order.stm";
/// The machines the test worker runs (the sample shop's), for the CLI's local checks.
const APP_MACHINES: &str = "../functions/app/machines";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The stack (the one fixture) with a worker on the functions' machines and the control
/// plane's test machines.
async fn deploy() -> Deployed {
    // the functions' machines, plus the control-plane test machines (given to the CLI
    // with --machines)
    let mut definitions = harel_app::machines::definitions().expect("app machines");
    let source = std::fs::read_to_string(CONTROL_MACHINES).expect("control.stm");
    for name in ["Job", "Plain", "Split"] {
        definitions.push(harel_lang::load_str(&source, Some(name), "control.stm").expect(name));
    }
    let driver = Driver::new(definitions, harel_app::actions::actions());
    Deployed::start("op", driver, &[("HAREL_SUSPEND_RECHECK_SECONDS", "0")]).await
}

/// The operator's side of the stack: the built `harel` binary against its tables and queue.
trait Operator {
    fn harel(&self, args: &[&str]) -> Output;
    fn ok(&self, args: &[&str]) -> String;
    fn json(&self, args: &[&str]) -> Value;
    async fn queued(&self) -> usize;
}

impl Operator for Deployed {
    /// `harel ARGS --table-prefix P --queue-url Q`, with nothing from the caller's
    /// HAREL_* environment.
    fn harel(&self, args: &[&str]) -> Output {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--table-prefix", self.prefix(), "--queue-url", self.queue()]);
        bare(&all)
    }

    /// Run it and expect success; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.harel(args);
        assert!(
            out.status.success(),
            "harel {args:?} failed: {}",
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.ok(&all);
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
    }

    async fn queued(&self) -> usize {
        let got = self
            .source
            .receive(10, Duration::ZERO, Duration::ZERO)
            .await
            .expect("receive");
        got.len()
    }
}

fn bare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harel"))
        .args(args)
        .env_remove("HAREL_TABLE_PREFIX")
        .env_remove("HAREL_QUEUE_URL")
        .env_remove("HAREL_STACK")
        .env_remove("HAREL_MACHINES")
        .output()
        .expect("harel runs")
}

fn has(haystack: &str, needle: &str) {
    assert!(haystack.contains(needle), "{needle:?} not in:\n{haystack}");
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn create_send_show_list_and_render_an_order() {
    let stack = deploy().await;
    let out = stack.ok(&[
        "create",
        "Order",
        "--id",
        "ord-1",
        "--context",
        r#"{"items": 2}"#,
        "--machines",
        APP_MACHINES,
    ]);
    assert_eq!(out, "ord-1\n", "create prints the id alone");
    assert_eq!(
        stack.queued().await,
        1,
        "the create is a message, not a write"
    );
    stack.pump().await;
    let out = stack.ok(&[
        "send",
        "ord-1",
        "-e",
        "PlaceOrder",
        "--machines",
        APP_MACHINES,
    ]);
    has(&out, "sent PlaceOrder to ord-1");
    stack.pump().await;

    let shown = stack.ok(&["show", "ord-1"]);
    for needle in [
        "execution  ord-1",
        "machine    Order",
        "status     RUNNING",
        "active     Checkout > AwaitingPayment",
        "\"items\":2",
        "children   none",
        "timers (1)",
        "  Checkout ",
    ] {
        has(&shown, needle);
    }
    let doc = stack.json(&["show", "ord-1"]);
    assert_eq!(doc["execution"]["status"], "RUNNING");
    assert_eq!(doc["execution"]["active_path"], "Checkout.AwaitingPayment");
    assert_eq!(doc["execution"]["context"]["items"], 2);
    assert_eq!(doc["children"], serde_json::json!([]));
    assert_eq!(doc["timers"][0]["path"], "Checkout");
    assert_eq!(doc["timers"][0]["execution_id"], "ord-1");
    let created = doc["execution"]["updated_at"].as_f64().expect("stamped");
    let fire_at = doc["timers"][0]["fire_at"].as_f64().expect("fire_at");
    assert!(
        (fire_at - (created + 900.0)).abs() < 1.0,
        "checkout's 900 s: {fire_at}"
    );

    // the machine drawn with the execution's active states highlighted
    let drawn = stack.ok(&["render", ORDER, "--mermaid", "--active", "ord-1"]);
    has(&drawn, "stateDiagram-v2");
    has(&drawn, "classDef active");
    assert!(
        drawn
            .trim_end()
            .ends_with("class Checkout,Checkout_AwaitingPayment active"),
        "{drawn}"
    );

    // three more orders, one of them finished: filters and paging
    for id in ["ord-2", "ord-3"] {
        stack.ok(&["create", "Order", "--id", id, "--machines", APP_MACHINES]);
    }
    stack.pump().await;
    stack.ok(&[
        "send",
        "ord-3",
        "-e",
        "CancelOrder",
        "--machines",
        APP_MACHINES,
    ]);
    stack.pump().await;
    let listed = stack.ok(&["list", "--machine", "Order"]);
    has(&listed, "ID");
    has(&listed, "STATUS");
    for id in ["ord-1", "ord-2", "ord-3"] {
        has(&listed, id);
    }
    let done = stack.json(&["list", "--status", "DONE"]);
    let ids: Vec<&str> = done["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["id"].as_str())
        .collect();
    assert_eq!(ids, ["ord-3"]);
    assert_eq!(done["items"][0]["outcome"], "cancelled");
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..5 {
        let mut args = vec!["list", "--roots", "--limit", "1"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let page = stack.json(&args);
        let items = page["items"].as_array().expect("items").clone();
        assert!(items.len() <= 1);
        seen.extend(
            items
                .iter()
                .filter_map(|i| i["id"].as_str().map(String::from)),
        );
        cursor = page["next_cursor"].as_str().map(String::from);
        if cursor.is_none() {
            break;
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        ["ord-1", "ord-2", "ord-3"],
        "every root, one page at a time"
    );
    let paged = stack.ok(&["list", "--limit", "1"]);
    has(&paged, "more: repeat with --cursor ");

    // --wait returns once the worker has created it
    let waiting = Command::new(env!("CARGO_BIN_EXE_harel"))
        .args(["create", "Order", "--id", "ord-w", "--wait", "20"])
        .args(["--machines", APP_MACHINES])
        .args([
            "--table-prefix",
            &stack.moto.prefix,
            "--queue-url",
            &stack.moto.queue,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("harel runs");
    for _ in 0..80 {
        stack.pump().await;
        if stack.reader.load("ord-w").await.expect("load").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let out = waiting.wait_with_output().expect("harel ends");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "ord-w\n");
    has(&text(&out.stderr), "created: Order ord-w is RUNNING");

    // the file form still lists declarations
    let declared = bare(&["list", ORDER]);
    has(&text(&declared.stdout), "machines:  Order");
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn control_commands_answer_in_text_and_json() {
    let stack = deploy().await;
    let machines = ["--machines", CONTROL_MACHINES];
    let id = stack
        .ok(&[
            "create",
            "Split",
            "--id",
            "split-1",
            machines[0],
            machines[1],
        ])
        .trim()
        .to_string();
    stack.pump().await;
    let doc = stack.json(&["show", &id]);
    let regions: Vec<String> = doc["children"]
        .as_array()
        .expect("children")
        .iter()
        .filter_map(|c| c["id"].as_str().map(String::from))
        .collect();
    assert_eq!(regions.len(), 2, "{doc}");
    let shown = stack.ok(&["show", &id]);
    has(&shown, "children (2)");
    has(&shown, "Both > Left > L1");

    let out = stack.ok(&["suspend", &id]);
    has(&out, "suspend split-1: RUNNING -> SUSPENDED");
    assert_eq!(out.matches("  region ").count(), 2, "{out}");
    let out = stack.ok(&["suspend", &id]);
    has(&out, "suspend split-1: nothing to do (it is SUSPENDED)");
    let doc = stack.json(&["resume", &id]);
    assert_eq!(doc["command"], "resume");
    assert_eq!(doc["changed"], true);
    assert_eq!(doc["status"], "RUNNING");
    assert_eq!(doc["steps"].as_array().map(Vec::len), Some(3));
    assert_eq!(doc["steps"][0]["from_status"], "SUSPENDED");
    assert_eq!(doc["steps"][0]["cause"], "control");

    let drawn = stack.ok(&[
        "render",
        CONTROL_MACHINES,
        "Split",
        "--mermaid",
        "--active",
        &id,
    ]);
    assert!(
        drawn
            .trim_end()
            .ends_with("class Both,Both_Left,Both_Left_L1,Both_Right,Both_Right_R1 active"),
        "{drawn}"
    );

    // cooperative: the Cancel goes on the queue with the command, the worker cleans up
    let doc = stack.json(&["cancel", &id, machines[0], machines[1]]);
    assert_eq!(doc["mode"], "cooperative");
    assert_eq!(doc["status"], "CANCELLING");
    assert_eq!(doc["published"], true);
    assert_eq!(doc["enqueued"][0]["event"]["kind"], "Cancel");
    assert!(
        stack
            .reader
            .pending_outbox()
            .await
            .expect("outbox")
            .is_empty(),
        "published and acked: nothing left for the relay"
    );
    stack.pump().await;
    let doc = stack.json(&["show", &id]);
    assert_eq!(doc["execution"]["status"], "DONE");
    assert_eq!(doc["execution"]["outcome"], "cancelled");
    assert_eq!(doc["execution"]["context"]["cleanups"], 1);
    for child in doc["children"].as_array().expect("children") {
        assert_eq!(child["status"], "CANCELLED");
    }

    // forceful, in text; then terminate of a finished execution is a no-op
    stack.ok(&[
        "create",
        "Plain",
        "--id",
        "plain-1",
        machines[0],
        machines[1],
    ]);
    stack.pump().await;
    let out = stack.ok(&["cancel", "plain-1", machines[0], machines[1]]);
    has(&out, "cancel plain-1: RUNNING -> CANCELLED, forceful");
    let out = stack.ok(&["terminate", "plain-1"]);
    has(&out, "terminate plain-1: nothing to do (it is CANCELLED)");
    stack.ok(&["create", "Job", "--id", "job-1", machines[0], machines[1]]);
    stack.pump().await;
    let out = stack.ok(&["terminate", "job-1"]);
    has(&out, "terminate job-1: RUNNING -> CANCELLED");
    let out = stack.harel(&["send", "job-1", "-e", "Step"]);
    assert_eq!(out.status.code(), Some(4), "refused");
    has(
        &text(&out.stderr),
        "job-1 is CANCELLED: the worker would drop these events",
    );

    // a dead letter, redriven at a leaf once fixed; a composite target is refused
    let mut dead = harel_model::Execution::new("Job").with_id("dead-1");
    dead.status = harel_model::Status::Failed;
    dead.error = Some("ValueError: boom".into());
    dead.active_path = Some("Working".into());
    dead.context.insert("steps".into(), serde_json::json!(0));
    stack
        .reader
        .commit(&mut dead, harel_store::Commit::default())
        .await
        .expect("insert");
    let out = stack.harel(&["send", "dead-1", "-e", "Step"]);
    has(
        &text(&out.stderr),
        "dead-1 is FAILED: the worker would drop these events (redrive it first",
    );
    let out = stack.harel(&[
        "redrive",
        "dead-1",
        "--to",
        "Nowhere",
        machines[0],
        machines[1],
    ]);
    assert_eq!(out.status.code(), Some(4), "refused");
    has(
        &text(&out.stderr),
        "redrive target must be a leaf state, got 'Nowhere'",
    );
    let out = stack.ok(&[
        "redrive",
        "dead-1",
        "--to",
        "Working",
        machines[0],
        machines[1],
    ]);
    has(&out, "redrive dead-1: FAILED -> RUNNING");
    let doc = stack.json(&["show", "dead-1"]);
    assert_eq!(doc["execution"]["error"], Value::Null);
    stack.ok(&["send", "dead-1", "-e", "Step"]);
    stack.pump().await;
    let doc = stack.json(&["show", "dead-1"]);
    assert_eq!(doc["execution"]["context"]["steps"], 1, "it runs again");
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn trace_prints_a_timeline() {
    let stack = deploy().await;
    // a traced runner on the same tables writes the trace (the functions' own: trace_functions.rs)
    let defn = harel_lang::load_file(ORDER.as_ref(), Some("Order")).expect("order");
    let traced = DynamoDbStore::new(
        aws_sdk_dynamodb::Client::new(&stack.moto.sdk),
        &stack.moto.prefix,
    )
    .expect("prefix");
    let runner = DurableRunner::new(traced, [defn])
        .with_registry(harel_app::actions::actions())
        .with_trace(true);
    runner
        .create("Order", None, Some("traced-1"))
        .await
        .expect("create");
    for kind in ["PlaceOrder", "PaymentAuthorized"] {
        runner
            .process("traced-1", &harel_model::Event::new(kind))
            .await
            .expect(kind);
    }
    let out = stack.ok(&["trace", "traced-1"]);
    has(&out, "traced-1 (Order, RUNNING): 3 steps");
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(lines.len(), 3, "{out}");
    has(lines[0], "Start");
    has(lines[0], "- -> Cart");
    has(lines[1], "PlaceOrder");
    has(lines[1], "Cart -> Checkout.AwaitingPayment");
    has(lines[2], "Checkout.AwaitingPayment -> Fulfilment.Packing");
    has(&out, "actions  order_actions.reserve_stock");
    let doc = stack.json(&["trace", "traced-1"]);
    assert_eq!(doc["steps"].as_array().map(Vec::len), Some(3));
    assert_eq!(doc["steps"][1]["event_kind"], "PlaceOrder");

    stack.ok(&[
        "create",
        "Order",
        "--id",
        "untraced",
        "--machines",
        APP_MACHINES,
    ]);
    stack.pump().await;
    let out = stack.ok(&["trace", "untraced"]);
    has(&out, "0 steps");
    has(&out, "no trace recorded");
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn failures_say_what_to_fix() {
    let stack = deploy().await;
    // the documented exit codes: 2 usage, 3 not found, 4 refused, 5 AWS error
    let code = |out: Output, code: i32| {
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stderr)
    };
    has(
        &code(stack.harel(&["show", "nobody"]), 3),
        &format!(
            "no execution \"nobody\" in table {}_executions",
            stack.moto.prefix
        ),
    );
    has(
        &code(stack.harel(&["suspend", "nobody"]), 3),
        "no execution \"nobody\"",
    );
    has(
        &code(
            stack.harel(&["create", "Nope", "--machines", APP_MACHINES]),
            3,
        ),
        "unknown machine \"Nope\": the functions run",
    );
    has(
        &code(
            stack.harel(&[
                "create",
                "Order",
                "--context",
                "[1]",
                "--machines",
                APP_MACHINES,
            ]),
            2,
        ),
        "--context must be a JSON object",
    );
    has(
        &code(
            stack.harel(&[
                "create",
                "Order",
                "--context",
                r#"{"items": "many"}"#,
                "--machines",
                APP_MACHINES,
            ]),
            4,
        ),
        "--context does not fit machine Order",
    );
    has(
        &code(
            bare(&[
                "create",
                "Order",
                "--table-prefix",
                &stack.moto.prefix,
                "--machines",
                APP_MACHINES,
            ]),
            2,
        ),
        "no queue URL",
    );
    has(
        &code(bare(&["show", "x"]), 2),
        "no table prefix: pass --table-prefix PREFIX or --stack NAME (or set HAREL_STACK), or set HAREL_TABLE_PREFIX",
    );
    has(
        &code(stack.harel(&["send", "x", "-e", "+30s"]), 2),
        "a clock step only means something to `harel run`",
    );
    // a long --wait notes its progress on stderr (nothing pumps the queue here)
    let slow = code(
        stack.harel(&[
            "create",
            "Order",
            "--id",
            "slow-1",
            "--wait",
            "3",
            "--machines",
            APP_MACHINES,
        ]),
        1,
    );
    has(&slow, "waiting for the worker to create slow-1: ");
    has(&slow, " s of 3 s\n");
    has(&slow, "slow-1 was not created within 3 s");
    // the configuration the functions read works too
    let out = Command::new(env!("CARGO_BIN_EXE_harel"))
        .args(["create", "Order", "--id", "env-1"])
        .args(["--machines", APP_MACHINES])
        .env("HAREL_TABLE_PREFIX", &stack.moto.prefix)
        .env("HAREL_QUEUE_URL", &stack.moto.queue)
        .output()
        .expect("harel runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    stack.pump().await;
    has(
        &code(
            stack.harel(&[
                "create",
                "Order",
                "--id",
                "env-1",
                "--machines",
                APP_MACHINES,
            ]),
            4,
        ),
        "execution \"env-1\" already exists",
    );
    // nothing listening where AWS is said to be
    let out = Command::new(env!("CARGO_BIN_EXE_harel"))
        .args(["show", "x", "--table-prefix", "p"])
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        .output()
        .expect("harel runs");
    has(
        &code(out, 5),
        "check AWS_REGION, the credentials and AWS_ENDPOINT_URL",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_harel"))
        .args(["show", "x", "--stack", "no-such-stack"])
        .output()
        .expect("harel runs");
    has(
        &code(out, 3),
        "reading the outputs of stack \"no-such-stack\"",
    );
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn stack_outputs_name_the_tables_and_the_queue() {
    let stack = deploy().await;
    let name = format!("harel-{}", stack.moto.prefix);
    let template = serde_json::json!({
        "Resources": {"Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
        "Outputs": {
            "TablePrefix": {"Value": stack.moto.prefix},
            "QueueUrl": {"Value": stack.moto.queue},
        }
    });
    aws_sdk_cloudformation::Client::new(&stack.moto.sdk)
        .create_stack()
        .stack_name(&name)
        .template_body(template.to_string())
        .send()
        .await
        .expect("create stack");
    let out = bare(&[
        "create",
        "Order",
        "--id",
        "st-1",
        "--stack",
        &name,
        "--machines",
        APP_MACHINES,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    stack.pump().await;
    let out = bare(&["show", "st-1", "--stack", &name, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_str(text(&out.stdout).trim()).expect("JSON");
    assert_eq!(doc["execution"]["active_path"], "Cart");
    // HAREL_STACK names the stack when --stack does not; --stack still wins
    let with_env = |args: &[&str], stack_name: &str| {
        Command::new(env!("CARGO_BIN_EXE_harel"))
            .args(args)
            .env_remove("HAREL_TABLE_PREFIX")
            .env_remove("HAREL_QUEUE_URL")
            .env("HAREL_STACK", stack_name)
            .output()
            .expect("harel runs")
    };
    let out = with_env(&["show", "st-1", "--json"], &name);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_str(text(&out.stdout).trim()).expect("JSON");
    assert_eq!(doc["execution"]["id"], "st-1");
    let out = with_env(&["show", "st-1", "--stack", &name], "no-such-stack");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = with_env(&["show", "st-1"], "no-such-stack");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    has(&text(&out.stderr), "stack \"no-such-stack\"");
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn purge_deletes_finished_trees_and_list_scan_reads_the_table() {
    let stack = deploy().await;
    let machines = ["--machines", CONTROL_MACHINES];
    for id in ["split-9", "split-8", "plain-9"] {
        let machine = if id.starts_with("split") {
            "Split"
        } else {
            "Plain"
        };
        stack.ok(&["create", machine, "--id", id, machines[0], machines[1]]);
    }
    stack.pump().await;
    stack.ok(&["terminate", "split-9"]);
    // a root finished while its regions still run: a live tree, never purged
    let mut half = stack
        .reader
        .load("split-8")
        .await
        .expect("load")
        .expect("split-8");
    half.status = harel_model::Status::Cancelled;
    half.finished_at = Some(1.0);
    stack
        .reader
        .commit(&mut half, harel_store::Commit::default())
        .await
        .expect("commit");

    assert_eq!(
        stack.ok(&["purge", "--older-than", "1h", "--dry-run"]),
        "would purge: 0\n"
    );
    let dry = stack.harel(&[
        "purge",
        "--store",
        "dynamodb",
        "--older-than",
        "0s",
        "--dry-run",
        "-v",
    ]);
    assert_eq!(text(&dry.stdout), "would purge: 1\n  split-9\n");
    assert_eq!(dry.status.code(), Some(1), "split-8 is refused");
    has(
        &text(&dry.stderr),
        "refused split-8: purge refused: not finished: split-8:",
    );
    assert!(
        stack.reader.load("split-9").await.expect("load").is_some(),
        "a dry run"
    );

    let dir = std::env::temp_dir().join(harel_testkit::unique_prefix("cli-archive"));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("a.jsonl");
    let out = stack.harel(&[
        "purge",
        "--older-than",
        "0s",
        "--status",
        "done,cancelled",
        "--archive",
        file.to_str().expect("utf-8"),
    ]);
    assert_eq!(text(&out.stdout), "purged: 1\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(stack.reader.load("split-9").await.expect("load").is_none());
    assert!(stack.reader.load("split-8").await.expect("load").is_some());
    let line: Value =
        serde_json::from_str(std::fs::read_to_string(&file).expect("archive").trim_end())
            .expect("one JSON line");
    assert_eq!(line["root_id"], "split-9");
    assert_eq!(
        line["executions"].as_array().map(Vec::len),
        Some(3),
        "root and regions"
    );
    std::fs::remove_dir_all(&dir).ok();

    let scan = stack.harel(&["list", "--scan", "--status", "CANCELLED"]);
    assert!(scan.status.success());
    has(&text(&scan.stdout), "split-8");
    has(&text(&scan.stderr), "scan: page 1,");
    let scan = stack.harel(&["purge", "--older-than", "0s", "--scan", "--dry-run"]);
    has(&text(&scan.stdout), "would purge: ");
    has(&text(&scan.stderr), "scan: page 1,");
    let bad = stack.harel(&["purge", "--older-than", "3x"]);
    assert_eq!(bad.status.code(), Some(2));
    has(&text(&bad.stderr), "invalid age \"3x\"");
    let bad = stack.harel(&["purge", "--older-than", "1d", "--status", "failed"]);
    assert_eq!(bad.status.code(), Some(2));
    has(&text(&bad.stderr), "only done and cancelled");

    // the CLI's own commits keep finished work as long as the functions do
    stack.ok(&["terminate", "plain-9", "--retention-days", "2"]);
    let item = stack
        .reader
        .client()
        .get_item()
        .table_name(stack.reader.tables().executions())
        .key(
            "id",
            aws_sdk_dynamodb::types::AttributeValue::S("plain-9".into()),
        )
        .send()
        .await
        .expect("get")
        .item()
        .cloned()
        .expect("plain-9");
    let finished = stack
        .reader
        .load("plain-9")
        .await
        .expect("load")
        .and_then(|e| e.finished_at)
        .expect("finished_at");
    assert_eq!(
        item.get("retain_until")
            .and_then(|v| v.as_n().ok())
            .cloned(),
        Some((finished as u64 + 2 * 86400).to_string())
    );
    let bad = stack.harel(&["show", "plain-9", "--retention-days", "soon"]);
    assert!(!bad.status.success());
    has(
        &text(&bad.stderr),
        "--retention-days \"soon\": expected whole days",
    );
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn without_machines_create_and_send_go_unchecked_and_cancel_asks_for_them() {
    let stack = deploy().await;
    // nothing to check against: sent all the same (the worker decides), one line says so
    let out = stack.harel(&[
        "create",
        "Order",
        "--id",
        "free-1",
        "--context",
        r#"{"items": 2}"#,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "free-1\n", "stdout keeps the id alone");
    let said = text(&out.stderr);
    let notes: Vec<&str> = said.lines().filter(|l| l.starts_with("note: ")).collect();
    assert_eq!(notes.len(), 1, "{said}");
    has(
        notes[0],
        "note: machine Order and its context were not checked locally, no machines were given",
    );
    has(notes[0], "--machines DIR");
    has(notes[0], "HAREL_MACHINES");
    stack.pump().await;
    let exe = stack
        .reader
        .load("free-1")
        .await
        .expect("load")
        .expect("created");
    assert_eq!(exe.status, harel_model::Status::Running);

    let out = stack.harel(&["send", "free-1", "-e", "PlaceOrder"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    has(&text(&out.stdout), "sent PlaceOrder to free-1");
    has(
        &text(&out.stderr),
        "note: the events for machine Order were not checked locally, no machines were given",
    );
    stack.pump().await;

    // the worker pinned free-1 to its machine's version, which the store keeps: that copy
    // would answer for it (shown with free-2 below). One harel Python wrote last has lost its
    // pin, and then only the machine files can say
    let mut unpinned = stack
        .reader
        .load("free-1")
        .await
        .expect("load")
        .expect("there");
    assert!(unpinned.pinned_version().is_some(), "the worker pins");
    unpinned.definition_version = None;
    stack
        .reader
        .save(&mut unpinned)
        .await
        .expect("saved unpinned");

    // cooperative or forceful is the machine's to say: without it, nothing is written
    let out = stack.harel(&["cancel", "free-1"]);
    assert_eq!(out.status.code(), Some(2), "usage: {}", text(&out.stderr));
    has(
        &text(&out.stderr),
        "machine \"Order\" is unknown here, as no machines were given; cancel reads whether it models Cancel",
    );
    has(&text(&out.stderr), "--machines DIR");
    let out = stack.harel(&["redrive", "free-1", "--to", "Cart"]);
    assert_eq!(out.status.code(), Some(2), "usage: {}", text(&out.stderr));
    has(&text(&out.stderr), "redrive checks --to against it");
    let exe = stack
        .reader
        .load("free-1")
        .await
        .expect("load")
        .expect("there");
    assert_eq!(exe.status, harel_model::Status::Running, "left alone");

    // HAREL_MACHINES gives them when --machines does not: Order has no Cancel transition
    let out = Command::new(env!("CARGO_BIN_EXE_harel"))
        .args(["cancel", "free-1"])
        .args([
            "--table-prefix",
            &stack.moto.prefix,
            "--queue-url",
            &stack.moto.queue,
        ])
        .env("HAREL_MACHINES", APP_MACHINES)
        .output()
        .expect("harel runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    has(
        &text(&out.stdout),
        "cancel free-1: RUNNING -> CANCELLED, forceful",
    );

    // a pinned execution needs no files: its version's machine is read from the store
    let out = stack.harel(&[
        "create",
        "Order",
        "--id",
        "free-2",
        "--context",
        r#"{"items": 2}"#,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    stack.pump().await;
    let out = stack.harel(&["cancel", "free-2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    has(
        &text(&out.stdout),
        "cancel free-2: RUNNING -> CANCELLED, forceful",
    );
}

/// `harel schedules trigger`: an entry started now through create's path (the create on the
/// queue, the worker creates it), with the id the entry gives the current minute; the same
/// id again is refused.
#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn schedules_trigger_starts_an_entry_now() {
    let stack = deploy().await;
    let file = "../examples/schedules.yaml";
    let args = [
        "schedules",
        "trigger",
        "nightly-orders",
        file,
        "--machines",
        APP_MACHINES,
    ];
    let out = stack.ok(&args);
    let id = out.trim().to_string();
    // the entry's template, nightly-orders-{date}, in Madrid
    assert!(id.starts_with("nightly-orders-20"), "{out}");
    assert_eq!(stack.queued().await, 1, "the create is a message");
    stack.pump().await;
    let exe = stack.reader.load(&id).await.unwrap().expect("created");
    assert_eq!(exe.definition_id, "Order");
    assert_eq!(
        exe.context["items"],
        serde_json::json!(2),
        "the entry's context"
    );
    let again = stack.harel(&args);
    assert!(!again.status.success());
    has(&text(&again.stderr), "already exists");
    let unknown = stack.harel(&["schedules", "trigger", "nope", file]);
    assert!(!unknown.status.success());
    has(
        &text(&unknown.stderr),
        "no entry \"nope\" in ../examples/schedules.yaml: it has nightly-orders, approvals-sweep",
    );
}

/// `harel reindex` after an upgrade: an execution whose listing keys an earlier release wrote
/// unsharded is missing from `harel list` until reindex rewrites them; a second run has
/// nothing to do.
#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn reindex_brings_an_earlier_releases_executions_back_into_the_listing() {
    let stack = deploy().await;
    stack.ok(&[
        "create",
        "Order",
        "--id",
        "ord-old",
        "--machines",
        APP_MACHINES,
    ]);
    stack.pump().await;
    has(&stack.ok(&["list"]), "ord-old");
    stack
        .reader
        .client()
        .update_item()
        .table_name(stack.reader.tables().executions())
        .key(
            "id",
            aws_sdk_dynamodb::types::AttributeValue::S("ord-old".into()),
        )
        .update_expression("SET list_pk = :pk, list_mpk = :mpk")
        .expression_attribute_values(
            ":pk",
            aws_sdk_dynamodb::types::AttributeValue::S("RUNNING".into()),
        )
        .expression_attribute_values(
            ":mpk",
            aws_sdk_dynamodb::types::AttributeValue::S("Order#RUNNING".into()),
        )
        .send()
        .await
        .expect("the keys an earlier release wrote");
    assert!(!stack.ok(&["list"]).contains("ord-old"), "not in any shard");

    assert_eq!(
        stack.ok(&["reindex", "--dry-run"]),
        "read 1 executions with listing keys; would rewrite 1\n"
    );
    assert!(!stack.ok(&["list"]).contains("ord-old"), "a dry run");
    assert_eq!(
        stack.ok(&["reindex"]),
        "read 1 executions with listing keys; rewrote 1\n"
    );
    has(&stack.ok(&["list"]), "ord-old");
    has(&stack.ok(&["list", "--machine", "Order"]), "ord-old");
    assert_eq!(
        stack.ok(&["reindex"]),
        "read 1 executions with listing keys; rewrote 0\n"
    );
}
