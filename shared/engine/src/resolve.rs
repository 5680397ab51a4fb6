//! Finding the transition to take (harel `_nested`, `_resolve`, `_resolve_at`, the event
//! and automatic predicates, `choose` branch selection) and the read-only questions a driver
//! asks about an execution (`has_error_handler`, `has_cancel_handler`, `_is_active`, ...).

use std::sync::atomic::AtomicU32;

use harel_model::{Definition, Event, Execution, NodeId, NodeKind, Object, Status, Transition};

use crate::guard::{eval, matches, Scopes};
use crate::EngineError;

/// A transition found for the active configuration: (its scope composite, its index there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) scope: NodeId,
    pub(crate) index: usize,
}

impl Found {
    pub(crate) fn transition<'d>(&self, defn: &'d Definition) -> &'d Transition {
        &defn.node(self.scope).transitions[self.index]
    }
}

fn no_state(defn: &Definition, path: &str) -> EngineError {
    EngineError::Corrupt(format!("no state {path:?} in definition {:?}", defn.id))
}

pub(crate) fn node_at(defn: &Definition, path: &str) -> Result<NodeId, EngineError> {
    defn.get(path).ok_or_else(|| no_state(defn, path))
}

/// [`node_at`] through one of the execution's [`harel_model::NodeHints`].
pub(crate) fn node_at_hinted(
    defn: &Definition,
    path: &str,
    hint: &AtomicU32,
) -> Result<NodeId, EngineError> {
    defn.get_hinted(path, hint)
        .ok_or_else(|| no_state(defn, path))
}

pub(crate) fn active_node(defn: &Definition, exe: &Execution) -> Result<NodeId, EngineError> {
    let path = exe
        .active_path
        .as_deref()
        .ok_or_else(|| EngineError::Corrupt(format!("execution {} has no active state", exe.id)))?;
    node_at_hinted(defn, path, &exe.hints.active)
}

fn find_in<P: Fn(&Transition) -> bool>(
    defn: &Definition,
    scope: NodeId,
    source: NodeId,
    pred: &P,
) -> Option<Found> {
    defn.node(scope)
        .transitions
        .iter()
        .position(|t| t.source == source && pred(t))
        .map(|index| Found { scope, index })
}

/// harel `_nested` over the chain from `root` down to `active`, walked upward without
/// allocating: the innermost scope wins and each outer scope is a fallback, except that the
/// top-level call of an automatic lookup (`allow_parent` false) does not fall back to
/// `root`'s own transitions when `active` is deeper than `root`'s direct child (harel's
/// asymmetry). `root` must be an ancestor-or-self of `active`.
pub(crate) fn resolve_between<P: Fn(&Transition) -> bool>(
    defn: &Definition,
    root: NodeId,
    active: NodeId,
    pred: &P,
    allow_parent: bool,
) -> Result<Option<Found>, EngineError> {
    if active == root {
        return Ok(None);
    }
    let mut cur = active;
    loop {
        let scope = defn.node(cur).parent.ok_or_else(|| {
            EngineError::Corrupt(format!(
                "{:?} is not an ancestor of {:?}",
                defn.node(root).full_path,
                defn.node(active).full_path
            ))
        })?;
        if scope == root {
            if cur != active && !allow_parent {
                return Ok(None);
            }
            return Ok(find_in(defn, scope, cur, pred));
        }
        if let Some(found) = find_in(defn, scope, cur, pred) {
            return Ok(Some(found));
        }
        cur = scope;
    }
}

/// What a drain finds at the active configuration.
pub(crate) enum Automatic {
    /// An automatic transition to take.
    Take(Found),
    /// No automatic transition, but some transition in scope: wait for an event.
    Waiting,
    /// No transition at all: a sink.
    Sink,
}

/// `resolve_between(auto, allow_parent = false)` and, when it finds nothing,
/// `resolve_between(any, allow_parent = false).is_some()`, in one walk: both visit the same
/// scopes, and within a scope the first automatic transition from the node is the one the
/// automatic lookup returns.
pub(crate) fn resolve_automatic<P: Fn(&Transition) -> bool>(
    defn: &Definition,
    root: NodeId,
    active: NodeId,
    auto: &P,
) -> Result<Automatic, EngineError> {
    if active == root {
        return Ok(Automatic::Sink);
    }
    let mut any = false;
    let mut cur = active;
    loop {
        let scope = defn.node(cur).parent.ok_or_else(|| {
            EngineError::Corrupt(format!(
                "{:?} is not an ancestor of {:?}",
                defn.node(root).full_path,
                defn.node(active).full_path
            ))
        })?;
        if scope == root && cur != active {
            break; // the automatic asymmetry: root's own transitions only for its child
        }
        for (index, t) in defn.node(scope).transitions.iter().enumerate() {
            if t.source == cur {
                if auto(t) {
                    return Ok(Automatic::Take(Found { scope, index }));
                }
                any = true;
            }
        }
        if scope == root {
            break;
        }
        cur = scope;
    }
    Ok(if any {
        Automatic::Waiting
    } else {
        Automatic::Sink
    })
}

pub(crate) fn resolve<P: Fn(&Transition) -> bool>(
    defn: &Definition,
    exe: &Execution,
    pred: &P,
    allow_parent: bool,
) -> Result<Option<Found>, EngineError> {
    let root = node_at(defn, &exe.root_path)?;
    let active = active_node(defn, exe)?;
    resolve_between(defn, root, active, pred, allow_parent)
}

/// A `Timeout` resolves anchored at the node that timed out, bubbling up its ancestors.
pub(crate) fn resolve_at<P: Fn(&Transition) -> bool>(
    defn: &Definition,
    path: &str,
    pred: &P,
) -> Option<Found> {
    let mut cur = defn.get(path)?;
    while let Some(scope) = defn.node(cur).parent {
        if let Some(index) = defn
            .node(scope)
            .transitions
            .iter()
            .position(|t| t.source == cur && pred(t))
        {
            return Some(Found { scope, index });
        }
        cur = scope;
    }
    None
}

/// The first `choose` branch whose guard holds.
pub(crate) fn choice_index(t: &Transition, event_data: &Object, context: &Object) -> Option<usize> {
    let choice = t.choice.as_ref()?;
    let scopes = Scopes {
        event: event_data,
        context,
    };
    choice
        .branches
        .iter()
        .position(|(guard, _)| eval(guard, scopes))
}

/// The target a `choose` picks: its first holding branch, else its `default`.
pub(crate) fn choice_branch(
    t: &Transition,
    event_data: &Object,
    context: &Object,
) -> Option<NodeId> {
    let choice = t.choice.as_ref()?;
    match choice_index(t, event_data, context) {
        Some(i) => Some(choice.branches[i].1),
        None => choice.default,
    }
}

fn choice_open(t: &Transition, event_data: &Object, context: &Object) -> bool {
    t.choice.is_none() || choice_branch(t, event_data, context).is_some()
}

/// harel `_event_pred`: triggered by `event`, guard holding, a `choose` with somewhere to go.
pub(crate) fn event_pred<'a>(
    event: &'a Event,
    context: &'a Object,
) -> impl Fn(&Transition) -> bool + 'a {
    move |t| {
        t.event_filter
            .as_ref()
            .is_some_and(|f| matches(f, event, context))
            && choice_open(t, &event.data, context)
    }
}

/// harel `_auto_pred_in`.
pub(crate) fn auto_pred(context: &Object) -> impl Fn(&Transition) -> bool + '_ {
    static EMPTY: std::sync::OnceLock<Object> = std::sync::OnceLock::new();
    let empty = EMPTY.get_or_init(Object::new);
    move |t| t.event_filter.is_none() && choice_open(t, empty, context)
}

pub(crate) fn any_pred(_: &Transition) -> bool {
    true
}

/// Whether `path` is in the active configuration (the timer staleness guard).
pub fn is_active(defn: &Definition, exe: &Execution, path: &str) -> bool {
    let (Some(active_path), Some(target)) = (exe.active_path.as_deref(), defn.get(path)) else {
        return false;
    };
    let (Some(root), Some(active)) = (defn.get(&exe.root_path), defn.get(active_path)) else {
        return false;
    };
    defn.is_descendant(active, target) && defn.is_descendant(target, root)
}

/// Whether the active configuration has an `on error` transition for `event`.
pub fn has_error_handler(
    defn: &Definition,
    exe: &Execution,
    event: &Event,
) -> Result<bool, EngineError> {
    if exe.active_path.is_none() || exe.status != Status::Running {
        return Ok(false);
    }
    Ok(resolve(defn, exe, &event_pred(event, &exe.context), true)?.is_some())
}

/// Whether the active configuration has its own `Cancel` transition for `event` that lands
/// directly on a sink (every selector branch checked statically).
pub fn has_cancel_handler(
    defn: &Definition,
    exe: &Execution,
    event: &Event,
) -> Result<bool, EngineError> {
    Ok(safe_teardown(defn, exe, event)?.is_some())
}

/// Whether reaching `target` now would end this execution in that same step.
fn would_be_a_sink(
    defn: &Definition,
    exe: &Execution,
    target: NodeId,
) -> Result<bool, EngineError> {
    let t = defn.node(target);
    if !t.children.is_empty() || t.invoke.is_some() {
        return Ok(false);
    }
    let root = node_at(defn, &exe.root_path)?;
    if !defn.is_descendant(target, root) {
        return Ok(false);
    }
    let mut cur = target;
    while cur != root {
        if cur != target && defn.node(cur).kind == NodeKind::Orthogonal {
            return Ok(false);
        }
        if resolve_between(defn, root, cur, &any_pred, false)?.is_some() {
            return Ok(false);
        }
        match defn.node(cur).parent {
            Some(p) => cur = p,
            None => return Err(EngineError::Corrupt("walked past the root".into())),
        }
    }
    Ok(true)
}

/// The transition a teardown event (`Cancel`, `Expired`) would take iff it lands directly
/// on a sink.
pub(crate) fn safe_teardown(
    defn: &Definition,
    exe: &Execution,
    event: &Event,
) -> Result<Option<Found>, EngineError> {
    if exe.active_path.is_none() {
        return Ok(None);
    }
    let Some(found) = resolve(defn, exe, &event_pred(event, &exe.context), true)? else {
        return Ok(None);
    };
    let t = found.transition(defn);
    if let Some(target) = t.target {
        return Ok(would_be_a_sink(defn, exe, target)?.then_some(found));
    }
    if let Some(choice) = &t.choice {
        for target in choice
            .branches
            .iter()
            .map(|(_, n)| *n)
            .chain(choice.default)
        {
            if !would_be_a_sink(defn, exe, target)? {
                return Ok(None);
            }
        }
        return Ok(Some(found));
    }
    if let Some(sel) = &t.selector {
        for name in sel.mapper.values().chain(sel.default.as_ref()) {
            match defn.resolve_relative(found.scope, name) {
                Some(n) if would_be_a_sink(defn, exe, n)? => {}
                _ => return Ok(None),
            }
        }
    }
    Ok(Some(found))
}

/// Whether `target_path` is safe to park the execution at directly (SetState): a leaf of
/// this execution's own branch, not inside an orthogonal region.
pub fn is_valid_reposition_target(defn: &Definition, exe: &Execution, target_path: &str) -> bool {
    let Some(node) = defn.get(target_path) else {
        return false;
    };
    if defn.node(node).is_composite() {
        return false;
    }
    let Some(root) = defn.get(&exe.root_path) else {
        return false;
    };
    let mut cur = defn.node(node).parent;
    while let Some(c) = cur {
        if defn.node(c).kind == NodeKind::Orthogonal {
            return false;
        }
        if c == root {
            return true;
        }
        cur = defn.node(c).parent;
    }
    false
}

/// Event kinds deferred in the current configuration: the union of `defer` on the active
/// node and all its Definition ancestors (so a region sees its fork's ancestors' defers).
pub(crate) fn is_deferred(defn: &Definition, active: NodeId, kind: &str) -> bool {
    let mut cur = Some(active);
    while let Some(n) = cur {
        if defn.node(n).defer.iter().any(|k| k == kind) {
            return true;
        }
        cur = defn.node(n).parent;
    }
    false
}
