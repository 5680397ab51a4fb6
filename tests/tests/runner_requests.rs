//! What the embedded runner (`DurableRunner`, what `harel run --store dynamodb` drives)
//! sends to DynamoDB per step, counted on the wire (moto): a create and state-only events,
//! next to harel Python's `DurableRunner` over its `DynamoDBStore` on the same steps
//! (`py/runner_harel.py`, requests counted with botocore's hooks).

use harel_dynamodb::DynamoDbStore;
use harel_model::{Event, Status};
use harel_runtime::DurableRunner;
use harel_testkit::{endpoint, sdk_config, unique_prefix, Recorder};

const MACHINE: &str = r#"
event Go {}
event Done {}
machine Steps {
  initial A
  state A {}
  state B {}
  final C success
  from A to B on Go
  from B to C on Done
}
"#;

async fn runner() -> (DurableRunner<DynamoDbStore>, Recorder) {
    let reads = Recorder::new();
    let client = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&sdk_config().await)
            .http_client(reads.http_client())
            .build(),
    );
    let store = DynamoDbStore::new(client, &unique_prefix("t")).expect("prefix");
    store.ensure_tables().await.expect("tables");
    let definition = harel_lang::load_str(MACHINE, None, "steps.stm").expect("machine");
    reads.take();
    (DurableRunner::new(store, [definition]), reads)
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_step_reads_the_execution_once_and_returns_what_it_committed() {
    let (runner, reads) = runner().await;
    let created = runner
        .create("Steps", None, Some("r-1"))
        .await
        .expect("create");
    let create = reads.take();
    assert_eq!(created.active_path.as_deref(), Some("A"));
    let go = runner.process("r-1", &Event::new("Go")).await.expect("Go");
    let event = reads.take();
    assert_eq!(go.active_path.as_deref(), Some("B"));
    // what the runner returns is what the store holds
    assert_eq!(
        runner.get("r-1").await.expect("get").as_ref(),
        Some(&go),
        "the returned execution is the stored one"
    );
    reads.take();
    let done = runner
        .process("r-1", &Event::new("Done"))
        .await
        .expect("Done");
    assert_eq!(done.status, Status::Done);
    let finish = reads.take();
    eprintln!("create: {create:?}\nevent: {event:?}\nfinish: {finish:?}");
    let get_items = |t: &harel_testkit::recorder::Tally| t.count("GetItem");
    // a create: the id's existence check, the commit, the relay's two Scans (nothing pending)
    assert_eq!(
        create.operations(),
        ["GetItem", "TransactWriteItems", "Scan", "Scan"],
        "{create:?}"
    );
    // an event: the execution, its dedupe mark, the commit, the relay's two Scans
    assert_eq!(
        event.operations(),
        ["GetItem", "GetItem", "TransactWriteItems", "Scan", "Scan"],
        "{event:?}"
    );
    assert_eq!(get_items(&finish), 2, "{finish:?}");

    // harel Python's runner, same machine, same steps, same server
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
        .output()
        .expect("harel Python runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "runner_harel.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let harel: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let theirs = |step: &str| {
        harel[step]
            .as_array()
            .unwrap_or_else(|| panic!("{step} in {harel}"))
            .len() as u64
    };
    eprintln!("harel Python: {harel}");
    for (step, ours) in [("create", &create), ("event", &event), ("finish", &finish)] {
        assert!(
            ours.requests() as u64 <= theirs(step),
            "{step}: ours {:?}, harel Python {}",
            ours.operations(),
            harel[step]
        );
    }
}
