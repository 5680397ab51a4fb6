//! The readable text of guards and `set` effects (harel's `viz/_guards.py`), shared by
//! both renderers.

use serde_json::Value;

use harel_model::pyrepr::py_str;
use harel_model::{Assign, EventFilter, Expr, FieldRef, Predicate, Scope};

/// A value as written in the language: `true`, `'text'`, `[1, 'a']`; numbers as Python
/// prints them.
fn value(v: &Value) -> String {
    match v {
        Value::Bool(b) => if *b { "true" } else { "false" }.into(),
        Value::String(s) => format!("'{s}'"),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(value).collect::<Vec<_>>().join(", ")
        ),
        other => py_str(other),
    }
}

fn comparison(field: &str, op: &str, v: &Value) -> String {
    format!("{field} {op} {}", value(v))
}

fn field_ref(r: &FieldRef) -> String {
    format!("{}.{}", r.source.as_str(), r.field)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Parent {
    None,
    All,
    Any,
    Not,
}

/// `and` binds tighter than `or`, but an `and` inside an `or` is parenthesized anyway.
fn predicate(pred: &Predicate, parent: Parent) -> String {
    let (joiner, me, children) = match pred {
        Predicate::Leaf {
            field,
            op,
            value: v,
            source,
            value_ref,
        } => {
            let left = match source {
                Scope::Event => field.clone(),
                Scope::Context => format!("context.{field}"),
            };
            return match value_ref {
                Some(r) => format!("{left} {} {}", op.symbol(), field_ref(r)),
                None => comparison(&left, op.symbol(), v),
            };
        }
        Predicate::Not(children) => {
            // harel indexes the first child; the builder never makes an empty `not`
            return match children.first() {
                Some(c) => format!("not {}", predicate(c, Parent::Not)),
                None => "not ".into(),
            };
        }
        Predicate::All(children) => (" and ", Parent::All, children),
        Predicate::Any(children) => (" or ", Parent::Any, children),
    };
    let text = children
        .iter()
        .map(|c| predicate(c, me))
        .collect::<Vec<_>>()
        .join(joiner);
    let parens = parent == Parent::Not || (parent != Parent::None && parent != me);
    if parens {
        format!("({text})")
    } else {
        text
    }
}

/// The guard of a filter as text, or None when it has none.
pub(crate) fn guard_text(ef: &EventFilter) -> Option<String> {
    let mut parts: Vec<String> = ef
        .predicates
        .iter()
        .map(|(field, op, v)| comparison(field, op.symbol(), v))
        .collect();
    if let Some(p) = &ef.predicate {
        let parent = if parts.is_empty() {
            Parent::None
        } else {
            Parent::All
        };
        parts.push(predicate(p, parent));
    }
    (!parts.is_empty()).then(|| parts.join(" and "))
}

/// A `choose` branch's guard as text.
pub(crate) fn branch_text(guard: &Predicate) -> String {
    predicate(guard, Parent::None)
}

fn expr(e: &Expr) -> String {
    match e {
        Expr::Ref(r) => field_ref(r),
        Expr::Lit(v) => value(v),
        Expr::Arith { op, left, right } => format!("{} {op} {}", expr(left), expr(right)),
    }
}

/// A transition's `set` as written (`context.n = context.n + 1, ...`), or None.
pub(crate) fn effect_text(assignments: &[Assign]) -> Option<String> {
    (!assignments.is_empty()).then(|| {
        assignments
            .iter()
            .map(|a| format!("context.{} = {}", a.field, expr(&a.expr)))
            .collect::<Vec<_>>()
            .join(", ")
    })
}
