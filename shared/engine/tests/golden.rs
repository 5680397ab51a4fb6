//! Golden tests against harel 0.9.0: each `specs/NAME.json` (`{machine, context, events,
//! selector, fail, now, root_path, parent_id, child_id}`) runs through this engine and the
//! effects of every step plus the final execution must equal what harel Python did with it,
//! recorded in `specs/NAME.harel.jsonl` by `harel_trace.py` (ids and timestamps aside).
//! Both compilations of the rules run every spec: the async engine and `blocking`.

use harel_engine::blocking::{self, Ready};
use harel_engine::{
    process, run_ready, start, ActionCall, ActionError, CallKind, StepEffects, TimerOp,
};
use harel_model::{build_definition, Event, Execution};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};

struct TraceHost {
    now: f64,
    selector: HashMap<String, VecDeque<Value>>,
    fail: HashMap<String, String>,
    out: Vec<Value>,
}

impl blocking::Host for TraceHost {
    fn call(&mut self, call: ActionCall<'_>) -> Result<Value, ActionError> {
        let f = call.action.function.clone();
        self.out.push(json!(["call", f, call.kind.as_str()]));
        if let Some(kind) = self.fail.get(&f) {
            return Err(ActionError::new(kind.clone(), "boom"));
        }
        let v = if call.kind == CallKind::Selector {
            self.selector
                .get_mut(&f)
                .and_then(VecDeque::pop_front)
                .unwrap_or(Value::Null)
        } else {
            Value::Null
        };
        Ok(v)
    }
    fn now(&mut self) -> f64 {
        self.now
    }
}

fn effects(host: &mut TraceHost, fx: StepEffects) -> Value {
    let mut out = std::mem::take(&mut host.out);
    for t in fx.timers {
        out.push(match t {
            TimerOp::Schedule { path, fire_at } => json!(["schedule", path, fire_at]),
            TimerOp::Cancel { path } => json!(["cancel", path]),
        });
    }
    for (to, ev) in fx.emits {
        out.push(json!(["emit", to, ev.kind, ev.data]));
    }
    if !fx.spawns.is_empty() {
        let specs: Vec<Value> = fx
            .spawns
            .into_iter()
            .map(|s| json!([s.child_id, s.root_path, s.context]))
            .collect();
        out.push(json!(["spawn", specs]));
    }
    Value::Array(out)
}

fn trace(path: &std::path::Path, blocking: bool) -> Vec<Value> {
    let mut lines = Vec::new();
    let spec: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("readable")).expect("json");
    let d = build_definition(&spec["machine"], "m", None).expect("a valid machine");
    let mut exe = Execution::new("m").with_id("e1");
    if let Some(c) = spec["context"].as_object() {
        exe.context = c.clone();
    }
    for k in ["parent_id", "child_id", "root_path"] {
        if let Some(v) = spec[k].as_str() {
            match k {
                "parent_id" => exe.parent_id = Some(v.into()),
                "child_id" => exe.child_id = Some(v.into()),
                _ => exe.root_path = v.into(),
            }
        }
    }
    let mut host = Ready(TraceHost {
        now: spec["now"].as_f64().unwrap_or(0.0),
        selector: spec["selector"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_array().cloned().unwrap_or_default().into()))
                    .collect()
            })
            .unwrap_or_default(),
        fail: spec["fail"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("Error").to_string()))
                    .collect()
            })
            .unwrap_or_default(),
        out: Vec::new(),
    });
    let report = |host: &mut TraceHost, r: Result<StepEffects, harel_engine::EngineError>| match r {
        Ok(fx) => effects(host, fx),
        Err(e) => {
            let mut out = std::mem::take(&mut host.out);
            let (kind, msg) = match &e {
                harel_engine::EngineError::Action { error, .. } => {
                    (error.kind.clone(), error.message.clone())
                }
                harel_engine::EngineError::Expression(x) => ("ExpressionError".into(), x.0.clone()),
                harel_engine::EngineError::Assertion(m) => ("AssertionError".into(), m.clone()),
                other => ("Error".into(), other.to_string()),
            };
            out.push(json!(["error", kind, msg]));
            Value::Array(out)
        }
    };
    let r = if blocking {
        blocking::start(&d, &mut exe, &mut host.0)
    } else {
        run_ready(start(&d, &mut exe, &mut host)).expect("ready")
    };
    lines.push(json!(["start", report(&mut host.0, r)]));
    for step in spec["events"].as_array().cloned().unwrap_or_default() {
        let kind = step[0].as_str().expect("kind");
        let mut ev = Event::new(kind).with_data(step[1].as_object().cloned().unwrap_or_default());
        if let Some(id) = step.get(2).and_then(Value::as_str) {
            ev.id = id.into();
        }
        if let Some(now) = step.get(3).and_then(Value::as_f64) {
            host.0.now = now;
        }
        let r = if blocking {
            blocking::process(&d, &mut exe, &ev, &mut host.0)
        } else {
            run_ready(process(&d, &mut exe, &ev, &mut host)).expect("ready")
        };
        lines.push(json!([kind, report(&mut host.0, r)]));
    }
    let mut v = serde_json::to_value(&exe).expect("serializes");
    if let Some(o) = v.as_object_mut() {
        o.remove("created_at");
        o.remove("updated_at");
    }
    lines.push(v);
    lines
}

/// Event ids (and times) are fresh uuids on both sides.
fn strip_ids(v: &mut Value) {
    if let Some(deferred) = v.get_mut("deferred").and_then(Value::as_array_mut) {
        for e in deferred {
            if let Some(o) = e.as_object_mut() {
                for k in ["id", "created_time", "received_time"] {
                    o.remove(k);
                }
            }
        }
    }
}

#[test]
fn engine_matches_harel_python_on_every_spec() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/specs");
    let mut specs: Vec<_> = std::fs::read_dir(&dir)
        .expect("the specs folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    specs.sort();
    assert!(specs.len() >= 20, "the corpus is there");
    for spec in specs {
        let golden = spec.with_extension("harel.jsonl");
        let want: Vec<Value> = std::fs::read_to_string(&golden)
            .unwrap_or_else(|e| panic!("{}: {e}", golden.display()))
            .lines()
            .map(|l| serde_json::from_str(l).expect("golden json"))
            .collect();
        let mut want = want;
        if let Some(w) = want.last_mut() {
            strip_ids(w);
        }
        for blocking in [false, true] {
            let mut got = trace(&spec, blocking);
            if let Some(g) = got.last_mut() {
                strip_ids(g);
            }
            let engine = if blocking { "blocking" } else { "async" };
            assert_eq!(got.len(), want.len(), "{} ({engine})", spec.display());
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g, w, "{} ({engine})", spec.display());
            }
        }
    }
}
