//! Diagrams of a `Definition`: PlantUML (harel's `viz/plantuml.py`) and Mermaid
//! (`viz/mermaid.py`), the same text as harel's for the same machine.

mod guards;
pub mod mermaid;
pub mod plantuml;

/// A machine a diagram cannot be drawn for (harel fails an assertion in these cases).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RenderError {
    #[error("cannot draw the machine: selector target `{target}` does not resolve from `{scope}`")]
    SelectorTarget { target: String, scope: String },
    #[error("cannot draw the machine: initial state `{start}` is not a child of `{scope}`")]
    StartState { start: String, scope: String },
}

/// The last segment of an action's dotted path (`pkg.mod.send` -> `send`).
fn short_name(function: &str) -> &str {
    function.rsplit('.').next().unwrap_or(function)
}

/// harel shows a literal timeout as Python prints its int.
fn seconds_text(s: f64) -> String {
    if s.fract() == 0.0 && s.abs() < 1e15 {
        format!("{}", s as i64)
    } else {
        harel_model::pyrepr::py_float_repr(s)
    }
}
