//! harel's standard library (`harel/lib.py`), bound under harel's names: the backoff pair
//! for retry loops, `reset_backoff`, and `join_success` (what `join all|any` desugars to).
//! Same inputs, defaults and context keys; numbers follow Python's int/float rules.

use harel_engine::ActionError;
use harel_model::pyrepr::{py_repr, py_type_name};
use harel_model::{Event, Object};
use serde_json::{Number, Value};

use crate::actions::{ActionContext, ActionRegistry};

pub const EXPONENTIAL_BACKOFF: &str = "harel.lib.exponential_backoff";
pub const LINEAR_BACKOFF: &str = "harel.lib.linear_backoff";
pub const RESET_BACKOFF: &str = "harel.lib.reset_backoff";
pub const JOIN_SUCCESS: &str = "harel.lib.join_success";

pub fn register(registry: &mut ActionRegistry) {
    registry
        .register_fn(EXPONENTIAL_BACKOFF, exponential_backoff)
        .register_fn(LINEAR_BACKOFF, linear_backoff)
        .register_fn(RESET_BACKOFF, reset_backoff)
        .register_fn(JOIN_SUCCESS, join_success);
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
        let mut ctx = ActionContext {
            context,
            idempotency_key: "k",
            execution_id: "e",
        };
        f(&mut ctx, None, inputs.as_object().unwrap())
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
