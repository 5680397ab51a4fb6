//! PlantUML text of a `Definition` (harel's `viz/plantuml.py`), line for line.

use harel_model::{
    Assign, Choice, Definition, EventFilter, NodeId, NodeKind, Selector, Transition,
};

use super::guards::{branch_text, effect_text, guard_text};
use super::{
    choice_branches, emit_edges, push_once, selector_target, short_name, start_child,
    transitions_from, Format, RenderError,
};

const INDENT: &str = "  ";
const HOOKS: [&str; 3] = ["on_enter", "on_activity", "on_exit"];

/// The PlantUML state diagram harel's `viz/plantuml.py` prints for `defn` (the body, without
/// `@startuml`/`@enduml`, as harel's).
pub fn render(defn: &Definition) -> Result<String, RenderError> {
    Ok(emit(defn, defn.root, 0, "")?.join("\n"))
}

fn prefixed(defn: &Definition, id: NodeId) -> String {
    defn.node(id).full_path.replace(' ', "")
}

/// `: Event\n[guard]\n/ effect`, the UML `event [guard] / effect` label (with PlantUML's
/// literal `\n` line breaks).
fn filter(ef: Option<&EventFilter>, assignments: &[Assign]) -> String {
    let effect = effect_text(assignments);
    let Some(ef) = ef else {
        return effect.map(|e| format!(": / {e}")).unwrap_or_default();
    };
    let label = match guard_text(ef) {
        Some(g) => format!(": {}\\n[{g}]", ef.kind),
        None => format!(": {}", ef.kind),
    };
    match effect {
        Some(e) => format!("{label}\\n/ {e}"),
        None => label,
    }
}

fn branch_effect(assignments: &[Assign]) -> String {
    effect_text(assignments)
        .map(|e| format!("\\n/ {e}"))
        .unwrap_or_default()
}

/// A pseudo-state named after the source's parent path plus `leaf`.
fn sibling_name(src: &str, leaf: &str) -> String {
    let mut segs: Vec<&str> = src.split('.').collect();
    segs.pop();
    segs.push(leaf);
    segs.join(".")
}

/// PlantUML's side of the walk shared with Mermaid.
struct PlantUml;

impl Format for PlantUml {
    fn id(defn: &Definition, node: NodeId) -> String {
        prefixed(defn, node)
    }

    fn edge_label(ef: Option<&EventFilter>, assignments: &[Assign]) -> String {
        filter(ef, assignments)
    }

    fn emit_choice(
        defn: &Definition,
        source: NodeId,
        t: &Transition,
        choice: &Choice,
        pad: &str,
        out: &mut Vec<String>,
    ) {
        let src = prefixed(defn, source);
        let node = sibling_name(&src, &format!("{}_choose", defn.node(source).name));
        out.push(format!("{pad}state {node}<<choice>>"));
        out.push(format!(
            "{pad}{src} --> {node}{}",
            filter(t.event_filter.as_ref(), &t.assignments)
        ));
        for (guard, target, assigns) in choice_branches(choice) {
            out.push(format!(
                "{pad}{node} --> {}: [{}]{}",
                prefixed(defn, target),
                branch_text(guard),
                branch_effect(assigns)
            ));
        }
        if let Some(default) = choice.default {
            out.push(format!(
                "{pad}{node} --> {}: else{}",
                prefixed(defn, default),
                branch_effect(&choice.default_assignments)
            ));
        }
    }

    fn emit_selector(
        defn: &Definition,
        comp: NodeId,
        source: NodeId,
        t: &Transition,
        selector: &Selector,
        pad: &str,
        out: &mut Vec<String>,
    ) -> Result<(), RenderError> {
        let fn_ = short_name(&selector.action.function);
        let src = prefixed(defn, source);
        let choice = sibling_name(&src, fn_);
        out.push(format!("{pad}state {choice}<<choice>>"));
        // harel labels a selector's edge with its event only: its `set` is not drawn
        out.push(format!(
            "{pad}{src} --> {choice}{}",
            filter(t.event_filter.as_ref(), &[])
        ));
        for (value, target_name) in &selector.mapper {
            let target = selector_target(defn, comp, target_name)?;
            out.push(format!(
                "{pad}{choice} --> {}: {fn_}={value}",
                prefixed(defn, target)
            ));
        }
        Ok(())
    }
}

fn emit_transitions(
    defn: &Definition,
    comp: NodeId,
    pad: &str,
    out: &mut Vec<String>,
) -> Result<(), RenderError> {
    let node = defn.node(comp);
    for &child in &node.children {
        if transitions_from(node, child).next().is_none() {
            push_once(out, format!("{pad}{} --> [*]", prefixed(defn, child)));
            continue;
        }
        emit_edges::<PlantUml>(defn, comp, child, pad, out)?;
    }
    Ok(())
}

fn emit(
    defn: &Definition,
    comp: NodeId,
    indent: usize,
    end_line: &str,
) -> Result<Vec<String>, RenderError> {
    let pad = INDENT.repeat(indent);
    let node = defn.node(comp);
    let mut out = Vec::new();

    // 1. action declarations for each child
    for &child in &node.children {
        let c = defn.node(child);
        let pref = prefixed(defn, child);
        for hook in HOOKS {
            let action = match hook {
                "on_enter" => &c.on_enter,
                "on_activity" => &c.on_activity,
                _ => &c.on_exit,
            };
            let Some(action) = action else {
                continue;
            };
            let fn_ = short_name(&action.function);
            if c.name == pref {
                out.push(format!(
                    "{pad}state {}: <b>{hook}</b>: <i>{fn_}</i>",
                    c.name
                ));
            } else {
                out.push(format!(
                    "{pad}state \"{}\" as {pref}: <b>{hook}</b>: <i>{fn_}</i>",
                    c.name
                ));
            }
        }
    }

    // 2. composite child blocks
    for &child in &node.children {
        let c = defn.node(child);
        if c.is_composite() {
            let child_end = if c.kind == NodeKind::Orthogonal {
                "||"
            } else {
                ""
            };
            let sub = emit(defn, child, indent + 1, child_end)?;
            let pref = prefixed(defn, child);
            if c.name == pref {
                out.push(format!("{pad}state {} {{", c.name));
            } else {
                out.push(format!("{pad}state \"{}\" as {pref} {{", c.name));
            }
            out.extend(sub);
            out.push(format!("{pad}}}"));
            out.push(format!("{pad}{end_line}"));
        }
    }

    // 3. the initial transition
    if let Some(s) = start_child(defn, comp)? {
        out.push(format!("{pad}[*] --> {}", prefixed(defn, s)));
    }

    // 4. transitions and sinks, or drop the trailing region separator (harel pops the
    // last line, whatever it is)
    if !node.transitions.is_empty() {
        emit_transitions(defn, comp, &pad, &mut out)?;
    } else {
        out.pop();
    }
    Ok(out)
}
