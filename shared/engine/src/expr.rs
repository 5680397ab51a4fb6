//! `set` assignments: evaluating right-hand sides (harel `_value_of`) and checking them
//! against the context schema (`_evaluate`), with harel's messages.

use harel_model::pyrepr::{py_repr, py_type_name};
use harel_model::schema::value_fits;
use harel_model::{Assign, Definition, Expr, Scope};
use serde_json::{Number, Value};

use crate::guard::Scopes;

/// A model expression that can't be evaluated. Raised before a transition leaves any
/// state; the driver routes it like an action error. Its Python type name is
/// `ExpressionError`, which is what an `error` event's `type` carries.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ExpressionError(pub String);

impl ExpressionError {
    /// The error's Python type name, carried as an `error` event's `type` and in a FAILED
    /// execution's `error`.
    pub const TYPE_NAME: &'static str = "ExpressionError";
}

enum Num {
    Int(i64),
    Float(f64),
}

fn as_num(v: &Value) -> Option<Num> {
    match v {
        Value::Number(n) => Some(match n.as_i64() {
            Some(i) => Num::Int(i),
            None => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
        }),
        _ => None,
    }
}

fn float(x: f64) -> Value {
    // JSON has no inf/nan: Python would keep them and fail later when writing the document
    Number::from_f64(x)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

fn arith(op: char, left: Value, right: Value) -> Result<Value, ExpressionError> {
    // bool is an int in Python, but harel refuses it explicitly
    let needs_numbers = |side: &Value| {
        ExpressionError(format!(
            "`{op}` needs numbers, got {} {}",
            py_type_name(side),
            py_repr(side)
        ))
    };
    let l = as_num(&left).ok_or_else(|| needs_numbers(&left))?;
    let r = as_num(&right).ok_or_else(|| needs_numbers(&right))?;
    let is_zero = match r {
        Num::Int(i) => i == 0,
        Num::Float(f) => f == 0.0,
    };
    if op == '/' && is_zero {
        return Err(ExpressionError("division by zero".into()));
    }
    let overflow = || {
        // Python's ints are unbounded; a JSON document can't carry a bigger one either
        ExpressionError(format!(
            "`{op}` overflows a 64-bit integer ({} {op} {})",
            py_repr(&left),
            py_repr(&right)
        ))
    };
    Ok(match (l, r) {
        (Num::Int(a), Num::Int(b)) => match op {
            '+' => Value::from(a.checked_add(b).ok_or_else(overflow)?),
            '-' => Value::from(a.checked_sub(b).ok_or_else(overflow)?),
            '*' => Value::from(a.checked_mul(b).ok_or_else(overflow)?),
            // true division: int / int is a float
            _ => float(a as f64 / b as f64),
        },
        (l, r) => {
            let f = |n: Num| match n {
                Num::Int(i) => i as f64,
                Num::Float(x) => x,
            };
            let (a, b) = (f(l), f(r));
            float(match op {
                '+' => a + b,
                '-' => a - b,
                '*' => a * b,
                _ => a / b,
            })
        }
    })
}

/// Evaluate one right-hand side.
pub fn value_of(expr: &Expr, scopes: Scopes<'_>) -> Result<Value, ExpressionError> {
    match expr {
        Expr::Lit(v) => Ok(v.clone()),
        Expr::Ref(r) => {
            let data = match r.source {
                Scope::Event => scopes.event,
                Scope::Context => scopes.context,
            };
            crate::guard::field(data, &r.field).cloned().ok_or_else(|| {
                ExpressionError(format!("{}.{} is not set", r.source.as_str(), r.field))
            })
        }
        Expr::Arith { op, left, right } => {
            let l = value_of(left, scopes)?;
            let r = value_of(right, scopes)?;
            arith(*op, l, r)
        }
    }
}

/// The values a transition's `set` writes, in order (applying them in order gives harel's
/// dict of values): every right-hand side is evaluated against the context and event as
/// they are before any is applied, and checked against the schema.
pub fn evaluate<'a>(
    defn: &Definition,
    assignments: impl Iterator<Item = &'a Assign>,
    scopes: Scopes<'_>,
) -> Result<Vec<(&'a str, Value)>, ExpressionError> {
    let mut values = Vec::with_capacity(1);
    for assign in assignments {
        let value = value_of(&assign.expr, scopes)?;
        if let Some(spec) = defn.context_schema.get(assign.field.as_str()) {
            // an optional field may be set to null
            let allowed_null = value.is_null() && !spec.required;
            if !allowed_null && !value_fits(&spec.type_, &value) {
                return Err(ExpressionError(format!(
                    "context.{} is declared {}, `set` gave {} {}",
                    assign.field,
                    spec.type_,
                    py_type_name(&value),
                    py_repr(&value)
                )));
            }
        }
        values.push((assign.field.as_str(), value));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use harel_model::{FieldRef, Object};
    use serde_json::json;

    fn lit(v: Value) -> Box<Expr> {
        Box::new(Expr::Lit(v))
    }

    fn run(op: char, l: Value, r: Value) -> Result<Value, ExpressionError> {
        let empty = Object::new();
        value_of(
            &Expr::Arith {
                op,
                left: lit(l),
                right: lit(r),
            },
            Scopes {
                event: &empty,
                context: &empty,
            },
        )
    }

    #[test]
    fn arithmetic_is_pythons() {
        assert_eq!(run('+', json!(1), json!(2)).unwrap(), json!(3));
        assert!(run('+', json!(1), json!(2)).unwrap().is_i64());
        assert_eq!(run('/', json!(4), json!(2)).unwrap(), json!(2.0));
        assert!(run('/', json!(4), json!(2)).unwrap().is_f64());
        assert_eq!(run('*', json!(1.5), json!(2)).unwrap(), json!(3.0));
        assert_eq!(
            run('/', json!(1), json!(0.0)).unwrap_err().0,
            "division by zero"
        );
        assert_eq!(
            run('+', json!("a"), json!(1)).unwrap_err().0,
            "`+` needs numbers, got str 'a'"
        );
        assert_eq!(
            run('-', json!(1), json!(true)).unwrap_err().0,
            "`-` needs numbers, got bool True"
        );
    }

    #[test]
    fn refs_and_schema() {
        let ctx = json!({"n": 1}).as_object().cloned().unwrap();
        let ev = Object::new();
        let scopes = Scopes {
            event: &ev,
            context: &ctx,
        };
        let missing = Expr::Ref(FieldRef {
            source: Scope::Context,
            field: "x".into(),
        });
        assert_eq!(
            value_of(&missing, scopes).unwrap_err().0,
            "context.x is not set"
        );
        let defn = harel_model::build_definition(
            &json!({"start": "A", "states": {"A": {}}, "context_schema": {"n": "int"}}),
            "m",
            None,
        )
        .unwrap();
        let assigns = [Assign {
            field: "n".into(),
            expr: Expr::Lit(json!("x")),
        }];
        assert_eq!(
            evaluate(&defn, assigns.iter(), scopes).unwrap_err().0,
            "context.n is declared int, `set` gave str 'x'"
        );
    }
}
