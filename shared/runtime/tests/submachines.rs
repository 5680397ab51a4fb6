//! Submachines through the durable runner over the in-memory store: an invoke child and
//! fan-out instances created by the inline relay from their spawns, resolved by FQN among the
//! registered definitions (inline and imported machines included), reporting back as
//! `Returned` and as a join; an unknown FQN fails clearly and keeps the spawn.

use std::sync::Arc;

use harel_model::{build_definition, Definition, Event, Status};
use harel_runtime::{register, DurableRunner, ManualClock, RuntimeError};
use harel_store::prelude::*;
use harel_store::MemoryStore;
use serde_json::{json, Value};

fn defn(config: Value, name: &str) -> Definition {
    build_definition(&config, name, None).expect("a valid machine")
}

/// `Parent` invokes `Child` (by FQN, with `with`), then fans out its inline machine over
/// `items`, then ends by the join.
fn machines() -> Vec<Definition> {
    let parent = defn(
        json!({
            "start": "Ask",
            "context_schema": {"total": {"type": "int", "default": 3}, "items": {"type": "any", "default": [10, 20]}},
            "states": {
                "Ask": {"invoke": "lib.Child", "invoke_with": {"amount": "total", "gone": "nothing"}},
                "Fan": {"invoke_each": ["x", "items"], "invoke_with": {"v": "x", "t": "total"},
                    "invoke_inline": {"start": "W", "carry": ["v"], "states": {"W": {}, "Ok": {"outcome": "success"}},
                        "transitions": [{"from": "W", "to": "Ok"}]}},
                "Done": {"outcome": "success"},
                "Bad": {"outcome": "failed"}
            },
            "transitions": [
                {"from": "Ask", "to": "Fan", "on_event": {"type": "Returned", "outcome": "success"}},
                {"from": "Ask", "to": "Bad", "on_event": {"type": "Returned"}},
                {"from": "Fan", "to": "Done"}
            ]
        }),
        "Parent",
    );
    let mut child = defn(
        json!({
            "start": "Wait",
            "carry": ["amount", "level"],
            "context_schema": {"level": {"type": "string", "default": "low"}},
            "states": {"Wait": {}, "Yes": {"outcome": "success"}},
            "transitions": [{"from": "Wait", "to": "Yes", "on_event": {"type": "Sign"}}]
        }),
        "Child",
    );
    child.id = "lib.Child".into();
    vec![parent, child]
}

#[test]
fn register_adds_inline_machines_by_their_fqn() {
    let defs = register(machines());
    let mut ids: Vec<&str> = defs.keys().map(String::as_str).collect();
    ids.sort();
    assert_eq!(ids, ["Parent", "Parent#Fan", "lib.Child"]);
}

#[tokio::test]
async fn invoke_returned_then_fan_out_joined() {
    let clock = ManualClock::new(1_000.0);
    let r = DurableRunner::new(MemoryStore::new(), machines()).with_clock(Arc::new(clock));
    let exe = r.create("Parent", None, Some("p")).await.expect("created");
    assert_eq!(exe.active_path.as_deref(), Some("Ask"));
    let child = r.get("p:Ask:0").await.expect("load").expect("the child");
    assert_eq!(child.definition_id, "lib.Child");
    assert_eq!(child.definition_fqn.as_deref(), Some("lib.Child"));
    assert_eq!(child.status, Status::Running);
    // what `with` found in the parent, then the child's defaults (a missing key: not passed)
    assert_eq!(
        Value::Object(child.context.clone()),
        json!({"amount": 3, "level": "low"})
    );

    // the child is a black box: a domain event to the parent does not reach it
    let exe = r
        .process("p", &Event::new("Sign"))
        .await
        .expect("processed");
    assert_eq!(exe.active_path.as_deref(), Some("Ask"));
    assert_eq!(
        r.get("p:Ask:0").await.expect("load").expect("child").status,
        Status::Running
    );

    // addressed directly, it finishes; `Returned` moves the parent to the fan-out, whose
    // instances finish at once and join
    r.process("p:Ask:0", &Event::new("Sign"))
        .await
        .expect("child");
    let exe = r.get("p").await.expect("load").expect("parent");
    assert_eq!(exe.status, Status::Done, "{exe:?}");
    assert_eq!(exe.active_path.as_deref(), Some("Done"));
    assert_eq!(exe.invoke_seq["Ask"], 1);
    assert_eq!(exe.invoke_seq["Fan"], 1);
    assert!(
        !exe.children.contains_key("p:Ask:0"),
        "a returned child is dropped"
    );
    assert_eq!(
        exe.context["region_results"],
        json!({"Fan:0": {"outcome": "success", "v": 10}, "Fan:1": {"outcome": "success", "v": 20}})
    );
    for (i, v) in [10, 20].into_iter().enumerate() {
        let inst = r
            .get(&format!("p:Fan:0:{i}"))
            .await
            .expect("load")
            .expect("instance");
        assert_eq!(inst.definition_id, "Parent#Fan");
        assert_eq!(inst.status, Status::Done);
        assert_eq!(inst.context["v"], json!(v));
        assert_eq!(inst.context["t"], json!(3));
    }
}

#[tokio::test]
async fn a_child_known_only_by_its_fqn_runs() {
    // a child harel created through a resolver: its definition's id is not the FQN
    let r = DurableRunner::new(MemoryStore::new(), machines());
    let mut child = harel_model::Execution::new("Child").with_id("x:Ask:0");
    child.definition_fqn = Some("lib.Child".into());
    child.parent_id = Some("x".into());
    child.child_id = Some("x:Ask:0".into());
    r.step(&mut child, None).await.expect("started by its FQN");
    let done = r
        .process("x:Ask:0", &Event::new("Sign"))
        .await
        .expect("runs");
    assert_eq!(done.status, Status::Done);
}

#[tokio::test]
async fn an_unknown_submachine_fails_clearly_and_keeps_the_spawn() {
    let only_parent: Vec<Definition> = machines().into_iter().take(1).collect();
    let r = DurableRunner::new(MemoryStore::new(), only_parent);
    let err = r
        .create("Parent", None, Some("p"))
        .await
        .expect_err("lib.Child is not registered");
    assert!(
        matches!(&err, RuntimeError::UnresolvedSubmachine(fqn) if fqn == "lib.Child"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "invoke \"lib.Child\": no machine is registered for that FQN"
    );
    // the parent's start is committed, parked on the invoke; the spawn waits
    let exe = r.get("p").await.expect("load").expect("parent");
    assert_eq!(exe.status, Status::Running);
    assert_eq!(exe.active_path.as_deref(), Some("Ask"));
    let pending = r.store().pending_spawns().await.expect("spawns");
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].child_id, "p:Ask:0");
    assert_eq!(pending[0].context["__invoke_fqn__"], json!("lib.Child"));
    assert!(r.get("p:Ask:0").await.expect("load").is_none());
}
