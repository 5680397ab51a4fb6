//! What the embedded runner (`DurableRunner`, what `harel run --store dynamodb` drives)
//! sends to DynamoDB per step, counted and priced on the wire (moto): a create, a
//! state-only event, an event arming a timer, an event no transition takes, one cancelling
//! the timer and the finishing event, next to harel Python's `DurableRunner` over its
//! `DynamoDBStore` on the same steps (`py/runner_harel.py`, every request and answer
//! recorded with botocore's hooks). Both sides are priced by the same rules
//! (`harel_testwire::units`: DynamoDB's read and write units from the bodies), and ours is
//! never above harel's on any step, in requests, read units or write units.
//!
//! Each side runs as a fresh process would: a runner that has kept nothing yet (what every
//! `harel run` command and every cold worker is).

use harel_dynamodb::DynamoDbStore;
use harel_model::{Event, Status};
use harel_runtime::DurableRunner;
use harel_testkit::recorder::{Call, Canned, Tally, Verdict};
use harel_testkit::{endpoint, sdk_config, unique_prefix, Recorder};

const MACHINE: &str = r#"
event Go {}
event Wait {}
event Nope {}
event Back {}
event Done {}
machine Steps {
  initial A
  state A {}
  state B {}
  state T { timeout 900 }
  final C success
  from A to B on Go
  from B to T on Wait
  from T to B on Back
  from T to B on Timeout
  from B to C on Done
}
"#;

/// The steps after the create: (name, event sent), in order.
const STEPS: [(&str, &str); 5] = [
    ("event", "Go"),
    ("timer", "Wait"),
    ("unmatched", "Nope"),
    ("cancel", "Back"),
    ("finish", "Done"),
];

/// A fresh runner (nothing kept yet) over the tables of `prefix`, its requests recorded with
/// their bodies.
async fn runner_on(prefix: &str) -> (DurableRunner<DynamoDbStore>, Recorder) {
    let reads = Recorder::new().with_bodies();
    let client = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&sdk_config().await)
            .http_client(reads.http_client())
            .build(),
    );
    let store = DynamoDbStore::new(client, prefix).expect("prefix");
    store.ensure_tables().await.expect("tables");
    let definition = harel_lang::load_str(MACHINE, None, "steps.stm").expect("machine");
    reads.take();
    (DurableRunner::new(store, [definition]), reads)
}

/// harel Python's runner on the same machine, steps and server: its calls per step.
fn harel_python() -> Vec<(String, Tally)> {
    let python = std::env::var("HAREL_PYTHON").expect("HAREL_PYTHON (set by scripts/with-moto.sh)");
    let dir = std::env::temp_dir().join(format!("runner-req-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("steps.stm");
    std::fs::write(&file, MACHINE).expect("write");
    let out = std::process::Command::new(python)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/py/runner_harel.py"))
        .arg(endpoint())
        .arg(unique_prefix("t"))
        .arg(&file)
        .args(STEPS.iter().map(|(name, kind)| format!("{name}={kind}")))
        .output()
        .expect("harel Python runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "runner_harel.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let harel: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let names = std::iter::once("create").chain(STEPS.iter().map(|(name, _)| *name));
    names
        .map(|step| {
            let calls = harel[step]
                .as_array()
                .unwrap_or_else(|| panic!("{step} in {harel}"))
                .iter()
                .map(|c| {
                    Call::dynamodb(
                        c["op"].as_str().expect("op"),
                        c["status"].as_u64().expect("status") as u16,
                        c["request"].clone(),
                        c["response"].clone(),
                    )
                })
                .collect();
            (step.to_string(), Tally { calls })
        })
        .collect()
}

fn row(step: &str, ours: &Tally, theirs: &Tally) -> String {
    format!(
        "{step:<10} {:>4} {:>5.1} {:>5.1}   {:>4} {:>5.1} {:>5.1}   {:?} | {:?}",
        ours.requests(),
        ours.read_units(),
        ours.write_units(),
        theirs.requests(),
        theirs.read_units(),
        theirs.write_units(),
        ours.operations(),
        theirs.operations(),
    )
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn each_step_costs_no_more_than_harel_python() {
    // the version's first create keeps it, once for the tables' life (harel Python keeps no
    // versions): shown, not compared
    let prefix = unique_prefix("t");
    let (first, wire) = runner_on(&prefix).await;
    first
        .create("Steps", None, Some("r-0"))
        .await
        .expect("create");
    let keeping = wire.take();
    // every step after it as a fresh process runs it: a `harel run` command, a cold worker
    let (runner, wire) = runner_on(&prefix).await;
    let created = runner
        .create("Steps", None, Some("r-1"))
        .await
        .expect("create");
    assert_eq!(created.active_path.as_deref(), Some("A"));
    let mut ours = vec![("create".to_string(), wire.take())];
    let mut last = created;
    for (name, kind) in STEPS {
        last = runner
            .process("r-1", &Event::new(kind))
            .await
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        ours.push((name.to_string(), wire.take()));
        // what the runner returns is what the store holds
        assert_eq!(
            runner.get("r-1").await.expect("get").as_ref(),
            Some(&last),
            "{name}: the returned execution is the stored one"
        );
        wire.take();
    }
    assert_eq!(last.status, Status::Done);
    let theirs = harel_python();

    eprintln!(
        "{:<10} {:>4} {:>5} {:>5}   {:>4} {:>5} {:>5}   (ours | harel Python)",
        "step", "req", "RU", "WU", "req", "RU", "WU"
    );
    for ((step, ours), (_, theirs)) in ours.iter().zip(&theirs) {
        eprintln!("{}", row(step, ours, theirs));
    }
    eprintln!(
        "(the version's first create, once: {} requests, {:.1} RU, {:.1} WU, {:?})",
        keeping.requests(),
        keeping.read_units(),
        keeping.write_units(),
        keeping.operations()
    );
    let get = |all: &[(String, Tally)], step: &str| {
        all.iter()
            .find(|(s, _)| s == step)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| panic!("no step {step}"))
    };
    // the timer step writes the timer row, the cancel step deletes it: both sides
    for (step, op) in [
        ("timer", "TransactWriteItems"),
        ("cancel", "TransactWriteItems"),
    ] {
        assert_eq!(get(&ours, step).count(op), 1, "{step}");
    }
    for ((step, ours), (_, theirs)) in ours.iter().zip(&theirs) {
        let line = row(step, ours, theirs);
        assert!(
            ours.requests() <= theirs.requests(),
            "{step}: requests: {line}"
        );
        assert!(
            ours.read_units() <= theirs.read_units(),
            "{step}: read units: {line}"
        );
        assert!(
            ours.write_units() <= theirs.write_units(),
            "{step}: write units: {line}"
        );
    }
}

/// The definitions item is written once per version, not once per create: the first create
/// of a fresh store keeps it in its transaction; a second create in the same process neither
/// reads nor writes it; a second process over the same tables (a cold worker, the next
/// `harel run` command) reads it with the create's existence check, in the same request, and
/// writes only the execution.
#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_version_is_written_once_not_per_create() {
    let prefix = unique_prefix("t");
    let (first_process, wire) = runner_on(&prefix).await;
    let tables = first_process.store().tables().clone();
    let kept = |t: &Tally| -> Vec<usize> {
        t.calls
            .iter()
            .filter(|c| c.operation == "TransactWriteItems")
            .map(|c| {
                let items = c.request.as_ref().expect("bodies")["TransactItems"]
                    .as_array()
                    .expect("items")
                    .clone();
                items
                    .iter()
                    .filter(|i| i.to_string().contains(&tables.definitions()))
                    .count()
            })
            .collect()
    };
    let reads_definitions = |t: &Tally| {
        t.calls
            .iter()
            .filter(|c| c.operation != "TransactWriteItems")
            .any(|c| {
                c.request
                    .as_ref()
                    .expect("bodies")
                    .to_string()
                    .contains(&tables.definitions())
            })
    };
    first_process
        .create("Steps", None, Some("v-1"))
        .await
        .expect("create");
    let first = wire.take();
    assert_eq!(
        kept(&first),
        [1],
        "the first create keeps the version: {first:?}"
    );
    first_process
        .create("Steps", None, Some("v-2"))
        .await
        .expect("create");
    let second = wire.take();
    assert_eq!(kept(&second), [0], "{second:?}");
    assert!(
        !reads_definitions(&second),
        "kept by this process: {second:?}"
    );

    let (second_process, wire) = runner_on(&prefix).await;
    second_process
        .create("Steps", None, Some("v-3"))
        .await
        .expect("create");
    let cold = wire.take();
    assert_eq!(kept(&cold), [0], "{cold:?}");
    assert!(reads_definitions(&cold), "{cold:?}");
    assert_eq!(
        cold.requests(),
        second.requests(),
        "the same requests: {cold:?}"
    );
    // without an id there is no existence check to ride on: one read of its own
    second_process
        .create("Steps", None, None)
        .await
        .expect("create");
    let (third_process, wire) = runner_on(&prefix).await;
    third_process
        .create("Steps", None, None)
        .await
        .expect("create");
    let unnamed = wire.take();
    assert_eq!(kept(&unnamed), [0], "{unnamed:?}");
    assert!(reads_definitions(&unnamed), "{unnamed:?}");
    for id in ["v-1", "v-2", "v-3"] {
        let exe = third_process.get(id).await.expect("get").expect("there");
        assert!(exe.pinned_version().is_some(), "{id} is pinned");
    }
}

/// Answers the next eventually consistent GetItem of the executions table with `stale`
/// instead of sending it: a replica a step behind (or one that has not seen the item yet).
#[derive(Debug, Default)]
struct StaleReplica {
    stale: std::sync::Mutex<Option<String>>,
}

impl harel_testkit::recorder::Fault for StaleReplica {
    fn before(&self, request: &harel_testkit::recorder::Request<'_>) -> Verdict {
        let body = request.json().unwrap_or_default();
        let eventual = body["ConsistentRead"].as_bool() != Some(true);
        let executions = body["TableName"]
            .as_str()
            .is_some_and(|t| t.ends_with("executions"));
        if request.operation == "GetItem" && eventual && executions {
            if let Some(stale) = self.stale.lock().expect("lock").take() {
                return Verdict::Answer(Canned::new(200, stale));
            }
        }
        Verdict::Send
    }
}

/// The runner reads an execution eventually consistent; a stale copy is caught by the
/// commit's version check and the event processed again from a strong read, an absent one is
/// read again strongly, and a create whose existence check missed the execution is refused
/// by its insert-if-absent commit, nothing written.
#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_stale_read_is_caught_and_read_again_strongly() {
    let replica = std::sync::Arc::new(StaleReplica::default());
    let wire = Recorder::new()
        .with_bodies()
        .with_shared_fault(replica.clone());
    let client = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&sdk_config().await)
            .http_client(wire.http_client())
            .build(),
    );
    let store = DynamoDbStore::new(client, &unique_prefix("t")).expect("prefix");
    store.ensure_tables().await.expect("tables");
    let definition = harel_lang::load_str(MACHINE, None, "steps.stm").expect("machine");
    let runner = DurableRunner::new(store, [definition]);
    let stale = |replica: &StaleReplica, answer: String| {
        *replica.stale.lock().expect("lock") = Some(answer);
    };

    runner
        .create("Steps", None, Some("s-1"))
        .await
        .expect("create");
    wire.take();
    runner.get("s-1").await.expect("get");
    let at_a = wire.take().calls[0].response.clone().expect("the answer");
    runner.process("s-1", &Event::new("Go")).await.expect("Go");

    // a replica still at A: Wait is unmatched there, and its commit is refused
    stale(&replica, at_a.to_string());
    wire.take();
    let waited = runner
        .process("s-1", &Event::new("Wait"))
        .await
        .expect("Wait");
    let calls = wire.take();
    assert_eq!(waited.active_path.as_deref(), Some("T"), "{calls:?}");
    assert_eq!(
        runner.get("s-1").await.expect("get").as_ref(),
        Some(&waited)
    );
    let refused = calls
        .calls
        .iter()
        .filter(|c| c.operation == "TransactWriteItems" && c.status == Some(400))
        .count();
    assert_eq!(
        refused, 1,
        "the stale attempt's commit is refused: {calls:?}"
    );
    assert_eq!(calls.count("TransactWriteItems"), 2, "{calls:?}");

    // a replica that has not seen it yet: asked again strongly
    stale(&replica, "{}".into());
    let back = runner
        .process("s-1", &Event::new("Back"))
        .await
        .expect("Back");
    assert_eq!(back.active_path.as_deref(), Some("B"));

    // a create whose existence check read such a replica: refused, nothing written
    stale(&replica, "{}".into());
    let again = runner.create("Steps", None, Some("s-1")).await;
    assert!(
        matches!(again, Err(harel_runtime::RuntimeError::AlreadyExists(ref id)) if id == "s-1"),
        "{again:?}"
    );
    assert_eq!(runner.get("s-1").await.expect("get").as_ref(), Some(&back));
}
