//! harel 0.9.0's FaaS wire contract (`harel/faas.py`), both ways:
//!
//! ```text
//! client -> function: {"context": {...}, "event": {"kind": K, "data": {...}}, "inputs": {...},
//! "idempotency_key": "..."}
//! function -> client: {"context": {...}, "result": ...}
//! ```

use harel_model::{Event, Object};
use serde_json::{json, Value};

/// The event kind sent when the engine calls an action with no event (the start of an
/// execution, an automatic transition). harel Python's stub reads `event.kind` and fails
/// there; a `handler(fn)` function needs an event, so it gets this one, with no data.
pub const NO_EVENT_KIND: &str = "Start";

/// The client -> function JSON of one call (`_build_payload`).
pub fn request(
    context: &Object,
    event: Option<&Event>,
    inputs: &Object,
    idempotency_key: &str,
) -> Value {
    let event = match event {
        Some(e) => json!({"kind": e.kind.as_str(), "data": e.data}),
        None => json!({"kind": NO_EVENT_KIND, "data": {}}),
    };
    json!({
        "context": context,
        "event": event,
        "inputs": inputs,
        "idempotency_key": idempotency_key,
    })
}

/// A function -> client answer, read as harel's `_apply` reads it: `context` (absent: `{}`,
/// which empties the context as harel does) and `result` (absent: null).
#[derive(Debug, PartialEq)]
pub struct Answer {
    /// The execution's new context: it replaces the old one whole.
    pub context: Object,
    /// What the action returns to the machine (null when the answer has none).
    pub result: Value,
}

impl Answer {
    /// Reads a function's answer; an error (the message) when it is not an object or its context is
    /// not an object.
    pub fn from_json(value: Value) -> Result<Answer, String> {
        let Value::Object(mut out) = value else {
            return Err(format!(
                "the answer must be a JSON object {{\"context\": ..., \"result\": ...}}, found {}",
                kind_of(&value)
            ));
        };
        let context = match out.remove("context") {
            None | Some(Value::Null) => Object::new(),
            Some(Value::Object(c)) => c,
            Some(other) => {
                return Err(format!(
                    "the answer's context must be an object, found {}",
                    kind_of(&other)
                ))
            }
        };
        Ok(Answer {
            context,
            result: out.remove("result").unwrap_or(Value::Null),
        })
    }

    /// The answer as the function sends it: `{"context": ..., "result": ...}`.
    pub fn to_json(&self) -> Value {
        json!({"context": self.context, "result": self.result})
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_harels_payload() {
        let mut ctx = Object::new();
        ctx.insert("n".into(), json!(1));
        let ev = Event::new("Pay").with_data(
            json!({"amount": 3})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
        let mut inputs = Object::new();
        inputs.insert("x".into(), json!("y"));
        assert_eq!(
            request(&ctx, Some(&ev), &inputs, "e1:ev:0:a.b"),
            json!({"context": {"n": 1}, "event": {"kind": "Pay", "data": {"amount": 3}},
                   "inputs": {"x": "y"}, "idempotency_key": "e1:ev:0:a.b"})
        );
        assert_eq!(
            request(&ctx, None, &Object::new(), "k")["event"],
            json!({"kind": "Start", "data": {}})
        );
    }

    #[test]
    fn answers_read_as_harel_applies_them() {
        let a = Answer::from_json(json!({"context": {"a": 1}, "result": "ok"})).expect("ok");
        assert_eq!(a.result, json!("ok"));
        assert_eq!(a.context["a"], json!(1));
        let empty = Answer::from_json(json!({"result": 2})).expect("no context");
        assert!(empty.context.is_empty());
        assert!(Answer::from_json(json!("x"))
            .unwrap_err()
            .contains("found a string"));
        assert!(Answer::from_json(json!({"context": [1]}))
            .unwrap_err()
            .contains("context must be an object"));
    }
}
