//! One test per harel rule, each machine built with `build_definition` from harel's
//! normalized dict and driven by a synchronous host.

use std::collections::{HashMap, VecDeque};
use std::future::{ready, Future};

use harel_engine::{
    has_cancel_handler, has_error_handler, process, run_ready, start, timeout_event, ActionCall,
    ActionError, CallKind, EngineError, Host, StepEffects, TimerOp, TTL_PATH,
};
use harel_model::{build_definition, ChildState, Definition, Event, Execution, Object, Status};
use serde_json::{json, Value};

#[derive(Default)]
struct TestHost {
    now: f64,
    /// "function/kind" of every call, in order.
    calls: Vec<String>,
    fail: HashMap<String, ActionError>,
    selector: HashMap<String, VecDeque<Value>>,
    /// function -> (context key, value) the action writes.
    writes: HashMap<String, (String, Value)>,
}

impl Host for TestHost {
    fn call<'a>(
        &'a mut self,
        call: ActionCall<'a>,
    ) -> impl Future<Output = Result<Value, ActionError>> + Send + 'a {
        let f = &call.action.function;
        self.calls.push(format!("{f}/{}", call.kind.as_str()));
        if let Some((k, v)) = self.writes.get(f) {
            call.context.insert(k.clone(), v.clone());
        }
        let out = if let Some(e) = self.fail.get(f) {
            Err(e.clone())
        } else if call.kind == CallKind::Selector {
            Ok(self
                .selector
                .get_mut(f)
                .and_then(VecDeque::pop_front)
                .unwrap_or(Value::Null))
        } else {
            Ok(Value::Null)
        };
        ready(out)
    }

    fn now(&mut self) -> f64 {
        self.now
    }
}

fn defn(config: Value) -> Definition {
    build_definition(&config, "m", None).expect("a valid machine")
}

fn started(d: &Definition, host: &mut TestHost) -> (Execution, StepEffects) {
    let mut exe = Execution::new("m").with_id("e1");
    let fx = run_ready(start(d, &mut exe, host)).unwrap().unwrap();
    (exe, fx)
}

fn send(
    d: &Definition,
    exe: &mut Execution,
    host: &mut TestHost,
    kind: &str,
    data: Value,
) -> Result<StepEffects, EngineError> {
    let ev = Event::new(kind).with_data(data.as_object().cloned().unwrap_or_default());
    run_ready(process(d, exe, &ev, host)).unwrap()
}

fn obj(v: Value) -> Object {
    v.as_object().cloned().unwrap()
}

#[test]
fn hierarchy_enters_outermost_first_and_exits_innermost_first() {
    let d = defn(json!({
        "start": "A",
        "states": {
            "A": {"start": "A1", "on_enter": "a.in", "on_exit": "a.out",
                  "states": {"A1": {"on_enter": "a1.in", "on_exit": "a1.out"}}},
            "B": {"start": "B1", "on_enter": "b.in",
                  "states": {"B1": {"on_enter": "b1.in"}, "B2": {}},
                  "transitions": [{"from": "B1", "to": "B2", "on_event": {"type": "Next"}}]}
        },
        "transitions": [{"from": "A", "to": "B", "on_event": {"type": "Go"}}]
    }));
    let mut host = TestHost::default();
    let (mut exe, _) = started(&d, &mut host);
    // A1 has no transition of its own: a sink, it exits and bubbles up to A, which waits
    assert_eq!(exe.active_path.as_deref(), Some("A"));
    assert_eq!(exe.status, Status::Running);
    assert_eq!(
        host.calls,
        ["a.in/on_enter", "a1.in/on_enter", "a1.out/on_exit"]
    );
    host.calls.clear();
    send(&d, &mut exe, &mut host, "Go", json!({})).unwrap();
    assert_eq!(
        host.calls,
        ["a.out/on_exit", "b.in/on_enter", "b1.in/on_enter"]
    );
    assert_eq!(exe.active_path.as_deref(), Some("B.B1"));
    assert_eq!(exe.processed_events, 1);
    assert!(
        !exe.history.contains_key("A"),
        "the bubble forgot A's history"
    );
    assert_eq!(exe.history["B"], "B.B1");
    assert_eq!(exe.history[""], "B");
    // unknown events are ignored but counted
    send(&d, &mut exe, &mut host, "Nope", json!({})).unwrap();
    assert_eq!(exe.processed_events, 2);
    assert_eq!(exe.active_path.as_deref(), Some("B.B1"));
}

#[test]
fn self_transition_fires_nothing_and_history_returns() {
    let d = defn(json!({
        "start": "P",
        "states": {
            "P": {"start": "X", "states": {"X": {"on_enter": "x.in", "on_exit": "x.out"}, "Y": {}},
                  "transitions": [{"from": "X", "to": "X", "on_event": {"type": "Self"}},
                                  {"from": "X", "to": "Y", "on_event": {"type": "ToY"}},
                                  {"from": "Y", "to": "X", "on_event": {"type": "ToX"}}]},
            "Q": {"start": "Z", "states": {"Z": {}, "Z2": {}}, "allow_history": false,
                  "transitions": [{"from": "Z", "to": "Z2", "on_event": {"type": "Step"}},
                                  {"from": "Z2", "to": "Z", "on_event": {"type": "Unstep"}}]}
        },
        "transitions": [{"from": "P", "to": "Q", "on_event": {"type": "Out"}},
                        {"from": "Q", "to": "P", "on_event": {"type": "Back"}}]
    }));
    let mut host = TestHost::default();
    let (mut exe, _) = started(&d, &mut host);
    host.calls.clear();
    send(&d, &mut exe, &mut host, "Self", json!({})).unwrap();
    assert!(host.calls.is_empty(), "a self transition fires nothing");
    send(&d, &mut exe, &mut host, "ToY", json!({})).unwrap();
    send(&d, &mut exe, &mut host, "Out", json!({})).unwrap();
    send(&d, &mut exe, &mut host, "Step", json!({})).unwrap();
    assert_eq!(exe.active_path.as_deref(), Some("Q.Z2"));
    send(&d, &mut exe, &mut host, "Back", json!({})).unwrap();
    assert_eq!(exe.active_path.as_deref(), Some("P.Y"), "P has history");
    send(&d, &mut exe, &mut host, "Out", json!({})).unwrap();
    assert_eq!(
        exe.active_path.as_deref(),
        Some("Q.Z"),
        "Q has `no history`"
    );
}

#[test]
fn inner_scope_wins_and_automatic_transitions_do_not_fall_back_to_the_outermost_scope() {
    let d = defn(json!({
        "start": "A",
        "states": {
            "A": {"start": "A1", "states": {"A1": {}, "A2": {}},
                  "transitions": [{"from": "A1", "to": "A2", "on_event": {"type": "E"}},
                                  {"from": "A2", "to": "A1", "on_event": {"type": "Back"}}]},
            "B": {},
            "C": {"start": "C1", "states": {"C1": {}, "C2": {}},
                  "transitions": [{"from": "C1", "to": "C2", "on_event": {"type": "F"}},
                                  {"from": "C2", "to": "C1", "on_event": {"type": "G"}}]}
        },
        "transitions": [{"from": "A", "to": "B", "on_event": {"type": "E"}},
                        {"from": "A", "to": "B", "on_event": {"type": "Up"}},
                        {"from": "B", "to": "C"},
                        {"from": "C", "to": "A"}]
    }));
    let mut host = TestHost::default();
    let (mut exe, _) = started(&d, &mut host);
    send(&d, &mut exe, &mut host, "E", json!({})).unwrap();
    assert_eq!(exe.active_path.as_deref(), Some("A.A2"), "inner scope wins");
    send(&d, &mut exe, &mut host, "Up", json!({})).unwrap();
    // B -> C is automatic at the root for a direct child: taken. C's automatic `C -> A` is
    // in the outermost scope of the deeper C.C1: not a fallback for it
    assert_eq!(exe.active_path.as_deref(), Some("C.C1"));
    assert_eq!(exe.status, Status::Running);
}

#[test]
fn guards_alternation_and_predicates() {
    let d = defn(json!({
        "start": "A",
        "states": {"A": {}, "Big": {}, "Small": {}, "Other": {}},
        "transitions": [
            {"from": "A", "to": "Big", "on_event": {"type": "N | M", "n__ge": 10}},
            {"from": "A", "to": "Small", "on_event": {"type": "N", "any": [
                {"n__lt": 3}, {"__ref__": {"field": "n", "op": "eq", "value": null, "source": "event",
                                           "value_ref": {"source": "context", "field": "magic"}}}]}},
            {"from": "A", "to": "Other", "on_event": {"type": "N", "tag__in": ["x", "y"]}}
        ]
    }));
    let mut host = TestHost::default();
    let cases = [
        ("N", json!({"n": 12}), "A"),
        ("M", json!({"n": 10}), "Big"),
        ("N", json!({"n": 1}), "Small"),
        ("N", json!({"n": 7}), "Small"), // == context.magic
        ("N", json!({"n": 5}), "A"),
        ("N", json!({"n": "abc"}), "A"), // "abc" >= 10 is a TypeError: false
        ("N", json!({"tag": "y"}), "Other"),
        ("N", json!({}), "A"),
    ];
    for (kind, data, want) in cases {
        let mut exe = Execution::new("m");
        exe.context.insert("magic".into(), json!(7));
        run_ready(start(&d, &mut exe, &mut host)).unwrap().unwrap();
        send(&d, &mut exe, &mut host, kind, data.clone()).unwrap();
        let want = if kind == "N" && data == json!({"n": 12}) {
            "Big"
        } else {
            want
        };
        assert_eq!(exe.active_path.as_deref(), Some(want), "{kind} {data}");
    }
}

#[test]
fn sinks_bubble_outcome_and_done() {
    let d = defn(json!({
        "start": "Work",
        "states": {
            "Work": {"start": "W1", "on_exit": "work.out",
                     "states": {"W1": {}, "Ok": {"outcome": "success", "on_exit": "ok.out"}},
                     "transitions": [{"from": "W1", "to": "Ok", "on_event": {"type": "Finish"}}]},
            "End": {"outcome": "outer"}
        },
        "transitions": [{"from": "Work", "to": "End"}]
    }));
    let mut host = TestHost::default();
    let (mut exe, _) = started(&d, &mut host);
    send(&d, &mut exe, &mut host, "Finish", json!({})).unwrap();
    // Ok is a sink: its exit runs, it bubbles to Work, whose automatic transition goes to End
    assert_eq!(exe.active_path.as_deref(), Some("End"));
    assert_eq!(exe.status, Status::Done);
    // the innermost terminal with an outcome set it
    assert_eq!(exe.outcome.as_deref(), Some("success"));
    assert!(host.calls.contains(&"ok.out/on_exit".to_string()));
    assert!(
        !exe.history.contains_key("Work"),
        "a bubbling sink forgets its parent's history"
    );
}

#[test]
fn selectors_map_str_of_the_result() {
    let d = defn(json!({
        "start": "A",
        "states": {"A": {}, "One": {}, "Yes": {}, "Else": {}},
        "transitions": [{"from": "A", "on_event": {"type": "Go"},
                         "selector": {"function": "pick", "mapper": {"1.0": "One", "True": "Yes"}, "default": "Else"}}]
    }));
    for (value, want) in [
        (json!(1.0), "One"),
        (json!(true), "Yes"),
        (json!(1), "Else"),
    ] {
        let mut host = TestHost::default();
        host.selector.insert("pick".into(), VecDeque::from([value]));
        let (mut exe, _) = started(&d, &mut host);
        send(&d, &mut exe, &mut host, "Go", json!({})).unwrap();
        assert_eq!(exe.active_path.as_deref(), Some(want));
        assert_eq!(exe.status, Status::Done);
    }
    let d = defn(json!({
        "start": "A", "states": {"A": {}, "B": {}},
        "transitions": [{"from": "A", "on_event": {"type": "Go"}, "selector": {"function": "pick", "mapper": {"b": "B"}}}]
    }));
    let mut host = TestHost::default();
    host.selector
        .insert("pick".into(), VecDeque::from([json!("x")]));
    let (mut exe, _) = started(&d, &mut host);
    let err = send(&d, &mut exe, &mut host, "Go", json!({})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "AssertionError: selector result 'x' matched no branch and no `else`"
    );
}

#[test]
fn choose_and_set() {
    let d = defn(json!({
        "start": "A",
        "context_schema": {"n": {"type": "int", "default": 0}},
        "states": {"A": {"on_enter": "a.in"}, "Hi": {}, "Lo": {}},
        "transitions": [{"from": "A", "on_event": {"type": "Go"},
            "set": [{"field": "n", "expr": {"arith": {"op": "+", "left": {"ref": {"source": "context", "field": "n"}},
                                                      "right": {"ref": {"source": "event", "field": "k"}}}}}],
            "choice": {"branches": [{"when": {"k__gt": 5}, "to": "Hi",
                                     "set": [{"field": "tag", "expr": {"lit": "hi"}}]}],
                       "default": "Lo", "default_set": [{"field": "tag", "expr": {"lit": "lo"}}]}}]
    }));
    let mut host = TestHost::default();
    let mut exe = Execution::new("m");
    exe.context.insert("n".into(), json!(1));
    run_ready(start(&d, &mut exe, &mut host)).unwrap().unwrap();
    let fx = send(&d, &mut exe, &mut host, "Go", json!({"k": 9})).unwrap();
    assert_eq!(exe.active_path.as_deref(), Some("Hi"));
    assert_eq!(exe.context["n"], json!(10));
    assert_eq!(exe.context["tag"], json!("hi"));
    assert_eq!(
        serde_json::to_value(&fx.assigned).unwrap(),
        json!({"n": 10, "tag": "hi"})
    );

    let mut exe = Execution::new("m");
    exe.context.insert("n".into(), json!(1));
    run_ready(start(&d, &mut exe, &mut host)).unwrap().unwrap();
    send(&d, &mut exe, &mut host, "Go", json!({"k": 2})).unwrap();
    assert_eq!(exe.active_path.as_deref(), Some("Lo"));
    assert_eq!(exe.context["tag"], json!("lo"));

    // an expression error is raised before any state is left
    let mut exe = Execution::new("m");
    exe.context.insert("n".into(), json!(1));
    run_ready(start(&d, &mut exe, &mut host)).unwrap().unwrap();
    let err = send(&d, &mut exe, &mut host, "Go", json!({"k": "x"})).unwrap_err();
    assert!(matches!(err, EngineError::Expression(_)));
    // "x" > 5 is false: default branch; then n + "x" fails
    assert_eq!(err.to_string(), "`+` needs numbers, got str 'x'");
    assert_eq!(exe.active_path.as_deref(), Some("A"));
}

#[test]
fn orthogonal_fork_join_carry_and_region_results() {
    let d = defn(json!({
        "start": "Fork",
        "states": {
            "Fork": {"type": "OrthogonalState", "invoke_with": {"amount": "total"},
                     "states": {
                         "Pay": {"start": "P", "carry": ["receipt"], "states": {"P": {}, "Paid": {"outcome": "success"}},
                                 "transitions": [{"from": "P", "to": "Paid", "on_event": {"type": "Paid"}}]},
                         "Ship": {"start": "S", "states": {"S": {}, "Shipped": {}},
                                  "transitions": [{"from": "S", "to": "Shipped", "on_event": {"type": "Shipped"}}]}
                     }},
            "Done": {"outcome": "success"}
        },
        "transitions": [{"from": "Fork", "to": "Done"}]
    }));
    let mut host = TestHost::default();
    let mut exe = Execution::new("m").with_id("p");
    exe.context.insert("total".into(), json!(5));
    let fx = run_ready(start(&d, &mut exe, &mut host)).unwrap().unwrap();
    assert_eq!(exe.active_path.as_deref(), Some("Fork"));
    let ids: Vec<&str> = fx.spawns.iter().map(|s| s.child_id.as_str()).collect();
    assert_eq!(ids, ["p:Fork.Pay:0", "p:Fork.Ship:0"]);
    assert_eq!(fx.spawns[0].context, obj(json!({"amount": 5})));

    // a region runs as its own execution over the same definition
    let mut pay = Execution::new("m").with_id("p:Fork.Pay:0");
    pay.root_path = "Fork.Pay".into();
    pay.parent_id = Some("p".into());
    pay.child_id = Some("p:Fork.Pay:0".into());
    pay.context = fx.spawns[0].context.clone();
    run_ready(start(&d, &mut pay, &mut host)).unwrap().unwrap();
    assert_eq!(pay.active_path.as_deref(), Some("Fork.Pay.P"));
    pay.context.insert("receipt".into(), json!("r-1"));
    let fx = send(&d, &mut pay, &mut host, "Paid", json!({})).unwrap();
    assert_eq!(pay.status, Status::Done);
    assert_eq!(pay.outcome.as_deref(), Some("success"));
    let (to, finished) = &fx.emits[0];
    assert_eq!(to.as_deref(), Some("p"));
    assert_eq!(
        Value::Object(finished.data.clone()),
        json!({"child_id": "p:Fork.Pay:0", "outcome": "success", "receipt": "r-1"})
    );

    // the join waits for every region
    let ev = finished.clone();
    run_ready(process(&d, &mut exe, &ev, &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe.active_path.as_deref(), Some("Fork"));
    let ship_done = Event::new("Finished")
        .with_data(obj(json!({"child_id": "p:Fork.Ship:0", "outcome": null})));
    run_ready(process(&d, &mut exe, &ship_done, &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe.active_path.as_deref(), Some("Done"));
    assert_eq!(exe.status, Status::Done);
    assert_eq!(
        exe.context["region_results"],
        json!({"Fork.Pay": {"outcome": "success", "receipt": "r-1"}, "Fork.Ship": {"outcome": null}})
    );
    assert_eq!(exe.invoke_seq["Fork"], 1);
}

/// A fork replaces `children` with exactly the new regions' fresh entries, whatever the
/// previous entries were: as many (rewritten in place), one of them already holding a new
/// key at a later place, or a different number.
#[test]
fn a_fork_leaves_only_fresh_region_entries() {
    let d = defn(json!({
        "start": "Fork",
        "states": {
            "Fork": {"type": "OrthogonalState", "states": {
                "A": {"start": "W", "states": {"W": {}}},
                "B": {"start": "W", "states": {"W": {}}}
            }}
        }
    }));
    let fresh = {
        let mut exe = Execution::new("m").with_id("e");
        run_ready(start(&d, &mut exe, &mut TestHost::default()))
            .unwrap()
            .unwrap();
        serde_json::to_string(&exe.children).unwrap()
    };
    assert_eq!(
        fresh,
        r#"{"e:Fork.A:0":{"root_path":"Fork.A","finished":false,"outcome":null,"result":{},"submachine":false,"key":"Fork.A"},"e:Fork.B:0":{"root_path":"Fork.B","finished":false,"outcome":null,"result":{},"submachine":false,"key":"Fork.B"}}"#
    );
    let stale = ChildState {
        root_path: "Old".into(),
        finished: true,
        outcome: Some("failed".into()),
        result: obj(json!({"x": 1})),
        submachine: true,
        key: "Old".into(),
        extra: obj(json!({"y": 2})),
    };
    for keys in [
        &["e:Old:0", "e:Old:1"][..],
        &["e:Old:0", "e:Fork.A:0"],
        &["e:Fork.B:0", "e:Fork.A:0"],
        &["e:Old:0"],
        &["e:Old:0", "e:Old:1", "e:Old:2"],
    ] {
        let mut exe = Execution::new("m").with_id("e");
        for k in keys {
            exe.children.insert((*k).into(), stale.clone());
        }
        run_ready(start(&d, &mut exe, &mut TestHost::default()))
            .unwrap()
            .unwrap();
        assert_eq!(
            serde_json::to_string(&exe.children).unwrap(),
            fresh,
            "{keys:?}"
        );
    }
}

#[test]
fn cancel_on_failure_leaves_and_cancels_live_regions() {
    let d = defn(json!({
        "start": "Fork",
        "states": {
            "Fork": {"type": "OrthogonalState", "cancel_on_failure": true,
                     "states": {"R1": {"start": "X", "states": {"X": {}}}, "R2": {"start": "Y", "states": {"Y": {}}}}},
            "Failed": {"outcome": "failed"}
        },
        "transitions": [{"from": "Fork", "to": "Failed"}]
    }));
    let mut host = TestHost::default();
    let mut exe = Execution::new("m").with_id("p");
    run_ready(start(&d, &mut exe, &mut host)).unwrap().unwrap();
    let ev = Event::new("Finished")
        .with_data(obj(json!({"child_id": "p:Fork.R1:0", "outcome": "failed"})));
    let fx = run_ready(process(&d, &mut exe, &ev, &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe.active_path.as_deref(), Some("Failed"));
    assert_eq!(exe.outcome.as_deref(), Some("failed"));
    assert_eq!(fx.emits.len(), 1);
    assert_eq!(fx.emits[0].0.as_deref(), Some("p:Fork.R2:0"));
    assert_eq!(fx.emits[0].1.kind, "Cancel");
}

#[test]
fn timers_arm_cancel_stale_and_bubble() {
    let d = defn(json!({
        "start": "Outer",
        "states": {
            "Outer": {"start": "Wait", "timeout": 100,
                      "states": {"Wait": {"timeout": {"context": "delay"}}, "Retry": {}},
                      "transitions": [{"from": "Wait", "to": "Retry", "on_event": {"type": "Timeout"}},
                                      {"from": "Retry", "to": "Wait", "on_event": {"type": "Again"}}]},
            "GaveUp": {}
        },
        "transitions": [{"from": "Outer", "to": "GaveUp", "on_event": {"type": "Timeout"}}]
    }));
    let mut host = TestHost {
        now: 1000.0,
        ..TestHost::default()
    };
    let mut exe = Execution::new("m").with_id("e");
    exe.context.insert("delay".into(), json!(2.5));
    let fx = run_ready(start(&d, &mut exe, &mut host)).unwrap().unwrap();
    assert_eq!(
        fx.timers,
        [
            TimerOp::Schedule {
                path: "Outer".into(),
                fire_at: 1100.0
            },
            TimerOp::Schedule {
                path: "Outer.Wait".into(),
                fire_at: 1002.5
            }
        ]
    );
    let t = timeout_event("e", "Outer.Wait", 1002.5);
    assert_eq!(t.id, "timeout:e:Outer.Wait:1002.5");
    let fx = run_ready(process(&d, &mut exe, &t, &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe.active_path.as_deref(), Some("Outer.Retry"));
    assert_eq!(
        fx.timers,
        [TimerOp::Cancel {
            path: "Outer.Wait".into()
        }]
    );
    assert_eq!(exe.processed_events, 1);
    // stale: Wait is no longer active
    let before = exe.clone();
    run_ready(process(&d, &mut exe, &t, &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe, before);
    // the composite's budget resolves at Outer, not shadowed by the inner transition
    let t = timeout_event("e", "Outer", 1100.0);
    run_ready(process(&d, &mut exe, &t, &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe.active_path.as_deref(), Some("GaveUp"));
    assert_eq!(exe.status, Status::Done);
}

#[test]
fn defer_holds_and_redelivers_fifo() {
    let d = defn(json!({
        "start": "Busy",
        "states": {"Busy": {"defer": ["Job"]}, "Free": {}, "Got": {}},
        "transitions": [{"from": "Busy", "to": "Free", "on_event": {"type": "Ready"}},
                        {"from": "Free", "to": "Got", "on_event": {"type": "Job", "n__eq": 1}},
                        {"from": "Got", "to": "Free", "on_event": {"type": "Again"}}]
    }));
    let mut host = TestHost::default();
    let (mut exe, _) = started(&d, &mut host);
    send(&d, &mut exe, &mut host, "Job", json!({"n": 2})).unwrap();
    send(&d, &mut exe, &mut host, "Job", json!({"n": 1})).unwrap();
    assert_eq!(exe.deferred.len(), 2);
    send(&d, &mut exe, &mut host, "Ready", json!({})).unwrap();
    // the n=2 job doesn't match in Free; the n=1 one is re-delivered
    assert_eq!(exe.active_path.as_deref(), Some("Got"));
    assert_eq!(exe.deferred.len(), 1);
    assert_eq!(exe.deferred[0].data["n"], json!(2));
    assert_eq!(exe.processed_events, 3);
}

#[test]
fn activity_runs_when_nothing_matches() {
    let d = defn(json!({
        "start": "A",
        "states": {"A": {"on_activity": {"function": "a.act", "inputs": {"x": 1}}}, "B": {}},
        "transitions": [{"from": "A", "to": "B", "on_event": {"type": "Go"}}]
    }));
    let mut host = TestHost::default();
    let (mut exe, _) = started(&d, &mut host);
    send(&d, &mut exe, &mut host, "Ping", json!({})).unwrap();
    assert_eq!(host.calls, ["a.act/on_activity"]);
}

#[test]
fn control_events() {
    let d = defn(json!({
        "start": "A",
        "context_schema": {"tries": {"type": "int", "default": 3}},
        "states": {"A": {}, "B": {"start": "B1", "states": {"B1": {}, "B2": {}}}, "Cleaned": {"outcome": "cancelled"}},
        "transitions": [{"from": "A", "to": "B", "on_event": {"type": "Go"}},
                        {"from": "B", "to": "Cleaned", "on_event": {"type": "Cancel"}}]
    }));
    let mut host = TestHost::default();
    // Start only from PENDING, its data seeding the context
    let mut exe = Execution::new("m");
    let start_ev = Event::new("Start").with_data(obj(json!({"who": "me"})));
    run_ready(process(&d, &mut exe, &start_ev, &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe.status, Status::Running);
    assert_eq!(exe.context["who"], json!("me"));
    let again = Event::new("Start").with_data(obj(json!({"who": "other"})));
    run_ready(process(&d, &mut exe, &again, &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe.context["who"], json!("me"));

    // Cancel without a handler: forceful
    let cancel = Event::new("Cancel");
    assert!(!has_cancel_handler(&d, &exe, &cancel).unwrap());
    run_ready(process(&d, &mut exe, &cancel, &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe.status, Status::Cancelled);
    assert_eq!(exe.processed_events, 0);

    // Reset: back to the start, defaults restored
    let reset = Event::new("Reset");
    run_ready(process(&d, &mut exe, &reset, &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe.status, Status::Running);
    assert_eq!(Value::Object(exe.context.clone()), json!({"tries": 3}));
    assert_eq!(exe.active_path.as_deref(), Some("A"));

    // Cancel with a handler to a terminal: cooperative
    send(&d, &mut exe, &mut host, "Go", json!({})).unwrap();
    assert!(has_cancel_handler(&d, &exe, &cancel).unwrap());
    run_ready(process(&d, &mut exe, &cancel, &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe.status, Status::Done);
    assert_eq!(exe.outcome.as_deref(), Some("cancelled"));

    // SetState: only a leaf of a RUNNING execution
    run_ready(process(&d, &mut exe, &reset, &mut host))
        .unwrap()
        .unwrap();
    let set = |p: &str| Event::new("SetState").with_data(obj(json!({"current_state": p})));
    run_ready(process(&d, &mut exe, &set("B"), &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe.active_path.as_deref(), Some("A"));
    run_ready(process(&d, &mut exe, &set("B.B2"), &mut host))
        .unwrap()
        .unwrap();
    // parked on B2, then drained: a sink, it bubbles up to B (which handles Cancel)
    assert_eq!(exe.active_path.as_deref(), Some("B"));
}

#[test]
fn action_errors_leave_the_execution_where_harel_does() {
    let d = defn(json!({
        "start": "A",
        "states": {"A": {}, "B": {"start": "B1", "on_enter": "b.in", "states": {"B1": {"on_enter": "b1.in"}}},
                   "Oops": {}},
        "transitions": [{"from": "A", "to": "B", "on_event": {"type": "Go"}},
                        {"from": "B", "to": "Oops", "on_event": {"type": "error", "type__eq": "Boom"}}]
    }));
    let mut host = TestHost::default();
    host.fail
        .insert("b1.in".into(), ActionError::new("Boom", "no"));
    let (mut exe, _) = started(&d, &mut host);
    let err = send(&d, &mut exe, &mut host, "Go", json!({})).unwrap_err();
    match &err {
        EngineError::Action {
            error,
            kind,
            action,
        } => {
            assert_eq!(error.to_string(), "Boom: no");
            assert_eq!(*kind, CallKind::Enter);
            assert_eq!(action, "b1.in");
        }
        other => panic!("{other:?}"),
    }
    // positioned on the failing child before its enter ran
    assert_eq!(exe.active_path.as_deref(), Some("B.B1"));
    assert_eq!(exe.processed_events, 0);
    let ev = harel_engine::error_event("Boom", "no");
    assert!(has_error_handler(&d, &exe, &ev).unwrap());
    assert!(!has_error_handler(&d, &exe, &harel_engine::error_event("Other", "x")).unwrap());
}

#[test]
fn ttl_expires_or_is_handled() {
    let plain = defn(
        json!({"start": "A", "ttl": 60, "states": {"A": {}, "B": {}},
        "transitions": [{"from": "A", "to": "B", "on_event": {"type": "Go"}}]}),
    );
    let mut host = TestHost {
        now: 10.0,
        ..TestHost::default()
    };
    let (mut exe, fx) = started(&plain, &mut host);
    assert_eq!(
        fx.timers,
        [TimerOp::Schedule {
            path: TTL_PATH.into(),
            fire_at: 70.0
        }]
    );
    assert_eq!(exe.expires_at, Some(70.0));
    host.now = 20.0;
    send(&plain, &mut exe, &mut host, "Ping", json!({})).unwrap();
    assert_eq!(exe.expires_at, Some(80.0));
    // the earlier arming is stale
    let stale = timeout_event(&exe.id, TTL_PATH, 70.0);
    run_ready(process(&plain, &mut exe, &stale, &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe.status, Status::Running);
    let due = timeout_event(&exe.id, TTL_PATH, 80.0);
    run_ready(process(&plain, &mut exe, &due, &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe.status, Status::Cancelled);
    assert_eq!(exe.outcome.as_deref(), Some("expired"));

    let handled = defn(
        json!({"start": "A", "ttl": 60, "states": {"A": {}, "Gone": {"outcome": "timed_out"}},
        "transitions": [{"from": "A", "to": "Gone", "on_event": {"type": "Expired"}}]}),
    );
    let (mut exe, _) = started(&handled, &mut host);
    let due = timeout_event(&exe.id, TTL_PATH, exe.expires_at.unwrap());
    run_ready(process(&handled, &mut exe, &due, &mut host))
        .unwrap()
        .unwrap();
    assert_eq!(exe.status, Status::Done);
    assert_eq!(exe.outcome.as_deref(), Some("timed_out"));
}
