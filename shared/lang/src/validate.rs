//! Static validation of a `Definition` (harel's `definition/validate.py`, whole): the
//! structural defects the builder lets through, with harel's rule codes, severities and
//! messages, reported in harel's order.
//!
//! One deliberate difference: harel gathers an event's referenced fields in a Python
//! `set`, so the order of several `unknown_event_field` issues for one transition depends
//! on the interpreter's string hashing; here it is the order the fields are first read.

use std::collections::HashSet;
use std::fmt;

use serde_json::Value;

use harel_model::pyrepr::{py_repr, py_type_name};
use harel_model::schema::value_fits;
use harel_model::{
    Definition, EventFilter, Expr, Node, NodeId, NodeKind, Predicate, Scope, Timeout, Transition,
};

/// How much an [`Issue`] matters (harel's `error` / `warning`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// Blocks: the machine is not well-formed.
    Error,
    /// The machine runs as written, but something is likely not what was meant (an unreachable
    /// state, a timeout no transition handles).
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// One finding: `path` is the node's full_path ("" = the root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// harel's rule code (`unknown_event`, `cancel_target_not_terminal`, ...), stable for tools.
    pub code: &'static str,
    /// Whether it blocks loading ([`validate_or_raise`] fails on an error).
    pub severity: Severity,
    /// The full_path of the node it is about ("" for the root, shown as `<root>`).
    pub path: String,
    /// What is wrong, in harel's words.
    pub message: String,
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.path.is_empty() {
            "<root>"
        } else {
            &self.path
        };
        write!(
            f,
            "[{}] {} at {}: {}",
            self.severity, self.code, at, self.message
        )
    }
}

/// `validate_or_raise`'s error: the error-level issues, harel's text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ValidationError {
    /// Every issue found, warnings included; its `Display` lists only the errors.
    pub issues: Vec<Issue>,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid Definition:")?;
        for i in self.issues.iter().filter(|i| i.severity == Severity::Error) {
            write!(f, "\n  {i}")?;
        }
        Ok(())
    }
}

/// Every issue (errors and warnings); empty means well-formed.
pub fn validate(defn: &Definition) -> Vec<Issue> {
    let v = Validator {
        defn,
        issues: Vec::new(),
    };
    v.run()
}

/// Validate, failing on any error-level issue; otherwise the full list (warnings included).
pub fn validate_or_raise(defn: &Definition) -> Result<Vec<Issue>, ValidationError> {
    let issues = validate(defn);
    if issues.iter().any(|i| i.severity == Severity::Error) {
        return Err(ValidationError { issues });
    }
    Ok(issues)
}

/// Ops that only make sense on an ordered (numeric) field.
const NUMERIC_OPS: [&str; 4] = ["lt", "le", "gt", "ge"];

/// Teardown events whose transition must land directly on a terminal: (kind, code, remedy).
const TEARDOWN_EVENTS: [(&str, &str, &str); 2] = [
    (
        "Cancel",
        "cancel_target_not_terminal",
        "model multi-step or async cancellation as an ordinary domain event instead \
         (e.g. `CancelOrder`), not the reserved `Cancel`",
    ),
    (
        "Expired",
        "expired_target_not_terminal",
        "an expired execution ends in that same step; a longer wind-down belongs in \
         ordinary transitions before the `ttl` runs out",
    ),
];

fn is_teardown(kind: &str) -> bool {
    TEARDOWN_EVENTS.iter().any(|(k, _, _)| *k == kind)
}

fn repr(s: &str) -> String {
    py_repr(&Value::String(s.to_string()))
}

/// Python's repr of a list of strings: `['a', 'b']`.
fn repr_list(items: &[String]) -> String {
    py_repr(&Value::Array(
        items.iter().map(|s| Value::String(s.clone())).collect(),
    ))
}

fn kinds_of(ef: &EventFilter) -> Vec<&str> {
    ef.kind.split('|').map(str::trim).collect()
}

fn tree_leaves(pred: Option<&Predicate>) -> Vec<&Predicate> {
    match pred {
        None => Vec::new(),
        Some(leaf @ Predicate::Leaf { .. }) => vec![leaf],
        Some(Predicate::All(cs) | Predicate::Any(cs) | Predicate::Not(cs)) => {
            cs.iter().flat_map(|c| tree_leaves(Some(c))).collect()
        }
    }
}

/// The (namespace, field) pairs a leaf reads: its left side and, when it compares with a
/// reference, its right side.
fn operands(leaf: &Predicate) -> Vec<(Scope, &str)> {
    let mut out = Vec::new();
    if let Predicate::Leaf {
        field,
        source,
        value_ref,
        ..
    } = leaf
    {
        if !field.is_empty() {
            out.push((*source, field.as_str()));
        }
        if let Some(r) = value_ref.as_ref().filter(|r| !r.field.is_empty()) {
            out.push((r.source, r.field.as_str()));
        }
    }
    out
}

fn leaf_op(leaf: &Predicate) -> &'static str {
    match leaf {
        Predicate::Leaf { op, .. } => op.as_str(),
        _ => "eq",
    }
}

fn choice_leaves(t: &Transition) -> Vec<&Predicate> {
    t.choice
        .iter()
        .flat_map(|c| c.branches.iter().flat_map(|(g, _)| tree_leaves(Some(g))))
        .collect()
}

/// Every tree leaf a transition's guards hold: its `where` and each `when`.
fn guard_leaves(t: &Transition) -> Vec<&Predicate> {
    let mut out = tree_leaves(t.event_filter.as_ref().and_then(|ef| ef.predicate.as_ref()));
    out.extend(choice_leaves(t));
    out
}

fn expr_refs(expr: &Expr) -> Vec<(Scope, &str)> {
    match expr {
        Expr::Ref(r) => vec![(r.source, r.field.as_str())],
        Expr::Lit(_) => Vec::new(),
        Expr::Arith { left, right, .. } => {
            let mut out = expr_refs(left);
            out.extend(expr_refs(right));
            out
        }
    }
}

fn literal_type(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        _ => "list",
    }
}

fn all_assignments(t: &Transition) -> Vec<&harel_model::Assign> {
    let mut out: Vec<_> = t.assignments.iter().collect();
    if let Some(c) = &t.choice {
        out.extend(c.branch_assignments.iter().flatten());
        out.extend(c.default_assignments.iter());
    }
    out
}

fn choice_targets(t: &Transition) -> Vec<NodeId> {
    let Some(c) = &t.choice else {
        return Vec::new();
    };
    let mut out: Vec<NodeId> = c.branches.iter().map(|(_, n)| *n).collect();
    out.extend(c.default);
    out
}

struct Validator<'d> {
    defn: &'d Definition,
    issues: Vec<Issue>,
}

impl<'d> Validator<'d> {
    fn node(&self, id: NodeId) -> &'d Node {
        self.defn.node(id)
    }

    fn push(&mut self, code: &'static str, severity: Severity, path: &str, message: String) {
        self.issues.push(Issue {
            code,
            severity,
            path: path.to_string(),
            message,
        });
    }

    fn run(mut self) -> Vec<Issue> {
        for id in self.defn.node_ids() {
            self.check_selectors(id);
            self.check_initial(id);
            self.check_timeout(id);
            self.check_outcome(id);
            self.check_invoke(id);
            self.check_with(id);
        }
        self.check_nondeterminism();
        self.check_reachability();
        self.check_events();
        self.check_context_refs();
        self.check_context_defaults();
        self.check_cancel_targets();
        self.check_choose_can_hang();
        self.check_ttl();
        self.check_terminal_outcomes();
        self.issues
    }

    // --- structure helpers (harel's `_all_transitions_from`, `_is_terminal`, ...) ---

    /// The node's own transitions (all of them, as harel gathers them) plus those of its
    /// ancestor scopes whose source is the node.
    fn all_transitions_from(&self, id: NodeId) -> Vec<&'d Transition> {
        let mut out: Vec<&Transition> = self.node(id).transitions.iter().collect();
        for anc in self.defn.ancestors(id) {
            out.extend(self.node(anc).transitions.iter().filter(|t| t.source == id));
        }
        out
    }

    fn has_outgoing(&self, id: NodeId) -> bool {
        self.all_transitions_from(id).iter().any(|t| t.source == id)
    }

    fn is_terminal(&self, id: NodeId) -> bool {
        let n = self.node(id);
        if !n.children.is_empty() || n.invoke.is_some() {
            return false;
        }
        !self.has_outgoing(id)
    }

    fn is_orthogonal(&self, id: NodeId) -> bool {
        self.node(id).kind == NodeKind::Orthogonal
    }

    /// The nearest ancestor-or-self that is an orthogonal region, else the root.
    fn execution_root_of(&self, id: NodeId) -> NodeId {
        let mut cur = id;
        while let Some(parent) = self.node(cur).parent {
            if self.is_orthogonal(parent) {
                return cur;
            }
            cur = parent;
        }
        cur
    }

    /// The first ancestor of `leaf` below `root` with an outgoing transition of its own.
    fn catching_ancestor(&self, leaf: NodeId, root: NodeId) -> Option<NodeId> {
        let mut anc = self.node(leaf).parent;
        while let Some(a) = anc {
            if a == root {
                break;
            }
            if self.has_outgoing(a) {
                return Some(a);
            }
            anc = self.node(a).parent;
        }
        None
    }

    fn resolve_relative(&self, scope: NodeId, name: &str) -> Option<NodeId> {
        self.defn.resolve_relative(scope, name)
    }

    // --- per-node checks ---

    fn check_selectors(&mut self, id: NodeId) {
        let node = self.node(id);
        for t in &node.transitions {
            let Some(sel) = &t.selector else {
                continue;
            };
            if sel.mapper.is_empty() {
                self.push(
                    "selector_malformed",
                    Severity::Error,
                    &node.full_path,
                    "selector needs an action and a non-empty mapper".into(),
                );
                continue;
            }
            let mut targets: Vec<(String, String)> = sel
                .mapper
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if let Some(d) = &sel.default {
                targets.push(("else".into(), d.clone()));
            }
            for (result, target) in targets {
                if self.resolve_relative(id, &target).is_none() {
                    self.push(
                        "selector_target_unresolved",
                        Severity::Error,
                        &node.full_path,
                        format!(
                            "selector branch {} -> {} does not resolve from this scope",
                            repr(&result),
                            repr(&target)
                        ),
                    );
                }
            }
            if let Some(enum_values) = &sel.enum_values {
                let phantom: Vec<String> = sel
                    .mapper
                    .keys()
                    .filter(|k| !enum_values.contains(k))
                    .cloned()
                    .collect();
                if !phantom.is_empty() {
                    self.push(
                        "selector_phantom_branch",
                        Severity::Error,
                        &node.full_path,
                        format!(
                            "selector branches {} are not in the declared result set {}",
                            repr_list(&phantom),
                            repr_list(enum_values)
                        ),
                    );
                }
                let uncovered: Vec<String> = enum_values
                    .iter()
                    .filter(|v| !sel.mapper.contains_key(*v))
                    .cloned()
                    .collect();
                if !uncovered.is_empty() && sel.default.is_none() {
                    self.push(
                        "selector_non_exhaustive",
                        Severity::Error,
                        &node.full_path,
                        format!(
                            "selector does not cover {} and has no `else`",
                            repr_list(&uncovered)
                        ),
                    );
                }
            }
        }
    }

    fn check_initial(&mut self, id: NodeId) {
        let node = self.node(id);
        if node.children.is_empty() || self.is_orthogonal(id) {
            return;
        }
        match &node.start_state {
            None => self.push(
                "missing_initial",
                Severity::Error,
                &node.full_path,
                "composite has children but no initial state".into(),
            ),
            Some(start) if self.defn.child(id, start).is_none() => self.push(
                "initial_unresolved",
                Severity::Error,
                &node.full_path,
                format!(
                    "initial state {} is not a child of this composite",
                    repr(start)
                ),
            ),
            Some(_) => {}
        }
    }

    /// Whether a `Timeout` for the node would be handled by a transition whose source is
    /// it or one of its ancestors, owned by that source's parent scope.
    fn has_timeout_handler(&self, id: NodeId) -> bool {
        let mut cur = id;
        while let Some(parent) = self.node(cur).parent {
            let handled = self.node(parent).transitions.iter().any(|t| {
                t.source == cur
                    && t.event_filter
                        .as_ref()
                        .is_some_and(|ef| kinds_of(ef).contains(&"Timeout"))
            });
            if handled {
                return true;
            }
            cur = parent;
        }
        false
    }

    fn check_timeout(&mut self, id: NodeId) {
        let node = self.node(id);
        let Some(timeout) = &node.timeout else {
            return;
        };
        match timeout {
            Timeout::Context(key) if key.is_empty() => self.push(
                "timeout_malformed",
                Severity::Error,
                &node.full_path,
                "dynamic timeout must be {context: <key>}".into(),
            ),
            Timeout::Context(_) => {}
            Timeout::Seconds(s) if s.fract() != 0.0 || *s <= 0.0 => {
                // harel wants a positive int: a float, even a whole one, is refused
                let shown = if s.fract() == 0.0 && s.abs() < 1e15 {
                    format!("{}", *s as i64)
                } else {
                    harel_model::pyrepr::py_float_repr(*s)
                };
                self.push(
                    "timeout_invalid",
                    Severity::Error,
                    &node.full_path,
                    format!("timeout must be a positive int, got {shown}"),
                );
            }
            Timeout::Seconds(_) => {}
        }
        if !self.has_timeout_handler(id) {
            self.push(
                "timeout_unhandled",
                Severity::Warning,
                &node.full_path,
                "timeout is armed but no `on: Timeout` transition handles it (guaranteed no-op on fire)".into(),
            );
        }
    }

    fn check_outcome(&mut self, id: NodeId) {
        let node = self.node(id);
        if node.outcome.is_none() {
            return;
        }
        if !node.children.is_empty() {
            self.push(
                "outcome_on_composite",
                Severity::Warning,
                &node.full_path,
                "outcome on a non-terminal composite".into(),
            );
        } else if self.has_outgoing(id) {
            self.push(
                "outcome_on_nonterminal",
                Severity::Warning,
                &node.full_path,
                "outcome on a state with outgoing transitions".into(),
            );
        }
    }

    fn check_invoke(&mut self, id: NodeId) {
        let node = self.node(id);
        if node.invoke.is_none() {
            return;
        }
        if !node.children.is_empty() {
            self.push(
                "invoke_on_composite",
                Severity::Error,
                &node.full_path,
                "an `invoke` state must be a leaf".into(),
            );
        }
        if node.invoke_each.is_none()
            && self
                .all_transitions_from(id)
                .iter()
                .any(|t| t.source == id && t.event_filter.is_none())
        {
            self.push(
                "invoke_automatic_exit",
                Severity::Error,
                &node.full_path,
                "a single `invoke` state must not have an automatic outgoing transition \
                 (it would fire before the submachine returns); use `on Returned`"
                    .into(),
            );
        }
    }

    fn check_with(&mut self, id: NodeId) {
        let node = self.node(id);
        if !node.invoke_with.is_empty() && node.invoke.is_none() && !self.is_orthogonal(id) {
            self.push(
                "with_without_children",
                Severity::Warning,
                &node.full_path,
                "`with` has no effect here: it passes context to an `invoke` or to an orthogonal node's regions"
                    .into(),
            );
        }
    }

    // --- whole-machine checks ---

    fn check_nondeterminism(&mut self) {
        let mut by_source: Vec<(NodeId, usize)> = Vec::new();
        for id in self.defn.node_ids() {
            for t in &self.node(id).transitions {
                if t.event_filter.is_none() {
                    match by_source.iter_mut().find(|(s, _)| *s == t.source) {
                        Some((_, n)) => *n += 1,
                        None => by_source.push((t.source, 1)),
                    }
                }
            }
        }
        for (src, count) in by_source {
            if count > 1 {
                let path = self.node(src).full_path.clone();
                self.push(
                    "nondeterministic_automatic",
                    Severity::Error,
                    &path,
                    format!("{count} automatic (eventless) transitions leave this state; the drain is ambiguous"),
                );
            }
        }
    }

    fn reachable(&self) -> HashSet<NodeId> {
        let mut seen = HashSet::new();
        let mut work = Vec::new();
        seen.insert(self.defn.root);
        work.push(self.defn.root);
        let visit = |n: NodeId, seen: &mut HashSet<NodeId>, work: &mut Vec<NodeId>| {
            if seen.insert(n) {
                work.push(n);
            }
        };
        while let Some(id) = work.pop() {
            let node = self.node(id);
            if !node.children.is_empty() {
                if self.is_orthogonal(id) {
                    for c in &node.children {
                        visit(*c, &mut seen, &mut work);
                    }
                } else if let Some(start) = node
                    .start_state
                    .as_deref()
                    .and_then(|s| self.defn.child(id, s))
                {
                    visit(start, &mut seen, &mut work);
                }
            }
            for t in &node.transitions {
                if let Some(target) = t.target {
                    visit(target, &mut seen, &mut work);
                }
                if let Some(sel) = &t.selector {
                    // the `else` branch is a reachable target too (the `join ... else to X` sugar)
                    let names = sel.mapper.values().chain(sel.default.iter());
                    for name in names {
                        if let Some(tgt) = self.resolve_relative(id, name) {
                            visit(tgt, &mut seen, &mut work);
                        }
                    }
                }
                for tgt in choice_targets(t) {
                    visit(tgt, &mut seen, &mut work);
                }
            }
        }
        seen
    }

    fn check_reachability(&mut self) {
        let reachable = self.reachable();
        for id in self.defn.node_ids() {
            if !reachable.contains(&id) {
                let path = self.node(id).full_path.clone();
                self.push(
                    "unreachable",
                    Severity::Warning,
                    &path,
                    "state is not reachable from the root".into(),
                );
            }
        }
    }

    fn check_event(&mut self, node: &Node, ef: &EventFilter, extra: &[(String, &'static str)]) {
        // the event's own fields only; `context.x` leaves are checked against the context schema
        let mut event_reads: Vec<(String, &'static str)> = Vec::new();
        for leaf in tree_leaves(ef.predicate.as_ref()) {
            for (src, f) in operands(leaf) {
                if src == Scope::Event {
                    event_reads.push((f.to_string(), leaf_op(leaf)));
                }
            }
        }
        let mut fields: Vec<String> = Vec::new();
        let add_field = |f: &str, fields: &mut Vec<String>| {
            if !fields.iter().any(|x| x == f) {
                fields.push(f.to_string());
            }
        };
        for (f, _, _) in &ef.predicates {
            add_field(f, &mut fields);
        }
        for (f, _) in &event_reads {
            add_field(f, &mut fields);
        }
        let mut leaves: Vec<(String, &'static str)> = ef
            .predicates
            .iter()
            .map(|(f, op, _)| (f.clone(), op.as_str()))
            .collect();
        leaves.extend(event_reads);
        for (f, op) in extra {
            add_field(f, &mut fields);
            leaves.push((f.clone(), op));
        }
        for kind in kinds_of(ef) {
            if harel_model::schema::is_reserved_event(kind) {
                continue;
            }
            let Some(etype) = self.defn.events.get(kind) else {
                self.push(
                    "unknown_event",
                    Severity::Error,
                    &node.full_path,
                    format!("transition references undeclared event {}", repr(kind)),
                );
                continue;
            };
            if etype.fields.is_empty() {
                continue;
            }
            for f in &fields {
                if !etype.fields.contains_key(f.as_str()) {
                    self.push(
                        "unknown_event_field",
                        Severity::Error,
                        &node.full_path,
                        format!("event {} has no field {}", repr(kind), repr(f)),
                    );
                }
            }
            for (f, op) in &leaves {
                if let Some(spec) = etype.fields.get(f.as_str()) {
                    if NUMERIC_OPS.contains(op) && (spec.type_ == "string" || spec.type_ == "bool")
                    {
                        self.push(
                            "op_type_mismatch",
                            Severity::Warning,
                            &node.full_path,
                            format!(
                                "op {} on {} ({}) compares a non-ordered field",
                                repr(op),
                                repr(f),
                                spec.type_
                            ),
                        );
                    }
                }
            }
        }
    }

    fn check_events(&mut self) {
        for id in self.defn.node_ids() {
            let node = self.node(id);
            for t in &node.transitions {
                let Some(ef) = &t.event_filter else {
                    continue;
                };
                let mut extra: Vec<(String, &'static str)> = Vec::new();
                for leaf in choice_leaves(t) {
                    for (src, f) in operands(leaf) {
                        if src == Scope::Event {
                            extra.push((f.to_string(), leaf_op(leaf)));
                        }
                    }
                }
                for a in all_assignments(t) {
                    for (src, f) in expr_refs(&a.expr) {
                        if src == Scope::Event && !f.is_empty() {
                            extra.push((f.to_string(), "eq"));
                        }
                    }
                }
                self.check_event(node, ef, &extra);
            }
        }
    }

    fn check_context_ref(&mut self, node: &Node, field: &str, op: &str) {
        if self.defn.context_schema.is_empty() {
            return;
        }
        match self.defn.context_schema.get(field) {
            None => self.push(
                "unknown_context_field",
                Severity::Error,
                &node.full_path,
                format!("the context declares no field {}", repr(field)),
            ),
            Some(spec)
                if NUMERIC_OPS.contains(&op)
                    && (spec.type_ == "string" || spec.type_ == "bool") =>
            {
                let message = format!(
                    "op {} on context.{field} ({}) compares a non-ordered field",
                    repr(op),
                    spec.type_
                );
                self.push(
                    "op_type_mismatch",
                    Severity::Warning,
                    &node.full_path,
                    message,
                );
            }
            Some(_) => {}
        }
    }

    /// The static type of a right-hand side where it is knowable.
    fn expr_type(&self, expr: &Expr) -> Option<&'static str> {
        match expr {
            Expr::Lit(v) => Some(literal_type(v)),
            Expr::Ref(r) => {
                if r.source != Scope::Context {
                    return None;
                }
                let spec = self.defn.context_schema.get(r.field.as_str())?;
                static_type(&spec.type_)
            }
            Expr::Arith { op: '/', .. } => Some("float"),
            Expr::Arith { left, right, .. } => {
                // a Python set of the two sides' types, None included
                let sides = [self.expr_type(left), self.expr_type(right)];
                if sides.iter().all(|s| *s == Some("int")) {
                    return Some("int");
                }
                let numeric = sides
                    .iter()
                    .all(|s| matches!(s, Some("int") | Some("float")));
                if numeric && sides.contains(&Some("float")) {
                    return Some("float");
                }
                None
            }
        }
    }

    fn check_assignments(&mut self, node: &Node, t: &Transition) {
        for assign in all_assignments(t) {
            for (src, field) in expr_refs(&assign.expr) {
                if src == Scope::Context && !field.is_empty() {
                    self.check_context_ref(node, field, "eq");
                } else if src == Scope::Event && t.event_filter.is_none() {
                    self.push(
                        "event_ref_without_event",
                        Severity::Error,
                        &node.full_path,
                        format!("`set` reads event.{field} on an automatic transition, which has no event"),
                    );
                }
            }
            if let Expr::Arith { op, left, right } = &assign.expr {
                for operand in [left, right] {
                    if let Some(kind @ ("string" | "bool" | "list")) = self.expr_type(operand) {
                        self.push(
                            "assign_type_mismatch",
                            Severity::Error,
                            &node.full_path,
                            format!(
                                "`{op}` in `set context.{}` needs numbers, got a {kind}",
                                assign.field
                            ),
                        );
                    }
                }
            }
            if self.defn.context_schema.is_empty() {
                continue;
            }
            let Some(spec) = self.defn.context_schema.get(assign.field.as_str()) else {
                self.push(
                    "unknown_context_field",
                    Severity::Error,
                    &node.full_path,
                    format!(
                        "`set` writes context.{}, which the context doesn't declare",
                        assign.field
                    ),
                );
                continue;
            };
            let kind = self.expr_type(&assign.expr);
            let fits = match kind {
                None => true,
                Some(k) => {
                    spec.type_ == "any" || k == spec.type_ || (spec.type_ == "float" && k == "int")
                }
            };
            if !fits {
                self.push(
                    "assign_type_mismatch",
                    Severity::Error,
                    &node.full_path,
                    format!(
                        "`set context.{}` ({}) is given a {}",
                        assign.field,
                        spec.type_,
                        kind.unwrap_or("None")
                    ),
                );
            }
        }
    }

    /// The declared type of what a guard reads, where knowable.
    fn operand_type(&self, source: Scope, field: &str, t: &Transition) -> Option<&'static str> {
        let specs: Vec<Option<&harel_model::FieldSpec>> = match source {
            Scope::Context => vec![self.defn.context_schema.get(field)],
            Scope::Event => t
                .event_filter
                .as_ref()
                .map(|ef| {
                    kinds_of(ef)
                        .into_iter()
                        .map(|k| self.defn.events.get(k).and_then(|e| e.fields.get(field)))
                        .collect()
                })
                .unwrap_or_default(),
        };
        if specs.is_empty() || specs.iter().any(Option::is_none) {
            return None;
        }
        let mut types: Vec<&str> = specs.iter().flatten().map(|s| s.type_.as_str()).collect();
        types.sort_unstable();
        types.dedup();
        match types.as_slice() {
            [one] if *one != "any" => static_type(one),
            _ => None,
        }
    }

    fn check_compared_types(&mut self, node: &Node, t: &Transition, leaf: &Predicate) {
        let Predicate::Leaf {
            field,
            op,
            source,
            value_ref: Some(r),
            ..
        } = leaf
        else {
            return;
        };
        if op.as_str() == "in" || field.is_empty() || r.field.is_empty() {
            return;
        }
        let left = self.operand_type(*source, field, t);
        let right = self.operand_type(r.source, &r.field, t);
        if let (Some(l), Some(rt)) = (left, right) {
            let comparable =
                l == rt || (matches!(l, "int" | "float") && matches!(rt, "int" | "float"));
            if !comparable {
                self.push(
                    "compare_type_mismatch",
                    Severity::Warning,
                    &node.full_path,
                    format!(
                        "a guard compares {}.{field} ({l}) with {}.{} ({rt}): values of different types \
                         are never equal or ordered",
                        source.as_str(),
                        r.source.as_str(),
                        r.field
                    ),
                );
            }
        }
    }

    fn check_context_refs(&mut self) {
        for id in self.defn.node_ids() {
            let node = self.node(id);
            let loop_var = node.invoke_each.as_ref().map(|(v, _)| v.as_str());
            for parent_key in node.invoke_with.values() {
                if Some(parent_key.as_str()) != loop_var {
                    self.check_context_ref(node, parent_key, "eq");
                }
            }
            if let Some((_, coll)) = &node.invoke_each {
                self.check_context_ref(node, coll, "eq");
            }
            for t in &node.transitions {
                for leaf in guard_leaves(t) {
                    for (src, f) in operands(leaf) {
                        if src == Scope::Context {
                            self.check_context_ref(node, f, leaf_op(leaf));
                        } else if t.event_filter.is_none() {
                            self.push(
                                "event_ref_without_event",
                                Severity::Error,
                                &node.full_path,
                                format!(
                                    "a guard reads the event's {} on an automatic transition, \
                                     which has no event — it can never hold",
                                    repr(f)
                                ),
                            );
                        }
                    }
                    self.check_compared_types(node, t, leaf);
                }
                self.check_assignments(node, t);
            }
        }
    }

    fn check_context_defaults(&mut self) {
        for (name, spec) in &self.defn.context_schema {
            if let Some(default) = &spec.default {
                if !default.is_null() && !value_fits(&spec.type_, default) {
                    self.push(
                        "default_type_mismatch",
                        Severity::Error,
                        "",
                        format!(
                            "the default of context field {} ({}) is {} {}",
                            repr(name),
                            spec.type_,
                            py_type_name(default),
                            py_repr(default)
                        ),
                    );
                }
            }
        }
    }

    /// Why reaching `target` would not end `root`'s execution in that same step.
    fn why_not_ending(&self, target: NodeId, root: NodeId) -> Option<String> {
        if self.execution_root_of(target) != root {
            return Some("it is not part of this execution".into());
        }
        if !self.is_terminal(target) {
            return Some("it has its own outgoing transitions".into());
        }
        self.catching_ancestor(target, root).map(|c| {
            format!(
                "the enclosing {} has its own transition and the execution would go on",
                repr(&self.node(c).full_path)
            )
        })
    }

    fn check_cancel_targets(&mut self) {
        for id in self.defn.node_ids() {
            let node = self.node(id);
            for t in &node.transitions {
                let Some(ef) = &t.event_filter else {
                    continue;
                };
                let kinds: Vec<&str> = kinds_of(ef)
                    .into_iter()
                    .filter(|k| is_teardown(k))
                    .collect();
                if kinds.is_empty() {
                    continue;
                }
                let mut targets: Vec<NodeId> = t.target.into_iter().collect();
                if let Some(sel) = &t.selector {
                    // resolved from the owning scope, as the engine resolves selector branches
                    for name in sel.mapper.values().chain(sel.default.iter()) {
                        targets.extend(self.resolve_relative(id, name));
                    }
                }
                targets.extend(choice_targets(t));
                let root = self.execution_root_of(id);
                for kind in kinds {
                    let (_, code, remedy) = TEARDOWN_EVENTS
                        .iter()
                        .find(|(k, _, _)| *k == kind)
                        .expect("a teardown kind");
                    for target in &targets {
                        if let Some(why) = self.why_not_ending(*target, root) {
                            let message = format!(
                                "`on {kind}` must resolve directly to a terminal that ends the execution, \
                                 got {}: {why} — {remedy}",
                                repr(&self.node(*target).full_path)
                            );
                            self.push(code, Severity::Error, &node.full_path, message);
                        }
                    }
                }
            }
        }
    }

    /// Whether the execution can get past `source` other than through its automatic
    /// transitions (an event transition here or above, or an `on activity` hook).
    fn can_rerun(&self, source: NodeId) -> bool {
        if self.node(source).on_activity.is_some() {
            return true;
        }
        let root = self.execution_root_of(source);
        let mut cur = Some(source);
        while let Some(n) = cur {
            for t in self.all_transitions_from(n) {
                if let Some(ef) = &t.event_filter {
                    if kinds_of(ef).iter().any(|k| !is_teardown(k)) {
                        return true;
                    }
                }
            }
            if n == root {
                break;
            }
            cur = self.node(n).parent;
        }
        false
    }

    fn check_choose_can_hang(&mut self) {
        for id in self.defn.node_ids() {
            for t in &self.node(id).transitions {
                let Some(choice) = &t.choice else {
                    continue;
                };
                if t.event_filter.is_some() || choice.default.is_some() {
                    continue;
                }
                if !self.can_rerun(t.source) {
                    let path = self.node(t.source).full_path.clone();
                    self.push(
                        "choose_can_hang",
                        Severity::Error,
                        &path,
                        "an automatic `choose` without `else` can never be re-evaluated here (no \
                         event transition, no `on activity`): if no branch holds, the execution \
                         waits forever — add an `else`"
                            .into(),
                    );
                }
            }
        }
    }

    fn check_ttl(&mut self) {
        match self.defn.ttl {
            Some(ttl) if ttl <= 0 => {
                self.push(
                    "ttl_not_positive",
                    Severity::Error,
                    "",
                    format!("`ttl` must be positive, got {ttl}"),
                );
            }
            Some(_) => {}
            None => {
                for id in self.defn.node_ids() {
                    let node = self.node(id);
                    for t in &node.transitions {
                        if t.event_filter
                            .as_ref()
                            .is_some_and(|ef| kinds_of(ef).contains(&"Expired"))
                        {
                            self.push(
                                "expired_without_ttl",
                                Severity::Warning,
                                &node.full_path,
                                "`on Expired` never fires: the machine declares no `ttl`".into(),
                            );
                        }
                    }
                }
            }
        }
    }

    /// Leaf sinks in `root`'s subtree that end its execution, not descending into a
    /// nested orthogonal's regions.
    fn execution_terminals(&self, root: NodeId, out: &mut Vec<NodeId>, node: NodeId) {
        let n = self.node(node);
        if n.children.is_empty() {
            if self.is_terminal(node) && self.catching_ancestor(node, root).is_none() {
                out.push(node);
            }
            return;
        }
        if self.is_orthogonal(node) {
            return;
        }
        for c in &n.children {
            self.execution_terminals(root, out, *c);
        }
    }

    fn check_terminal_outcomes(&mut self) {
        let mut roots = vec![self.defn.root];
        for id in self.defn.node_ids() {
            if self.is_orthogonal(id) {
                roots.extend(self.node(id).children.iter().copied());
            }
        }
        let mut seen = HashSet::new();
        for root in roots {
            let mut terminals = Vec::new();
            self.execution_terminals(root, &mut terminals, root);
            for term in terminals {
                if !seen.insert(term) {
                    continue;
                }
                if self.node(term).outcome.is_none() {
                    let path = self.node(term).full_path.clone();
                    self.push(
                        "terminal_missing_outcome",
                        Severity::Error,
                        &path,
                        "terminal of the machine/region must declare an `outcome` \
                         (e.g. success / failed) — the verdict the model routes on"
                            .into(),
                    );
                }
            }
        }
    }
}

/// A declared field type as a static string (`any` and unknown types are not knowable).
fn static_type(t: &str) -> Option<&'static str> {
    match t {
        "string" => Some("string"),
        "int" => Some("int"),
        "float" => Some("float"),
        "bool" => Some("bool"),
        _ => None,
    }
}
