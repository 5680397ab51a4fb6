//! Guards: Python's comparison semantics over JSON values (harel `_compare`), predicate
//! trees (`_eval`) and event filters (`_matches`).
//!
//! A comparison Python would refuse with a `TypeError` (`"abc" < 3`, `None < 3`, `x in 5`)
//! is simply false, like a missing field: a guard only holds when it can be evaluated.

use std::cmp::Ordering;

use harel_model::{Event, EventFilter, Object, Op, Predicate, Scope};
use serde_json::{Number, Value};

/// A JSON number as Python sees it: `int` (bool included) or `float`.
#[derive(Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
}

fn num(v: &Value) -> Option<Num> {
    match v {
        Value::Bool(b) => Some(Num::Int(i128::from(*b))),
        Value::Number(n) => Some(number(n)),
        _ => None,
    }
}

fn number(n: &Number) -> Num {
    if let Some(i) = n.as_i64() {
        Num::Int(i128::from(i))
    } else if let Some(u) = n.as_u64() {
        Num::Int(i128::from(u))
    } else {
        Num::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

fn num_cmp(a: Num, b: Num) -> Option<Ordering> {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => Some(x.cmp(&y)),
        (Num::Int(x), Num::Float(y)) => (x as f64).partial_cmp(&y),
        (Num::Float(x), Num::Int(y)) => x.partial_cmp(&(y as f64)),
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y),
    }
}

/// Python `a == b` for the values json.loads gives (`1 == 1.0 == True`, dicts unordered).
pub fn py_eq(a: &Value, b: &Value) -> bool {
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        return num_cmp(x, y) == Some(Ordering::Equal);
    }
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        _ => false,
    }
}

/// Python's ordering of `a` and `b`, or None where Python raises `TypeError` (or a NaN is
/// involved, where every ordering comparison is false).
fn py_order(a: &Value, b: &Value) -> Option<Ordering> {
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        return num_cmp(x, y);
    }
    match (a, b) {
        // UTF-8 byte order is code point order
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Array(x), Value::Array(y)) => {
            // lexicographic: the first pair that differs (by ==) decides, else the lengths
            for (p, q) in x.iter().zip(y) {
                if !py_eq(p, q) {
                    return py_order(p, q);
                }
            }
            Some(x.len().cmp(&y.len()))
        }
        _ => None,
    }
}

/// Python `b.__contains__(a)`: list membership, substring, dict key.
fn py_contains(container: &Value, item: &Value) -> bool {
    match container {
        Value::Array(items) => items.iter().any(|x| py_eq(x, item)),
        Value::String(s) => match item {
            Value::String(sub) => s.contains(sub.as_str()),
            _ => false, // TypeError: 'in <string>' requires string as left operand
        },
        // JSON keys are strings: only a str can be one (an unhashable list/dict raises)
        Value::Object(map) => item.as_str().is_some_and(|k| map.contains_key(k)),
        _ => false, // TypeError: argument of type 'int' is not iterable
    }
}

/// `map.get(key)`, by a linear scan on a small map: below a handful of keys, comparing
/// them beats SipHash-ing the one looked for (serde_json's maps, which contexts and event
/// data are, hash with std's SipHash). Keys are unique, so the answer is the same.
pub fn field<'a>(map: &'a Object, key: &str) -> Option<&'a Value> {
    if map.len() <= 8 {
        map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// One comparison of a guard: `actual OP expected`.
pub fn compare(op: Op, actual: &Value, expected: &Value) -> bool {
    match op {
        Op::Eq => py_eq(actual, expected),
        Op::Ne => !py_eq(actual, expected),
        Op::Lt => py_order(actual, expected) == Some(Ordering::Less),
        Op::Le => matches!(
            py_order(actual, expected),
            Some(Ordering::Less | Ordering::Equal)
        ),
        Op::Gt => py_order(actual, expected) == Some(Ordering::Greater),
        Op::Ge => matches!(
            py_order(actual, expected),
            Some(Ordering::Greater | Ordering::Equal)
        ),
        Op::In => py_contains(expected, actual),
    }
}

/// The two namespaces a predicate leaf reads from.
#[derive(Clone, Copy)]
pub struct Scopes<'a> {
    /// The triggering event's data (empty for an automatic transition).
    pub event: &'a Object,
    /// The execution's context.
    pub context: &'a Object,
}

impl<'a> Scopes<'a> {
    fn of(&self, scope: Scope) -> &'a Object {
        match scope {
            Scope::Event => self.event,
            Scope::Context => self.context,
        }
    }
}

/// Evaluate a predicate tree (harel `_eval`): a leaf on an absent field (either side) fails.
pub fn eval(pred: &Predicate, scopes: Scopes<'_>) -> bool {
    match pred {
        Predicate::Leaf {
            field,
            op,
            value,
            source,
            value_ref,
        } => {
            let Some(actual) = self::field(scopes.of(*source), field) else {
                return false;
            };
            match value_ref {
                None => compare(*op, actual, value),
                Some(r) => self::field(scopes.of(r.source), &r.field)
                    .is_some_and(|other| compare(*op, actual, other)),
            }
        }
        Predicate::All(children) => children.iter().all(|c| eval(c, scopes)),
        Predicate::Any(children) => children.iter().any(|c| eval(c, scopes)),
        // the builder refuses an empty `not` (harel would raise IndexError here)
        Predicate::Not(children) => children.first().is_some_and(|c| !eval(c, scopes)),
    }
}

/// Whether `event` passes the filter (harel `_matches`): kind alternation, the flat
/// `field__op` leaves over the event's data, then the composable tree.
pub fn matches(filter: &EventFilter, event: &Event, context: &Object) -> bool {
    if !filter.names(&event.kind) {
        return false;
    }
    for (field, op, value) in &filter.predicates {
        match self::field(&event.data, field) {
            Some(actual) if compare(*op, actual, value) => {}
            _ => return false,
        }
    }
    match &filter.predicate {
        Some(p) => eval(
            p,
            Scopes {
                event: &event.data,
                context,
            },
        ),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_like_python() {
        assert!(compare(Op::Eq, &json!(1), &json!(1.0)));
        assert!(compare(Op::Eq, &json!(true), &json!(1)));
        assert!(compare(Op::Lt, &json!(true), &json!(2)));
        assert!(compare(Op::Ge, &json!(2.5), &json!(2)));
        assert!(!compare(Op::Eq, &json!("1"), &json!(1)));
        assert!(compare(Op::Ne, &json!("1"), &json!(1)));
    }

    #[test]
    fn incomparable_is_false() {
        assert!(!compare(Op::Lt, &json!("abc"), &json!(3)));
        assert!(!compare(Op::Ge, &json!("abc"), &json!(3)));
        assert!(!compare(Op::Lt, &Value::Null, &json!(3)));
        assert!(!compare(Op::In, &json!(1), &json!(5)));
        assert!(!compare(Op::In, &json!(1), &json!("a1")));
        assert!(!compare(Op::Lt, &json!({"a": 1}), &json!({"a": 2})));
    }

    #[test]
    fn strings_lists_dicts() {
        assert!(compare(Op::Lt, &json!("B"), &json!("a")));
        assert!(compare(Op::Lt, &json!("é"), &json!("😀")));
        assert!(compare(Op::Lt, &json!([1, 2]), &json!([1, 3])));
        assert!(compare(Op::Lt, &json!([1]), &json!([1, 0])));
        assert!(!compare(Op::Lt, &json!([1, "a"]), &json!([1, 2])));
        assert!(compare(
            Op::Eq,
            &json!({"a": 1, "b": [1]}),
            &json!({"b": [1.0], "a": true})
        ));
        assert!(compare(Op::In, &json!("b"), &json!("abc")));
        assert!(compare(Op::In, &json!(2), &json!([1, 2.0])));
        assert!(compare(Op::In, &json!("k"), &json!({"k": 0})));
        assert!(!compare(Op::In, &json!(["k"]), &json!({"k": 0})));
    }

    #[test]
    fn filters() {
        let mut f = EventFilter::new("A | B");
        f.predicates.push(("n".into(), Op::Gt, json!(2)));
        let ev = |kind: &str, data: Value| {
            Event::new(kind).with_data(data.as_object().cloned().unwrap_or_default())
        };
        let ctx = Object::new();
        assert!(matches(&f, &ev("B", json!({"n": 3})), &ctx));
        assert!(!matches(&f, &ev("B", json!({"n": 2})), &ctx));
        assert!(!matches(&f, &ev("B", json!({})), &ctx));
        assert!(!matches(&f, &ev("C", json!({"n": 3})), &ctx));
        f.predicate = Some(Predicate::Not(vec![Predicate::Leaf {
            field: "limit".into(),
            op: Op::Lt,
            value: Value::Null,
            source: Scope::Context,
            value_ref: Some(harel_model::FieldRef {
                source: Scope::Event,
                field: "n".into(),
            }),
        }]));
        let ctx = json!({"limit": 5}).as_object().cloned().unwrap();
        assert!(matches(&f, &ev("A", json!({"n": 3})), &ctx)); // not (5 < 3)
        assert!(!matches(&f, &ev("A", json!({"n": 9})), &ctx));
    }
}
