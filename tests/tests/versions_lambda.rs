//! Machine versions through the serverless runtime on the moto server
//! (`scripts/with-moto.sh cargo test -p harel-tests --test versions_lambda`): an execution
//! started on v1 finishes on v1 after the worker is rebuilt with only v2, a new one starts on
//! v2, a migration moves a parked execution (its timer armed on a renamed state) to v2 where
//! it finishes, a migration lacking a needed map is refused and changes nothing; and the
//! DynamoDB requests a pinned version costs: one read per process, none per event after.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;

use harel_control::{migrate, PathMap};
use harel_dynamodb::DynamoDbStore;
use harel_lambda::{sweep_once, Worker};
use harel_model::{Definition, Event, Execution, Object, Status};
use harel_runtime::{versions, ActionRegistry, Clock, Driver, ManualClock};
use harel_sqs::{create_body, SqsTransport};
use harel_store::prelude::*;
use harel_store::DefinitionDoc;
use harel_testkit::{pump, send, MotoStack, Recorder};
use harel_tests::differential::harel_python;

const V1: &str = r#"
event Go {}
event Hold {}
event Finish {}
machine M {
  initial A
  state A {}
  state B {}
  state Park { timeout 60 }
  final Done success
  from A to B on Go
  from A to Park on Hold
  from B to Done on Finish
  from Park to Done on Timeout
}
"#;

/// v1 with B renamed Review and Park renamed Parked.
const V2: &str = r#"
event Go {}
event Hold {}
event Finish {}
machine M {
  initial A
  state A {}
  state Review {}
  state Parked { timeout 60 }
  final Done success
  from A to Review on Go
  from A to Parked on Hold
  from Review to Done on Finish
  from Parked to Done on Timeout
}
"#;

fn machine(text: &str) -> Definition {
    harel_lang::load_str(text, Some("M"), "m.stm").expect("M builds")
}

type AppWorker = Worker<DynamoDbStore, SqsTransport, aws_sdk_dynamodb::Client>;

/// One stack that successive deploys run on (each [`Rollout::deploy`] a worker with other
/// machines compiled in), as a deployment rolls versions: `Deployed` has one worker.
struct Rollout {
    moto: MotoStack,
    source: SqsTransport,
    reader: DynamoDbStore,
    clock: ManualClock,
}

impl Rollout {
    async fn new() -> Rollout {
        let moto = MotoStack::new("ver").await;
        Rollout {
            source: moto.source(),
            reader: moto.store(),
            clock: ManualClock::new(1_700_000_000.0),
            moto,
        }
    }

    /// A worker as a freshly deployed function builds it: `machines` compiled in, nothing
    /// cached, its DynamoDB requests counted.
    fn deploy(&self, machines: Vec<Definition>) -> (Arc<AppWorker>, Recorder) {
        let (store, counter) = self.moto.counted_store();
        let driver = Driver::new(machines, ActionRegistry::with_stdlib())
            .with_clock(Arc::new(self.clock.clone()));
        let worker = Arc::new(Worker::new(
            store,
            self.moto.transport(),
            driver,
            None,
            self.moto.config(&[]),
        ));
        (worker, counter)
    }

    async fn send(&self, group: &str, body: String) {
        send(&self.source, group, body).await;
    }

    async fn create(&self, worker: &Arc<AppWorker>, id: &str) {
        self.send(id, create_body("M", Object::new(), Some(id)))
            .await;
        pump(&self.source, worker).await;
    }

    async fn event(&self, worker: &Arc<AppWorker>, id: &str, kind: &str) {
        self.send(id, Event::new(kind).to_json()).await;
        pump(&self.source, worker).await;
    }

    async fn load(&self, id: &str) -> Execution {
        self.reader
            .load(id)
            .await
            .expect("load")
            .expect("the execution")
    }
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn an_execution_keeps_its_version_across_a_deploy_and_a_new_one_takes_the_new() {
    let stack = Rollout::new().await;
    let v1 = versions::version_of_definition(&machine(V1)).expect("v1");
    let v2 = versions::version_of_definition(&machine(V2)).expect("v2");
    assert_ne!(v1, v2);

    let (first, counter) = stack.deploy(vec![machine(V1)]);
    stack.create(&first, "old").await;
    let created = counter.take().by_operation();
    // the version is kept in the create's own transaction: no request of its own
    assert_eq!(created.get("PutItem"), None, "{created:?}");
    stack.event(&first, "old", "Go").await;
    let old = stack.load("old").await;
    assert_eq!(old.active_path.as_deref(), Some("B"));
    assert_eq!(old.pinned_version(), Some(v1.as_str()));
    let kept = stack
        .reader
        .get_definition(&v1)
        .await
        .expect("read")
        .expect("v1 is kept");
    assert_eq!(kept.machine, "M");
    counter.take();
    stack.create(&first, "old2").await;
    let again = counter.take().by_operation();
    // a cold worker learns whether the version is kept with the create's existence check,
    // in the same request (a BatchGetItem of both); once this process knows, a GetItem of
    // the execution alone: as many requests either way
    assert_eq!(created.get("BatchGetItem"), Some(&1), "{created:?}");
    assert_eq!(again.get("GetItem"), Some(&1), "{again:?}");
    assert_eq!(
        created.values().sum::<usize>(),
        again.values().sum::<usize>(),
        "the second create costs what the first did: {created:?}, {again:?}"
    );
    stack.event(&first, "old2", "Go").await;

    // redeployed with v2 only: B is gone from what the function ships
    let (second, counter) = stack.deploy(vec![machine(V2)]);
    stack.event(&second, "old", "Finish").await;
    let done = stack.load("old").await;
    assert_eq!(done.status, Status::Done, "{done:?}");
    assert_eq!(done.pinned_version(), Some(v1.as_str()));
    let first_event = counter.take().by_operation();
    stack.event(&second, "old2", "Finish").await;
    let second_event = counter.take().by_operation();
    assert_eq!(stack.load("old2").await.status, Status::Done);
    // v1 is read from the store once by this process: the next event costs what any does
    // v1 is read from the store once by this process (one GetItem); the next event costs
    // what any event does: one BatchGetItem (execution + dedupe mark), one transaction
    let mut expected_first = second_event.clone();
    expected_first.insert("GetItem".into(), 1);
    assert_eq!(first_event, expected_first, "then {second_event:?}");
    assert_eq!(
        second_event,
        BTreeMap::from([
            ("BatchGetItem".to_string(), 1),
            ("TransactWriteItems".to_string(), 1)
        ])
    );

    stack.create(&second, "new").await;
    stack.event(&second, "new", "Go").await;
    let new = stack.load("new").await;
    assert_eq!(new.pinned_version(), Some(v2.as_str()));
    assert_eq!(new.active_path.as_deref(), Some("Review"));
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_parked_execution_migrates_with_a_map_and_finishes_on_the_new_version() {
    let stack = Rollout::new().await;
    let (first, _) = stack.deploy(vec![machine(V1)]);
    stack.create(&first, "parked").await;
    stack.event(&first, "parked", "Hold").await;
    let parked = stack.load("parked").await;
    assert_eq!(parked.active_path.as_deref(), Some("Park"));
    let timers = stack.reader.armed_timers("parked").await.expect("timers");
    assert_eq!(timers.len(), 1);
    assert_eq!(timers[0].path, "Park");
    let fire_at = timers[0].fire_at;

    let target = machine(V2);
    let document = versions::bundle_document(&target).expect("doc");
    let v2 = versions::version_of(&document);
    let store = &stack.reader;
    let now = stack.clock.now();

    // without the map: Park has no counterpart in v2; refused, nothing changed
    let refused = migrate(
        store,
        &target,
        &v2,
        "parked",
        &PathMap::default(),
        now,
        false,
    )
    .await
    .expect("a report");
    assert!(refused.migrated.is_empty());
    assert!(
        refused.refused.iter().any(|r| r.contains("\"Park\"")),
        "{refused:?}"
    );
    let untouched = stack.load("parked").await;
    assert_eq!(untouched.version, parked.version);
    assert_eq!(untouched.to_json(), parked.to_json());
    assert_eq!(
        stack.reader.armed_timers("parked").await.expect("timers")[0].path,
        "Park"
    );

    // a dry run with the map checks and writes nothing
    let map = PathMap::parse(&["Park=Parked"]).expect("map");
    let dry = migrate(store, &target, &v2, "parked", &map, now, true)
        .await
        .expect("a report");
    assert!(dry.refused.is_empty(), "{dry:?}");
    assert!(dry.migrated.is_empty());
    assert_eq!(stack.load("parked").await.version, parked.version);

    // the version is kept before any execution points at it (what `harel migrate` does)
    store
        .put_definition(&DefinitionDoc {
            version: v2.clone(),
            machine: "M".into(),
            created_at: now,
            document,
        })
        .await
        .expect("kept");
    let done = migrate(store, &target, &v2, "parked", &map, now, false)
        .await
        .expect("a report");
    assert_eq!(done.migrated, vec!["parked".to_string()], "{done:?}");
    let moved = stack.load("parked").await;
    assert_eq!(moved.active_path.as_deref(), Some("Parked"));
    assert_eq!(moved.pinned_version(), Some(v2.as_str()));
    let timers = stack.reader.armed_timers("parked").await.expect("timers");
    assert_eq!(timers.len(), 1);
    assert_eq!(timers[0].path, "Parked");
    assert_eq!(timers[0].fire_at, fire_at);

    // a worker that still ships only v1 runs it on v2 (read from the store), on its timer
    let (still_v1, _) = stack.deploy(vec![machine(V1)]);
    stack.clock.advance(61.0);
    let fired = sweep_once(&still_v1.store, &still_v1.transport, stack.clock.now())
        .await
        .expect("sweep");
    assert_eq!(fired, 1);
    pump(&stack.source, &still_v1).await;
    let finished = stack.load("parked").await;
    assert_eq!(finished.status, Status::Done, "{finished:?}");
    assert_eq!(finished.pinned_version(), Some(v2.as_str()));
}

/// harel Python on the same tables: `create` starts an execution of the file's machine M,
/// `send KIND` processes one event on it (inline, as harel's DurableRunner does); prints the
/// stored execution as harel's JSON.
const HAREL_SIDE: &str = r#"
import json, os, sys
import boto3
from harel.dsl import definition_from_dsl_file
from harel.engine.durable import DurableRunner
from harel.engine.store.dynamodb import DynamoDBStore
from harel.spec.states import Event

prefix, path, action, eid, kind = sys.argv[1:6]
client = boto3.client("dynamodb", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1",
                      aws_access_key_id="test", aws_secret_access_key="test")
store = DynamoDBStore(client, prefix=prefix, create_schema=False)
defn = definition_from_dsl_file(path, "M")
runner = DurableRunner(store, {defn.id: defn}, clock=lambda: 1_700_000_000.0, execution="inline")
if action == "create":
    runner.create(defn.id, execution_id=eid)
else:
    runner.process(eid, Event(kind=kind))
print(store.load(eid).model_dump_json())
"#;

fn harel(
    stack: &Rollout,
    machine_text: &str,
    action: &str,
    id: &str,
    kind: &str,
) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("harel-versions-{}", stack.moto.prefix));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join("m.stm");
    std::fs::write(&path, machine_text).expect("the machine file");
    let out = Command::new(harel_python().expect("the harel Python venv"))
        .arg("-c")
        .arg(HAREL_SIDE)
        .arg(&stack.moto.prefix)
        .arg(&path)
        .arg(action)
        .arg(id)
        .arg(kind)
        .output()
        .expect("harel Python runs");
    assert!(
        out.status.success(),
        "harel Python {action} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("harel's side prints JSON")
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn harel_python_executions_run_unpinned_and_a_python_write_drops_the_pin() {
    let stack = Rollout::new().await;
    let (worker, _) = stack.deploy(vec![machine(V2)]);

    // created by harel Python: no version, so it runs on the deployed definition, as before
    let created = harel(&stack, V2, "create", "py", "");
    assert!(created.get("definition_version").is_none(), "{created}");
    stack.event(&worker, "py", "Go").await;
    stack.event(&worker, "py", "Finish").await;
    let done = stack.load("py").await;
    assert_eq!(done.status, Status::Done, "{done:?}");
    assert_eq!(done.pinned_version(), None);

    // ours, pinned; harel Python's next write drops the field (pydantic ignores unknown
    // fields), and from then on it runs on the deployed definition
    stack.create(&worker, "ours").await;
    assert!(stack.load("ours").await.pinned_version().is_some());
    let after = harel(&stack, V2, "send", "ours", "Go");
    assert_eq!(after["active_path"], "Review");
    assert!(after.get("definition_version").is_none(), "{after}");
    assert_eq!(stack.load("ours").await.pinned_version(), None);
    stack.event(&worker, "ours", "Finish").await;
    assert_eq!(stack.load("ours").await.status, Status::Done);
}

const REGIONS_V1: &str = r#"
event Go {}
event DoneA {}
event DoneB {}
machine M {
  initial Idle
  state Idle {}
  orthogonal Work {
    state A {
      initial A1
      state A1 {}
      final A2 success
      from A1 to A2 on DoneA
    }
    state B {
      initial B1
      state B1 {}
      final B2 success
      from B1 to B2 on DoneB
    }
  }
  final Done success
  final Failed failed
  from Idle to Work on Go
  from Work join all to Done else to Failed
}
"#;

/// The regions' waiting states renamed.
fn regions_v2() -> String {
    REGIONS_V1.replace("A1", "AWait").replace("B1", "BWait")
}

async fn regions_of(stack: &Rollout, id: &str) -> Vec<Execution> {
    let parent = stack.load(id).await;
    let mut out = Vec::new();
    for child in parent.children.keys() {
        out.push(stack.load(child).await);
    }
    out
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn regions_run_on_their_parents_version_and_migrate_with_it() {
    let stack = Rollout::new().await;
    let v1 = versions::version_of_definition(&machine(REGIONS_V1)).expect("v1");
    let target = machine(&regions_v2());
    let document = versions::bundle_document(&target).expect("doc");
    let v2 = versions::version_of(&document);

    let (first, _) = stack.deploy(vec![machine(REGIONS_V1)]);
    for id in ["r1", "r2"] {
        stack.create(&first, id).await;
        stack.event(&first, id, "Go").await;
        let regions = regions_of(&stack, id).await;
        assert_eq!(regions.len(), 2, "{id}: {regions:?}");
        for r in &regions {
            assert_eq!(r.pinned_version(), Some(v1.as_str()), "{}", r.id);
        }
    }

    // redeployed with v2 only: r1's regions, in A1 and B1, finish on v1
    let (second, _) = stack.deploy(vec![target.clone()]);
    stack.event(&second, "r1", "DoneA").await;
    stack.event(&second, "r1", "DoneB").await;
    let r1 = stack.load("r1").await;
    assert_eq!(r1.status, Status::Done, "{r1:?}");
    assert_eq!(r1.pinned_version(), Some(v1.as_str()));

    // r2 migrates with its regions; a worker shipping only v1 then finishes it on v2
    stack
        .reader
        .put_definition(&DefinitionDoc {
            version: v2.clone(),
            machine: "M".into(),
            created_at: stack.clock.now(),
            document,
        })
        .await
        .expect("kept");
    let map = PathMap::parse(&["Work.A.A1=Work.A.AWait", "Work.B.B1=Work.B.BWait"]).expect("map");
    let report = migrate(
        &stack.reader,
        &target,
        &v2,
        "r2",
        &map,
        stack.clock.now(),
        false,
    )
    .await
    .expect("a report");
    assert!(report.refused.is_empty(), "{report:?}");
    assert_eq!(report.migrated.len(), 3, "{report:?}");
    for r in regions_of(&stack, "r2").await {
        assert_eq!(r.pinned_version(), Some(v2.as_str()), "{}", r.id);
        assert!(
            r.active_path
                .as_deref()
                .is_some_and(|p| p.ends_with("Wait")),
            "{r:?}"
        );
    }
    let (still_v1, _) = stack.deploy(vec![machine(REGIONS_V1)]);
    stack.event(&still_v1, "r2", "DoneA").await;
    stack.event(&still_v1, "r2", "DoneB").await;
    let r2 = stack.load("r2").await;
    assert_eq!(r2.status, Status::Done, "{r2:?}");
    assert_eq!(r2.pinned_version(), Some(v2.as_str()));
}
