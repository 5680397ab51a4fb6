//! Typed events and context schemas (harel's `definition/events.py`), with harel's messages.

use indexmap::IndexMap;
use serde_json::Value;

use crate::execution::{KeyMap, Object};
use crate::pyrepr::{py_repr, py_type_name};

/// Field types a datum may declare; `any` opts out of checking.
pub const FIELD_TYPES: [&str; 5] = ["string", "int", "float", "bool", "any"];

/// Events the engine itself emits or consumes: never declared, never flagged unknown.
pub const RESERVED_EVENTS: [&str; 9] = [
    "Timeout", "Finished", "Cancel", "Reset", "SetState", "Start", "Returned", "error", "Expired",
];

/// Whether `kind` is one of the engine's own events ([`RESERVED_EVENTS`]): a transition or a
/// sender may name it undeclared, and its data is checked against no declaration.
pub fn is_reserved_event(kind: &str) -> bool {
    RESERVED_EVENTS.contains(&kind)
}

/// One declared field of an event's data or of a machine's context. A context field may give
/// the `default` an execution starts with (None: no default; the language has no null).
#[derive(Clone, Debug, PartialEq)]
pub struct FieldSpec {
    /// One of [`FIELD_TYPES`] (`any` unless declared).
    pub type_: String,
    /// Whether the field must be present (true unless declared otherwise); a field that is not
    /// may also be null.
    pub required: bool,
    /// The value a context starts with when it lacks the field ([`with_defaults`]).
    pub default: Option<Value>,
}

impl Default for FieldSpec {
    fn default() -> Self {
        FieldSpec {
            type_: "any".into(),
            required: true,
            default: None,
        }
    }
}

/// A declared event: its name and the schema of its data.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct EventType {
    /// The event kind, as transitions match it.
    pub name: String,
    /// Its data's declared fields, in declaration order.
    pub fields: KeyMap<FieldSpec>,
}

/// Whether `value` is of the declared type: `int` excludes booleans and floats, `float`
/// accepts an int too.
pub fn value_fits(type_: &str, value: &Value) -> bool {
    match type_ {
        "any" => true,
        "string" => value.is_string(),
        "bool" => value.is_boolean(),
        "int" => value.as_number().is_some_and(|n| !n.is_f64()),
        "float" => value.is_number(),
        _ => false,
    }
}

/// What in `values` breaks `schema`, in harel's words. Undeclared keys are allowed.
pub fn schema_problems(
    schema: &KeyMap<FieldSpec>,
    values: &Object,
    check_required: bool,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, spec) in schema {
        let Some(value) = values.get(name.as_str()) else {
            if check_required && spec.required {
                problems.push(format!(
                    "missing required field {} ({})",
                    py_repr(&Value::String(name.to_string())),
                    spec.type_
                ));
            }
            continue;
        };
        if value.is_null() && !spec.required {
            continue;
        }
        if !value_fits(&spec.type_, value) {
            problems.push(format!(
                "field {} must be {}, got {} {}",
                py_repr(&Value::String(name.to_string())),
                spec.type_,
                py_type_name(value),
                py_repr(value)
            ));
        }
    }
    problems
}

/// `context` with every schema field it lacks that declares a default added.
pub fn with_defaults(schema: &KeyMap<FieldSpec>, context: &Object) -> Object {
    let mut filled = context.clone();
    for (name, spec) in schema {
        if let Some(default) = &spec.default {
            if !filled.contains_key(name.as_str()) {
                filled.insert(name.to_string(), default.clone());
            }
        }
    }
    filled
}

/// A context that doesn't fit its machine's declared `context` schema.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("context doesn't fit the machine's `context` schema: {}", .problems.join("; "))]
pub struct ContextError {
    /// Every mismatch, one message each, in schema order.
    pub problems: Vec<String>,
}

/// `context` against the machine's `context` schema: every problem at once, or Ok. With
/// `check_required` false a missing required field passes (a context not complete yet).
pub fn check_context(
    schema: &KeyMap<FieldSpec>,
    context: &Object,
    check_required: bool,
) -> Result<(), ContextError> {
    let problems = schema_problems(schema, context, check_required);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ContextError { problems })
    }
}

/// An event whose data doesn't fit its declaration.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("event {} doesn't fit its declaration: {}", py_repr(&Value::String(.kind.clone())), .problems.join("; "))]
pub struct EventError {
    /// The event's kind.
    pub kind: String,
    /// Every mismatch, one message each, in schema order.
    pub problems: Vec<String>,
}

/// Check `data` against the declaration of `kind`; an undeclared or reserved kind passes.
pub fn check_event(
    events: &IndexMap<String, EventType>,
    kind: &str,
    data: &Object,
) -> Result<(), EventError> {
    if is_reserved_event(kind) {
        return Ok(());
    }
    let Some(etype) = events.get(kind) else {
        return Ok(());
    };
    let problems = schema_problems(&etype.fields, data, true);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(EventError {
            kind: kind.to_string(),
            problems,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> KeyMap<FieldSpec> {
        let mut s = KeyMap::default();
        s.insert(
            "amount".into(),
            FieldSpec {
                type_: "int".into(),
                required: true,
                default: None,
            },
        );
        s.insert(
            "note".into(),
            FieldSpec {
                type_: "string".into(),
                required: false,
                default: None,
            },
        );
        s.insert(
            "tries".into(),
            FieldSpec {
                type_: "int".into(),
                required: true,
                default: Some(json!(3)),
            },
        );
        s
    }

    #[test]
    fn messages_match_harel() {
        let data = json!({"amount": true, "note": null})
            .as_object()
            .unwrap()
            .clone();
        let err = check_context(&schema(), &data, true).unwrap_err();
        assert_eq!(
            err.to_string(),
            "context doesn't fit the machine's `context` schema: field 'amount' must be int, got bool True; missing required field 'tries' (int)"
        );
        let mut events = IndexMap::new();
        events.insert(
            "Pay".to_string(),
            EventType {
                name: "Pay".into(),
                fields: schema(),
            },
        );
        let err = check_event(&events, "Pay", &Object::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "event 'Pay' doesn't fit its declaration: missing required field 'amount' (int); missing required field 'tries' (int)"
        );
        assert!(check_event(&events, "Timeout", &Object::new()).is_ok());
    }

    #[test]
    fn defaults_fill_only_missing_fields() {
        let ctx = json!({"amount": 1}).as_object().unwrap().clone();
        let filled = with_defaults(&schema(), &ctx);
        assert_eq!(Value::Object(filled), json!({"amount": 1, "tries": 3}));
    }

    #[test]
    fn int_and_float_are_pythons() {
        assert!(value_fits("float", &json!(1)));
        assert!(!value_fits("int", &json!(1.0)));
        assert!(!value_fits("int", &json!(true)));
    }
}
