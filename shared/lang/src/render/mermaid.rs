//! Mermaid `stateDiagram-v2` text of a `Definition` (harel's `viz/mermaid.py`), line for
//! line: composites fold their hooks into the title, orthogonal regions are split by
//! `--`, ids are the full_path made identifier-safe, and `:` in labels is `#58;`.

use harel_model::{
    Assign, Choice, Definition, EventFilter, Node, NodeId, NodeKind, Selector, Timeout, Transition,
};

use super::guards::{branch_text, effect_text, guard_text};
use super::{
    choice_branches, emit_edges, push_once, seconds_text, selector_target, short_name, start_child,
    transitions_from, Format, RenderError,
};

const INDENT: &str = "  ";

/// The Mermaid `stateDiagram-v2` text harel's `viz/mermaid.py` prints for `defn`.
pub fn render(defn: &Definition) -> Result<String, RenderError> {
    let mut out = vec!["stateDiagram-v2".to_string()];
    emit_body(defn, defn.root, 0, &mut out)?;
    Ok(out.join("\n"))
}

/// A state's id in the diagram: its full path with every character that is not a letter,
/// digit or `_` as `_` (what `class ID active` and other additions to a drawing refer to).
pub fn state_id(defn: &Definition, id: NodeId) -> String {
    defn.node(id)
        .full_path
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `:` after a ` : ` separator is a Mermaid syntax error: it goes as the entity `#58;`.
fn text(label: &str) -> String {
    label.replace(':', "#58;")
}

fn desc_parts(node: &Node) -> Vec<String> {
    let mut parts = Vec::new();
    for (action, label) in [
        (&node.on_enter, "on enter"),
        (&node.on_activity, "on activity"),
        (&node.on_exit, "on exit"),
    ] {
        if let Some(a) = action {
            parts.push(format!("{label}: {}", short_name(&a.function)));
        }
    }
    match &node.timeout {
        Some(Timeout::Seconds(s)) => parts.push(format!("timeout: {}", seconds_text(*s))),
        Some(Timeout::Context(key)) => parts.push(format!("timeout: context {key}")),
        None => {}
    }
    if let Some(o) = node.outcome.as_deref().filter(|o| !o.is_empty()) {
        parts.push(format!("outcome: {o}"));
    }
    if let Some(i) = node.invoke.as_deref().filter(|i| !i.is_empty()) {
        parts.push(format!("invoke: {i}"));
    }
    if let Some((var, coll)) = &node.invoke_each {
        parts.push(format!("invoke each: {var} in {coll}"));
    }
    parts
}

fn filter_text(ef: Option<&EventFilter>) -> Option<String> {
    let ef = ef?;
    Some(match guard_text(ef) {
        Some(g) => format!("{}<br/>[{g}]", ef.kind),
        None => ef.kind.clone(),
    })
}

fn edge_suffix(ef: Option<&EventFilter>, assignments: &[Assign]) -> String {
    let parts: Vec<String> = [filter_text(ef), effect_text(assignments)]
        .into_iter()
        .flatten()
        .map(|p| text(&p))
        .collect();
    match parts.as_slice() {
        [label, effect] => format!(" : {label}<br/>/ {effect}"),
        [only] if ef.is_none() => format!(" : / {only}"),
        [only] => format!(" : {only}"),
        _ => String::new(),
    }
}

fn branch_effect(assignments: &[Assign]) -> String {
    effect_text(assignments)
        .map(|e| format!("<br/>/ {}", text(&e)))
        .unwrap_or_default()
}

/// Mermaid's side of the walk shared with PlantUML.
struct Mermaid;

impl Format for Mermaid {
    fn id(defn: &Definition, node: NodeId) -> String {
        state_id(defn, node)
    }

    fn edge_label(ef: Option<&EventFilter>, assignments: &[Assign]) -> String {
        edge_suffix(ef, assignments)
    }

    fn emit_choice(
        defn: &Definition,
        source: NodeId,
        t: &Transition,
        choice: &Choice,
        pad: &str,
        out: &mut Vec<String>,
    ) {
        let src = state_id(defn, source);
        let node = format!("{src}__choose");
        out.push(format!("{pad}state {node} <<choice>>"));
        out.push(format!(
            "{pad}{src} --> {node}{}",
            edge_suffix(t.event_filter.as_ref(), &t.assignments)
        ));
        for (guard, target, assigns) in choice_branches(choice) {
            out.push(format!(
                "{pad}{node} --> {} : [{}]{}",
                state_id(defn, target),
                text(&branch_text(guard)),
                branch_effect(assigns)
            ));
        }
        if let Some(default) = choice.default {
            out.push(format!(
                "{pad}{node} --> {} : else{}",
                state_id(defn, default),
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
        let src = state_id(defn, source);
        let choice = format!("{src}__{fn_}");
        out.push(format!("{pad}state {choice} <<choice>>"));
        out.push(format!(
            "{pad}{src} --> {choice}{}",
            edge_suffix(t.event_filter.as_ref(), &[])
        ));
        for (value, target_name) in &selector.mapper {
            let target = selector_target(defn, comp, target_name)?;
            out.push(format!(
                "{pad}{choice} --> {} : {fn_}={}",
                state_id(defn, target),
                text(value)
            ));
        }
        if let Some(default) = &selector.default {
            let target = selector_target(defn, comp, default)?;
            out.push(format!(
                "{pad}{choice} --> {} : else",
                state_id(defn, target)
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
        emit_edges::<Mermaid>(defn, comp, child, pad, out)?;
    }
    Ok(())
}

fn emit_leaf(defn: &Definition, id: NodeId, pad: &str, out: &mut Vec<String>) {
    let node = defn.node(id);
    let id_text = state_id(defn, id);
    if node.name != id_text {
        out.push(format!("{pad}state \"{}\" as {id_text}", node.name));
    }
    for part in desc_parts(node) {
        out.push(format!("{pad}{id_text} : {}", text(&part)));
    }
}

fn composite_title(node: &Node) -> String {
    let parts = desc_parts(node);
    if parts.is_empty() {
        node.name.clone()
    } else {
        format!("{}<br/>{}", node.name, parts.join("<br/>"))
    }
}

fn emit_composite(
    defn: &Definition,
    id: NodeId,
    indent: usize,
    out: &mut Vec<String>,
) -> Result<(), RenderError> {
    let pad = INDENT.repeat(indent);
    let node = defn.node(id);
    let id_text = state_id(defn, id);
    let title = composite_title(node);
    if title == id_text {
        out.push(format!("{pad}state {id_text} {{"));
    } else {
        out.push(format!("{pad}state \"{title}\" as {id_text} {{"));
    }
    if node.kind == NodeKind::Orthogonal {
        for (i, &region) in node.children.iter().enumerate() {
            if i > 0 {
                out.push(format!("{}--", INDENT.repeat(indent + 1)));
            }
            emit_composite(defn, region, indent + 1, out)?;
        }
    } else {
        emit_body(defn, id, indent + 1, out)?;
    }
    out.push(format!("{pad}}}"));
    Ok(())
}

fn emit_body(
    defn: &Definition,
    comp: NodeId,
    indent: usize,
    out: &mut Vec<String>,
) -> Result<(), RenderError> {
    let pad = INDENT.repeat(indent);
    let node = defn.node(comp);
    if let Some(s) = start_child(defn, comp)? {
        out.push(format!("{pad}[*] --> {}", state_id(defn, s)));
    }
    for &child in &node.children {
        if defn.node(child).is_composite() {
            emit_composite(defn, child, indent, out)?;
        } else {
            emit_leaf(defn, child, &pad, out);
        }
    }
    emit_transitions(defn, comp, &pad, out)?;
    // a leaf with no outgoing transition in this scope is a sink: the final pseudostate
    for &child in &node.children {
        if !defn.node(child).is_composite() && transitions_from(node, child).next().is_none() {
            push_once(out, format!("{pad}{} --> [*]", state_id(defn, child)));
        }
    }
    Ok(())
}
