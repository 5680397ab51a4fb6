//! The runner's control methods over the in-memory store (harel `DurableRunner.cancel`,
//! `terminate`, `suspend`, `resume`, `redrive`): the control plane's write, then, for a
//! cooperative cancel, the inline relay that runs the machine's cleanup. Expected values are
//! what harel 0.9.0's `DurableRunner(execution="inline", trace=True)` answers for the same
//! machines.

use std::sync::{Arc, Mutex};

use harel_model::{build_definition, Definition, Event, Object, Status};
use harel_runtime::{
    ActionError, ActionRegistry, ControlError, DurableRunner, ManualClock, RuntimeError,
};
use harel_store::prelude::*;
use harel_store::MemoryStore;
use serde_json::{json, Value};

fn defn(config: Value) -> Definition {
    build_definition(&config, "m", None).expect("a valid machine")
}

fn obj(v: Value) -> Object {
    v.as_object().cloned().expect("an object")
}

/// `context.steps + 1`
fn plus_one() -> Value {
    json!([{"field": "steps", "expr": {"arith": {"op": "+",
        "left": {"ref": {"source": "context", "field": "steps"}}, "right": {"lit": 1}}}}])
}

/// Work models `Cancel` (to a terminal whose way out runs the cleanup); Idle does not.
fn job() -> Definition {
    defn(
        json!({"start": "Work", "context_schema": {"steps": {"type": "int", "default": 0}},
        "states": {"Work": {"on_exit": "t.cleanup"}, "Idle": {}, "Cleaned": {"outcome": "cancelled"},
                   "Broken": {"on_enter": "t.boom"}},
        "transitions": [
            {"from": "Work", "to": "Cleaned", "on_event": {"type": "Cancel"}},
            {"from": "Work", "to": "Work", "on_event": {"type": "Step"}, "set": plus_one()},
            {"from": "Work", "to": "Idle", "on_event": {"type": "Rest"}},
            {"from": "Idle", "to": "Work", "on_event": {"type": "Back"}},
            {"from": "Work", "to": "Broken", "on_event": {"type": "Break"}}]}),
    )
}

struct Fixture {
    runner: DurableRunner<MemoryStore>,
    cleanups: Arc<Mutex<Vec<String>>>,
}

fn fixture(d: Definition) -> Fixture {
    let cleanups = Arc::new(Mutex::new(Vec::new()));
    let mut registry = ActionRegistry::with_stdlib();
    let log = cleanups.clone();
    registry.register_fn("t.cleanup", move |ctx, _event, _inputs| {
        log.lock().expect("log").push(ctx.execution_id.to_string());
        ctx.context.insert("cleaned".into(), json!(true));
        Ok(Value::Null)
    });
    registry.register_fn("t.boom", |_ctx, _event, _inputs| {
        Err(ActionError::new("ValueError", "boom"))
    });
    let runner = DurableRunner::new(MemoryStore::new(), [d])
        .with_registry(registry)
        .with_clock(Arc::new(ManualClock::new(1_000.0)))
        .with_trace(true);
    Fixture { runner, cleanups }
}

fn kinds(trace: &[Object]) -> Vec<&str> {
    trace
        .iter()
        .map(|s| s["event_kind"].as_str().expect("a kind"))
        .collect()
}

#[tokio::test]
async fn a_cooperative_cancel_runs_the_cleanup_to_the_terminal_inline() {
    let f = fixture(job());
    f.runner.create("m", None, Some("a")).await.expect("create");
    let reason = obj(json!({"by": "ops"}));
    let a = f.runner.cancel("a", Some(reason)).await.expect("cancel");
    // harel: Status.DONE cancelled {'steps': 0, 'cleaned': True}, the cleanup ran once
    assert_eq!(a.status, Status::Done);
    assert_eq!(a.outcome.as_deref(), Some("cancelled"));
    assert_eq!(a.active_path.as_deref(), Some("Cleaned"));
    assert_eq!(a.context.get("cleaned"), Some(&json!(true)));
    assert_eq!(*f.cleanups.lock().expect("log"), vec!["a".to_string()]);
    assert!(f
        .runner
        .store()
        .pending_outbox()
        .await
        .expect("outbox")
        .is_empty());
    // the injected Cancel is a traced step like any other, with the reason as its data
    let trace = f.runner.store().read_trace("a").await.expect("trace");
    assert_eq!(kinds(&trace), ["Start", "Cancel"]);
    assert_eq!(trace[1]["event_data"], json!({"by": "ops"}));
    assert_eq!(trace[1]["from_path"], json!("Work"));
    assert_eq!(trace[1]["to_path"], json!("Cleaned"));
    assert_eq!(trace[1]["actions"], json!(["t.cleanup"]));
    // finished: a second cancel changes nothing
    let again = f.runner.cancel("a", None).await.expect("no-op");
    assert_eq!(again.status, Status::Done);
    assert_eq!(f.cleanups.lock().expect("log").len(), 1);
}

#[tokio::test]
async fn cancel_is_forceful_where_the_machine_does_not_model_it() {
    let f = fixture(job());
    f.runner.create("m", None, Some("b")).await.expect("create");
    f.runner
        .process("b", &Event::new("Rest"))
        .await
        .expect("rest");
    // leaving Work ran its exit hook once
    assert_eq!(f.cleanups.lock().expect("log").len(), 1);
    let b = f.runner.cancel("b", None).await.expect("cancel");
    assert_eq!(b.status, Status::Cancelled);
    assert_eq!(b.outcome, None);
    assert_eq!(b.active_path.as_deref(), Some("Idle"));
    assert_eq!(f.cleanups.lock().expect("log").len(), 1, "no hooks run");
    // control writes add no trace step (harel)
    let trace = f.runner.store().read_trace("b").await.expect("trace");
    assert_eq!(kinds(&trace), ["Start", "Rest"]);
}

#[tokio::test]
async fn terminate_cancels_at_once_without_the_cleanup() {
    let f = fixture(job());
    f.runner.create("m", None, Some("t")).await.expect("create");
    let t = f.runner.terminate("t").await.expect("terminate");
    assert_eq!(t.status, Status::Cancelled);
    assert_eq!(t.active_path.as_deref(), Some("Work"));
    assert!(f.cleanups.lock().expect("log").is_empty());
    // a later event is dropped by the engine: still CANCELLED
    let t = f
        .runner
        .process("t", &Event::new("Step"))
        .await
        .expect("step");
    assert_eq!(t.status, Status::Cancelled);
    assert_eq!(t.context["steps"], json!(0));
}

#[tokio::test]
async fn suspend_holds_the_machine_and_resume_continues_it() {
    let f = fixture(job());
    f.runner.create("m", None, Some("s")).await.expect("create");
    let s = f.runner.suspend("s").await.expect("suspend");
    assert_eq!(s.status, Status::Suspended);
    // harel's in-process runner has no queue to park on: its engine ignores a domain event
    // unless RUNNING, and the step is consumed (harel: SUSPENDED {'steps': 0})
    let s = f
        .runner
        .process("s", &Event::new("Step"))
        .await
        .expect("step");
    assert_eq!(s.status, Status::Suspended);
    assert_eq!(s.context["steps"], json!(0));
    // resuming a RUNNING execution is a no-op; suspending twice too
    let s = f.runner.resume("s").await.expect("resume");
    assert_eq!(s.status, Status::Running);
    assert_eq!(s.active_path.as_deref(), Some("Work"));
    let s = f.runner.resume("s").await.expect("no-op");
    assert_eq!(s.status, Status::Running);
    let s = f
        .runner
        .process("s", &Event::new("Step"))
        .await
        .expect("step");
    assert_eq!(s.context["steps"], json!(1), "continues where it stopped");
    let trace = f.runner.store().read_trace("s").await.expect("trace");
    assert_eq!(kinds(&trace), ["Start", "Step", "Step"]);
    assert_eq!(trace[2]["assigned"], json!({"steps": 1}));
}

#[tokio::test]
async fn suspend_and_cancel_reach_the_regions() {
    let d = defn(json!({"start": "Both", "states": {
        "Both": {"type": "OrthogonalState", "states": {
            "Left": {"start": "L1", "states": {"L1": {}, "L2": {}},
                     "transitions": [{"from": "L1", "to": "L2", "on_event": {"type": "Go"}}]},
            "Right": {"start": "R1", "states": {"R1": {}, "R2": {}},
                      "transitions": [{"from": "R1", "to": "R2", "on_event": {"type": "Go"}}]}}},
        "Over": {"outcome": "success"}},
        "transitions": [{"from": "Both", "to": "Over"}]}));
    let f = fixture(d);
    let p = f.runner.create("m", None, Some("p")).await.expect("create");
    let regions: Vec<String> = p.children.keys().map(|k| k.to_string()).collect();
    assert_eq!(regions.len(), 2);
    f.runner.suspend("p").await.expect("suspend");
    for id in &regions {
        let region = f.runner.get(id).await.expect("load").expect("a region");
        assert_eq!(region.status, Status::Suspended, "{id}");
    }
    f.runner.resume("p").await.expect("resume");
    let p = f.runner.cancel("p", None).await.expect("cancel");
    assert_eq!(
        p.status,
        Status::Cancelled,
        "no Cancel transition: forceful"
    );
    for id in &regions {
        let region = f.runner.get(id).await.expect("load").expect("a region");
        assert_eq!(region.status, Status::Cancelled, "{id}");
    }
}

#[tokio::test]
async fn redrive_brings_a_failed_execution_back_at_a_leaf() {
    let f = fixture(job());
    f.runner.create("m", None, Some("r")).await.expect("create");
    let r = f
        .runner
        .process("r", &Event::new("Break"))
        .await
        .expect("break");
    assert_eq!(r.status, Status::Failed);
    assert_eq!(r.error.as_deref(), Some("ValueError: boom"));
    let err = f
        .runner
        .redrive("r", "Nowhere")
        .await
        .expect_err("not a leaf");
    assert!(
        matches!(&err, RuntimeError::Control(ControlError::RedriveRefused(m)) if m == "redrive target must be a leaf state, got 'Nowhere'"),
        "{err}"
    );
    let r = f.runner.redrive("r", "Work").await.expect("redrive");
    assert_eq!(r.status, Status::Running);
    assert_eq!(r.active_path.as_deref(), Some("Work"));
    assert_eq!(r.error, None);
    let r = f
        .runner
        .process("r", &Event::new("Step"))
        .await
        .expect("step");
    assert_eq!(r.context["steps"], json!(1));
    // RUNNING now: a second redrive is a no-op
    let r = f.runner.redrive("r", "Idle").await.expect("no-op");
    assert_eq!(r.active_path.as_deref(), Some("Work"));
}

#[tokio::test]
async fn control_on_an_unknown_execution_is_not_found() {
    let f = fixture(job());
    for result in [
        f.runner.cancel("nope", None).await,
        f.runner.terminate("nope").await,
        f.runner.suspend("nope").await,
        f.runner.resume("nope").await,
        f.runner.redrive("nope", "Work").await,
    ] {
        assert!(
            matches!(&result, Err(RuntimeError::NotFound(id)) if id == "nope"),
            "{result:?}"
        );
    }
}

#[tokio::test]
async fn purge_finished_removes_old_finished_trees_by_the_runners_clock() {
    let d = defn(json!({"start": "Both", "states": {
        "Both": {"type": "OrthogonalState", "states": {
            "Left": {"start": "L1", "states": {"L1": {}}},
            "Right": {"start": "R1", "states": {"R1": {}}}}},
        "Over": {"outcome": "success"}},
        "transitions": [{"from": "Both", "to": "Over", "on_event": {"type": "End"}}]}));
    let clock = ManualClock::new(1_000.0);
    let runner = DurableRunner::new(MemoryStore::new(), [d]).with_clock(Arc::new(clock.clone()));
    let p = runner.create("m", None, Some("p")).await.expect("create");
    let regions: Vec<String> = p.children.keys().map(|k| k.to_string()).collect();
    runner
        .create("m", None, Some("live"))
        .await
        .expect("create");
    runner.cancel("p", None).await.expect("cancel");
    clock.advance(100.0);
    let options = harel_runtime::PurgeFinished {
        older_than: 50.0,
        statuses: vec![Status::Done, Status::Cancelled],
        include_undated: false,
        limit: None,
        dry_run: false,
        now: 0.0,
        scan: false,
    };
    let report = runner
        .purge_finished(options.clone(), None)
        .await
        .expect("purge");
    assert_eq!(report.purged, ["p"]);
    for id in regions.iter().chain(["p".to_string()].iter()) {
        assert!(runner.get(id).await.expect("load").is_none(), "{id}");
    }
    assert!(runner.get("live").await.expect("load").is_some());
    assert!(
        !runner.purge("p", None).await.expect("again"),
        "already gone"
    );
}
