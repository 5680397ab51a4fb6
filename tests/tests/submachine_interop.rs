//! Submachine children across implementations, on one moto server and one set of tables
//! (`scripts/with-moto.sh cargo test -p harel-tests --test submachine_interop`): a fan-out
//! whose spawn records our runner committed is relayed by harel Python's own `DurableRunner`
//! over its `DynamoDBStore` (it creates the children from our records, resolves their FQN,
//! joins them), and the reverse: harel Python commits the parent and its spawns, our runner
//! creates the children. Either way the parent and every child end exactly as a run of ours
//! alone leaves them.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use harel_dynamodb::DynamoDbStore;
use harel_model::schema::with_defaults;
use harel_model::{Definition, Execution, Status};
use harel_runtime::{DurableRunner, ManualClock};
use harel_store::prelude::*;
use harel_store::{ExecutionStore, MemoryStore};
use harel_tests::differential::{harel_python, normalize, workspace_root};
use serde_json::{json, Value};

const CLOCK: f64 = 1_700_000_000.0;

/// harel Python's side: `create` commits a new execution without relaying anything (its
/// store hides the pending spawns and outbox from its own relay); `relay` drains whatever
/// is pending, as harel's `DurableRunner.recover` does. Prints the execution and its
/// children (by id) as harel's JSON.
const HAREL_SIDE: &str = r#"
import json, sys
import boto3
from harel.dsl import definition_from_dsl_file
from harel.engine.durable import DurableRunner
from harel.engine.store.dynamodb import DynamoDBStore

endpoint, prefix, action, path, machine, eid, seed = sys.argv[1:8]
client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="test", aws_secret_access_key="test")

class NoRelay(DynamoDBStore):
    def pending_spawns(self):
        return []
    def pending_outbox(self):
        return []

store = (NoRelay if action == "create" else DynamoDBStore)(client, prefix=prefix, create_schema=False)
defn = definition_from_dsl_file(path, machine)
runner = DurableRunner(store, {defn.id: defn}, clock=lambda: 1_700_000_000.0, execution="inline")
if action == "create":
    runner.create(defn.id, context=json.loads(seed), execution_id=eid)
else:
    runner.recover(defn.id)
ids = sorted(store.ids_with_prefix(eid))
print(json.dumps([json.loads(store.load(i).model_dump_json()) for i in ids]))
"#;

fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").expect(
        "this test needs a moto server: run it under scripts/with-moto.sh (AWS_ENDPOINT_URL is not set)",
    )
}

fn machine_file() -> PathBuf {
    workspace_root().join("tests/differential/machines/sub_fanout.stm")
}

fn fan() -> Definition {
    harel_lang::load_file(&machine_file(), Some("Fan")).expect("Fan loads")
}

fn harel(prefix: &str, action: &str, id: &str, seed: &Value) -> Vec<Value> {
    let out = Command::new(harel_python().expect("the harel Python venv"))
        .arg("-c")
        .arg(HAREL_SIDE)
        .arg(endpoint())
        .arg(prefix)
        .arg(action)
        .arg(machine_file())
        .arg("Fan")
        .arg(id)
        .arg(seed.to_string())
        .output()
        .expect("harel Python runs");
    assert!(
        out.status.success(),
        "harel Python {action} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("harel's side prints JSON")
}

async fn dynamodb() -> (DynamoDbStore, String) {
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint())
        .region(aws_config::Region::new("us-east-1"))
        .load()
        .await;
    let prefix = format!("si{}", &uuid::Uuid::new_v4().simple().to_string()[..14]);
    let store = DynamoDbStore::new(aws_sdk_dynamodb::Client::new(&sdk), &prefix).expect("prefix");
    store.ensure_tables().await.expect("tables");
    (store, prefix)
}

fn runner<S: ExecutionStore>(store: S) -> DurableRunner<S> {
    // the documents are compared with harel's, which has no machine versions (a pinned
    // document carries `definition_version`, which harel Python reads past and drops:
    // tests/tests/versions_lambda.rs covers that)
    DurableRunner::new(store, [fan()])
        .with_pinning(false)
        .with_clock(Arc::new(ManualClock::new(CLOCK)))
}

async fn family<S: ExecutionStore>(store: &S, id: &str) -> Vec<Value> {
    let mut ids = store.ids_with_prefix(id).await.expect("ids");
    ids.sort();
    let mut out = Vec::new();
    for i in ids {
        let exe = store.load(&i).await.expect("load").expect("listed");
        out.push(serde_json::from_str(&exe.to_json()).expect("JSON"));
    }
    out
}

/// The same run, ours alone, over the in-memory store.
async fn reference(id: &str, seed: &Value) -> Vec<Value> {
    let r = runner(MemoryStore::new());
    let context = seed.as_object().cloned();
    r.create("Fan", context, Some(id)).await.expect("ours runs");
    family(r.store(), id).await
}

fn normalized(docs: &[Value]) -> String {
    let docs: Vec<Value> = docs.iter().map(normalize).collect();
    serde_json::to_string_pretty(&docs).expect("JSON prints")
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn harel_python_relays_the_children_our_runner_spawned() {
    let (store, prefix) = dynamodb().await;
    let seed = json!({"items": [1, 2, 50]});
    let r = runner(store);
    let defn = fan();
    let mut exe = Execution::new("Fan").with_id("ours-1");
    exe.context = with_defaults(
        &defn.context_schema,
        &seed.as_object().cloned().unwrap_or_default(),
    );
    // one step committed, no relay: the parent and its three spawn records
    assert!(
        r.step(&mut exe, None).await.expect("our start"),
        "spawns enqueued"
    );
    let pending = r.store().pending_spawns().await.expect("spawns");
    assert_eq!(pending.len(), 3);
    assert_eq!(pending[0].context["__invoke_fqn__"], json!("Check"));

    let theirs = harel(&prefix, "relay", "ours-1", &seed);
    assert_eq!(theirs.len(), 4, "the parent and three children");
    assert!(r.store().pending_spawns().await.expect("spawns").is_empty());
    // our store reads what harel's relay wrote: the join ran
    let parent = r.get("ours-1").await.expect("load").expect("parent");
    assert_eq!(parent.status, Status::Running);
    assert_eq!(parent.active_path.as_deref(), Some("Review"));
    assert_eq!(
        parent.context["region_results"]["Process:2"]["outcome"],
        json!("failed")
    );
    assert_eq!(
        normalized(&family(r.store(), "ours-1").await),
        normalized(&reference("ours-1", &seed).await)
    );
    assert_eq!(
        normalized(&theirs),
        normalized(&reference("ours-1", &seed).await)
    );
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn our_runner_relays_the_children_harel_python_spawned() {
    let (store, prefix) = dynamodb().await;
    let seed = json!({"items": [3, 4]});
    let created = harel(&prefix, "create", "py-1", &seed);
    assert_eq!(created.len(), 1, "harel committed the parent only");
    let r = runner(store);
    let pending = r.store().pending_spawns().await.expect("spawns");
    let ids: Vec<&str> = pending.iter().map(|p| p.child_id.as_str()).collect();
    assert_eq!(ids, ["py-1:Process:0:0", "py-1:Process:0:1"]);

    r.recover()
        .await
        .expect("our relay creates harel's children");
    let parent = r.get("py-1").await.expect("load").expect("parent");
    assert_eq!(parent.status, Status::Done);
    assert_eq!(parent.outcome.as_deref(), Some("success"));
    let child = r
        .get("py-1:Process:0:1")
        .await
        .expect("load")
        .expect("child");
    assert_eq!(child.definition_fqn.as_deref(), Some("Check"));
    assert_eq!(child.context["amount"], json!(4));
    let ours: Vec<Value> = family(r.store(), "py-1").await;
    assert_eq!(
        normalized(&ours),
        normalized(&reference("py-1", &seed).await)
    );
}
