//! harel's submachine rules in the pure engine: what a single `invoke` and a fan-out spawn
//! (child ids, spawn contexts, the parent's `children` entries), how a child's `Finished`
//! becomes `Returned` (or is ignored when stale), `invoke_seq` on re-entry, and `Reset`.

use std::future::{ready, Future};

use harel_engine::{process, run_ready, start, ActionCall, ActionError, Host, Spawn, StepEffects};
use harel_model::{build_definition, Definition, Event, Execution, Object, Status};
use serde_json::{json, Value};

struct NullHost;

impl Host for NullHost {
    fn call<'a>(
        &'a mut self,
        _call: ActionCall<'a>,
    ) -> impl Future<Output = Result<Value, ActionError>> + Send + 'a {
        ready(Ok(Value::Null))
    }

    fn now(&mut self) -> f64 {
        0.0
    }
}

fn obj(v: Value) -> Object {
    v.as_object().cloned().expect("an object")
}

/// `Run` invokes `lib.Job` with `with`; `Fan` fans `lib.Job` out over `items`.
fn machine() -> Definition {
    build_definition(
        &json!({
            "start": "Run",
            "context_schema": {"n": {"type": "int", "default": 5}},
            "states": {
                "Run": {"invoke": "lib.Job", "invoke_with": {"amount": "n", "absent": "nope"}},
                "Fan": {"invoke": "lib.Job", "invoke_each": ["it", "items"],
                    "invoke_with": {"slice": "it", "size": "n", "gone": "nope"}},
                "Idle": {},
                "Done": {"outcome": "success"}
            },
            "transitions": [
                {"from": "Run", "to": "Fan", "on_event": {"type": "Returned", "outcome": "success"}},
                {"from": "Run", "to": "Idle", "on_event": {"type": "Leave"}},
                {"from": "Idle", "to": "Run", "on_event": {"type": "Back"}},
                {"from": "Fan", "to": "Done"},
                {"from": "Fan", "to": "Idle", "on_event": {"type": "Leave"}},
                {"from": "Idle", "to": "Fan", "on_event": {"type": "Again"}}
            ]
        }),
        "m",
        None,
    )
    .expect("builds")
}

fn started(d: &Definition, context: Value) -> (Execution, StepEffects) {
    let mut exe = Execution::new("m").with_id("e");
    exe.context = obj(context);
    let fx = run_ready(start(d, &mut exe, &mut NullHost))
        .expect("ready")
        .expect("starts");
    (exe, fx)
}

fn step(d: &Definition, exe: &mut Execution, event: Event) -> StepEffects {
    run_ready(process(d, exe, &event, &mut NullHost))
        .expect("ready")
        .expect("processes")
}

fn finished(child_id: &str, outcome: Option<&str>, carried: Value) -> Event {
    let mut data = obj(json!({"child_id": child_id, "outcome": outcome}));
    data.extend(obj(carried));
    Event::new("Finished").with_data(data)
}

#[test]
fn a_single_invoke_spawns_one_child_with_what_with_finds_and_its_fqn() {
    let d = machine();
    let (exe, fx) = started(&d, json!({"n": 5}));
    assert_eq!(exe.active_path.as_deref(), Some("Run"));
    assert_eq!(
        fx.spawns,
        vec![Spawn {
            child_id: "e:Run:0".into(),
            root_path: Default::default(),
            context: obj(json!({"amount": 5, "__invoke_fqn__": "lib.Job"})),
        }]
    );
    let cs = &exe.children["e:Run:0"];
    assert!(cs.submachine && !cs.finished && cs.key.is_empty() && cs.root_path.is_empty());
}

#[test]
fn returned_routes_the_child_outcome_and_bumps_the_seq() {
    let d = machine();
    let (mut exe, _) = started(&d, json!({"n": 5, "items": ["a", "b"]}));
    // a stale child's Finished changes only its own entry (none here) and moves nothing
    let fx = step(
        &d,
        &mut exe,
        finished("e:Run:7", Some("success"), json!({})),
    );
    assert!(fx.spawns.is_empty());
    assert_eq!(exe.active_path.as_deref(), Some("Run"));
    // the failure has no transition: the child is recorded, the parent stays parked
    let mut failed = exe.clone();
    step(
        &d,
        &mut failed,
        finished("e:Run:0", Some("failed"), json!({"x": 1})),
    );
    assert_eq!(failed.active_path.as_deref(), Some("Run"));
    assert!(failed.children["e:Run:0"].finished);
    assert_eq!(failed.children["e:Run:0"].result, obj(json!({"x": 1})));
    assert!(failed.invoke_seq.is_empty());
    // success: Returned moves on to the fan-out; the returned child is dropped
    let fx = step(
        &d,
        &mut exe,
        finished("e:Run:0", Some("success"), json!({"x": 1})),
    );
    assert_eq!(exe.active_path.as_deref(), Some("Fan"));
    assert_eq!(exe.invoke_seq["Run"], 1);
    assert!(!exe.children.contains_key("e:Run:0"));
    assert_eq!(
        exe.processed_events, 0,
        "a child's Finished is not a domain event"
    );
    let ids: Vec<&str> = fx.spawns.iter().map(|s| s.child_id.as_str()).collect();
    assert_eq!(ids, ["e:Fan:0:0", "e:Fan:0:1"]);
    // the loop variable is the entry; a parent key that is missing passes None
    assert_eq!(
        fx.spawns[1].context,
        obj(json!({"slice": "b", "size": 5, "gone": null, "__invoke_fqn__": "lib.Job"}))
    );
    assert_eq!(exe.children["e:Fan:0:1"].key, "Fan:1");
}

#[test]
fn a_fan_out_joins_then_re_entry_fans_out_afresh() {
    let d = machine();
    let (mut exe, _) = started(&d, json!({"n": 5, "items": [1, 2]}));
    step(
        &d,
        &mut exe,
        finished("e:Run:0", Some("success"), json!({})),
    );
    step(
        &d,
        &mut exe,
        finished("e:Fan:0:0", Some("success"), json!({"r": 1})),
    );
    assert_eq!(
        exe.active_path.as_deref(),
        Some("Fan"),
        "one instance still runs"
    );
    step(
        &d,
        &mut exe,
        finished("e:Fan:0:1", Some("failed"), json!({})),
    );
    assert_eq!(exe.status, Status::Done);
    assert_eq!(
        exe.context["region_results"],
        json!({"Fan:0": {"outcome": "success", "r": 1}, "Fan:1": {"outcome": "failed"}})
    );
    assert_eq!(exe.invoke_seq["Fan"], 1);

    // left early: the running instances are cancelled; re-entered: fresh ids, old ones gone
    let (mut exe, _) = started(&d, json!({"n": 5, "items": [1, 2]}));
    step(
        &d,
        &mut exe,
        finished("e:Run:0", Some("success"), json!({})),
    );
    step(
        &d,
        &mut exe,
        finished("e:Fan:0:0", Some("success"), json!({})),
    );
    let fx = step(&d, &mut exe, Event::new("Leave"));
    let cancels: Vec<(&str, &str)> = fx
        .emits
        .iter()
        .map(|(to, e)| (to.as_deref().unwrap_or(""), e.kind.as_str()))
        .collect();
    assert_eq!(cancels, [("e:Fan:0:1", "Cancel")]);
    let fx = step(&d, &mut exe, Event::new("Again"));
    let ids: Vec<&str> = fx.spawns.iter().map(|s| s.child_id.as_str()).collect();
    assert_eq!(ids, ["e:Fan:1:0", "e:Fan:1:1"]);
    let mut children: Vec<&str> = exe.children.keys().map(|k| k.as_str()).collect();
    children.sort();
    assert_eq!(children, ["e:Fan:1:0", "e:Fan:1:1"]);
}

#[test]
fn an_empty_or_missing_collection_joins_at_once() {
    let d = machine();
    for context in [json!({"items": []}), json!({})] {
        let (mut exe, _) = started(&d, context);
        let fx = step(
            &d,
            &mut exe,
            finished("e:Run:0", Some("success"), json!({})),
        );
        assert!(fx.spawns.is_empty());
        assert_eq!(exe.status, Status::Done);
        assert!(
            !exe.context.contains_key("region_results"),
            "nothing reported"
        );
    }
}

#[test]
fn a_single_invoke_left_early_keeps_its_child_as_harel_does() {
    let d = machine();
    let (mut exe, _) = started(&d, json!({}));
    let fx = step(&d, &mut exe, Event::new("Leave"));
    assert!(fx.emits.is_empty(), "no Cancel for a single invoke's child");
    assert!(exe.invoke_seq.is_empty());
    let fx = step(&d, &mut exe, Event::new("Back"));
    assert!(
        fx.spawns.is_empty(),
        "the same entry's child is still there"
    );
    // and its late Finished is the one the re-entered state routes (on through the
    // fan-out, empty here, to the end)
    step(
        &d,
        &mut exe,
        finished("e:Run:0", Some("success"), json!({})),
    );
    assert_eq!(exe.invoke_seq["Run"], 1);
    assert_eq!(exe.active_path.as_deref(), Some("Done"));
}

#[test]
fn reset_on_an_invoke_cancels_the_child_and_invokes_afresh() {
    let d = machine();
    let (mut exe, _) = started(&d, json!({"n": 9}));
    let fx = step(&d, &mut exe, Event::new("Reset"));
    assert_eq!(fx.emits.len(), 1);
    assert_eq!(fx.emits[0].0.as_deref(), Some("e:Run:0"));
    assert_eq!(fx.emits[0].1.kind, "Cancel");
    // a root gets its defaults back; the new entry's child has the next seq
    assert_eq!(exe.context, obj(json!({"n": 5})));
    let ids: Vec<&str> = fx.spawns.iter().map(|s| s.child_id.as_str()).collect();
    assert_eq!(ids, ["e:Run:1"]);
    assert_eq!(exe.invoke_seq["Run"], 1);
    assert_eq!(exe.children.len(), 1);
}
