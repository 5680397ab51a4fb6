//! Diagrams of a `Definition`: PlantUML (harel's `viz/plantuml.py`) and Mermaid
//! (`viz/mermaid.py`), the same text as harel's for the same machine.
//!
//! The two formats differ in most lines they print but walk the machine alike (harel's two
//! modules repeat that walk): the edges a state's transitions draw, a `choose`'s branches,
//! resolving a selector's targets and a composite's initial state live here, once.

use harel_model::{
    Assign, Choice, Definition, EventFilter, Node, NodeId, Predicate, Selector, Transition,
};

mod guards;
pub mod mermaid;
pub mod plantuml;
pub mod submachines;
pub mod svg;

/// A machine a diagram cannot be drawn for (harel fails an assertion in these cases).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RenderError {
    /// A selector's mapped (or default) target names no state seen from its transition.
    #[error("cannot draw the machine: selector target `{target}` does not resolve from `{scope}`")]
    SelectorTarget {
        /// The target name as the selector gives it.
        target: String,
        /// The full path of the composite the transition belongs to.
        scope: String,
    },
    /// A composite's `start` names no child of it.
    #[error("cannot draw the machine: initial state `{start}` is not a child of `{scope}`")]
    StartState {
        /// The initial state's name as declared.
        start: String,
        /// The full path of the composite.
        scope: String,
    },
}

/// What a diagram format prints for the parts of the walk both formats share.
trait Format {
    /// The node's name in the diagram text.
    fn id(defn: &Definition, node: NodeId) -> String;
    /// The label after `A --> B`, empty when there is none.
    fn edge_label(ef: Option<&EventFilter>, assignments: &[Assign]) -> String;
    /// A selector's pseudo-state and its edges.
    fn emit_selector(
        defn: &Definition,
        comp: NodeId,
        source: NodeId,
        t: &Transition,
        selector: &Selector,
        pad: &str,
        out: &mut Vec<String>,
    ) -> Result<(), RenderError>;
    /// A `choose`'s pseudo-state and its edges.
    fn emit_choice(
        defn: &Definition,
        source: NodeId,
        t: &Transition,
        choice: &Choice,
        pad: &str,
        out: &mut Vec<String>,
    );
}

/// The edges drawn by the transitions of scope `comp` leaving `child`, in declaration
/// order. harel's model gives a transition exactly one of target, selector or choice; both
/// of harel's renderers test them in this order.
fn emit_edges<F: Format>(
    defn: &Definition,
    comp: NodeId,
    child: NodeId,
    pad: &str,
    out: &mut Vec<String>,
) -> Result<(), RenderError> {
    for t in transitions_from(defn.node(comp), child) {
        if let Some(target) = t.target {
            out.push(format!(
                "{pad}{} --> {}{}",
                F::id(defn, child),
                F::id(defn, target),
                F::edge_label(t.event_filter.as_ref(), &t.assignments)
            ));
        } else if let Some(selector) = &t.selector {
            F::emit_selector(defn, comp, child, t, selector, pad, out)?;
        } else if let Some(choice) = &t.choice {
            F::emit_choice(defn, child, t, choice, pad, out);
        }
    }
    Ok(())
}

/// The transitions of the scope `node` that leave `child`, in declaration order.
fn transitions_from(node: &Node, child: NodeId) -> impl Iterator<Item = &Transition> {
    node.transitions.iter().filter(move |t| t.source == child)
}

/// Each branch of a `choose` with its own `set` (none where `branch_assignments` is
/// shorter than `branches`, as harel reads it).
fn choice_branches(choice: &Choice) -> impl Iterator<Item = (&Predicate, NodeId, &[Assign])> {
    choice
        .branches
        .iter()
        .enumerate()
        .map(|(i, (guard, target))| {
            let assigns = choice
                .branch_assignments
                .get(i)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            (guard, *target, assigns)
        })
}

/// A selector's target, resolved from the transition's scope `comp`.
fn selector_target(defn: &Definition, comp: NodeId, name: &str) -> Result<NodeId, RenderError> {
    defn.resolve_relative(comp, name)
        .ok_or_else(|| RenderError::SelectorTarget {
            target: name.to_string(),
            scope: defn.node(comp).full_path.to_string(),
        })
}

/// The child `comp` starts in, when it names one.
fn start_child(defn: &Definition, comp: NodeId) -> Result<Option<NodeId>, RenderError> {
    let node = defn.node(comp);
    let Some(start) = &node.start_state else {
        return Ok(None);
    };
    defn.child(comp, start)
        .map(Some)
        .ok_or_else(|| RenderError::StartState {
            start: start.clone(),
            scope: node.full_path.to_string(),
        })
}

/// Adds a line unless the diagram already has it: a sink reached from several scopes is
/// drawn once.
fn push_once(out: &mut Vec<String>, line: String) {
    if !out.contains(&line) {
        out.push(line);
    }
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
