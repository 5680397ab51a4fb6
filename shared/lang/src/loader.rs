//! Resolve a parsed `Program` into a `Definition` (harel's `dsl/loader.py`, minus fragments
//! and imports, which are refused for now).
//!
//! The loader resolves what the parser leaves marked: each action through the bindings
//! (`bind {}`, then the programmatic overrides, which win), each named guard used in a
//! predicate, and value-parameter references (only valid inside a fragment, so always
//! unbound here). Unbound names are aggregated across the machine and reported at the
//! machine's declaration, as harel does. Then harel's builder runs; its errors come back
//! located at the node that caused them.

use std::collections::HashMap;
use std::path::Path;

use indexmap::IndexMap;
use serde_json::{Map, Value};

use harel_model::build::build_definition;
use harel_model::pyrepr::py_repr;
use harel_model::Definition;

use crate::error::{ErrorKind, LangError, Pos};
use crate::parser::{parse, Object, Program};

/// How to load: harel's `actions=` / `guards=` seams, and our own leniency switch.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// handler name -> implementation path; overrides the file's `bind {}`.
    pub bindings: IndexMap<String, String>,
    /// guard name -> predicate dict (`{"status__eq": "x"}`); overrides `guard` declarations.
    pub guards: IndexMap<String, Object>,
    /// harel refuses a handler no `bind` maps; with this set, an unbound handler is kept
    /// as its own name instead (`harel run` treats unimplemented actions as no-ops).
    pub allow_unbound_actions: bool,
}

/// Everything a load produced, for tools that need more than the Definition.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub definition: Definition,
    pub program: Program,
    /// The machine's name (the selected one).
    pub name: String,
    /// The effective handler -> implementation map (file bindings, then overrides).
    pub bindings: IndexMap<String, String>,
    /// Handlers nothing binds, kept as their own names (only under `allow_unbound_actions`).
    pub unbound_actions: Vec<String>,
    /// The resolved config dict handed to the builder.
    pub config: Value,
    /// `full_path -> (line, column)` of every state (harel's `_position_index`).
    pub positions: HashMap<String, Pos>,
}

impl Loaded {
    /// Where the state a validation issue is about was declared (harel's
    /// `definition_with_positions`, for tools that point at the source).
    pub fn issue_pos(&self, issue: &crate::validate::Issue) -> Option<Pos> {
        self.positions.get(&issue.path).copied()
    }
}

/// Load and build the machine `name` (or the only one) of the file at `path`.
pub fn load_file(path: &Path, name: Option<&str>) -> Result<Definition, LangError> {
    load_file_with(path, name, &LoadOptions::default()).map(|l| l.definition)
}

/// Load and build from text; `origin` names the text in errors (usually its path).
pub fn load_str(text: &str, name: Option<&str>, origin: &str) -> Result<Definition, LangError> {
    load_str_with(text, name, origin, &LoadOptions::default()).map(|l| l.definition)
}

pub fn load_file_with(
    path: &Path,
    name: Option<&str>,
    options: &LoadOptions,
) -> Result<Loaded, LangError> {
    let origin = path.display().to_string();
    let text = read(path)?;
    load_str_with(&text, name, &origin, options)
}

/// Parse a file into its `Program` without building anything (`harel list`).
pub fn parse_file(path: &Path) -> Result<Program, LangError> {
    let text = read(path)?;
    parse(&text, &path.display().to_string())
}

fn read(path: &Path) -> Result<String, LangError> {
    std::fs::read_to_string(path).map_err(|e| {
        LangError::new(
            ErrorKind::Io,
            &path.display().to_string(),
            format!("cannot read the file: {e}"),
        )
    })
}

pub fn load_str_with(
    text: &str,
    name: Option<&str>,
    origin: &str,
    options: &LoadOptions,
) -> Result<Loaded, LangError> {
    let program = parse(text, origin)?;
    if let Some(u) = program.unsupported.first() {
        return Err(LangError::at(
            ErrorKind::Unsupported,
            origin,
            text,
            u.pos,
            format!(
                "`{}` is not supported yet (submachines, fragments and imports come in a later version)",
                u.keyword
            ),
        ));
    }
    let name = select(&program, name, origin)?;
    let machine = &program.machines[&name];

    let mut bindings = program.bindings.clone();
    bindings.extend(options.bindings.clone());
    let mut guards = program.guards.clone();
    guards.extend(options.guards.clone());
    let mut cx = Resolver {
        bindings: &bindings,
        guards: &guards,
        unbound: Vec::new(),
        unbound_g: Vec::new(),
        unbound_v: Vec::new(),
        guard_stack: Vec::new(),
        cycle: None,
    };
    let mut cfg = cx.expand(machine);
    let machine_pos = pos_of(machine);
    let located = |message: String| match machine_pos {
        Some(pos) => LangError::at(ErrorKind::Semantic, origin, text, pos, message),
        None => LangError::new(ErrorKind::Semantic, origin, message),
    };
    if !cx.unbound.is_empty() && !options.allow_unbound_actions {
        return Err(located(format!(
            "unbound action handlers: {} (add a `bind` or pass actions=)",
            sorted(&cx.unbound)
        ))
        .with_hint(Some(format!(
            "declare it with `bind {{ {} = pkg.mod.fn }}`",
            sorted_vec(&cx.unbound)[0]
        ))));
    }
    if !cx.unbound_g.is_empty() {
        return Err(located(format!(
            "unbound guards: {} (add a `guard` decl, a use arg, or pass guards=)",
            sorted(&cx.unbound_g)
        )));
    }
    if !cx.unbound_v.is_empty() {
        return Err(located(format!(
            "unbound value params: {} (only valid inside a fragment)",
            sorted(&cx.unbound_v)
        )));
    }
    if let Some(cycle) = &cx.cycle {
        return Err(located(format!(
            "guard {} refers to itself",
            py_repr(&Value::String(cycle.clone()))
        )));
    }
    if !program.events.is_empty() {
        let events: Map<String, Value> = program
            .events
            .iter()
            .map(|(k, v)| (k.clone(), Value::Object(v.clone())))
            .collect();
        cfg.insert("events".into(), Value::Object(events));
    }
    let config = Value::Object(cfg);
    let definition = build_definition(&config, &name, None).map_err(|e| match e.pos {
        Some(pos) => LangError::at(ErrorKind::Semantic, origin, text, pos, e.message),
        None => LangError::new(ErrorKind::Semantic, origin, e.message),
    })?;
    let mut positions = HashMap::new();
    position_index(
        config.as_object().expect("config is an object"),
        "",
        &mut positions,
    );
    let mut unbound_actions = sorted_vec(&cx.unbound);
    unbound_actions.dedup();
    Ok(Loaded {
        definition,
        program,
        name,
        bindings,
        unbound_actions,
        config,
        positions,
    })
}

/// harel's machine selection, with its messages.
fn select(program: &Program, name: Option<&str>, origin: &str) -> Result<String, LangError> {
    let err = |m: String| LangError::new(ErrorKind::Selection, origin, m);
    if program.machines.is_empty() {
        return Err(err("no machine declared".into()));
    }
    match name {
        None if program.machines.len() > 1 => Err(err(format!(
            "multiple machines ({}); pass name=",
            program
                .machines
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        None => Ok(program.machines.keys().next().expect("one machine").clone()),
        Some(n) if program.machines.contains_key(n) => Ok(n.to_string()),
        Some(n) => Err(err(format!(
            "no machine named {}",
            py_repr(&Value::String(n.into()))
        ))),
    }
}

fn sorted_vec(names: &[String]) -> Vec<String> {
    let mut v = names.to_vec();
    v.sort();
    v.dedup();
    v
}

fn sorted(names: &[String]) -> String {
    sorted_vec(names).join(", ")
}

fn pos_of(cfg: &Object) -> Option<Pos> {
    let arr = cfg.get("__pos__")?.as_array()?;
    Some((
        arr.first()?.as_u64()? as usize,
        arr.get(1)?.as_u64()? as usize,
    ))
}

/// `_position_index`: full_path -> position, deriving paths as the builder does.
fn position_index(cfg: &Object, path: &str, out: &mut HashMap<String, Pos>) {
    if let Some(pos) = pos_of(cfg) {
        out.insert(path.to_string(), pos);
    }
    if let Some(Value::Object(states)) = cfg.get("states") {
        for (name, st) in states {
            if let Value::Object(st) = st {
                let child = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                position_index(st, &child, out);
            }
        }
    }
}

/// `_Ctx` without fragments: the maps to resolve against and what did not resolve.
struct Resolver<'a> {
    bindings: &'a IndexMap<String, String>,
    guards: &'a IndexMap<String, Object>,
    unbound: Vec<String>,
    unbound_g: Vec<String>,
    unbound_v: Vec<String>,
    /// Guards being expanded (a cycle would recurse forever; harel overflows the stack).
    guard_stack: Vec<String>,
    cycle: Option<String>,
}

impl Resolver<'_> {
    /// `_subst_value`: a `{"__param__": name}` reference can only be bound by a fragment use.
    fn subst_value(&mut self, v: &Value) -> Value {
        if let Some(name) = v.get("__param__").and_then(Value::as_str) {
            if v.as_object().is_some_and(|o| o.len() == 1) {
                self.unbound_v.push(name.to_string());
            }
        }
        v.clone()
    }

    /// `_resolve_action`: an action marker -> `{"function", "inputs"}`.
    fn resolve_action(&mut self, spec: &Value) -> Object {
        let kind = spec
            .get("__action__")
            .and_then(Value::as_str)
            .unwrap_or("literal");
        let reference = spec
            .get("ref")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let function = if kind == "literal" {
            reference
        } else if let Some(bound) = self.bindings.get(&reference) {
            bound.clone()
        } else {
            // reported by the caller unless unbound handlers are allowed, in which case the
            // handler stays its own name
            self.unbound.push(reference.clone());
            reference
        };
        let mut inputs = Object::new();
        if let Some(Value::Object(raw)) = spec.get("inputs") {
            for (k, v) in raw {
                let v = self.subst_value(v);
                inputs.insert(k.clone(), v);
            }
        }
        let mut out = Object::new();
        out.insert("function".into(), Value::String(function));
        out.insert("inputs".into(), Value::Object(inputs));
        out
    }

    /// `_resolve_guards`: replace `__guard__` markers with the named guard's predicate.
    fn resolve_guards(&mut self, pred: &Object) -> Object {
        let mut out = Object::new();
        for (key, value) in pred {
            match key.as_str() {
                "__guard__" => {
                    let name = value.as_str().unwrap_or_default().to_string();
                    match self.guards.get(&name) {
                        Some(_) if self.guard_stack.contains(&name) => {
                            self.cycle.get_or_insert(name);
                        }
                        Some(g) => {
                            self.guard_stack.push(name);
                            let resolved = self.resolve_guards(&g.clone());
                            self.guard_stack.pop();
                            out.extend(resolved);
                        }
                        None => self.unbound_g.push(name),
                    }
                }
                "all" | "any" => {
                    let children = value
                        .as_array()
                        .map(|cs| {
                            cs.iter()
                                .map(|c| match c {
                                    Value::Object(o) => Value::Object(self.resolve_guards(o)),
                                    other => other.clone(),
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    out.insert(key.clone(), Value::Array(children));
                }
                "not" => {
                    let child = match value {
                        Value::Object(o) => Value::Object(self.resolve_guards(o)),
                        other => other.clone(),
                    };
                    out.insert(key.clone(), child);
                }
                _ => {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
        out
    }

    /// `_resolve_trans`: the selector's action and the guard markers of a transition.
    fn resolve_trans(&mut self, t: &Object) -> Object {
        let mut t = t.clone();
        if let Some(Value::Object(sel)) = t.get("selector").cloned() {
            if let Some(spec) = sel
                .get("function")
                .filter(|f| f.get("__action__").is_some())
            {
                let resolved = self.resolve_action(&spec.clone());
                let mut sel = sel.clone();
                sel.extend(resolved);
                t.insert("selector".into(), Value::Object(sel));
            }
        }
        if let Some(Value::Object(oe)) = t.get("on_event").cloned() {
            t.insert("on_event".into(), Value::Object(self.resolve_guards(&oe)));
        }
        if let Some(Value::Object(mut choice)) = t.get("choice").cloned() {
            if let Some(Value::Array(branches)) = choice.get("branches").cloned() {
                let resolved = branches
                    .iter()
                    .map(|b| {
                        let mut b = b.as_object().cloned().unwrap_or_default();
                        if let Some(Value::Object(w)) = b.get("when").cloned() {
                            b.insert("when".into(), Value::Object(self.resolve_guards(&w)));
                        }
                        Value::Object(b)
                    })
                    .collect();
                choice.insert("branches".into(), Value::Array(resolved));
            }
            t.insert("choice".into(), Value::Object(choice));
        }
        t
    }

    /// `_expand` without `use`: hooks, timeout, transitions, then the child states.
    fn expand(&mut self, cfg: &Object) -> Object {
        let mut cfg = cfg.clone();
        for hook in ["on_enter", "on_exit", "on_activity"] {
            if let Some(spec) = cfg
                .get(hook)
                .filter(|h| h.get("__action__").is_some())
                .cloned()
            {
                cfg.insert(hook.into(), Value::Object(self.resolve_action(&spec)));
            }
        }
        if let Some(t) = cfg.get("timeout").cloned() {
            let t = self.subst_value(&t);
            cfg.insert("timeout".into(), t);
        }
        if let Some(Value::Array(ts)) = cfg.get("transitions").cloned() {
            let resolved = ts
                .iter()
                .map(|t| match t {
                    Value::Object(o) => Value::Object(self.resolve_trans(o)),
                    other => other.clone(),
                })
                .collect();
            cfg.insert("transitions".into(), Value::Array(resolved));
        }
        if let Some(Value::Object(states)) = cfg.get("states").cloned() {
            let expanded = states
                .iter()
                .map(|(n, s)| match s {
                    Value::Object(o) => (n.clone(), Value::Object(self.expand(o))),
                    other => (n.clone(), other.clone()),
                })
                .collect();
            cfg.insert("states".into(), Value::Object(expanded));
        }
        cfg
    }
}
