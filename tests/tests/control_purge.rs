//! purge and purge_finished on the DynamoDB store (moto), beside harel 0.9.0's own
//! `purge_finished` over an identical copy of the tables: the same trees purged, refused and
//! skipped, and archives either side reads (`scripts/with-moto.sh cargo test -p
//! harel-tests --test control_purge`); and on the memory store.

use std::time::Duration;

use harel_control::{purge, purge_finished, ControlError, JsonlArchive, PurgeFinished};
use harel_dynamodb::DynamoDbStore;
use harel_model::{ChildState, Execution, Status};
use harel_store::prelude::*;
use harel_store::{Commit, ExecutionStore, MemoryStore};
use harel_testkit::{endpoint, unique_prefix};
use serde_json::{json, Value};

const NOW: f64 = 1_800_000_000.0;
const DAY: f64 = 86_400.0;

fn exe(id: &str, status: Status, created: f64, finished: Option<f64>) -> Execution {
    let mut e = Execution::new("m").with_id(id);
    e.status = status;
    e.created_at = Some(created);
    e.updated_at = Some(finished.unwrap_or(created));
    e.finished_at = finished;
    e.context = serde_json::from_value(json!({"f": 1e-7, "big": 1e16, "s": "é😀", "n": 2}))
        .expect("object");
    e
}

fn child_of(parent: &mut Execution, id: &str, status: Status, listed: bool) -> Execution {
    let mut c = exe(
        id,
        status,
        parent.created_at.expect("created"),
        parent.finished_at,
    );
    c.parent_id = Some(parent.id.clone());
    c.root_path = "R".into();
    if listed {
        parent.children.insert(
            id.into(),
            ChildState {
                root_path: "R".into(),
                finished: true,
                key: id.rsplit(':').next().unwrap_or("").into(),
                ..ChildState::default()
            },
        );
    }
    c
}

/// old-1: DONE 40 days ago, a listed child and one its parent dropped from `children`, a
/// trace; old-2: CANCELLED, alone; old-live: DONE with a RUNNING child; recent: DONE a day
/// ago; undated: DONE without finished_at; running.
async fn seed<S: ExecutionStore>(store: &S) {
    let old = NOW - 40.0 * DAY;
    let mut old1 = exe("old-1", Status::Done, old - DAY, Some(old));
    let a = child_of(&mut old1, "old-1:R:1", Status::Done, true);
    let b = child_of(&mut old1, "old-1:R:2", Status::Cancelled, false);
    let mut live = exe("old-live", Status::Done, old - 2.0 * DAY, Some(old));
    let live_child = child_of(&mut live, "old-live:R:1", Status::Running, true);
    let rows = [
        old1,
        a,
        b,
        exe("old-2", Status::Cancelled, old - 0.5 * DAY, Some(old + 1.0)),
        live,
        live_child,
        exe("recent", Status::Done, NOW - 2.0 * DAY, Some(NOW - DAY)),
        exe("undated", Status::Done, old - 3.0 * DAY, None),
        exe("running", Status::Running, old - 4.0 * DAY, None),
    ];
    for mut row in rows {
        let trace = (row.id == "old-1").then(|| {
            serde_json::from_value(json!({"event_kind": "Go", "to_path": "B", "t": 0.5}))
                .expect("object")
        });
        let c = Commit {
            trace,
            processed_event_id: Some("ev".into()),
            ..Commit::default()
        };
        store.commit(&mut row, c).await.expect("seed");
    }
}

fn opts() -> PurgeFinished {
    PurgeFinished {
        older_than: 30.0 * DAY,
        statuses: vec![Status::Done, Status::Cancelled],
        include_undated: false,
        limit: None,
        dry_run: false,
        now: NOW,
        scan: false,
    }
}

async fn dynamodb() -> DynamoDbStore {
    DynamoDbStore::create(
        Some(&endpoint()),
        &unique_prefix("pg"),
        30,
        Duration::from_millis(200),
    )
    .await
    .expect("tables")
}

fn python(args: &[&str]) -> Value {
    let python = std::env::var("HAREL_PYTHON").expect(
        "HAREL_PYTHON is not set: run under scripts/with-moto.sh (it points it at the venv with harel 0.9.0)",
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/py/harel_purge.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .expect("harel Python runs");
    assert!(
        out.status.success(),
        "harel Python failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// An archive's bundles by root, each tree's executions sorted by id (harel orders them by
/// its Scan, we by the parent index), both parsed keeping key order.
fn bundles(path: &std::path::Path) -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(path).expect("archive");
    let mut out: Vec<(String, Value)> = text
        .lines()
        .map(|line| {
            let mut b: Value = serde_json::from_str(line).expect("a JSON line");
            let execs = b["executions"].as_array_mut().expect("executions");
            execs.sort_by(|x, y| x["id"].as_str().cmp(&y["id"].as_str()));
            let traces = b["traces"].as_object().expect("traces").clone();
            let mut sorted: Vec<(String, Value)> = traces.into_iter().collect();
            sorted.sort_by(|x, y| x.0.cmp(&y.0));
            b["traces"] = Value::Object(sorted.into_iter().collect());
            (b["root_id"].as_str().expect("root_id").to_string(), b)
        })
        .collect();
    out.sort_by(|x, y| x.0.cmp(&y.0));
    out
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn purge_finished_matches_harel_python_and_archives_what_it_reads() {
    let ours = dynamodb().await;
    let theirs = dynamodb().await;
    seed(&ours).await;
    seed(&theirs).await;
    let dir = std::env::temp_dir().join(unique_prefix("archive"));
    std::fs::create_dir_all(&dir).expect("dir");
    let (ours_file, theirs_file) = (dir.join("ours.jsonl"), dir.join("theirs.jsonl"));

    // a dry run reports, deletes nothing, and refuses the live tree as purge would
    let dry = purge_finished(
        &ours,
        &PurgeFinished {
            dry_run: true,
            ..opts()
        },
        None,
    )
    .await
    .expect("dry run");
    assert_eq!(dry.purged, ["old-2", "old-1"], "newest first");
    assert_eq!(dry.skipped_undated, 1);
    assert_eq!(dry.refused.len(), 1);
    assert_eq!(dry.refused[0].0, "old-live");
    assert_eq!(
        dry.refused[0].1,
        "purge refused: not finished: old-live:R:1 (RUNNING)"
    );
    assert!(ours.load("old-1:R:2").await.expect("load").is_some());

    // limit 1: the newest candidate only
    let mut archive = JsonlArchive::new(&ours_file);
    let first = purge_finished(
        &ours,
        &PurgeFinished {
            limit: Some(1),
            ..opts()
        },
        Some(&mut archive),
    )
    .await
    .expect("limit 1");
    assert_eq!(first.purged, ["old-2"]);
    assert!(first.refused.is_empty());
    let rest = purge_finished(&ours, &opts(), Some(&mut archive))
        .await
        .expect("the rest");
    assert_eq!(rest.purged, ["old-1"]);
    assert_eq!(rest.skipped_undated, 1);
    assert_eq!(rest.refused.len(), 1, "{rest:?}");
    for gone in ["old-1", "old-1:R:1", "old-1:R:2", "old-2"] {
        assert!(ours.load(gone).await.expect("load").is_none(), "{gone}");
        assert!(
            !ours.is_processed(gone, "ev").await.expect("mark"),
            "{gone}"
        );
    }
    assert!(ours.read_trace("old-1").await.expect("trace").is_empty());
    for kept in ["old-live", "old-live:R:1", "recent", "undated", "running"] {
        assert!(ours.load(kept).await.expect("load").is_some(), "{kept}");
    }

    // harel's own purge_finished over the same data
    let report = python(&[
        &endpoint(),
        theirs.tables().prefix(),
        "purge",
        theirs_file.to_str().expect("utf-8 path"),
        &NOW.to_string(),
        &(30.0 * DAY).to_string(),
    ]);
    let mut purged: Vec<String> = serde_json::from_value(report["purged"].clone()).expect("ids");
    purged.sort();
    assert_eq!(purged, ["old-1", "old-2"]);
    assert_eq!(report["skipped_undated"], 1);
    assert_eq!(
        report["refused"]["old-live"],
        "purge refused: not finished: old-live:R:1 (RUNNING)"
    );

    // the same bundles, and each side's lines read back by the other byte for byte
    let (a, b) = (bundles(&ours_file), bundles(&theirs_file));
    assert_eq!(a.len(), 2);
    assert_eq!(a, b, "our archive holds what harel's holds");
    assert_eq!(a[0].1["traces"]["old-1"][0]["event_kind"], "Go");
    assert_eq!(a[0].1["executions"].as_array().map(Vec::len), Some(3));
    let read = python(&["-", "-", "read", ours_file.to_str().expect("utf-8 path")]);
    for line in read.as_array().expect("lines") {
        assert_eq!(
            line["same_bytes"], true,
            "harel re-dumps our line identically: {line}"
        );
    }
    let theirs_text = std::fs::read_to_string(&theirs_file).expect("theirs");
    for line in theirs_text.lines() {
        let v: Value = serde_json::from_str(line).expect("JSON");
        assert_eq!(harel_model::pyjson::json_dumps_compact_utf8(&v), line);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_child_or_a_live_tree_is_refused_and_nothing_is_deleted() {
    let store = MemoryStore::new();
    seed(&store).await;
    let err = purge(&store, "old-live", None).await.expect_err("live");
    assert!(matches!(err, ControlError::PurgeRefused(_)), "{err}");
    let err = purge(&store, "old-1:R:1", None).await.expect_err("a child");
    assert_eq!(
        err.to_string(),
        "purge refused: 'old-1:R:1' is a child of 'old-1' — purge its root, which removes the whole tree"
    );
    assert!(store.load("old-live").await.expect("load").is_some());
    assert!(store.load("old-1:R:1").await.expect("load").is_some());
    assert!(purge(&store, "old-1", None).await.expect("purge"));
    assert!(
        !purge(&store, "old-1", None).await.expect("again"),
        "already purged"
    );
    assert!(
        store.load("old-1:R:2").await.expect("load").is_none(),
        "the dropped child too"
    );
    let undated = purge_finished(
        &store,
        &PurgeFinished {
            include_undated: true,
            ..opts()
        },
        None,
    )
    .await
    .expect("undated");
    assert_eq!(undated.purged, ["old-2", "undated"]);
    assert_eq!(undated.skipped_undated, 0);
    let bad = purge_finished(
        &store,
        &PurgeFinished {
            statuses: vec![Status::Failed],
            ..opts()
        },
        None,
    )
    .await
    .expect_err("FAILED is not purgeable");
    assert_eq!(
        bad.to_string(),
        "only DONE, CANCELLED executions can be purged"
    );
}

/// A failing archive aborts the purge before anything is deleted.
#[tokio::test]
async fn an_archive_that_fails_deletes_nothing() {
    let store = MemoryStore::new();
    seed(&store).await;
    let mut archive = JsonlArchive::new("/nonexistent-dir/archive.jsonl");
    let err = purge_finished(&store, &opts(), Some(&mut archive))
        .await
        .expect_err("no such directory");
    assert!(matches!(err, ControlError::Archive { .. }), "{err}");
    assert!(store.load("old-2").await.expect("load").is_some());
}
