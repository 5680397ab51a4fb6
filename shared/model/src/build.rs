//! Build a [`Definition`] from harel's normalized machine dict (harel
//! `definition/builder.py` + `normalize.py`).
//!
//! The input is exactly what harel's DSL loader hands `build_definition`, as JSON:
//!
//! ```text
//! machine := {
//!   "states": { NAME: state, ... },          // declaration order is kept
//!   "transitions": [transition, ...],        // or a list of lists (flattened)
//!   "start": NAME,                           // the initial child
//!   "events": { KIND: { FIELD: spec } },     // optional typed events
//!   "context_schema": { FIELD: spec },       // optional typed context
//!   "ttl": INT,                              // optional, seconds
//!   ...every state key below (the machine is the root state)
//! }
//! spec  := "int" | { "type": "int", "required": bool, "default": value }
//! state := {
//!   "type": "State" | "CompositeState" | "ParallelState" | "OrthogonalState",
//!           // optional: CompositeState when "states" is present, else State
//!   "states", "transitions", "start",        // composites
//!   "on_enter" | "on_exit" | "on_activity": "pkg.fn" | { "function": "pkg.fn", "inputs": {..} },
//!   "timeout": SECONDS | { "context": KEY },
//!   "outcome": STR, "carry": [KEY..], "defer": [KIND..],
//!   "allow_history": bool (default true), "cancel_on_failure": bool (default false),
//!   "invoke_with": { CHILD_KEY: PARENT_KEY },
//!   "invoke": FQN, "invoke_each": [VAR, COLL], "invoke_inline": machine,
//!   "__pos__": [line, col]
//! }
//! transition := {
//!   "from": NAME | [NAME, ...],              // a list expands to one transition per source
//!   // exactly one destination:
//!   "to": NAME,
//!   "selector": { "function", "inputs", "mapper": { RESULT: NAME }, "default": NAME, "enum": [..] },
//!   "choice": { "branches": [{ "when": pred, "to": NAME, "set": [assign] }],
//!               "default": NAME, "default_set": [assign] },
//!   "on_event": { "type": "A | B", FIELD__OP: value, ..., "all"|"any"|"not"|"__ref__": .. },
//!   "set": [assign],
//!   "__pos__": [line, col]
//! }
//! pred   := { FIELD__OP: value, "all": [pred], "any": [pred], "not": pred,
//!             "__ref__": { "field", "op", "value", "source", "value_ref": { "source", "field" } | null } }
//! assign := { "field": KEY, "expr": expr }
//! expr   := { "ref": { "source", "field" } } | { "lit": value } | { "arith": { "op", "left", "right" } }
//! ```
//!
//! Nodes are laid out depth-first in declaration order; the root is a `ParallelState`
//! named after the machine with full_path "". A state's submachine keys are `"invoke": FQN`,
//! `"invoke_each": [VAR, COLL]` (a fan-out) and `"invoke_inline": machine` (an inline
//! machine, built as its own Definition under the synthetic FQN `{machine}#{full_path}` and
//! kept in `submachines`, with the inline machines nested in it flattened alongside).

use std::collections::HashMap;
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::{Map, Value};
use smol_str::SmolStr;

use crate::definition::{
    ActionRef, Assign, Choice, Definition, EventFilter, Expr, FieldRef, Node, NodeId, NodeKind, Op,
    Predicate, Scope, Selector, Timeout, Transition,
};
use crate::execution::{KeyMap, Object};
use crate::pyrepr::{py_repr, py_str};
use crate::schema::{EventType, FieldSpec};

/// A construction error, located at the offending `.stm` node when the loader gave one.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct BuildError {
    /// What is wrong, in harel's words (the message harel's builder raises).
    pub message: String,
    /// (line, column) in the `.stm` source of the state or transition at fault, when known.
    pub pos: Option<(usize, usize)>,
}

impl BuildError {
    fn new(message: impl Into<String>, pos: Option<(usize, usize)>) -> Self {
        BuildError {
            message: message.into(),
            pos,
        }
    }
}

const STATE_TYPE_NAMES: &str = "('State', 'CompositeState', 'ParallelState', 'OrthogonalState')";

fn repr(s: &str) -> String {
    py_repr(&Value::String(s.to_string()))
}

fn pos_of(obj: &Map<String, Value>) -> Option<(usize, usize)> {
    let arr = obj.get("__pos__")?.as_array()?;
    let line = arr.first()?.as_u64()? as usize;
    let col = arr.get(1)?.as_u64()? as usize;
    Some((line, col))
}

fn as_object<'a>(
    v: &'a Value,
    what: &str,
    pos: Option<(usize, usize)>,
) -> Result<&'a Map<String, Value>, BuildError> {
    v.as_object().ok_or_else(|| {
        BuildError::new(format!("{what} must be a mapping, got {}", py_repr(v)), pos)
    })
}

fn as_str<'a>(
    v: &'a Value,
    what: &str,
    pos: Option<(usize, usize)>,
) -> Result<&'a str, BuildError> {
    v.as_str()
        .ok_or_else(|| BuildError::new(format!("{what} must be a string, got {}", py_repr(v)), pos))
}

struct Builder {
    nodes: Vec<Node>,
    index: HashMap<String, NodeId, crate::execution::FastHash>,
    /// (scope composite, its raw transitions), in harel's order: a composite's entry is
    /// queued after its children's, so the first error reported is the one harel reports.
    pending: Vec<(NodeId, Vec<Value>)>,
    /// The machine's name: inline submachines are named `{machine}#{full_path}`.
    machine: String,
    /// Inline `invoke` targets by synthetic FQN (nested ones flattened in).
    submachines: IndexMap<String, Arc<Definition>>,
}

/// Build a Definition from harel's normalized machine dict. `definition_id` defaults to
/// `name`.
pub fn build_definition(
    config: &Value,
    name: &str,
    definition_id: Option<&str>,
) -> Result<Definition, BuildError> {
    let cfg = as_object(config, "a machine", None)?;
    let mut b = Builder {
        nodes: Vec::new(),
        index: HashMap::default(),
        pending: Vec::new(),
        machine: name.to_string(),
        submachines: IndexMap::new(),
    };
    let root = b.build_node(cfg, name, String::new(), Some(NodeKind::Parallel), None)?;
    let pending = std::mem::take(&mut b.pending);
    for (scope, raws) in pending {
        for raw in &raws {
            let t = b.build_transition(scope, raw)?;
            b.nodes[scope.index()].transitions.push(t);
        }
    }
    let events = build_events(cfg)?;
    let context_schema = match cfg.get("context_schema") {
        None | Some(Value::Null) => KeyMap::default(),
        Some(v) => build_fields(as_object(v, "`context_schema`", None)?)?,
    };
    let ttl = match cfg.get("ttl") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().ok_or_else(|| {
            BuildError::new(format!("`ttl` must be an int, got {}", py_repr(v)), None)
        })?),
    };
    Ok(Definition {
        id: definition_id.unwrap_or(name).to_string(),
        nodes: b.nodes,
        root,
        index: b.index,
        events,
        submachines: b.submachines,
        ttl,
        context_schema,
        source: Some(Arc::new(config.clone())),
    })
}

/// `invoke_each`: `[loop variable, collection key]`.
fn invoke_each(v: &Value, pos: Option<(usize, usize)>) -> Result<(String, String), BuildError> {
    match v.as_array().map(Vec::as_slice) {
        Some([var, coll]) => Ok((
            as_str(var, "an `invoke_each` variable", pos)?.to_string(),
            as_str(coll, "an `invoke_each` collection", pos)?.to_string(),
        )),
        _ => Err(BuildError::new(
            format!(
                "`invoke_each` must be [variable, collection], got {}",
                py_repr(v)
            ),
            pos,
        )),
    }
}

fn build_field_spec(v: &Value) -> Result<FieldSpec, BuildError> {
    match v {
        Value::String(t) => Ok(FieldSpec {
            type_: t.clone(),
            required: true,
            default: None,
        }),
        Value::Object(o) => Ok(FieldSpec {
            type_: o
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("any")
                .to_string(),
            required: o.get("required").and_then(Value::as_bool).unwrap_or(true),
            // harel reads `default` with dict.get: None (JSON null) means "no default"
            default: o.get("default").filter(|d| !d.is_null()).cloned(),
        }),
        other => Err(BuildError::new(
            format!(
                "a field spec must be a type name or a mapping, got {}",
                py_repr(other)
            ),
            None,
        )),
    }
}

fn build_fields(o: &Map<String, Value>) -> Result<KeyMap<FieldSpec>, BuildError> {
    o.iter()
        .map(|(k, v)| Ok((k.into(), build_field_spec(v)?)))
        .collect()
}

fn build_events(cfg: &Map<String, Value>) -> Result<IndexMap<String, EventType>, BuildError> {
    let Some(raw) = cfg.get("events").filter(|v| !v.is_null()) else {
        return Ok(IndexMap::new());
    };
    let mut out = IndexMap::new();
    for (name, fields) in as_object(raw, "`events`", None)? {
        let fields = match fields {
            Value::Null => KeyMap::default(),
            v => build_fields(as_object(v, "an event's fields", None)?)?,
        };
        out.insert(
            name.clone(),
            EventType {
                name: name.clone(),
                fields,
            },
        );
    }
    Ok(out)
}

fn build_action(
    v: Option<&Value>,
    pos: Option<(usize, usize)>,
) -> Result<Option<ActionRef>, BuildError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(f)) => Ok(Some(ActionRef {
            function: f.clone(),
            inputs: Object::new(),
        })),
        Some(Value::Object(o)) => action_from(o, pos).map(Some),
        Some(other) => Err(BuildError::new(
            format!(
                "an action must be a name or a mapping, got {}",
                py_repr(other)
            ),
            pos,
        )),
    }
}

fn action_from(
    o: &Map<String, Value>,
    pos: Option<(usize, usize)>,
) -> Result<ActionRef, BuildError> {
    let function = o
        .get("function")
        .ok_or_else(|| BuildError::new("an action needs a `function`", pos))?;
    let inputs = match o.get("inputs") {
        None | Some(Value::Null) => Object::new(),
        Some(v) => as_object(v, "action `inputs`", pos)?.clone(),
    };
    Ok(ActionRef {
        function: as_str(function, "an action's `function`", pos)?.to_string(),
        inputs,
    })
}

fn parse_op(op: &str, pos: Option<(usize, usize)>) -> Result<Op, BuildError> {
    Op::parse(op).ok_or_else(|| {
        BuildError::new(
            format!(
                "unknown comparison operator {} (expected eq ne lt le gt ge in)",
                repr(op)
            ),
            pos,
        )
    })
}

fn parse_scope(v: Option<&Value>, pos: Option<(usize, usize)>) -> Result<Scope, BuildError> {
    match v {
        None | Some(Value::Null) => Ok(Scope::Event),
        Some(s) => {
            let s = as_str(s, "a reference's `source`", pos)?;
            Scope::parse(s).ok_or_else(|| {
                BuildError::new(
                    format!(
                        "unknown reference source {} (expected 'event' or 'context')",
                        repr(s)
                    ),
                    pos,
                )
            })
        }
    }
}

/// `field__op` (or bare `field`, meaning `eq`). harel unpacks `key.split("__")` into two
/// names, so a key with two `__` is an error there too.
fn split_flat_key(key: &str, pos: Option<(usize, usize)>) -> Result<(String, Op), BuildError> {
    let parts: Vec<&str> = key.split("__").collect();
    match parts.as_slice() {
        [field] => Ok(((*field).to_string(), Op::Eq)),
        [field, op] => Ok(((*field).to_string(), parse_op(op, pos)?)),
        _ => Err(BuildError::new(
            format!(
                "invalid predicate key {}: expected FIELD or FIELD__OP",
                repr(key)
            ),
            pos,
        )),
    }
}

fn parse_predicate(
    data: &Map<String, Value>,
    pos: Option<(usize, usize)>,
) -> Result<Option<Predicate>, BuildError> {
    let mut nodes = Vec::new();
    for (key, val) in data {
        match key.as_str() {
            "all" | "any" => {
                let list = val.as_array().ok_or_else(|| {
                    BuildError::new(format!("`{key}` needs a list of predicates"), pos)
                })?;
                let mut children = Vec::new();
                for d in list {
                    if let Some(p) = parse_predicate(as_object(d, "a predicate", pos)?, pos)? {
                        children.push(p);
                    }
                }
                nodes.push(if key == "all" {
                    Predicate::All(children)
                } else {
                    Predicate::Any(children)
                });
            }
            "not" => {
                // harel builds `not` with no child here and then fails evaluating it
                // (IndexError) on every event; refusing it up front loses nothing
                let child = parse_predicate(as_object(val, "a predicate", pos)?, pos)?
                    .ok_or_else(|| BuildError::new("`not` needs a predicate", pos))?;
                nodes.push(Predicate::Not(vec![child]));
            }
            "__ref__" => {
                let r = as_object(val, "a reference leaf", pos)?;
                let field = as_str(
                    r.get("field").unwrap_or(&Value::Null),
                    "a reference leaf's `field`",
                    pos,
                )?;
                let op = as_str(
                    r.get("op").unwrap_or(&Value::Null),
                    "a reference leaf's `op`",
                    pos,
                )?;
                let value_ref = match r.get("value_ref") {
                    None | Some(Value::Null) => None,
                    Some(v) => {
                        let v = as_object(v, "`value_ref`", pos)?;
                        Some(FieldRef {
                            source: parse_scope(v.get("source"), pos)?,
                            field: as_str(
                                v.get("field").unwrap_or(&Value::Null),
                                "`value_ref.field`",
                                pos,
                            )?
                            .to_string(),
                        })
                    }
                };
                nodes.push(Predicate::Leaf {
                    field: field.to_string(),
                    op: parse_op(op, pos)?,
                    value: r.get("value").cloned().unwrap_or(Value::Null),
                    source: parse_scope(r.get("source"), pos)?,
                    value_ref,
                });
            }
            _ => {
                let (field, op) = split_flat_key(key, pos)?;
                nodes.push(Predicate::Leaf {
                    field,
                    op,
                    value: val.clone(),
                    source: Scope::Event,
                    value_ref: None,
                });
            }
        }
    }
    Ok(match nodes.len() {
        0 => None,
        1 => nodes.pop(),
        _ => Some(Predicate::All(nodes)),
    })
}

const COMBINATORS: [&str; 4] = ["all", "any", "not", "__ref__"];

fn build_event_filter(
    data: &Map<String, Value>,
    pos: Option<(usize, usize)>,
) -> Result<EventFilter, BuildError> {
    let kind = as_str(
        data.get("type").unwrap_or(&Value::Null),
        "an event filter's `type`",
        pos,
    )?;
    let mut filter = EventFilter::new(kind);
    let mut composite = Map::new();
    for (k, v) in data {
        if k == "type" {
            continue;
        }
        if COMBINATORS.contains(&k.as_str()) {
            composite.insert(k.clone(), v.clone());
        } else {
            let (field, op) = split_flat_key(k, pos)?;
            filter.predicates.push((field, op, v.clone()));
        }
    }
    if !composite.is_empty() {
        filter.predicate = parse_predicate(&composite, pos)?;
    }
    Ok(filter)
}

fn build_expr(raw: &Value, pos: Option<(usize, usize)>) -> Result<Expr, BuildError> {
    let o = as_object(raw, "an expression", pos)?;
    if let Some(r) = o.get("ref") {
        let r = as_object(r, "a reference", pos)?;
        return Ok(Expr::Ref(FieldRef {
            source: parse_scope(r.get("source"), pos)?,
            field: as_str(
                r.get("field").unwrap_or(&Value::Null),
                "a reference's `field`",
                pos,
            )?
            .to_string(),
        }));
    }
    if let Some(v) = o.get("lit") {
        return Ok(Expr::Lit(v.clone()));
    }
    let Some(a) = o.get("arith") else {
        return Err(BuildError::new(
            "an expression needs `ref`, `lit` or `arith`",
            pos,
        ));
    };
    let a = as_object(a, "an arithmetic expression", pos)?;
    let op = as_str(a.get("op").unwrap_or(&Value::Null), "an operator", pos)?;
    let op = match op {
        "+" | "-" | "*" | "/" => op.chars().next().expect("a one-char operator"),
        other => {
            return Err(BuildError::new(
                format!("unknown arithmetic operator {}", repr(other)),
                pos,
            ))
        }
    };
    Ok(Expr::Arith {
        op,
        left: Box::new(build_expr(a.get("left").unwrap_or(&Value::Null), pos)?),
        right: Box::new(build_expr(a.get("right").unwrap_or(&Value::Null), pos)?),
    })
}

fn build_assignments(
    raw: Option<&Value>,
    pos: Option<(usize, usize)>,
) -> Result<Vec<Assign>, BuildError> {
    let Some(raw) = raw.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let list = raw
        .as_array()
        .ok_or_else(|| BuildError::new("`set` must be a list of assignments", pos))?;
    list.iter()
        .map(|a| {
            let a = as_object(a, "an assignment", pos)?;
            Ok(Assign {
                field: as_str(
                    a.get("field").unwrap_or(&Value::Null),
                    "an assignment's `field`",
                    pos,
                )?
                .to_string(),
                expr: build_expr(a.get("expr").unwrap_or(&Value::Null), pos)?,
            })
        })
        .collect()
}

/// `normalize_transitions`: flatten a list of lists, and expand a `from` list into one
/// transition per source.
fn flatten_transitions(v: Option<&Value>) -> Result<Vec<Value>, BuildError> {
    let Some(list) = v.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let list = list
        .as_array()
        .ok_or_else(|| BuildError::new("`transitions` must be a list", None))?;
    let mut flat: Vec<&Value> = Vec::new();
    // harel flattens one level when the FIRST entry is a list
    if list.first().is_some_and(Value::is_array) {
        for inner in list {
            match inner.as_array() {
                Some(items) => flat.extend(items.iter()),
                None => flat.push(inner),
            }
        }
    } else {
        flat.extend(list.iter());
    }
    let mut out = Vec::with_capacity(flat.len());
    for t in flat {
        match t.get("from") {
            Some(Value::Array(sources)) => {
                for s in sources {
                    let mut one = t.clone();
                    if let Some(o) = one.as_object_mut() {
                        o.insert("from".into(), s.clone());
                    }
                    out.push(one);
                }
            }
            _ => out.push(t.clone()),
        }
    }
    Ok(out)
}

impl Builder {
    fn build_node(
        &mut self,
        cfg: &Map<String, Value>,
        name: &str,
        full_path: String,
        forced_kind: Option<NodeKind>,
        parent: Option<NodeId>,
    ) -> Result<NodeId, BuildError> {
        let pos = pos_of(cfg);
        let kind = match forced_kind {
            Some(k) => k,
            None => match cfg.get("type").filter(|v| !v.is_null()) {
                Some(t) => {
                    let t = as_str(t, "a state's `type`", pos)?;
                    NodeKind::from_type_name(t).ok_or_else(|| {
                        BuildError::new(
                            format!(
                                " State type {} not a valid type ({STATE_TYPE_NAMES})",
                                repr(t)
                            ),
                            pos,
                        )
                    })?
                }
                None if cfg.contains_key("states") => NodeKind::Composite,
                None => NodeKind::Leaf,
            },
        };
        let timeout = match cfg.get("timeout") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => Some(Timeout::Seconds(n.as_f64().unwrap_or(0.0))),
            Some(Value::Object(o)) => match o.get("context").and_then(Value::as_str) {
                Some(key) => Some(Timeout::Context(key.to_string())),
                None => {
                    return Err(BuildError::new(
                        "a `timeout` mapping needs a `context` key name",
                        pos,
                    ))
                }
            },
            Some(other) => {
                return Err(BuildError::new(
                    format!(
                        "`timeout` must be seconds or {{context: key}}, got {}",
                        py_repr(other)
                    ),
                    pos,
                ))
            }
        };
        let strings = |key: &str| -> Result<Vec<String>, BuildError> {
            match cfg.get(key) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|i| as_str(i, &format!("a `{key}` entry"), pos).map(str::to_string))
                    .collect(),
                Some(other) => Err(BuildError::new(
                    format!("`{key}` must be a list, got {}", py_repr(other)),
                    pos,
                )),
            }
        };
        let carry = strings("carry")?;
        let mut defer = strings("defer")?;
        // harel keeps `defer` as a frozenset: duplicates mean nothing
        let mut seen = std::collections::HashSet::new();
        defer.retain(|k| seen.insert(k.clone()));
        let invoke_with = match cfg.get("invoke_with") {
            None | Some(Value::Null) => IndexMap::new(),
            Some(v) => as_object(v, "`invoke_with`", pos)?
                .iter()
                .map(|(k, v)| {
                    Ok((
                        k.clone(),
                        as_str(v, "an `invoke_with` key", pos)?.to_string(),
                    ))
                })
                .collect::<Result<_, BuildError>>()?,
        };
        let bool_key =
            |key: &str, default: bool| cfg.get(key).and_then(Value::as_bool).unwrap_or(default);
        let node = Node {
            name: name.to_string(),
            full_path: full_path.as_str().into(),
            kind,
            parent,
            children: Vec::new(),
            on_enter: build_action(cfg.get("on_enter"), pos)?,
            on_activity: build_action(cfg.get("on_activity"), pos)?,
            on_exit: build_action(cfg.get("on_exit"), pos)?,
            timeout,
            outcome: cfg
                .get("outcome")
                .and_then(Value::as_str)
                .map(SmolStr::from),
            carry,
            defer,
            invoke: match cfg.get("invoke") {
                None | Some(Value::Null) => None,
                Some(v) => Some(as_str(v, "`invoke`", pos)?.to_string()),
            },
            invoke_with,
            invoke_each: match cfg.get("invoke_each") {
                None | Some(Value::Null) => None,
                Some(v) => Some(invoke_each(v, pos)?),
            },
            start_state: cfg.get("start").and_then(Value::as_str).map(str::to_string),
            allow_history: bool_key("allow_history", true),
            cancel_on_failure: bool_key("cancel_on_failure", false),
            transitions: Vec::new(),
            pos,
        };
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(node);
        self.index.insert(full_path.clone(), id);

        if let Some(inline) = cfg.get("invoke_inline").filter(|v| !v.is_null()) {
            // an inline machine is its own Definition, named (and identified) by a synthetic
            // FQN, and this state invokes it
            let syn = format!("{}#{full_path}", self.machine);
            let sub = build_definition(inline, &syn, Some(&syn))?;
            self.nodes[id.index()].invoke = Some(syn.clone());
            let nested: Vec<_> = sub
                .submachines
                .iter()
                .map(|(k, v)| (k.clone(), Arc::clone(v)))
                .collect();
            self.submachines.insert(syn, Arc::new(sub));
            self.submachines.extend(nested);
        }

        if let Some(states) = cfg.get("states") {
            let states = match states {
                Value::Object(o) if !o.is_empty() => o,
                Value::Null => return Err(BuildError::new("No state has been defined...", pos)),
                Value::Object(_) => {
                    return Err(BuildError::new("No state has been defined...", pos))
                }
                other => {
                    return Err(BuildError::new(
                        format!("`states` must be a mapping, got {}", py_repr(other)),
                        pos,
                    ))
                }
            };
            for (child_name, child_cfg) in states {
                let child_cfg = as_object(child_cfg, &format!("state {}", repr(child_name)), pos)?;
                let child_path = if full_path.is_empty() {
                    child_name.clone()
                } else {
                    format!("{full_path}.{child_name}")
                };
                let child = self.build_node(child_cfg, child_name, child_path, None, Some(id))?;
                self.nodes[id.index()].children.push(child);
            }
            let raws = flatten_transitions(cfg.get("transitions"))?;
            self.pending.push((id, raws));
        }
        Ok(id)
    }

    fn defn_view(&self) -> DefnView<'_> {
        DefnView { nodes: &self.nodes }
    }

    fn build_transition(&self, scope: NodeId, raw: &Value) -> Result<Transition, BuildError> {
        let o = as_object(raw, "a transition", None)?;
        let pos = pos_of(o);
        let to = o.get("to").filter(|v| !v.is_null());
        let sel = o.get("selector").filter(|v| !v.is_null());
        let choice = o.get("choice").filter(|v| !v.is_null());
        if to.is_none() && sel.is_none() && choice.is_none() {
            return Err(BuildError::new(
                "invalid transition: it has no target, selector or choice",
                pos,
            ));
        }
        let view = self.defn_view();
        let scope_path = &self.nodes[scope.index()].full_path;
        let from = as_str(
            o.get("from").unwrap_or(&Value::Null),
            "a transition's `from`",
            pos,
        )?;
        let source = view.descend(scope, from).ok_or_else(|| {
            BuildError::new(
                format!(
                    "cannot resolve transition source {} in {}",
                    repr(from),
                    repr(scope_path)
                ),
                pos,
            )
        })?;
        let target = match to {
            None => None,
            Some(t) => {
                let t = as_str(t, "a transition's `to`", pos)?;
                Some(view.resolve_relative(scope, t).ok_or_else(|| {
                    BuildError::new(
                        format!(
                            "cannot resolve transition target {} from scope {}",
                            repr(t),
                            repr(scope_path)
                        ),
                        pos,
                    )
                })?)
            }
        };
        let event_filter = match o.get("on_event").filter(|v| !v.is_null()) {
            None => None,
            Some(e) => Some(build_event_filter(as_object(e, "`on_event`", pos)?, pos)?),
        };
        let selector = match sel {
            None => None,
            Some(s) => Some(build_selector(as_object(s, "a selector", pos)?, pos)?),
        };
        let choice = match choice {
            None => None,
            Some(c) => Some(self.build_choice(scope, as_object(c, "a choice", pos)?, pos)?),
        };
        Ok(Transition {
            source,
            target,
            event_filter,
            selector,
            choice,
            assignments: build_assignments(o.get("set"), pos)?,
            pos,
        })
    }

    fn build_choice(
        &self,
        scope: NodeId,
        raw: &Map<String, Value>,
        pos: Option<(usize, usize)>,
    ) -> Result<Choice, BuildError> {
        let view = self.defn_view();
        let scope_path = &self.nodes[scope.index()].full_path;
        let target = |name: &Value| -> Result<NodeId, BuildError> {
            let name = as_str(name, "a choice target", pos)?;
            view.resolve_relative(scope, name).ok_or_else(|| {
                BuildError::new(
                    format!(
                        "cannot resolve choice target {} from scope {}",
                        repr(name),
                        repr(scope_path)
                    ),
                    pos,
                )
            })
        };
        let mut branches = Vec::new();
        let mut branch_assignments = Vec::new();
        let list = raw
            .get("branches")
            .and_then(Value::as_array)
            .ok_or_else(|| BuildError::new("a choice needs a list of `branches`", pos))?;
        for b in list {
            let b = as_object(b, "a choice branch", pos)?;
            let when = match b.get("when") {
                Some(Value::Object(w)) => parse_predicate(w, pos)?,
                _ => None,
            };
            let guard =
                when.ok_or_else(|| BuildError::new("a `when` branch needs a guard", pos))?;
            branches.push((guard, target(b.get("to").unwrap_or(&Value::Null))?));
            branch_assignments.push(build_assignments(b.get("set"), pos)?);
        }
        let default = match raw.get("default").filter(|v| !v.is_null()) {
            None => None,
            Some(d) => Some(target(d)?),
        };
        Ok(Choice {
            branches,
            default,
            branch_assignments,
            default_assignments: build_assignments(raw.get("default_set"), pos)?,
        })
    }
}

fn build_selector(
    o: &Map<String, Value>,
    pos: Option<(usize, usize)>,
) -> Result<Selector, BuildError> {
    let mapper = o
        .get("mapper")
        .and_then(Value::as_object)
        .ok_or_else(|| BuildError::new("a selector needs a `mapper`", pos))?
        .iter()
        .map(|(k, v)| Ok((k.clone(), as_str(v, "a selector target", pos)?.to_string())))
        .collect::<Result<IndexMap<_, _>, BuildError>>()?;
    let default = match o.get("default").filter(|v| !v.is_null()) {
        None => None,
        Some(d) => Some(as_str(d, "a selector's `default`", pos)?.to_string()),
    };
    let enum_values = match o.get("enum").filter(|v| !v.is_null()) {
        None => None,
        Some(Value::Array(items)) => Some(items.iter().map(py_str).collect()),
        Some(other) => {
            return Err(BuildError::new(
                format!("a selector's `enum` must be a list, got {}", py_repr(other)),
                pos,
            ))
        }
    };
    Ok(Selector {
        action: action_from(o, pos)?,
        mapper,
        default,
        enum_values,
    })
}

/// Path lookups over the nodes built so far (the Definition does not exist yet).
struct DefnView<'a> {
    nodes: &'a [Node],
}

impl DefnView<'_> {
    fn child(&self, id: NodeId, name: &str) -> Option<NodeId> {
        self.nodes[id.index()]
            .children
            .iter()
            .copied()
            .find(|c| self.nodes[c.index()].name == name)
    }

    fn descend(&self, scope: NodeId, name: &str) -> Option<NodeId> {
        let mut node = scope;
        for seg in name.split('.') {
            node = self.child(node, seg)?;
        }
        Some(node)
    }

    fn resolve_relative(&self, scope: NodeId, name: &str) -> Option<NodeId> {
        let mut cur = Some(scope);
        while let Some(n) = cur {
            if let Some(found) = self.descend(n, name) {
                return Some(found);
            }
            cur = self.nodes[n.index()].parent;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn machine() -> Value {
        json!({
            "start": "Idle",
            "events": {"Pay": {"amount": "int", "note": {"type": "string", "required": false}}},
            "context_schema": {"tries": {"type": "int", "default": 3}},
            "ttl": 60,
            "states": {
                "Idle": {"__pos__": [3, 5]},
                "Work": {
                    "start": "A",
                    "allow_history": false,
                    "timeout": {"context": "delay"},
                    "on_enter": "pkg.enter",
                    "on_exit": {"function": "pkg.exit", "inputs": {"n": 1}},
                    "states": {"A": {"timeout": 5}, "B": {"outcome": "ok", "defer": ["X", "X"]}},
                    "transitions": [
                        {"from": "A", "to": "B", "on_event": {"type": "Go | Run", "amount__gt": 3,
                            "any": [{"x": 1}, {"__ref__": {"field": "n", "op": "lt", "value": null,
                                "source": "context", "value_ref": {"source": "event", "field": "m"}}}]}},
                        {"from": "B", "to": "Idle"}
                    ]
                },
                "Done": {}
            },
            "transitions": [
                [{"from": ["Idle", "Done"], "to": "Work", "on_event": {"type": "Start"},
                  "set": [{"field": "tries", "expr": {"arith": {"op": "+",
                      "left": {"ref": {"source": "context", "field": "tries"}}, "right": {"lit": 1}}}}]}],
                [{"from": "Work", "selector": {"function": "pkg.pick", "mapper": {"1": "Done"}, "default": "Idle", "enum": [1, true]}}],
                [{"from": "Work", "on_event": {"type": "C"}, "choice": {"branches": [{"when": {"k__in": [1]}, "to": "Done", "set": []}], "default": "Idle"}}]
            ]
        })
    }

    #[test]
    fn nodes_are_depth_first_in_declaration_order() {
        let d = build_definition(&machine(), "m", None).unwrap();
        let paths: Vec<&str> = d.nodes.iter().map(|n| n.full_path.as_str()).collect();
        assert_eq!(paths, ["", "Idle", "Work", "Work.A", "Work.B", "Done"]);
        assert_eq!(d.id, "m");
        assert_eq!(d.node(d.root).kind, NodeKind::Parallel);
        assert_eq!(d.node(d.root).name, "m");
        let work = d.at("Work");
        assert_eq!(work.kind, NodeKind::Composite);
        assert!(!work.allow_history);
        assert_eq!(work.timeout, Some(Timeout::Context("delay".into())));
        assert_eq!(d.at("Work.A").timeout, Some(Timeout::Seconds(5.0)));
        assert_eq!(work.on_exit.as_ref().unwrap().inputs["n"], json!(1));
        assert_eq!(d.at("Work.B").defer, vec!["X".to_string()]);
        assert_eq!(d.at("Idle").pos, Some((3, 5)));
        assert_eq!(d.ttl, Some(60));
        assert_eq!(d.context_schema["tries"].default, Some(json!(3)));
        assert!(!d.events["Pay"].fields["note"].required);
    }

    #[test]
    fn transitions_resolve_in_their_scope() {
        let d = build_definition(&machine(), "m", Some("id1")).unwrap();
        assert_eq!(d.id, "id1");
        let root = d.node(d.root);
        // `from` list expands to one transition per source
        assert_eq!(root.transitions.len(), 4);
        assert_eq!(root.transitions[0].source, d.get("Idle").unwrap());
        assert_eq!(root.transitions[1].source, d.get("Done").unwrap());
        assert_eq!(root.transitions[0].assignments.len(), 1);
        let sel = root.transitions[2].selector.as_ref().unwrap();
        assert_eq!(sel.mapper["1"], "Done");
        assert_eq!(sel.enum_values, Some(vec!["1".into(), "True".into()]));
        let choice = root.transitions[3].choice.as_ref().unwrap();
        assert_eq!(choice.default, d.get("Idle"));
        let work = d.at("Work");
        let t = &work.transitions[0];
        let f = t.event_filter.as_ref().unwrap();
        assert_eq!(f.kinds, ["Go", "Run"]);
        assert_eq!(f.predicates, vec![("amount".into(), Op::Gt, json!(3))]);
        match f.predicate.as_ref().unwrap() {
            Predicate::Any(children) => {
                assert_eq!(children.len(), 2);
                assert!(matches!(
                    &children[1],
                    Predicate::Leaf {
                        source: Scope::Context,
                        value_ref: Some(_),
                        op: Op::Lt,
                        ..
                    }
                ));
            }
            other => panic!("{other:?}"),
        }
        // target resolution walks up: `Idle` from scope `Work`
        assert_eq!(work.transitions[1].target, d.get("Idle"));
    }

    #[test]
    fn submachine_keys_and_inline_machines() {
        let cfg = json!({"start": "A", "states": {
            "A": {"invoke": "pay.Charge", "invoke_with": {"amount": "total"}},
            "B": {"invoke_each": ["item", "items"], "invoke_inline": {"start": "X",
                "states": {"X": {"invoke_inline": {"start": "Y", "states": {"Y": {}}}}}}},
            "C": {}}});
        let d = build_definition(&cfg, "M", None).unwrap();
        let a = d.at("A");
        assert_eq!(a.invoke.as_deref(), Some("pay.Charge"));
        assert_eq!(a.invoke_with["amount"], "total");
        let b = d.at("B");
        assert_eq!(b.invoke.as_deref(), Some("M#B"));
        assert_eq!(b.invoke_each, Some(("item".into(), "items".into())));
        // nested inline machines are flattened, keyed and identified by their synthetic FQN
        let keys: Vec<&str> = d.submachines.keys().map(String::as_str).collect();
        assert_eq!(keys, ["M#B", "M#B#X"]);
        assert_eq!(d.submachines["M#B"].id, "M#B");
        assert_eq!(
            d.submachines["M#B"].at("X").invoke.as_deref(),
            Some("M#B#X")
        );
        assert_eq!(d.submachines["M#B#X"].id, "M#B#X");
        assert!(d.at("C").invoke.is_none());
    }

    #[test]
    fn errors_match_harel() {
        let bad = json!({"start": "A", "states": {"A": {}, "W": {"states": {"X": {}},
            "transitions": [{"from": "X", "to": "Nope", "__pos__": [7, 3]}]}}});
        let err = build_definition(&bad, "m", None).unwrap_err();
        assert_eq!(
            err.message,
            "cannot resolve transition target 'Nope' from scope 'W'"
        );
        assert_eq!(err.pos, Some((7, 3)));
        let bad = json!({"states": {"A": {}}, "transitions": [{"from": "Z", "to": "A"}]});
        assert_eq!(
            build_definition(&bad, "m", None).unwrap_err().message,
            "cannot resolve transition source 'Z' in ''"
        );
        let bad = json!({"states": {"A": {}}, "transitions": [{"from": "A"}]});
        assert_eq!(
            build_definition(&bad, "m", None).unwrap_err().message,
            "invalid transition: it has no target, selector or choice"
        );
        let bad = json!({"states": {"A": {"invoke_each": ["x"], "__pos__": [2, 1]}}});
        let err = build_definition(&bad, "m", None).unwrap_err();
        assert_eq!(
            err.message,
            "`invoke_each` must be [variable, collection], got ['x']"
        );
        assert_eq!(err.pos, Some((2, 1)));
        // an inline machine's own build error surfaces as it is
        let bad = json!({"start": "A", "states": {"A": {"invoke_inline": {"start": "X",
            "states": {"X": {}}, "transitions": [{"from": "X", "to": "Gone", "__pos__": [4, 5]}]}}}});
        let err = build_definition(&bad, "m", None).unwrap_err();
        assert_eq!(
            err.message,
            "cannot resolve transition target 'Gone' from scope ''"
        );
        assert_eq!(err.pos, Some((4, 5)));
        let bad = json!({"states": {"A": {"type": "Weird"}}});
        assert!(build_definition(&bad, "m", None)
            .unwrap_err()
            .message
            .contains("not a valid type"));
        let bad = json!({"states": {"A": {}}, "transitions": [{"from": "A", "on_event": {"type": "E"},
            "choice": {"branches": [{"when": {}, "to": "A"}]}}]});
        assert_eq!(
            build_definition(&bad, "m", None).unwrap_err().message,
            "a `when` branch needs a guard"
        );
    }
}
