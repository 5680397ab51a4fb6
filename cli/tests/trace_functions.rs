//! The execution trace written by the serverless functions, on the moto server
//! (`scripts/with-moto.sh cargo test -p harel-cli --test trace_functions`): the worker booted
//! by the functions' own wiring (`harel_app::aws::boot_with`) with `HAREL_TRACE=true` and a
//! small `HAREL_TRACE_MAX` runs a ShopOrder driven by the built `harel` binary; each step
//! (the regions' starts included) leaves harel's trace entry, the ring keeps the newest, `harel
//! trace ID` prints the timeline, and harel 0.9.0's own `DynamoDBStore.read_trace` reads the
//! same entries.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use harel_app::aws::AppWorker;
use harel_app::Services;
use harel_lambda::Role;
use harel_model::{Object, Status};
use harel_store::prelude::*;
use harel_testkit::{config_from, Deployed, MotoStack};
use serde_json::{json, Value};

/// The ring size the functions are configured with here: the parent's six steps overflow it.
const TRACE_MAX: usize = 4;

/// The machines the functions run, for the CLI's checks before it sends.
const APP_MACHINES: &str = "../functions/app/machines";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn has(haystack: &str, needle: &str) {
    assert!(haystack.contains(needle), "{needle:?} not in:\n{haystack}");
}

/// The stack (the one fixture) with the worker as `boot(Role::Worker)` builds it from the
/// stack's settings, and the relay function booted from the same settings.
async fn deploy(trace: &str) -> (Deployed<AppWorker>, Services) {
    let moto = MotoStack::new("tr").await;
    moto.create_idempotency_table(&aws_sdk_dynamodb::Client::new(&moto.sdk))
        .await;
    let trace_max = TRACE_MAX.to_string();
    let config = moto.config(&[("HAREL_TRACE", trace), ("HAREL_TRACE_MAX", &trace_max)]);
    let booted = harel_app::aws::boot_with(Role::Worker, config, &moto.sdk)
        .await
        .expect("the worker boots");
    let settings = moto.settings(&[("HAREL_TRACE", trace), ("HAREL_TRACE_MAX", &trace_max)]);
    let pairs: Vec<(&str, &str)> = settings
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let relay = harel_app::aws::boot_with(Role::Relay, config_from(Role::Relay, &pairs), &moto.sdk)
        .await
        .expect("the relay boots");
    (Deployed::with_worker(moto, booted.into_worker()), relay)
}

/// The operator's side of the stack: the built `harel` binary against its tables and queue.
trait Operator {
    fn harel(&self, args: &[&str]) -> Output;
    fn ok(&self, args: &[&str]) -> String;
    async fn run_shop_order(&self, id: &str);
}

impl Operator for Deployed<AppWorker> {
    /// The built `harel` binary against these tables and this queue.
    fn harel(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_harel"))
            .args(args)
            .args(["--table-prefix", self.prefix(), "--queue-url", self.queue()])
            .env_remove("HAREL_TABLE_PREFIX")
            .env_remove("HAREL_QUEUE_URL")
            .env_remove("HAREL_MACHINES")
            .output()
            .expect("harel runs")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.harel(args);
        assert!(
            out.status.success(),
            "harel {args:?} failed: {}",
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// A ShopOrder through the functions to its success terminal: create, PlaceOrder,
    /// PaymentAuthorized (the fork: two regions started by the worker, each reporting
    /// Finished), Delivered.
    async fn run_shop_order(&self, id: &str) {
        self.ok(&[
            "create",
            "ShopOrder",
            "--id",
            id,
            "--context",
            r#"{"items": 3, "unit_price": 20.0}"#,
            "--machines",
            APP_MACHINES,
        ]);
        self.pump().await;
        for event in [
            "PlaceOrder",
            r#"PaymentAuthorized:{"amount": 60.0}"#,
            "Delivered",
        ] {
            self.ok(&["send", id, "-e", event, "--machines", APP_MACHINES]);
            self.pump().await;
        }
        let exe = self.reader.load(id).await.expect("load").expect("exists");
        assert_eq!(
            (exe.status, exe.outcome.as_deref()),
            (Status::Done, Some("success")),
            "{exe:?}"
        );
    }
}

/// harel's `_trace_step` keys, plus the `index` `read_trace` adds (and `assigned` when a
/// `set` wrote something).
fn assert_harels_shape(step: &Object) {
    let mut keys: Vec<&str> = step.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut expected = vec![
        "actions",
        "context_out",
        "event_data",
        "event_kind",
        "from_path",
        "index",
        "timestamp",
        "to_path",
    ];
    if step.contains_key("assigned") {
        expected.push("assigned");
        expected.sort_unstable();
    }
    assert_eq!(keys, expected, "{step:?}");
    assert!(step["actions"].is_array() && step["event_data"].is_object());
    assert!(step["context_out"].is_object() && step["timestamp"].is_f64());
}

/// harel 0.9.0's `DynamoDBStore.read_trace` on the same tables, by execution id.
fn harel_read_trace(prefix: &str, ids: &[&str]) -> Value {
    let python = std::env::var("HAREL_PYTHON").expect(
        "HAREL_PYTHON is not set: run under scripts/with-moto.sh (it points it at the venv with harel 0.9.0)",
    );
    let script = r#"
import json, os, sys
import boto3
from harel.engine.store import DynamoDBStore
client = boto3.client("dynamodb", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                      region_name=os.environ.get("AWS_REGION", "us-east-1"))
store = DynamoDBStore(client, prefix=sys.argv[1], create_schema=False)
print(json.dumps({i: store.read_trace(i) for i in sys.argv[2:]}))
"#;
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(prefix)
        .args(ids)
        .output()
        .expect("harel Python runs");
    assert!(
        out.status.success(),
        "harel Python read_trace failed:\n{}",
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn the_functions_write_harels_trace_and_harel_trace_shows_it() {
    let (stack, _) = deploy("true").await;
    let id = "shop-traced";
    stack.run_shop_order(id).await;

    // six steps (Start, PlaceOrder, PaymentAuthorized, Finished x2, Delivered) in a ring of
    // four: indexes 2..=5 kept, 0 and 1 deleted in the commits of 4 and 5
    let trace = stack.reader.read_trace(id).await.expect("trace");
    let indexes: Vec<u64> = trace
        .iter()
        .map(|s| s["index"].as_u64().expect("an index"))
        .collect();
    assert_eq!(indexes, [2, 3, 4, 5]);
    let kinds: Vec<&str> = trace
        .iter()
        .map(|s| s["event_kind"].as_str().expect("a kind"))
        .collect();
    assert_eq!(
        kinds,
        ["PaymentAuthorized", "Finished", "Finished", "Delivered"]
    );
    for step in &trace {
        assert_harels_shape(step);
    }
    assert_eq!(trace[0]["event_data"], json!({"amount": 60.0}));
    assert_eq!(trace[0]["from_path"], json!("Checkout.AwaitingPayment"));
    assert_eq!(trace[0]["to_path"], json!("Fulfilment"));
    assert_eq!(trace[2]["to_path"], json!("Shipping"), "the join");
    assert_eq!(trace[3]["from_path"], json!("Shipping"));
    assert_eq!(trace[3]["to_path"], json!("Completed"));
    let stamps: Vec<f64> = trace
        .iter()
        .map(|s| s["timestamp"].as_f64().expect("a time"))
        .collect();
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "{stamps:?}");

    // the regions the worker started: their start is a traced step too
    let exe = stack.reader.load(id).await.expect("load").expect("exists");
    let regions: Vec<harel_model::SmolStr> = exe.children.keys().cloned().collect();
    assert_eq!(regions.len(), 2, "{:?}", exe.children);
    for region in &regions {
        let steps = stack.reader.read_trace(region).await.expect("trace");
        assert_eq!(steps.len(), 1, "{region}: {steps:?}");
        assert_eq!(steps[0]["event_kind"], json!("Start"));
        assert_eq!(steps[0]["from_path"], Value::Null);
        assert_eq!(steps[0]["index"], json!(0));
        assert!(
            steps[0]["actions"]
                .as_array()
                .is_some_and(|a| !a.is_empty()),
            "{steps:?}"
        );
        assert_harels_shape(&steps[0]);
    }

    // harel Python reads the same entries, index for index
    let mut ids = vec![id];
    ids.extend(regions.iter().map(|r| r.as_str()));
    let python = harel_read_trace(&stack.moto.prefix, &ids);
    for each in &ids {
        let ours = stack.reader.read_trace(each).await.expect("trace");
        assert_eq!(python[*each], json!(ours), "{each}");
    }

    // the operator's timeline
    let out = stack.ok(&["trace", id]);
    has(&out, "shop-traced (ShopOrder, DONE): 4 steps");
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(lines.len(), 4, "{out}");
    has(lines[0], "#2");
    has(lines[0], "PaymentAuthorized");
    has(lines[0], "Checkout.AwaitingPayment -> Fulfilment");
    has(lines[3], "#5");
    has(lines[3], "Shipping -> Completed");
    has(&out, r#"data     {"amount":60.0}"#);
    let doc: Value = serde_json::from_str(stack.ok(&["trace", id, "--json"]).trim()).expect("JSON");
    assert_eq!(doc["execution_id"], json!(id));
    assert_eq!(doc["steps"], json!(trace));
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn with_the_trace_off_the_functions_write_none() {
    let (stack, _) = deploy("false").await;
    let id = "shop-untraced";
    stack.run_shop_order(id).await;
    assert!(stack.reader.read_trace(id).await.expect("trace").is_empty());
    let out = stack.ok(&["trace", id]);
    has(&out, "0 steps");
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_region_the_relay_starts_after_a_crash_is_traced() {
    let (stack, relay) = deploy("true").await;
    let id = "shop-crashed";
    stack.ok(&[
        "create",
        "ShopOrder",
        "--id",
        id,
        "--machines",
        APP_MACHINES,
    ]);
    stack.pump().await;
    stack.ok(&["send", id, "-e", "PlaceOrder", "--machines", APP_MACHINES]);
    stack.pump().await;
    // a worker commits PaymentAuthorized (the fork) and dies before delivering its spawns
    let mut exe = stack.reader.load(id).await.expect("load").expect("exists");
    let paid = harel_model::Event::new("PaymentAuthorized").with_data(
        json!({"amount": 20.0})
            .as_object()
            .cloned()
            .expect("an object"),
    );
    let stepped = relay
        .driver
        .step(&relay.store, &mut exe, Some(&paid))
        .await
        .expect("the step commits");
    assert_eq!(stepped.spawns.len(), 2);
    // the relay creates and starts the regions: each start is a traced step
    let deadline = Instant::now() + Duration::from_secs(60);
    let report = harel_lambda::relay(&relay.store, &relay.transport, &relay.driver, deadline)
        .await
        .expect("relay");
    assert_eq!(report.delivered.children_created, 2);
    for spawn in &stepped.spawns {
        let steps = stack
            .reader
            .read_trace(&spawn.child_id)
            .await
            .expect("trace");
        let kinds: Vec<&Value> = steps.iter().map(|s| &s["event_kind"]).collect();
        assert_eq!(kinds, [&json!("Start")], "{}", spawn.child_id);
        assert_harels_shape(&steps[0]);
    }
    // their Finished reach the parent through the queue: the join moves it on
    stack.pump().await;
    let exe = stack.reader.load(id).await.expect("load").expect("exists");
    assert_eq!(exe.active_path.as_deref(), Some("Shipping"));
    // Start, PlaceOrder, PaymentAuthorized, Finished, Finished: the ring of four dropped 0
    let trace = stack.reader.read_trace(id).await.expect("trace");
    let indexed: Vec<(u64, &str)> = trace
        .iter()
        .map(|s| {
            (
                s["index"].as_u64().expect("an index"),
                s["event_kind"].as_str().expect("a kind"),
            )
        })
        .collect();
    assert_eq!(
        indexed,
        [
            (1, "PlaceOrder"),
            (2, "PaymentAuthorized"),
            (3, "Finished"),
            (4, "Finished")
        ]
    );
}
