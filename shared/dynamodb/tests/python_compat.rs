//! harel Python's own `DynamoDBStore` and this store on the same moto server and tables:
//! what one writes, the other loads, drains, acks and CAS-updates; a stale write from either
//! side is refused. `scripts/with-moto.sh cargo test -p harel-dynamodb --test python_compat`.

mod common;

use harel_dynamodb::{DynamoDbStore, SeqAllocation};
use harel_model::{Event, Object};
use harel_store::prelude::*;
use harel_store::{Commit, Spawn, StoreError, TimerOp};
use serde_json::{json, Value};

fn harel(prefix: &str, action: &str, id: &str, args: &[&str]) -> Value {
    let python = std::env::var("HAREL_PYTHON").expect(
        "HAREL_PYTHON is not set: run under scripts/with-moto.sh (it points it at the venv with harel 0.9.0)",
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/harel_side.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(common::endpoint())
        .arg(prefix)
        .arg(action)
        .arg(id)
        .args(args)
        .output()
        .expect("harel Python runs");
    assert!(
        out.status.success(),
        "harel Python {action} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("harel_side prints JSON")
}

fn obj(v: Value) -> Object {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

async fn store() -> DynamoDbStore {
    common::store(200).await
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn rust_reads_drains_and_updates_what_harel_python_wrote() {
    let store = store().await;
    let p = store.tables().prefix().to_string();
    let written = harel(&p, "write", "py1", &[]);
    assert_eq!(written["version"], json!(2));

    let exe = store
        .load("py1")
        .await
        .expect("load")
        .expect("harel's execution loads");
    assert_eq!(exe.version, 2);
    assert_eq!(exe.context, obj(json!({"n": 1, "f": 0.1, "s": "é"})));
    assert_eq!(exe.active_path.as_deref(), Some("A"));
    let (_, done) = store
        .load_for_event("py1", "py-ev")
        .await
        .expect("load_for_event");
    assert!(done, "harel's dedupe mark is seen");
    // a Rust writer whose read missed harel's mark (a torn read) is refused by it at commit:
    // harel writes its marks unconditionally, our condition reads them all the same
    let mut torn = exe.clone();
    let r = store
        .commit(
            &mut torn,
            Commit {
                processed_event_id: Some("py-ev".into()),
                ..Commit::default()
            },
        )
        .await;
    assert!(
        matches!(r, Err(harel_store::StoreError::AlreadyProcessed { .. })),
        "harel's mark refuses a second application: {r:?}"
    );

    let outbox = store.pending_outbox().await.expect("outbox");
    let seqs: Vec<u64> = outbox.iter().map(|o| o.seq).collect();
    assert_eq!(
        json!(seqs),
        written["seqs"],
        "harel's counter seqs, in order"
    );
    assert_eq!(outbox[0].event.kind, "FromPy");
    assert_eq!(outbox[0].event.data, obj(json!({"n": 1.5})));
    assert_eq!(outbox[0].target_id.as_deref(), Some("py1"));
    assert_eq!(outbox[1].target_id, None);
    let spawns = store.pending_spawns().await.expect("spawns");
    assert_eq!(spawns.len(), 1);
    assert_eq!(spawns[0].child_id, "py1:R:1");
    assert_eq!(spawns[0].context, obj(json!({"k": [1, "é"]})));
    assert!(
        store.due_timers(2e16).await.expect("timers").is_empty(),
        "harel's rows carry no due_shard: not in the index"
    );
    let timers = store.legacy_due_timers(2e16).await.expect("timers");
    assert_eq!(
        timers
            .iter()
            .map(|t| (t.path.as_str(), t.fire_at))
            .collect::<Vec<_>>(),
        vec![("A", 1_700_000_000.25), ("B", 1e16)]
    );
    let trace = store.read_trace("py1").await.expect("trace");
    assert_eq!(
        trace.iter().map(|t| t["index"].clone()).collect::<Vec<_>>(),
        vec![json!(0), json!(1)]
    );
    assert_eq!(trace[1]["event_kind"], json!("Go"));

    // drain as the relay would; the timer guards match harel's stored numbers exactly
    for o in &outbox {
        store.ack_outbox(o.seq).await.expect("ack");
    }
    store.ack_spawn(spawns[0].seq).await.expect("ack spawn");
    for t in &timers {
        store
            .delete_timer(&t.execution_id, &t.path, t.fire_at)
            .await
            .expect("delete");
    }
    assert!(
        store
            .legacy_due_timers(2e16)
            .await
            .expect("timers")
            .is_empty(),
        "guarded deletes matched"
    );

    // CAS-update harel's row, traced: the index continues harel's ring
    let mut mine = exe.clone();
    mine.context.insert("rs".into(), json!(true));
    let commit = Commit {
        emits: vec![(Some("py1".into()), Event::new("FromRust"))],
        processed_event_id: Some("rs-ev".into()),
        trace: Some(obj(json!({"event_kind": "FromRust"}))),
        ..Commit::default()
    };
    store
        .commit(&mut mine, commit)
        .await
        .expect("CAS update of harel's row");
    assert_eq!(mine.version, 3);
    // a stale Rust write is refused
    let mut stale = exe.clone();
    match store.commit(&mut stale, Commit::default()).await {
        Err(StoreError::Conflict {
            expected: 2,
            found: Some(3),
            ..
        }) => {}
        other => panic!("a stale Rust write must conflict, got {other:?}"),
    }

    // harel sees all of it, and refuses its own stale write
    let seen = harel(&p, "read", "py1", &[]);
    assert_eq!(seen["execution"]["version"], json!(3));
    assert_eq!(seen["execution"]["context"]["rs"], json!(true));
    assert_eq!(seen["processed_rs"], json!(true));
    let kinds: Vec<Value> = seen["outbox"]
        .as_array()
        .expect("list")
        .iter()
        .map(|o| o["kind"].clone())
        .collect();
    assert_eq!(
        kinds,
        vec![json!("FromRust")],
        "harel acked nothing twice and sees the Rust emit"
    );
    assert_eq!(seen["spawns"], json!([]));
    assert_eq!(seen["timers"], json!([]));
    let idx: Vec<Value> = seen["trace"]
        .as_array()
        .expect("list")
        .iter()
        .map(|t| t["index"].clone())
        .collect();
    assert_eq!(idx, vec![json!(0), json!(1), json!(2)]);
    let stale = harel(&p, "stale", "py1", &["2"]);
    assert_eq!(stale, json!({"conflict": true, "expected": 2, "found": 3}));
    assert_eq!(
        store.pending_outbox().await.expect("outbox").len(),
        1,
        "harel's stale write leaked nothing"
    );
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn harel_python_reads_drains_and_updates_what_rust_wrote() {
    let store = store().await;
    let p = store.tables().prefix().to_string();
    let mut exe = harel_model::Execution::new("compat").with_id("rs1");
    exe.status = harel_model::Status::Running;
    exe.context = obj(json!({"x": [1, 2.5, null], "t": "é"}));
    let commit = Commit {
        emits: vec![
            (
                Some("rs1".into()),
                Event::new("FromRust").with_data(obj(json!({"v": 0.1}))),
            ),
            (None, Event::new("Untargeted")),
        ],
        processed_event_id: Some("rs-ev".into()),
        timers: vec![
            TimerOp::Schedule {
                path: "A".into(),
                fire_at: 1_700_000_000.125,
            },
            TimerOp::Schedule {
                path: "B".into(),
                fire_at: 1e-7,
            },
        ],
        spawns: vec![Spawn {
            child_id: "rs1:R:1".into(),
            root_path: "R".into(),
            context: obj(json!({"k": {"nested": 1.0}})),
        }],
        trace: Some(obj(json!({"event_kind": "Start"}))),
        published: Vec::new(),
    };
    let seqs = store.commit(&mut exe, commit).await.expect("commit");
    let commit = Commit {
        trace: Some(obj(json!({"event_kind": "Next"}))),
        ..Commit::default()
    };
    store.commit(&mut exe, commit).await.expect("traced commit");

    let seen = harel(&p, "read", "rs1", &[]);
    assert_eq!(seen["execution"]["version"], json!(2));
    assert_eq!(
        seen["execution"]["context"],
        json!({"x": [1, 2.5, null], "t": "é"})
    );
    assert_eq!(seen["processed_rs"], json!(true));
    let outbox = seen["outbox"].as_array().expect("list");
    assert_eq!(
        outbox.iter().map(|o| o["seq"].clone()).collect::<Vec<_>>(),
        vec![json!(seqs[0]), json!(seqs[1])]
    );
    assert_eq!(outbox[0]["kind"], json!("FromRust"));
    assert_eq!(outbox[0]["data"], json!({"v": 0.1}));
    assert_eq!(outbox[1]["target_id"], Value::Null);
    assert_eq!(seen["spawns"][0]["child_id"], json!("rs1:R:1"));
    assert_eq!(seen["spawns"][0]["context"], json!({"k": {"nested": 1.0}}));
    assert_eq!(
        seen["timers"],
        json!([["rs1", "B", 1e-7], ["rs1", "A", 1_700_000_000.125]])
    );
    let trace = seen["trace"].as_array().expect("list");
    assert_eq!(
        trace.iter().map(|t| t["index"].clone()).collect::<Vec<_>>(),
        vec![json!(0), json!(1)]
    );
    assert_eq!(trace[1]["event_kind"], json!("Next"));

    // harel drains it all (its delete_timer guards match the numbers we wrote)
    let drained = harel(&p, "drain", "rs1", &[]);
    assert_eq!(
        drained["left_timers"],
        json!([]),
        "harel's guarded deletes matched our fire_at"
    );
    assert!(store.pending_outbox().await.expect("outbox").is_empty());
    assert!(store.pending_spawns().await.expect("spawns").is_empty());

    // harel CAS-updates our row, traced (its max+1 continues our indexes)
    let updated = harel(&p, "update", "rs1", &[]);
    assert_eq!(updated["version"], json!(3));
    let stale = harel(&p, "stale", "rs1", &["2"]);
    assert_eq!(stale, json!({"conflict": true, "expected": 2, "found": 3}));

    // and we continue after harel: our stale copy is refused, a fresh one commits, and our
    // next trace index follows harel's
    match store.commit(&mut exe, Commit::default()).await {
        Err(StoreError::Conflict {
            expected: 2,
            found: Some(3),
            ..
        }) => {}
        other => panic!("a stale Rust write must conflict, got {other:?}"),
    }
    let (fresh, done) = store.load_for_event("rs1", "py-ev-2").await.expect("load");
    assert!(done, "harel's dedupe mark");
    let mut fresh = fresh.expect("present");
    assert_eq!(fresh.context["py"], json!(true));
    let commit = Commit {
        trace: Some(obj(json!({"event_kind": "Again"}))),
        ..Commit::default()
    };
    store
        .commit(&mut fresh, commit)
        .await
        .expect("commit after harel");
    let idx: Vec<Value> = store
        .read_trace("rs1")
        .await
        .expect("trace")
        .iter()
        .map(|t| t["index"].clone())
        .collect();
    assert_eq!(idx, vec![json!(0), json!(1), json!(2), json!(3)]);
    let outbox = store.pending_outbox().await.expect("outbox");
    assert_eq!(outbox.len(), 1);
    assert_eq!(outbox[0].event.kind, "PyStep");
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn counter_seqs_continue_harels_counter() {
    let store = store().await.with_seq_allocation(SeqAllocation::Counter);
    let p = store.tables().prefix().to_string();
    let written = harel(&p, "write", "pyc", &[]);
    let last_py = written["seqs"][1].as_u64().expect("seq");
    let mut exe = store.load("pyc").await.expect("load").expect("present");
    let commit = Commit {
        emits: vec![(Some("pyc".into()), Event::new("Mine"))],
        ..Commit::default()
    };
    let seqs = store.commit(&mut exe, commit).await.expect("commit");
    assert_eq!(seqs, vec![last_py + 1], "one counter, shared with harel");
    let updated = harel(&p, "update", "pyc", &[]);
    assert_eq!(updated["seqs"], json!([last_py + 2]));
}

/// Tables harel created get the listing indexes from `ensure_tables`; the index listing finds
/// what we write, `scan` also finds what harel Python wrote (its Put drops the index
/// attributes, so a row harel last wrote leaves the index), and harel's own listing still
/// sees every row.
#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn listing_indexes_join_tables_harel_created() {
    let prefix = common::fresh_prefix();
    harel(&prefix, "schema", "-", &[]);
    let store = DynamoDbStore::new(common::client().await, &prefix).expect("prefix");
    let before = store
        .client()
        .describe_table()
        .table_name(store.tables().executions())
        .send()
        .await
        .expect("describe");
    assert!(
        before
            .table()
            .expect("table")
            .global_secondary_indexes()
            .is_empty(),
        "harel creates no index"
    );
    store.ensure_tables().await.expect("indexes added");
    store
        .ensure_tables()
        .await
        .expect("and again: nothing to add");
    let after = store
        .client()
        .describe_table()
        .table_name(store.tables().executions())
        .send()
        .await
        .expect("describe");
    let mut names: Vec<String> = after
        .table()
        .expect("table")
        .global_secondary_indexes()
        .iter()
        .filter_map(|g| g.index_name().map(str::to_string))
        .collect();
    names.sort();
    assert_eq!(names, ["by_machine_status", "by_parent", "by_status"]);

    harel(&prefix, "write", "py-row", &[]);
    for id in ["rs-row", "rs-then-py"] {
        let mut e = harel_model::Execution::new("compat").with_id(id);
        e.status = harel_model::Status::Running;
        e.created_at = Some(1_700_000_000.0);
        store
            .commit(&mut e, Commit::default())
            .await
            .expect("insert");
    }
    harel(&prefix, "update", "rs-then-py", &[]);
    let running = |scan| harel_store::ListQuery {
        status: Some(vec![harel_model::Status::Running]),
        scan,
        ..harel_store::ListQuery::default()
    };
    let ids = |page: harel_model::ExecutionPage| {
        let mut v: Vec<String> = page.items.into_iter().map(|s| s.id).collect();
        v.sort();
        v
    };
    assert_eq!(
        ids(store.list_executions(&running(false)).await.expect("index")),
        ["rs-row"],
        "the index holds the rows we wrote last"
    );
    assert_eq!(
        ids(store.list_executions(&running(true)).await.expect("scan")),
        ["py-row", "rs-row", "rs-then-py"],
        "the scan finds every row"
    );
    assert_eq!(
        harel(&prefix, "listed", "-", &["RUNNING"])["ids"],
        json!(["py-row", "rs-row", "rs-then-py"]),
        "harel's listing reads our rows"
    );
    // our next commit puts a row harel wrote back into the index
    let mut back = store.load("rs-then-py").await.expect("load").expect("row");
    store
        .commit(&mut back, Commit::default())
        .await
        .expect("commit");
    assert_eq!(
        ids(store.list_executions(&running(false)).await.expect("index")),
        ["rs-row", "rs-then-py"]
    );
}

async fn has_due_index(client: &aws_sdk_dynamodb::Client, table: &str) -> bool {
    client
        .describe_table()
        .table_name(table)
        .send()
        .await
        .expect("describe")
        .table()
        .map(|t| t.global_secondary_indexes())
        .unwrap_or_default()
        .iter()
        .any(|i| i.index_name() == Some(harel_dynamodb::timers::DUE_INDEX))
}

fn timer_list(timers: &[harel_store::DueTimer]) -> Vec<(&str, f64)> {
    timers
        .iter()
        .map(|t| (t.path.as_str(), t.fire_at))
        .collect()
}

/// harel Python creates the tables (no `by_due`), ours adds the index to them; harel's timer
/// rows are found by the compatibility Scan only, ours by the index only, and a row moves
/// with whoever armed it last.
#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn harel_pythons_timers_fire_through_the_compatibility_scan_not_the_index() {
    let client = common::client().await;
    let prefix = common::fresh_prefix();
    harel(&prefix, "schema", "-", &[]);
    let store = DynamoDbStore::new(client.clone(), &prefix).expect("prefix");
    let timers_table = store.tables().timers();
    assert!(
        !has_due_index(&client, &timers_table).await,
        "harel's table has no index"
    );
    store
        .ensure_tables()
        .await
        .expect("ensure on harel's tables");
    assert!(
        has_due_index(&client, &timers_table).await,
        "ensure added by_due with UpdateTable"
    );
    store.ensure_tables().await.expect("ensure is idempotent");

    harel(&prefix, "write", "py1", &[]); // arms A at 1700000000.25 and B at 1e16
    assert!(store.due_timers(2e16).await.expect("due").is_empty());
    assert_eq!(store.next_timer_due(2e16).await.expect("next"), None);
    assert_eq!(
        timer_list(&store.legacy_due_timers(1.8e9).await.expect("legacy")),
        vec![("A", 1_700_000_000.25)],
        "the compatibility Scan sees harel's due rows, and only the due ones"
    );

    // re-armed by us: the row gains its shard, moves into the index and out of the Scan
    let mut exe = store.load("py1").await.expect("load").expect("exists");
    let commit = Commit {
        timers: vec![TimerOp::Schedule {
            path: "B".into(),
            fire_at: 1_800_000_000.5,
        }],
        ..Commit::default()
    };
    store.commit(&mut exe, commit).await.expect("our re-arm");
    assert_eq!(
        timer_list(&store.due_timers(2e16).await.expect("due")),
        vec![("B", 1_800_000_000.5)]
    );
    assert_eq!(
        store.next_timer_due(2e16).await.expect("next"),
        Some(1_800_000_000.5)
    );
    assert_eq!(
        timer_list(&store.legacy_due_timers(2e16).await.expect("legacy")),
        vec![("A", 1_700_000_000.25)]
    );

    // re-armed by harel Python: its Put replaces the row without the shard
    harel(&prefix, "arm", "py1", &["B", "1900000000.75"]);
    assert!(store.due_timers(2e16).await.expect("due").is_empty());
    let legacy = store.legacy_due_timers(2e16).await.expect("legacy");
    assert_eq!(
        timer_list(&legacy),
        vec![("A", 1_700_000_000.25), ("B", 1_900_000_000.75)]
    );
    for t in &legacy {
        store
            .delete_timer(&t.execution_id, &t.path, t.fire_at)
            .await
            .expect("fire");
    }
    assert!(store
        .legacy_due_timers(2e16)
        .await
        .expect("legacy")
        .is_empty());
}
