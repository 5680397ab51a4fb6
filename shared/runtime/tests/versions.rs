//! Machine versions over the in-memory store: an execution keeps the version it started on
//! across a redeploy that changed its machine; a new one starts on the deployed version.

use harel_model::{build_definition, Definition, Event, Execution, Status};
use harel_runtime::{versions, ActionRegistry, Driver, RuntimeError};
use harel_store::prelude::*;
use harel_store::MemoryStore;
use serde_json::json;

fn v1() -> Definition {
    build_definition(
        &json!({"start": "A", "states": {"A": {}, "B": {}, "Done": {"outcome": "success"}},
            "transitions": [{"from": "A", "to": "B", "on_event": {"type": "Go"}},
                            {"from": "B", "to": "Done", "on_event": {"type": "Finish"}}]}),
        "M",
        None,
    )
    .unwrap()
}

/// v1 with B renamed Review.
fn v2() -> Definition {
    build_definition(
        &json!({"start": "A", "states": {"A": {}, "Review": {}, "Done": {"outcome": "success"}},
            "transitions": [{"from": "A", "to": "Review", "on_event": {"type": "Go"}},
                            {"from": "Review", "to": "Done", "on_event": {"type": "Finish"}}]}),
        "M",
        None,
    )
    .unwrap()
}

fn driver(d: Definition) -> Driver {
    Driver::new(vec![d], ActionRegistry::with_stdlib())
}

async fn send(driver: &Driver, store: &MemoryStore, id: &str, kind: &str) -> Execution {
    let mut exe = store.load(id).await.unwrap().unwrap();
    driver
        .step(store, &mut exe, Some(&Event::new(kind)))
        .await
        .unwrap();
    exe
}

#[tokio::test]
async fn an_execution_finishes_on_its_version_after_a_redeploy() {
    let store = MemoryStore::new();
    let first = driver(v1());
    let v1_version = versions::version_of_definition(&v1()).unwrap();
    let v2_version = versions::version_of_definition(&v2()).unwrap();
    assert_ne!(v1_version, v2_version);
    assert_eq!(first.current_version("M"), Some(v1_version.as_str()));

    let mut exe = Execution::new("M");
    first.step(&store, &mut exe, None).await.unwrap();
    assert_eq!(exe.pinned_version(), Some(v1_version.as_str()));
    let kept = store.get_definition(&v1_version).await.unwrap().unwrap();
    assert_eq!(kept.machine, "M");
    send(&first, &store, &exe.id, "Go").await;

    // redeployed with v2 only: the execution sitting in B still finishes, on v1
    let second = driver(v2());
    let done = send(&second, &store, &exe.id, "Finish").await;
    assert_eq!(done.status, Status::Done);
    assert_eq!(done.pinned_version(), Some(v1_version.as_str()));

    let mut fresh = Execution::new("M");
    second.step(&store, &mut fresh, None).await.unwrap();
    assert_eq!(fresh.pinned_version(), Some(v2_version.as_str()));
    let fresh = send(&second, &store, &fresh.id, "Go").await;
    assert_eq!(fresh.active_path.as_deref(), Some("Review"));
}

#[tokio::test]
async fn an_unpinned_execution_runs_on_the_deployed_version_and_an_unknown_one_is_refused() {
    let store = MemoryStore::new();
    let second = driver(v2());
    // as harel Python writes it: no version field
    let mut legacy = Execution::new("M");
    legacy.active_path = Some("Review".into());
    legacy.status = Status::Running;
    store.save(&mut legacy).await.unwrap();
    let done = send(&second, &store, &legacy.id, "Finish").await;
    assert_eq!(done.status, Status::Done);
    assert_eq!(done.pinned_version(), None);

    let mut lost = Execution::new("M");
    lost.pin_version("0123456789abcdef");
    lost.active_path = Some("B".into());
    lost.status = Status::Running;
    store.save(&mut lost).await.unwrap();
    let mut exe = store.load(&lost.id).await.unwrap().unwrap();
    let err = second
        .step(&store, &mut exe, Some(&Event::new("Finish")))
        .await
        .unwrap_err();
    assert!(matches!(err, RuntimeError::UnknownVersion { .. }), "{err}");
    let after = store.load(&lost.id).await.unwrap().unwrap();
    assert_eq!(after.version, lost.version);
}

#[test]
fn a_version_is_its_content_not_its_positions() {
    let mut with_pos = v1().source.unwrap().as_ref().clone();
    with_pos["__pos__"] = json!([3, 1]);
    let moved = build_definition(&with_pos, "M", None).unwrap();
    assert_eq!(
        versions::version_of_definition(&moved).unwrap(),
        versions::version_of_definition(&v1()).unwrap()
    );
    let doc = versions::bundle_document(&v1()).unwrap();
    let version = versions::version_of(&doc);
    let bundle = versions::rebuild(&version, &doc).unwrap();
    assert!(bundle.get("M").unwrap().get("B").is_some());
    assert!(versions::rebuild("ffffffffffffffff", &doc).is_err());
}

fn forked() -> Definition {
    let region = |name: &str, event: &str| {
        json!({"start": format!("{name}1"),
            "states": {format!("{name}1"): {}, format!("{name}2"): {"outcome": "success"}},
            "transitions": [{"from": format!("{name}1"), "to": format!("{name}2"), "on_event": {"type": event}}]})
    };
    build_definition(
        &json!({"start": "Idle", "states": {"Idle": {},
            "Work": {"type": "OrthogonalState", "states": {"A": region("A", "DoneA"), "B": region("B", "DoneB")}}},
            "transitions": [{"from": "Idle", "to": "Work", "on_event": {"type": "Go"}}]}),
        "F",
        None,
    )
    .unwrap()
}

#[tokio::test]
async fn regions_take_their_parents_pin_or_none() {
    let runner = harel_runtime::DurableRunner::new(MemoryStore::new(), [forked()]);
    let version = runner.driver().current_version("F").unwrap().to_string();
    let pinned = runner.create("F", None, Some("pinned")).await.unwrap();
    assert_eq!(pinned.pinned_version(), Some(version.as_str()));
    runner.process("pinned", &Event::new("Go")).await.unwrap();

    // as harel Python leaves it: no version
    let mut legacy = Execution::new("F").with_id("legacy");
    legacy.status = Status::Running;
    legacy.active_path = Some("Idle".into());
    runner.store().save(&mut legacy).await.unwrap();
    runner.process("legacy", &Event::new("Go")).await.unwrap();

    for (parent, expected) in [("pinned", Some(version.as_str())), ("legacy", None)] {
        let exe = runner.get(parent).await.unwrap().unwrap();
        assert_eq!(exe.children.len(), 2, "{exe:?}");
        for child in exe.children.keys() {
            let child = runner.get(child).await.unwrap().unwrap();
            assert_eq!(child.pinned_version(), expected, "{}", child.id);
        }
    }
}
