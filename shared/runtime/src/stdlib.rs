//! harel's standard library (`harel/lib.py`), bound under harel's names: the backoff pair
//! for retry loops, `reset_backoff`, and `join_success` (what `join all|any` desugars to).
//! Same inputs, defaults and context keys; numbers follow Python's int/float rules.

use harel_engine::ActionError;
use harel_model::pyrepr::{py_repr, py_type_name};
use harel_model::{Event, Object};
use serde_json::{Number, Value};

use crate::actions::{ActionContext, ActionRegistry};

/// The name [`exponential_backoff`] is bound under, as a machine refers to it.
pub const EXPONENTIAL_BACKOFF: &str = "harel.lib.exponential_backoff";
/// The name [`linear_backoff`] is bound under.
pub const LINEAR_BACKOFF: &str = "harel.lib.linear_backoff";
/// The name [`reset_backoff`] is bound under.
pub const RESET_BACKOFF: &str = "harel.lib.reset_backoff";
/// The name [`join_success`] is bound under: what `join all|any` desugars to, so a machine
/// with a join needs it bound.
pub const JOIN_SUCCESS: &str = "harel.lib.join_success";
/// Not harel Python's: a domain event for the bus (see `harel_store::events`).
pub const PUBLISH: &str = "harel.lib.publish";

/// Bind every action of this module under its name (what
/// [`ActionRegistry::with_stdlib`] starts from).
pub fn register(registry: &mut ActionRegistry) {
    registry
        .register_fn(EXPONENTIAL_BACKOFF, exponential_backoff)
        .register_fn(LINEAR_BACKOFF, linear_backoff)
        .register_fn(RESET_BACKOFF, reset_backoff)
        .register_fn(JOIN_SUCCESS, join_success)
        .register_fn(PUBLISH, publish);
}

/// A Python number.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn of(v: &Value, what: &str) -> Result<Num, ActionError> {
        match v {
            Value::Bool(b) => Ok(Num::Int(i64::from(*b))),
            Value::Number(n) => Ok(match n.as_i64() {
                Some(i) => Num::Int(i),
                None => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
            }),
            other => Err(ActionError::new(
                "TypeError",
                format!(
                    "{what} must be a number, got {} {}",
                    py_type_name(other),
                    py_repr(other)
                ),
            )),
        }
    }

    fn f(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(x) => x,
        }
    }

    fn value(self) -> Value {
        match self {
            Num::Int(i) => Value::from(i),
            Num::Float(x) => Number::from_f64(x).map_or(Value::Null, Value::Number),
        }
    }

    fn add(self, o: Num) -> Num {
        match (self, o) {
            (Num::Int(a), Num::Int(b)) => a
                .checked_add(b)
                .map_or(Num::Float(a as f64 + b as f64), Num::Int),
            _ => Num::Float(self.f() + o.f()),
        }
    }

    fn mul(self, o: Num) -> Num {
        match (self, o) {
            (Num::Int(a), Num::Int(b)) => a
                .checked_mul(b)
                .map_or(Num::Float(a as f64 * b as f64), Num::Int),
            _ => Num::Float(self.f() * o.f()),
        }
    }

    /// `self ** n` for an int `n >= 0` (the attempt counter).
    fn pow(self, n: i64) -> Num {
        match self {
            Num::Int(b) => u32::try_from(n)
                .ok()
                .and_then(|e| b.checked_pow(e))
                .map_or(Num::Float((b as f64).powf(n as f64)), Num::Int),
            Num::Float(b) => Num::Float(b.powf(n as f64)),
        }
    }
}

fn input(inputs: &Object, key: &str, default: Num) -> Result<Num, ActionError> {
    match inputs.get(key) {
        None => Ok(default),
        Some(v) => Num::of(v, key),
    }
}

fn string_input<'a>(
    inputs: &'a Object,
    key: &str,
    default: &'a str,
) -> Result<&'a str, ActionError> {
    match inputs.get(key) {
        None => Ok(default),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(ActionError::new(
            "TypeError",
            format!("{key} must be a str, got {}", py_type_name(other)),
        )),
    }
}

/// `int(ctx.get(counter, 0))`.
fn attempt(ctx: &Object, counter: &str) -> Result<i64, ActionError> {
    match ctx.get(counter) {
        None => Ok(0),
        Some(Value::Bool(b)) => Ok(i64::from(*b)),
        Some(Value::Number(n)) => Ok(n
            .as_i64()
            .unwrap_or_else(|| n.as_f64().unwrap_or(0.0).trunc() as i64)),
        Some(Value::String(s)) => s.trim().parse().map_err(|_| {
            ActionError::new(
                "ValueError",
                format!(
                    "invalid literal for int() with base 10: {}",
                    py_repr(&Value::String(s.clone()))
                ),
            )
        }),
        Some(other) => Err(ActionError::new(
            "TypeError",
            format!(
                "int() argument must be a string, a bytes-like object or a real number, not '{}'",
                py_type_name(other)
            ),
        )),
    }
}

fn next_backoff(
    ctx: &mut ActionContext<'_>,
    inputs: &Object,
    step: impl Fn(Num, i64) -> Result<Num, ActionError>,
) -> Result<Value, ActionError> {
    let base = input(inputs, "base", Num::Float(1.0))?;
    let into = string_input(inputs, "into", "backoff")?;
    let counter = string_input(inputs, "counter", "__attempt")?;
    let n = attempt(ctx.context, counter)?;
    let mut delay = step(base, n)?;
    if let Some(cap) = inputs.get("cap").filter(|c| !c.is_null()) {
        let cap = Num::of(cap, "cap")?.f();
        // `min(delay, float(cap))` keeps `delay` (and its int type) unless the cap is lower
        if cap < delay.f() {
            delay = Num::Float(cap);
        }
    }
    ctx.context.insert(counter.to_string(), Value::from(n + 1));
    ctx.context.insert(into.to_string(), delay.value());
    Ok(delay.value())
}

/// `base * factor**attempt`, capped, into `context[into]`; bumps the attempt counter.
pub fn exponential_backoff(
    ctx: &mut ActionContext<'_>,
    _event: Option<&Event>,
    inputs: &Object,
) -> Result<Value, ActionError> {
    let factor = input(inputs, "factor", Num::Float(2.0))?;
    next_backoff(ctx, inputs, |b, n| Ok(b.mul(factor.pow(n))))
}

/// `base + step*attempt`, capped, into `context[into]`; bumps the attempt counter.
pub fn linear_backoff(
    ctx: &mut ActionContext<'_>,
    _event: Option<&Event>,
    inputs: &Object,
) -> Result<Value, ActionError> {
    let step = input(inputs, "step", Num::Float(1.0))?;
    next_backoff(ctx, inputs, |b, n| Ok(b.add(step.mul(Num::Int(n)))))
}

/// Clear the attempt counter.
pub fn reset_backoff(
    ctx: &mut ActionContext<'_>,
    _event: Option<&Event>,
    inputs: &Object,
) -> Result<Value, ActionError> {
    let counter = string_input(inputs, "counter", "__attempt")?;
    ctx.context.shift_remove(counter);
    Ok(Value::Null)
}

/// What is wrong with `harel.lib.publish`'s inputs, if anything: `detail_type`, a non-empty
/// string, and one of `keys` (a list of context keys, copied into the detail) or `detail` (an
/// object, or a string holding a JSON object). A host checks every binding at start.
pub fn publish_inputs_error(inputs: &Object) -> Option<String> {
    publish_detail_type(inputs)
        .and_then(|_| publish_source(inputs))
        .err()
        .map(|e| e.message)
}

fn publish_detail_type(inputs: &Object) -> Result<&str, ActionError> {
    match inputs.get("detail_type") {
        Some(Value::String(t)) if !t.trim().is_empty() => Ok(t),
        _ => Err(ActionError::new(
            "ValueError",
            format!("{PUBLISH}: detail_type must be a non-empty string"),
        )),
    }
}

/// Where the detail comes from.
enum DetailSource<'a> {
    Keys(Vec<&'a str>),
    Literal(Object),
}

fn publish_source(inputs: &Object) -> Result<DetailSource<'_>, ActionError> {
    let bad = |m: &str| Err(ActionError::new("ValueError", format!("{PUBLISH}: {m}")));
    for key in inputs.keys() {
        if !matches!(key.as_str(), "detail_type" | "keys" | "detail") {
            return bad(&format!(
                "unknown input {key:?} (it takes detail_type, and keys or detail)"
            ));
        }
    }
    match (inputs.get("keys"), inputs.get("detail")) {
        (Some(_), Some(_)) => bad("give keys or detail, not both"),
        (None, None) => bad("give keys (context keys copied into the detail) or detail"),
        (Some(Value::Array(keys)), None) => keys
            .iter()
            .map(|k| match k {
                Value::String(k) => Ok(k.as_str()),
                other => Err(ActionError::new(
                    "ValueError",
                    format!("{PUBLISH}: keys must be strings, got {other}"),
                )),
            })
            .collect::<Result<_, _>>()
            .map(DetailSource::Keys),
        (Some(_), None) => bad("keys must be a list of context keys"),
        (None, Some(Value::Object(detail))) => Ok(DetailSource::Literal(detail.clone())),
        (None, Some(Value::String(text))) => match serde_json::from_str(text) {
            Ok(Value::Object(detail)) => Ok(DetailSource::Literal(detail)),
            _ => bad("detail must be an object (or a string holding a JSON object)"),
        },
        (None, Some(_)) => bad("detail must be an object (or a string holding a JSON object)"),
    }
}

/// `harel.lib.publish(detail_type: "OrderShipped", keys: ["order_id"])`: a domain event on the
/// bus, committed with this step (nothing if the step does not commit). A key the context
/// lacks is an error, as a missing key is in Python.
pub fn publish(
    ctx: &mut ActionContext<'_>,
    _event: Option<&Event>,
    inputs: &Object,
) -> Result<Value, ActionError> {
    let detail_type = publish_detail_type(inputs)?.to_string();
    let detail = match publish_source(inputs)? {
        DetailSource::Literal(detail) => detail,
        DetailSource::Keys(keys) => {
            let mut detail = Object::new();
            for key in keys {
                let value = ctx.context.get(key).ok_or_else(|| {
                    ActionError::new("KeyError", format!("{PUBLISH}: context has no {key:?}"))
                })?;
                detail.insert(key.into(), value.clone());
            }
            detail
        }
    };
    ctx.published.push(harel_store::DomainEvent {
        detail_type,
        detail,
    });
    Ok(Value::Null)
}

/// Selector over a join's `region_results`: `"pass"` if every (`mode` "all") or some
/// (any other mode) region's outcome is `"success"`, else `"fail"`; none at all fails.
pub fn join_success(
    ctx: &mut ActionContext<'_>,
    _event: Option<&Event>,
    inputs: &Object,
) -> Result<Value, ActionError> {
    let mode = string_input(inputs, "mode", "all")?;
    let oks: Vec<bool> = match ctx.context.get("region_results") {
        None => Vec::new(),
        Some(Value::Object(results)) => results
            .values()
            .map(|r| match r {
                Value::Object(r) => Ok(r.get("outcome").and_then(Value::as_str) == Some("success")),
                other => Err(ActionError::new(
                    "AttributeError",
                    format!("'{}' object has no attribute 'get'", py_type_name(other)),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(ActionError::new(
                "AttributeError",
                format!("'{}' object has no attribute 'values'", py_type_name(other)),
            ))
        }
    };
    let passed = !oks.is_empty()
        && if mode == "all" {
            oks.iter().all(|o| *o)
        } else {
            oks.iter().any(|o| *o)
        };
    Ok(Value::String(if passed { "pass" } else { "fail" }.into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(
        f: fn(&mut ActionContext<'_>, Option<&Event>, &Object) -> Result<Value, ActionError>,
        context: &mut Object,
        inputs: Value,
    ) -> Result<Value, ActionError> {
        let mut published = Vec::new();
        let mut ctx = ActionContext {
            context,
            idempotency_key: "k",
            execution_id: "e",
            published: &mut published,
            deadline: None,
        };
        f(&mut ctx, None, inputs.as_object().unwrap())
    }

    #[test]
    fn publish_copies_keys_or_takes_a_literal_and_refuses_bad_inputs() {
        let mut context = json!({"order_id": "o-1", "total": 5})
            .as_object()
            .unwrap()
            .clone();
        let mut published = Vec::new();
        let mut ctx = ActionContext {
            context: &mut context,
            idempotency_key: "k",
            execution_id: "e",
            published: &mut published,
            deadline: None,
        };
        let keys = json!({"detail_type": "OrderShipped", "keys": ["order_id"]});
        publish(&mut ctx, None, keys.as_object().unwrap()).unwrap();
        let literal = json!({"detail_type": "Hello", "detail": "{\"a\": 1}"});
        publish(&mut ctx, None, literal.as_object().unwrap()).unwrap();
        let missing = json!({"detail_type": "X", "keys": ["nope"]});
        assert_eq!(
            publish(&mut ctx, None, missing.as_object().unwrap())
                .unwrap_err()
                .kind,
            "KeyError"
        );
        assert_eq!(published.len(), 2);
        assert_eq!(
            published[0].detail,
            *json!({"order_id": "o-1"}).as_object().unwrap()
        );
        assert_eq!(published[1].detail, *json!({"a": 1}).as_object().unwrap());
        for bad in [
            json!({"keys": ["a"]}),
            json!({"detail_type": "X"}),
            json!({"detail_type": "X", "keys": ["a"], "detail": {}}),
            json!({"detail_type": "X", "keys": "a"}),
            json!({"detail_type": "X", "detail": 3}),
            json!({"detail_type": "X", "keys": [], "extra": 1}),
        ] {
            assert!(
                publish_inputs_error(bad.as_object().unwrap()).is_some(),
                "{bad}"
            );
        }
        assert!(publish_inputs_error(keys.as_object().unwrap()).is_none());
    }

    #[test]
    fn exponential_backoff_is_pythons() {
        let mut c = Object::new();
        let inputs = json!({"base": 5, "factor": 2, "cap": 12, "into": "wait"});
        assert_eq!(
            call(exponential_backoff, &mut c, inputs.clone()).unwrap(),
            json!(5)
        );
        assert_eq!(
            call(exponential_backoff, &mut c, inputs.clone()).unwrap(),
            json!(10)
        );
        // capped: float(cap)
        let third = call(exponential_backoff, &mut c, inputs).unwrap();
        assert_eq!(third, json!(12.0));
        assert!(third.is_f64());
        assert_eq!(
            Value::Object(c.clone()),
            json!({"__attempt": 3, "wait": 12.0})
        );
        // defaults are floats
        let mut c = Object::new();
        assert_eq!(
            call(exponential_backoff, &mut c, json!({})).unwrap(),
            json!(1.0)
        );
        assert_eq!(
            call(exponential_backoff, &mut c, json!({})).unwrap(),
            json!(2.0)
        );
        assert!(c["backoff"].is_f64());
        call(reset_backoff, &mut c, json!({})).unwrap();
        assert!(!c.contains_key("__attempt"));
    }

    #[test]
    fn linear_backoff_is_pythons() {
        let mut c = Object::new();
        let inputs = json!({"base": 1, "step": 3});
        assert_eq!(
            call(linear_backoff, &mut c, inputs.clone()).unwrap(),
            json!(1)
        );
        assert_eq!(
            call(linear_backoff, &mut c, inputs.clone()).unwrap(),
            json!(4)
        );
        assert!(call(linear_backoff, &mut c, json!({"base": "x"})).is_err());
    }

    #[test]
    fn join_success_modes() {
        let mut c =
            json!({"region_results": {"A": {"outcome": "success"}, "B": {"outcome": "failed"}}})
                .as_object()
                .cloned()
                .unwrap();
        assert_eq!(
            call(join_success, &mut c, json!({})).unwrap(),
            json!("fail")
        );
        assert_eq!(
            call(join_success, &mut c, json!({"mode": "any"})).unwrap(),
            json!("pass")
        );
        let mut empty = Object::new();
        assert_eq!(
            call(join_success, &mut empty, json!({"mode": "any"})).unwrap(),
            json!("fail")
        );
    }
}
