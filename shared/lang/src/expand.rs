//! Expansion: a machine's config resolved against its scope (harel's `_Ctx`, `_expand`,
//! `_instantiate` and the `_resolve_*` / `_substitute_*` helpers), `use`s spliced in as
//! child composites.
//!
//! A scope holds what names resolve to where a node sits: handler bindings, named guards,
//! value parameters, and the state/event substitutions of the enclosing `use`, so a nested
//! `use` can forward any parameter of its enclosing fragment by its bare name. What does
//! not resolve is collected across the whole machine (the caller reports it); a bad `use`
//! stops the expansion at once, located in the file the `use` was written in.

use std::collections::HashMap;
use std::rc::Rc;

use indexmap::IndexMap;
use serde_json::Value;

use harel_model::pyrepr::py_repr;

use crate::error::{ErrorKind, LangError, Pos};
use crate::imports::{Fragment, Source};
use crate::parser::Object;

/// `_Ctx` minus the shared unbound sets (those live on the `Expander`).
#[derive(Clone)]
pub(crate) struct Scope {
    pub bindings: IndexMap<String, String>,
    pub guards: IndexMap<String, Object>,
    pub values: IndexMap<String, Value>,
    /// state-param name -> resolved target
    pub states: IndexMap<String, String>,
    /// event-param name -> resolved kind
    pub events: IndexMap<String, String>,
    /// The file this scope's nodes were written in (for carets).
    pub source: Rc<Source>,
}

pub(crate) struct Expander<'a> {
    pub fragments: &'a IndexMap<String, Fragment>,
    pub unbound: Vec<String>,
    pub unbound_g: Vec<String>,
    pub unbound_v: Vec<String>,
    /// Guards being expanded (a cycle would recurse forever; harel overflows the stack).
    guard_stack: Vec<String>,
    pub cycle: Option<String>,
    /// Every transition's `__pos__` and the files it may come from, so a builder error
    /// (which knows only a position) can be shown in the right file.
    pub transition_origins: HashMap<Pos, Vec<Rc<Source>>>,
    /// The same for states (the builder rarely blames a state).
    pub state_origins: HashMap<Pos, Vec<Rc<Source>>>,
    /// full_path -> the file each state was written in (a spliced one's is its fragment's).
    pub state_files: HashMap<String, String>,
}

fn pystr(s: &str) -> String {
    py_repr(&Value::String(s.to_string()))
}

pub(crate) fn pos_of(cfg: &Object) -> Option<Pos> {
    let arr = cfg.get("__pos__")?.as_array()?;
    Some((
        arr.first()?.as_u64()? as usize,
        arr.get(1)?.as_u64()? as usize,
    ))
}

/// `_located`: an error at `node`'s position, rendered against the scope's file.
fn located(message: String, node: &Object, scope: &Scope) -> LangError {
    scope
        .source
        .error(ErrorKind::Semantic, pos_of(node), message)
}

/// `_substitute_targets`: rename transition / selector / choice targets that equal a
/// state-parameter name (not `initial`, which harel leaves alone too).
fn substitute_targets(cfg: &mut Object, subst: &IndexMap<String, String>) {
    if subst.is_empty() {
        return;
    }
    let rename = |v: &mut Value| {
        if let Some(to) = v.as_str().and_then(|s| subst.get(s)) {
            *v = Value::String(to.clone());
        }
    };
    if let Some(Value::Array(ts)) = cfg.get_mut("transitions") {
        for t in ts.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(to) = t.get_mut("to") {
                rename(to);
            }
            if let Some(Value::Object(sel)) = t.get_mut("selector") {
                if let Some(Value::Object(mapper)) = sel.get_mut("mapper") {
                    mapper.values_mut().for_each(rename);
                }
            }
            if let Some(Value::Object(choice)) = t.get_mut("choice") {
                if let Some(Value::Array(branches)) = choice.get_mut("branches") {
                    for b in branches.iter_mut().filter_map(Value::as_object_mut) {
                        if let Some(to) = b.get_mut("to") {
                            rename(to);
                        }
                    }
                }
                if let Some(default) = choice.get_mut("default") {
                    rename(default);
                }
            }
        }
    }
    if let Some(Value::Object(states)) = cfg.get_mut("states") {
        for s in states.values_mut().filter_map(Value::as_object_mut) {
            substitute_targets(s, subst);
        }
    }
}

/// `_substitute_events`: rename trigger kinds equal to an event-parameter name, per
/// `|`-separated kind (harel strips each kind as it splits).
fn substitute_events(cfg: &mut Object, subst: &IndexMap<String, String>) {
    if subst.is_empty() {
        return;
    }
    if let Some(Value::Array(ts)) = cfg.get_mut("transitions") {
        for t in ts.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(Value::Object(oe)) = t.get_mut("on_event") {
                if let Some(Value::String(kinds)) = oe.get_mut("type") {
                    let renamed: Vec<String> = kinds
                        .split('|')
                        .map(|k| {
                            let k = k.trim();
                            subst.get(k).cloned().unwrap_or_else(|| k.to_string())
                        })
                        .collect();
                    *kinds = renamed.join("|");
                }
            }
        }
    }
    if let Some(Value::Object(states)) = cfg.get_mut("states") {
        for s in states.values_mut().filter_map(Value::as_object_mut) {
            substitute_events(s, subst);
        }
    }
}

/// A `use` argument as the parser tagged it: `["name"|"dotted"|"lit"|"pred", payload]`.
fn arg_parts(arg: &Value) -> (&str, &Value) {
    match arg.as_array().map(Vec::as_slice) {
        Some([Value::String(tag), payload]) => (tag.as_str(), payload),
        _ => ("", &Value::Null),
    }
}

impl<'a> Expander<'a> {
    pub(crate) fn new(fragments: &'a IndexMap<String, Fragment>) -> Self {
        Expander {
            fragments,
            unbound: Vec::new(),
            unbound_g: Vec::new(),
            unbound_v: Vec::new(),
            guard_stack: Vec::new(),
            cycle: None,
            transition_origins: HashMap::new(),
            state_origins: HashMap::new(),
            state_files: HashMap::new(),
        }
    }

    /// `_subst_value`: a `{"__param__": name}` reference -> the value param's literal.
    fn subst_value(&mut self, v: &Value, scope: &Scope) -> Value {
        if let Some(name) = v.get("__param__") {
            let name = name.as_str().unwrap_or_default();
            if let Some(bound) = scope.values.get(name) {
                return bound.clone();
            }
            self.unbound_v.push(name.to_string());
        }
        v.clone()
    }

    /// `_resolve_action`: an action marker -> `{"function", "inputs"}`.
    fn resolve_action(&mut self, spec: &Value, scope: &Scope) -> Object {
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
        } else if let Some(bound) = scope.bindings.get(&reference) {
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
                let v = self.subst_value(v, scope);
                inputs.insert(k.clone(), v);
            }
        }
        let mut out = Object::new();
        out.insert("function".into(), Value::String(function));
        out.insert("inputs".into(), Value::Object(inputs));
        out
    }

    /// `_resolve_guards`: replace `__guard__` markers with the named guard's predicate.
    fn resolve_guards(&mut self, pred: &Object, scope: &Scope) -> Object {
        let mut out = Object::new();
        for (key, value) in pred {
            match key.as_str() {
                "__guard__" => {
                    let name = value.as_str().unwrap_or_default().to_string();
                    match scope.guards.get(&name) {
                        Some(_) if self.guard_stack.contains(&name) => {
                            self.cycle.get_or_insert(name);
                        }
                        Some(g) => {
                            self.guard_stack.push(name);
                            let resolved = self.resolve_guards(g, scope);
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
                                    Value::Object(o) => {
                                        Value::Object(self.resolve_guards(o, scope))
                                    }
                                    other => other.clone(),
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    out.insert(key.clone(), Value::Array(children));
                }
                "not" => {
                    let child = match value {
                        Value::Object(o) => Value::Object(self.resolve_guards(o, scope)),
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
    fn resolve_trans(&mut self, t: &Object, scope: &Scope) -> Object {
        let mut t = t.clone();
        if let Some(Value::Object(sel)) = t.get("selector").cloned() {
            if let Some(spec) = sel
                .get("function")
                .filter(|f| f.get("__action__").is_some())
            {
                let resolved = self.resolve_action(spec, scope);
                let mut sel = sel.clone();
                sel.extend(resolved);
                t.insert("selector".into(), Value::Object(sel));
            }
        }
        if let Some(Value::Object(oe)) = t.get("on_event").cloned() {
            t.insert(
                "on_event".into(),
                Value::Object(self.resolve_guards(&oe, scope)),
            );
        }
        if let Some(Value::Object(mut choice)) = t.get("choice").cloned() {
            if let Some(Value::Array(branches)) = choice.get("branches").cloned() {
                let resolved = branches
                    .iter()
                    .map(|b| {
                        let mut b = b.as_object().cloned().unwrap_or_default();
                        if let Some(Value::Object(w)) = b.get("when").cloned() {
                            b.insert("when".into(), Value::Object(self.resolve_guards(&w, scope)));
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

    /// The one file a builder error at `pos` can be about, if there is one.
    pub(crate) fn origin_of(&self, pos: Pos) -> Option<&Rc<Source>> {
        let files = self
            .transition_origins
            .get(&pos)
            .or_else(|| self.state_origins.get(&pos));
        match files.map(Vec::as_slice) {
            Some([one]) => Some(one),
            _ => None,
        }
    }

    fn note_origin(&mut self, node: &Object, scope: &Scope, transition: bool) {
        let map = if transition {
            &mut self.transition_origins
        } else {
            &mut self.state_origins
        };
        if let Some(pos) = pos_of(node) {
            let files = map.entry(pos).or_default();
            if !files.iter().any(|f| Rc::ptr_eq(f, &scope.source)) {
                files.push(Rc::clone(&scope.source));
            }
        }
    }

    /// `_expand`: hooks, timeout, transitions and inline submachine body resolved in this
    /// scope, child states expanded, then each `use` spliced in as a child composite.
    /// `path` is the node's full path, as the builder derives it (the root's is empty).
    pub(crate) fn expand(
        &mut self,
        cfg: &Object,
        scope: &Scope,
        path: &str,
    ) -> Result<Object, LangError> {
        let mut cfg = cfg.clone();
        self.note_origin(&cfg, scope, false);
        self.state_files
            .insert(path.to_string(), scope.source.origin.clone());
        let child_path = |name: &str| {
            if path.is_empty() {
                name.to_string()
            } else {
                format!("{path}.{name}")
            }
        };
        let uses = cfg.shift_remove("__uses__");
        for hook in ["on_enter", "on_exit", "on_activity"] {
            if let Some(spec) = cfg
                .get(hook)
                .filter(|h| h.get("__action__").is_some())
                .cloned()
            {
                let resolved = self.resolve_action(&spec, scope);
                cfg.insert(hook.into(), Value::Object(resolved));
            }
        }
        if let Some(t) = cfg.get("timeout").cloned() {
            let t = self.subst_value(&t, scope);
            cfg.insert("timeout".into(), t);
        }
        if let Some(Value::Array(ts)) = cfg.get("transitions").cloned() {
            let mut resolved = Vec::with_capacity(ts.len());
            for t in &ts {
                resolved.push(match t {
                    Value::Object(o) => {
                        self.note_origin(o, scope, true);
                        Value::Object(self.resolve_trans(o, scope))
                    }
                    other => other.clone(),
                });
            }
            cfg.insert("transitions".into(), Value::Array(resolved));
        }
        if let Some(Value::Object(inline)) = cfg.get("invoke_inline").cloned() {
            // an inline machine is a definition of its own: its paths start afresh, and
            // are not recorded against this machine's
            let saved = std::mem::take(&mut self.state_files);
            let expanded = self.expand(&inline, scope, "")?;
            self.state_files = saved;
            cfg.insert("invoke_inline".into(), Value::Object(expanded));
        }
        let mut states = Object::new();
        if let Some(Value::Object(children)) = cfg.get("states") {
            for (name, child) in children {
                if let Value::Object(child) = child {
                    let expanded = self.expand(child, scope, &child_path(name))?;
                    states.insert(name.clone(), Value::Object(expanded));
                }
            }
        }
        if let Some(Value::Array(uses)) = uses {
            for inc in uses.iter().filter_map(Value::as_object) {
                let (local, expanded) = self.instantiate(inc, scope, &child_path)?;
                if states.contains_key(&local) {
                    let fragment = inc.get("fragment").and_then(Value::as_str).unwrap_or("");
                    return Err(located(
                        format!(
                            "use {} as {} collides with an existing state",
                            pystr(fragment),
                            pystr(&local)
                        ),
                        inc,
                        scope,
                    ));
                }
                states.insert(local, Value::Object(expanded));
            }
        }
        if !states.is_empty() {
            cfg.insert("states".into(), Value::Object(states));
        }
        Ok(cfg)
    }

    /// `_instantiate`: check a `use`'s args against the fragment's params, build the
    /// instance scope, substitute state/event params, and expand the copy.
    fn instantiate(
        &mut self,
        inc: &Object,
        scope: &Scope,
        child_path: &dyn Fn(&str) -> String,
    ) -> Result<(String, Object), LangError> {
        let name = inc
            .get("fragment")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(frag) = self.fragments.get(name) else {
            return Err(located(
                format!("use of unknown fragment {}", pystr(name)),
                inc,
                scope,
            ));
        };
        let mut clone = frag.cfg.clone();
        let frag_src = Rc::clone(&frag.source);
        // `dict(frag.pop("__params__", []))`: a repeated param keeps its first place, last kind
        let mut params: IndexMap<String, String> = IndexMap::new();
        if let Some(Value::Array(ps)) = clone.shift_remove("__params__") {
            for p in &ps {
                if let Some([Value::String(pname), Value::String(kind)]) =
                    p.as_array().map(Vec::as_slice)
                {
                    params.insert(pname.clone(), kind.clone());
                }
            }
        }
        let empty = Object::new();
        let args = inc.get("args").and_then(Value::as_object).unwrap_or(&empty);
        let mut unknown: Vec<&str> = args
            .keys()
            .map(String::as_str)
            .filter(|a| !params.contains_key(*a))
            .collect();
        if !unknown.is_empty() {
            unknown.sort();
            return Err(located(
                format!("use {}: unknown args: {}", pystr(name), unknown.join(", ")),
                inc,
                scope,
            ));
        }
        let mut missing: Vec<&str> = params
            .keys()
            .map(String::as_str)
            .filter(|p| !args.contains_key(*p))
            .collect();
        if !missing.is_empty() {
            missing.sort();
            return Err(located(
                format!("use {}: missing args: {}", pystr(name), missing.join(", ")),
                inc,
                scope,
            ));
        }

        let mut bindings = scope.bindings.clone();
        let mut guards = scope.guards.clone();
        let mut values = scope.values.clone();
        let mut subst: IndexMap<String, String> = IndexMap::new();
        let mut event_subst: IndexMap<String, String> = IndexMap::new();
        let wrong = |pname: &str, what: &str| {
            located(
                format!("use {}: arg {} must be {what}", pystr(name), pystr(pname)),
                inc,
                scope,
            )
        };
        for (pname, kind) in &params {
            let (tag, payload) = arg_parts(&args[pname.as_str()]);
            let text = payload.as_str().unwrap_or_default();
            match kind.as_str() {
                "action" => match tag {
                    "dotted" => {
                        bindings.insert(pname.clone(), text.to_string());
                    }
                    "name" => {
                        // forward a parent handler
                        if !scope.bindings.contains_key(text) {
                            self.unbound.push(text.to_string());
                        }
                        let bound = scope.bindings.get(text).map_or(text, String::as_str);
                        bindings.insert(pname.clone(), bound.to_string());
                    }
                    _ => return Err(wrong(pname, "an action handler or path")),
                },
                "state" => match tag {
                    // an enclosing fragment's state param, else a literal target name
                    "name" | "dotted" => {
                        let target = scope.states.get(text).map_or(text, String::as_str);
                        subst.insert(pname.clone(), target.to_string());
                    }
                    _ => return Err(wrong(pname, "a state name")),
                },
                "event" => match tag {
                    "name" | "dotted" => {
                        let kind = scope.events.get(text).map_or(text, String::as_str);
                        event_subst.insert(pname.clone(), kind.to_string());
                    }
                    _ => return Err(wrong(pname, "an event name")),
                },
                "guard" => match tag {
                    "pred" => {
                        let pred = payload.as_object().cloned().unwrap_or_default();
                        guards.insert(pname.clone(), pred);
                    }
                    "name" => match scope.guards.get(text) {
                        Some(g) => {
                            guards.insert(pname.clone(), g.clone());
                        }
                        None => self.unbound_g.push(text.to_string()),
                    },
                    _ => return Err(wrong(pname, "a guard predicate or name")),
                },
                // `value` (the grammar admits no other kind)
                _ => match tag {
                    "lit" => {
                        values.insert(pname.clone(), payload.clone());
                    }
                    // an enclosing fragment's value param, by its bare name
                    "name" => match scope.values.get(text) {
                        Some(v) => {
                            values.insert(pname.clone(), v.clone());
                        }
                        None => self.unbound_v.push(text.to_string()),
                    },
                    _ => return Err(wrong(pname, "a literal value")),
                },
            }
        }

        let local = match inc.get("alias") {
            Some(Value::String(alias)) if !alias.is_empty() => alias.clone(),
            _ => name.rsplit('.').next().unwrap_or(name).to_string(),
        };
        substitute_targets(&mut clone, &subst);
        substitute_events(&mut clone, &event_subst);
        let child = Scope {
            bindings,
            guards,
            values,
            states: subst,
            events: event_subst,
            source: frag_src,
        };
        let expanded = self.expand(&clone, &child, &child_path(&local))?;
        Ok((local, expanded))
    }
}
