//! The execution timeline (harel `runtime._trace_step`): one step per commit, opt-in.

use harel_model::{Event, Execution, KeyMap, Object};
use serde_json::{Number, Value};

/// One trace step: what drove it, the transition, the actions run, what a `set` wrote
/// (only when something was), and the resulting context. `event` None is the start.
pub fn trace_step(
    event: Option<&Event>,
    from_path: Option<&str>,
    exe: &Execution,
    actions: &[String],
    timestamp: f64,
    assigned: &KeyMap<Value>,
) -> Object {
    let mut step = Object::new();
    step.insert(
        "event_kind".into(),
        Value::String(event.map_or("Start", |e| e.kind.as_str()).to_string()),
    );
    step.insert(
        "event_data".into(),
        Value::Object(event.map(|e| e.data.clone()).unwrap_or_default()),
    );
    let path = |p: Option<&str>| p.map_or(Value::Null, |p| Value::String(p.to_string()));
    step.insert("from_path".into(), path(from_path));
    step.insert("to_path".into(), path(exe.active_path.as_deref()));
    step.insert(
        "actions".into(),
        Value::Array(actions.iter().cloned().map(Value::String).collect()),
    );
    step.insert("context_out".into(), Value::Object(exe.context.clone()));
    step.insert(
        "timestamp".into(),
        Number::from_f64(timestamp).map_or(Value::Null, Value::Number),
    );
    if !assigned.is_empty() {
        let assigned = assigned.iter().map(|(k, v)| (k.to_string(), v.clone()));
        step.insert("assigned".into(), Value::Object(assigned.collect()));
    }
    step
}
