//! The step rules (harel `engine/core.py`): entering and leaving states, draining automatic
//! transitions, orthogonal forks and joins, timers, `ttl`, and the control events.

use std::sync::atomic::Ordering;

use harel_model::pyrepr::{py_float_repr, py_repr, py_str, py_type_name};
use harel_model::schema::with_defaults;
use harel_model::{
    Assign, ChildState, Definition, Event, Execution, NodeId, NodeKind, Object, SmolStr, Status,
    Timeout, Transition,
};
use serde_json::Value;

use super::{step_mode, Host};
use crate::expr::evaluate;
use crate::guard::{field, Scopes};
use crate::resolve::{
    active_node, auto_pred, choice_branch, choice_index, event_pred, is_active, is_deferred,
    is_valid_reposition_target, node_at, node_at_hinted, resolve_at, resolve_automatic,
    resolve_between, safe_teardown, Automatic, Found,
};
use crate::{ActionCall, CallKind, EngineError, Spawn, StepEffects, TimerOp};

/// The timer path of a machine's `ttl` (never a node path: node names are identifiers).
pub const TTL_PATH: &str = "@ttl";

/// The `Timeout` a due timer delivers. Its id is stable (timer key + fire time, formatted as
/// Python's `repr(float)`), so a timer swept twice dedupes to one effect.
pub fn timeout_event(execution_id: &str, path: &str, fire_at: f64) -> Event {
    let mut data = Object::new();
    data.insert("path".into(), Value::String(path.to_string()));
    data.insert(
        "fire_at".into(),
        serde_json::Number::from_f64(fire_at).map_or(Value::Null, Value::Number),
    );
    crate::ids::event("Timeout")
        .with_id(format!(
            "timeout:{execution_id}:{path}:{}",
            py_float_repr(fire_at)
        ))
        .with_data(data)
}

/// The `error` event a driver injects when an action (or expression) fails.
pub fn error_event(kind: &str, message: &str) -> Event {
    let mut data = Object::new();
    data.insert("type".into(), Value::String(kind.to_string()));
    data.insert("message".into(), Value::String(message.to_string()));
    crate::ids::event_with("error", data)
}

/// The `ttl` budget to (re)arm for `exe`: only a RUNNING root execution of a machine that
/// declares one.
pub fn ttl_delay(defn: &Definition, exe: &Execution) -> Option<f64> {
    match defn.ttl {
        Some(ttl) if exe.parent_id.is_none() && exe.status == Status::Running => Some(ttl as f64),
        _ => None,
    }
}

/// Start a PENDING execution: enter its initial configuration and drain.
#[step_mode]
pub async fn start<H: Host>(
    defn: &Definition,
    exe: &mut Execution,
    host: &mut H,
) -> Result<StepEffects, EngineError> {
    let mut run = Run::new(defn, host);
    let done = run.start(exe).await;
    run.settle(exe);
    done.map(|()| run.fx)
}

/// Process one event (domain or control) for `exe`.
#[step_mode]
pub async fn process<H: Host>(
    defn: &Definition,
    exe: &mut Execution,
    event: &Event,
    host: &mut H,
) -> Result<StepEffects, EngineError> {
    let mut run = Run::new(defn, host);
    let done = run.process(exe, event).await;
    run.settle(exe);
    done.map(|()| run.fx)
}

static EMPTY: std::sync::OnceLock<Object> = std::sync::OnceLock::new();

fn empty() -> &'static Object {
    EMPTY.get_or_init(Object::new)
}

fn data_of(event: Option<&Event>) -> &Object {
    event.map_or(empty(), |e| &e.data)
}

/// A transition's assignments: its own `set`, then (for a `choose`) the taken branch's.
fn effect<'d>(
    t: &'d Transition,
    event: Option<&Event>,
    context: &Object,
) -> (&'d [Assign], &'d [Assign]) {
    let Some(choice) = &t.choice else {
        return (&t.assignments, &[]);
    };
    let branch = match choice_index(t, data_of(event), context) {
        None => &choice.default_assignments[..],
        Some(i) => choice.branch_assignments.get(i).map_or(&[][..], |v| &v[..]),
    };
    (&t.assignments, branch)
}

/// A region's deterministic id, `{exe_id}:{region path}:{entry seq}` (built without the
/// formatting machinery, and on the stack when it fits, so the id's one allocation is its
/// own: this runs on every fork).
pub(crate) fn child_id(exe_id: &str, path: &str, seq: u64) -> SmolStr {
    let mut digits = [0u8; 20];
    let mut n = seq;
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let digits = &digits[i..];
    let parts = [exe_id.as_bytes(), b":", path.as_bytes(), b":", digits];
    let len = parts.iter().map(|p| p.len()).sum::<usize>();
    let mut stack = [0u8; 128];
    let mut heap = Vec::new();
    let buf = if len <= stack.len() {
        &mut stack[..len]
    } else {
        heap.resize(len, 0);
        &mut heap[..]
    };
    let mut at = 0;
    for p in parts {
        buf[at..at + p.len()].copy_from_slice(p);
        at += p.len();
    }
    SmolStr::from(std::str::from_utf8(buf).expect("UTF-8 pieces joined by ASCII"))
}

/// A freshly forked region's entry.
fn region_state(root_path: &SmolStr) -> ChildState {
    ChildState {
        root_path: root_path.clone(),
        key: root_path.clone(),
        ..ChildState::default()
    }
}

fn joined(exe: &Execution) -> bool {
    exe.children.values().all(|c| c.finished)
}

/// A region finished with a declared non-success verdict (`cancel_on_failure`'s trigger).
fn any_region_failed(exe: &Execution) -> bool {
    exe.children
        .values()
        .any(|c| c.finished && c.outcome.as_deref().is_some_and(|o| o != "success"))
}

fn region_key<'a>(exe_id: &str, child_id: &'a str) -> &'a str {
    child_id
        .strip_prefix(exe_id)
        .and_then(|rest| rest.strip_prefix(':'))
        .unwrap_or(child_id)
}

/// `region_results[key]["outcome"]`, as harel's `{"outcome": cs.outcome, **cs.result}`
/// gives it: a carried `outcome` overrides the region's own.
fn region_outcome(cs: &ChildState) -> Option<&Value> {
    cs.result.get("outcome")
}

/// Whether a region's entry counts as reported (`r["outcome"] is not None or len(r) > 1`).
fn region_reported(cs: &ChildState) -> bool {
    let outcome_set = match region_outcome(cs) {
        Some(v) => !v.is_null(),
        None => cs.outcome.is_some(),
    };
    let carried = cs.result.len() - usize::from(region_outcome(cs).is_some());
    outcome_set || carried > 0
}

/// `*slot = value.clone()`, reusing a string's buffer when both are strings.
fn assign(slot: &mut Value, value: &Value) {
    match (slot, value) {
        (Value::String(s), Value::String(v)) => s.clone_from(v),
        (slot, value) => *slot = value.clone(),
    }
}

/// Whether `old` (a previous join's `region_results`) has exactly the keys, in the same
/// order and nesting, that this join's value will have.
fn same_layout(old: &Object, exe_id: &str, children: &harel_model::KeyMap<ChildState>) -> bool {
    old.len() == children.len()
        && old.iter().zip(children).all(|((key, r), (cid, cs))| {
            let want = if cs.key.is_empty() {
                region_key(exe_id, cid)
            } else {
                cs.key.as_str()
            };
            let Value::Object(r) = r else {
                return false;
            };
            let mut keys = r.keys();
            key == want
                && keys.next().is_some_and(|k| k == "outcome")
                && keys.eq(cs.result.keys().filter(|k| *k != "outcome"))
        })
}

/// harel `_expose_region_results`: at a join, `context["region_results"] = {key:
/// {"outcome": cs.outcome, **cs.result}}`, only when some region reported something.
/// When the previous join left a value of the same layout (the same regions, in order),
/// its values are overwritten in place: the same document, without reallocating every key
/// and string at each join.
fn expose_region_results(exe: &mut Execution) {
    let Execution {
        id,
        children,
        context,
        ..
    } = exe;
    if let Some(Value::Object(old)) = context.get_mut("region_results") {
        if same_layout(old, id, children) {
            // the old keys are distinct, so every region's entry survives: no dedupe to mirror
            if !children.values().any(region_reported) {
                return;
            }
            for (r, cs) in old.values_mut().zip(children.values()) {
                // same_layout checked both: an object whose first key is `outcome`
                let Value::Object(r) = r else { continue };
                let mut slots = r.values_mut();
                let Some(outcome) = slots.next() else {
                    continue;
                };
                match (region_outcome(cs), &cs.outcome) {
                    (Some(v), _) => assign(outcome, v),
                    (None, Some(o)) => match outcome {
                        Value::String(s) => {
                            s.clear();
                            s.push_str(o);
                        }
                        slot => *slot = Value::String(o.to_string()),
                    },
                    (None, None) => *outcome = Value::Null,
                }
                let carried = cs.result.iter().filter(|(k, _)| *k != "outcome");
                for (slot, (_, v)) in slots.zip(carried) {
                    assign(slot, v);
                }
            }
            return;
        }
    }
    let mut results = Object::with_capacity(children.len());
    for (cid, cs) in children.iter() {
        let key = if cs.key.is_empty() {
            region_key(id, cid)
        } else {
            cs.key.as_str()
        };
        let mut r = Object::with_capacity(1 + cs.result.len());
        r.insert("outcome".into(), str_or_null(cs.outcome.as_deref()));
        for (k, v) in &cs.result {
            r.insert(k.clone(), v.clone());
        }
        results.insert(key.to_string(), Value::Object(r));
    }
    // over the built dict, as harel does (a repeated key keeps its last region's entry)
    let reported = results.values().any(|r| {
        r.as_object()
            .is_some_and(|r| r.get("outcome").is_some_and(|o| !o.is_null()) || r.len() > 1)
    });
    if reported {
        context.insert("region_results".into(), Value::Object(results));
    }
}

/// A region's `Finished` data so far, `{"child_id": .., "outcome": ..}`: cloned from a
/// template and filled in place. Inserting the two keys into a fresh map would SipHash each
/// (serde_json's maps use std's hasher); a clone copies the keys and the index as they are.
fn finished_data(child_id: Value, outcome: Value) -> Object {
    static TEMPLATE: std::sync::OnceLock<Object> = std::sync::OnceLock::new();
    let mut data = TEMPLATE
        .get_or_init(|| {
            let mut t = Object::with_capacity(2);
            t.insert("child_id".into(), Value::Null);
            t.insert("outcome".into(), Value::Null);
            t
        })
        .clone();
    for (slot, value) in data.values_mut().zip([child_id, outcome]) {
        *slot = value;
    }
    data
}

/// A JSON string, or null (`Optional[str]` in a document's data).
pub(crate) fn str_or_null(s: Option<&str>) -> Value {
    s.map_or(Value::Null, |s| Value::String(s.to_string()))
}

/// `float(context.get(key, 0.0))` with Python's refusals.
fn context_delay(context: &Object, key: &str) -> Result<f64, EngineError> {
    match context.get(key) {
        None => Ok(0.0),
        Some(Value::Number(n)) => Ok(n.as_f64().unwrap_or(0.0)),
        Some(Value::Bool(b)) => Ok(f64::from(u8::from(*b))),
        Some(Value::String(s)) => s.trim().parse::<f64>().map_err(|_| {
            EngineError::Corrupt(format!(
                "ValueError: could not convert string to float: {}",
                py_repr(&Value::String(s.clone()))
            ))
        }),
        Some(other) => Err(EngineError::Corrupt(format!(
            "TypeError: float() argument must be a string or a real number, not '{}'",
            py_type_name(other)
        ))),
    }
}

pub(crate) struct Run<'d, 'h, H> {
    pub(crate) defn: &'d Definition,
    host: &'h mut H,
    pub(crate) fx: StepEffects,
    /// The node of `exe.root_path`, looked up once per step.
    root: Option<NodeId>,
    /// The node of `exe.active_path`: every move of the engine goes through `set_active`,
    /// so the path is looked up at most once per step.
    active: Option<NodeId>,
    /// `active` moved since `exe.active_path` was last written. The path is written once,
    /// when the step ends (however it ends), rather than at every level a transition
    /// crosses: nothing reads it in between (hooks see the node and the context, not the
    /// execution), and a failed step leaves it where harel's would be.
    moved: bool,
}

/// Queue an emit. The first goes in a one-slot buffer: a step rarely emits more, and the
/// default first growth (4 slots of an `Event`, over 1 KiB) misses the allocator's fast
/// size classes.
fn emit(fx: &mut StepEffects, to: Option<SmolStr>, event: Event) {
    if fx.emits.capacity() == 0 {
        fx.emits.reserve_exact(1);
    }
    fx.emits.push((to, event));
}

/// `history[parent] = child` (an existing key keeps its place, as a dict assignment does).
/// Both are node paths out of the Definition: clones, not copies.
fn record_history(history: &mut harel_model::KeyMap<SmolStr>, parent: &SmolStr, child: &SmolStr) {
    match history.get_mut(parent.as_str()) {
        Some(v) => v.clone_from(child),
        None => {
            history.insert(parent.clone(), child.clone());
        }
    }
}

#[step_mode]
impl<'d, H: Host> Run<'d, '_, H> {
    fn new(defn: &'d Definition, host: &'d mut H) -> Run<'d, 'd, H> {
        Run {
            defn,
            host,
            fx: StepEffects::default(),
            root: None,
            active: None,
            moved: false,
        }
    }

    /// Write the active node's path to `exe.active_path` if it moved.
    fn settle(&mut self, exe: &mut Execution) {
        if let (true, Some(id)) = (self.moved, self.active) {
            exe.active_path = Some(self.defn.node(id).full_path.clone());
            exe.hints.active.store(id.0, Ordering::Relaxed);
        }
        self.moved = false;
    }

    /// Whether `run_hook` has anything to do for `id` (an action or a timer): skipping the
    /// call skips building its future.
    fn hooked(&self, id: NodeId, kind: CallKind) -> bool {
        let node = self.defn.node(id);
        let action = match kind {
            CallKind::Enter => node.on_enter.is_some(),
            CallKind::Exit => node.on_exit.is_some(),
            CallKind::Activity => node.on_activity.is_some(),
            CallKind::Selector => false,
        };
        action || (node.timeout.is_some() && matches!(kind, CallKind::Enter | CallKind::Exit))
    }

    fn root(&mut self, exe: &Execution) -> Result<NodeId, EngineError> {
        if let Some(r) = self.root {
            return Ok(r);
        }
        // a machine's own execution (the common case) is rooted at the definition's root
        let r = if exe.root_path.is_empty() {
            self.defn.root
        } else {
            node_at_hinted(self.defn, &exe.root_path, &exe.hints.root)?
        };
        self.root = Some(r);
        Ok(r)
    }

    fn active(&mut self, exe: &Execution) -> Result<NodeId, EngineError> {
        if let Some(a) = self.active {
            return Ok(a);
        }
        let a = active_node(self.defn, exe)?;
        self.active = Some(a);
        Ok(a)
    }

    fn set_active(&mut self, id: NodeId) {
        self.active = Some(id);
        self.moved = true;
    }

    /// harel `_resolve` for the active configuration.
    pub(crate) fn resolve<P: Fn(&Transition) -> bool>(
        &mut self,
        exe: &Execution,
        pred: &P,
        allow_parent: bool,
    ) -> Result<Option<Found>, EngineError> {
        let root = self.root(exe)?;
        let active = self.active(exe)?;
        resolve_between(self.defn, root, active, pred, allow_parent)
    }

    /// Pop the first deferred event (FIFO) the current configuration handles.
    fn next_deferred(
        &mut self,
        exe: &mut Execution,
    ) -> Result<Option<(Event, Found)>, EngineError> {
        for i in 0..exe.deferred.len() {
            let found = self.resolve(exe, &event_pred(&exe.deferred[i], &exe.context), true)?;
            if let Some(found) = found {
                return Ok(Some((exe.deferred.remove(i), found)));
            }
        }
        Ok(None)
    }
    /// Run `node`'s own hook, if any; a node with a `timeout` arms it on enter and disarms
    /// it on exit.
    async fn run_hook(
        &mut self,
        exe: &mut Execution,
        id: NodeId,
        kind: CallKind,
        event: Option<&Event>,
    ) -> Result<(), EngineError> {
        let node = self.defn.node(id);
        let action = match kind {
            CallKind::Enter => node.on_enter.as_ref(),
            CallKind::Exit => node.on_exit.as_ref(),
            CallKind::Activity => node.on_activity.as_ref(),
            CallKind::Selector => None,
        };
        if let Some(action) = action {
            let call = ActionCall {
                node,
                kind,
                action,
                event,
                context: &mut exe.context,
            };
            self.host
                .call(call)
                .await
                .map_err(|error| EngineError::Action {
                    error,
                    kind,
                    action: action.function.clone(),
                })?;
        }
        if let Some(timeout) = &node.timeout {
            match kind {
                CallKind::Enter => {
                    // a `timeout context key` reads the delay now, after this state's own
                    // on_enter may have computed it
                    let delay = match timeout {
                        Timeout::Seconds(s) => *s,
                        Timeout::Context(key) => context_delay(&exe.context, key)?,
                    };
                    let fire_at = self.host.now() + delay;
                    self.fx.timers.push(TimerOp::Schedule {
                        path: node.full_path.clone(),
                        fire_at,
                    });
                }
                CallKind::Exit => self.fx.timers.push(TimerOp::Cancel {
                    path: node.full_path.clone(),
                }),
                _ => {}
            }
        }
        Ok(())
    }

    /// Enter an orthogonal node: one child execution per region, each with only what the
    /// node passes down (`with`), copied now.
    fn fork(&mut self, exe: &mut Execution, id: NodeId) {
        let node = self.defn.node(id);
        let seq = exe
            .invoke_seq
            .get(node.full_path.as_str())
            .copied()
            .unwrap_or(0);
        // harel replaces `children` with a fresh dict of the regions, in order. A re-entry
        // finds the previous fork's entries, as many as there are regions: each is rewritten
        // in place (a new key, every field reset), which leaves the same map as a fresh one
        // without moving the states or reallocating their `result` maps
        let mut in_place = exe.children.len() == node.children.len();
        if !in_place {
            exe.children.clear();
        }
        for (i, &child) in node.children.iter().enumerate() {
            let c = self.defn.node(child);
            let cid = child_id(&exe.id, &c.full_path, seq);
            let passed: Object = node
                .invoke_with
                .iter()
                .filter_map(|(ck, pk)| exe.context.get(pk).map(|v| (ck.clone(), v.clone())))
                .collect();
            self.fx.spawns.push(Spawn {
                child_id: cid.clone(),
                root_path: c.full_path.clone(),
                context: passed,
            });
            if in_place {
                match harel_model::replace_key(&mut exe.children, i, cid) {
                    Ok(()) => {
                        let (_, state) = exe
                            .children
                            .get_index_mut(i)
                            .expect("replace_key checked the index");
                        state.root_path = c.full_path.clone();
                        state.key = c.full_path.clone();
                        state.finished = false;
                        state.outcome = None;
                        state.result.clear();
                        state.submachine = false;
                        state.extra.clear();
                        continue;
                    }
                    Err(cid) => {
                        // the key is a later entry's: drop the rest and build them afresh
                        exe.children.truncate(i);
                        in_place = false;
                        exe.children.insert(cid, region_state(&c.full_path));
                    }
                }
            } else {
                exe.children.insert(cid, region_state(&c.full_path));
            }
        }
    }

    /// Leaving a spawn site: bump its entry seq (a re-entry spawns fresh child ids) and
    /// cancel every region it spawned that is still running.
    fn leave_regions(&mut self, exe: &mut Execution, id: NodeId) {
        let path = &self.defn.node(id).full_path;
        match exe.invoke_seq.get_mut(path.as_str()) {
            Some(seq) => *seq += 1,
            None => {
                exe.invoke_seq.insert(path.clone(), 1);
            }
        }
        for (cid, cs) in &exe.children {
            // spawned here: `{exe.id}:{path}` then `.` (a region) or `:` (a fan-out instance)
            let mine = cid
                .strip_prefix(exe.id.as_str())
                .and_then(|rest| rest.strip_prefix(':'))
                .and_then(|rest| rest.strip_prefix(path.as_str()))
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with(':'));
            if !cs.finished && mine {
                emit(&mut self.fx, Some(cid.clone()), crate::ids::event("Cancel"));
            }
        }
    }

    fn is_spawn_site(&self, id: NodeId) -> bool {
        let n = self.defn.node(id);
        n.kind == NodeKind::Orthogonal || n.invoke.is_some() || n.invoke_each.is_some()
    }

    /// Enter a composite's start (or history) child, down to a leaf.
    async fn descend(
        &mut self,
        exe: &mut Execution,
        mut id: NodeId,
        event: Option<&Event>,
    ) -> Result<(), EngineError> {
        let defn = self.defn;
        loop {
            let node = defn.node(id);
            if !node.is_composite() {
                return Ok(());
            }
            if node.kind == NodeKind::Orthogonal {
                self.fork(exe, id);
                return Ok(());
            }
            if !node.allow_history {
                exe.history.remove(node.full_path.as_str());
            }
            let child = match exe.history.get(node.full_path.as_str()) {
                Some(path) => Some(node_at(defn, path)?),
                None => node
                    .start_state
                    .as_deref()
                    .and_then(|name| defn.child(id, name)),
            };
            let Some(child) = child else {
                return Ok(());
            };
            // positioned on `child` before its enter runs: a failing hook must see it active
            self.set_active(child);
            if self.hooked(child, CallKind::Enter) {
                self.run_hook(exe, child, CallKind::Enter, event).await?;
            }
            record_history(
                &mut exe.history,
                &node.full_path,
                &defn.node(child).full_path,
            );
            id = child;
        }
    }

    /// The node a found transition goes to: a selector's pick, a `choose` branch, or its
    /// target.
    async fn target_of(
        &mut self,
        exe: &mut Execution,
        found: Found,
        event: Option<&Event>,
    ) -> Result<NodeId, EngineError> {
        let defn = self.defn;
        let t = found.transition(defn);
        if let Some(sel) = &t.selector {
            let active = self.active(exe)?;
            let call = ActionCall {
                node: defn.node(active),
                kind: CallKind::Selector,
                action: &sel.action,
                event,
                context: &mut exe.context,
            };
            let value = self
                .host
                .call(call)
                .await
                .map_err(|error| EngineError::Action {
                    error,
                    kind: CallKind::Selector,
                    action: sel.action.function.clone(),
                })?;
            let name = sel
                .mapper
                .get(&py_str(&value))
                .or(sel.default.as_ref())
                .ok_or_else(|| {
                    EngineError::Assertion(format!(
                        "selector result {} matched no branch and no `else`",
                        py_repr(&value)
                    ))
                })?;
            return defn.resolve_relative(found.scope, name).ok_or_else(|| {
                EngineError::Assertion(format!(
                    "selector target {} does not resolve from scope {}",
                    py_repr(&Value::String(name.clone())),
                    py_repr(&Value::String(defn.node(found.scope).full_path.to_string()))
                ))
            });
        }
        self.plain_target(exe, found, event)
    }

    /// The node a found transition without a selector goes to: a `choose` branch, or its
    /// target.
    fn plain_target(
        &self,
        exe: &Execution,
        found: Found,
        event: Option<&Event>,
    ) -> Result<NodeId, EngineError> {
        let t = found.transition(self.defn);
        if t.choice.is_some() {
            // matching already required a branch (or a default) to hold
            return choice_branch(t, data_of(event), &exe.context).ok_or_else(|| {
                EngineError::Assertion("a `choose` matched with no branch to take".into())
            });
        }
        t.target
            .ok_or_else(|| EngineError::Assertion("a transition with no target".into()))
    }

    /// Take a transition with UML LCA semantics; its `set` values are evaluated first
    /// (failing before any state is left) and applied between the exits and the enters.
    async fn take(
        &mut self,
        exe: &mut Execution,
        target: NodeId,
        event: Option<&Event>,
        (own, branch): (&[Assign], &[Assign]),
    ) -> Result<(), EngineError> {
        let defn = self.defn;
        let values = if own.is_empty() && branch.is_empty() {
            None
        } else {
            let scopes = Scopes {
                event: data_of(event),
                context: &exe.context,
            };
            Some(evaluate(defn, own.iter().chain(branch), scopes)?)
        };
        let source = self.active(exe)?;
        let pivot = defn.lca(source, target);
        // The last exit writes `history[pivot]` and the first enter overwrites it, with
        // nothing in between that reads it or adds a history key (so the key's place is the
        // same either way). The exit's write is skipped when that enter cannot fail before
        // its own write (no hook, no timer to arm): what a failing enter would leave behind
        // is the only way to see it.
        let first_entered = {
            let mut id = target;
            loop {
                match defn.node(id).parent {
                    Some(p) if p == pivot && id != pivot => break Some(id),
                    Some(p) => id = p,
                    None => break None,
                }
            }
        };
        let overwritten = first_entered.is_some_and(|f| !self.hooked(f, CallKind::Enter));
        // exited levels, innermost-first
        let mut cur = source;
        while cur != pivot {
            let node = defn.node(cur);
            self.set_active(cur);
            if self.hooked(cur, CallKind::Exit) {
                self.run_hook(exe, cur, CallKind::Exit, event).await?;
            }
            let parent = node
                .parent
                .ok_or_else(|| EngineError::Corrupt("the pivot is not above the source".into()))?;
            if !(parent == pivot && overwritten) {
                record_history(
                    &mut exe.history,
                    &defn.node(parent).full_path,
                    &node.full_path,
                );
            }
            // harel leaves regions for an orthogonal node or a fan-out only: a single invoke
            // left by another event than its `Returned` keeps its seq and its child, which
            // runs on (never cancelled), and a re-entry waits for that same child. Looks
            // like a harel bug; kept, so both sides agree on ids and on what runs.
            if node.kind == NodeKind::Orthogonal || node.invoke_each.is_some() {
                self.leave_regions(exe, cur);
            }
            cur = parent;
        }
        self.set_active(pivot);
        if let Some(values) = values.filter(|v| !v.is_empty()) {
            for (k, v) in values {
                // an existing key keeps its String (and its place, as an insert would)
                match exe.context.get_mut(k) {
                    Some(slot) => *slot = v.clone(),
                    None => {
                        exe.context.insert(k.to_string(), v.clone());
                    }
                }
                self.fx.assigned.insert(k.into(), v);
            }
        }
        // entered levels, outermost-first: the depth-th ancestor of `target`, counting down
        let mut depth = 0usize;
        let mut cur = target;
        while cur != pivot {
            depth += 1;
            cur = defn
                .node(cur)
                .parent
                .ok_or_else(|| EngineError::Corrupt("the pivot is not above the target".into()))?;
        }
        for level in (0..depth).rev() {
            let mut id = target;
            for _ in 0..level {
                id = defn
                    .node(id)
                    .parent
                    .expect("walked above: the pivot is an ancestor");
            }
            let node = defn.node(id);
            self.set_active(id);
            if self.hooked(id, CallKind::Enter) {
                self.run_hook(exe, id, CallKind::Enter, event).await?;
            }
            if let Some(parent) = node.parent {
                record_history(
                    &mut exe.history,
                    &defn.node(parent).full_path,
                    &node.full_path,
                );
            }
        }
        // a leaf has nothing to descend into: skip building the descent's future
        if defn.node(target).is_composite() {
            self.descend(exe, target, event).await?;
        }
        Ok(())
    }

    /// Resolve `found`'s destination and take it.
    pub(crate) async fn fire(
        &mut self,
        exe: &mut Execution,
        found: Found,
        event: Option<&Event>,
    ) -> Result<(), EngineError> {
        // only a selector calls the host: any other target is resolved without a future
        let target = if found.transition(self.defn).selector.is_some() {
            self.target_of(exe, found, event).await?
        } else {
            self.plain_target(exe, found, event)?
        };
        let assigns = effect(found.transition(self.defn), event, &exe.context);
        self.take(exe, target, event, assigns).await
    }

    /// Follow automatic transitions; re-deliver deferred events; bubble sinks up; finish.
    pub(crate) async fn drain(&mut self, exe: &mut Execution) -> Result<(), EngineError> {
        let defn = self.defn;
        let root = self.root(exe)?;
        loop {
            let active = self.active(exe)?;
            let node = defn.node(active);
            if node.invoke.is_some() {
                if node.invoke_each.is_none() {
                    // a single submachine: spawn it once per entry, then wait for `Returned`
                    self.invoke_single(exe, active);
                    return Ok(());
                }
                // a fan-out joins like an AND-state, over its addressed instances
                self.fan_out_once(exe, active)?;
                if !joined(exe) {
                    return Ok(());
                }
                expose_region_results(exe);
            } else if node.kind == NodeKind::Orthogonal {
                // wait for every region, unless `cancel_on_failure` and a region failed
                let gate_open = joined(exe) || (node.cancel_on_failure && any_region_failed(exe));
                if !gate_open {
                    return Ok(());
                }
                expose_region_results(exe);
            }

            // harel resolves twice (an automatic transition, then any transition); both
            // walk the same scopes, so one walk answers both
            let root_id = self.root(exe)?;
            let next = resolve_automatic(defn, root_id, active, &auto_pred(&exe.context))?;
            match next {
                Automatic::Take(found) => {
                    self.fire(exe, found, None).await?;
                    continue;
                }
                Automatic::Sink => {}
                Automatic::Waiting => {
                    if let Some((ev, found)) = self.next_deferred(exe)? {
                        self.fire(exe, found, Some(&ev)).await?;
                        continue;
                    }
                    return Ok(()); // waiting for an event
                }
            }

            // a sink at its own scope: the innermost terminal with an outcome sets it
            if node.outcome.is_some() && exe.outcome.is_none() {
                exe.outcome = node.outcome.clone();
            }
            if self.hooked(active, CallKind::Exit) {
                self.run_hook(exe, active, CallKind::Exit, None).await?;
            }
            if let Some(parent) = node.parent.filter(|p| *p != root) {
                exe.history.remove(defn.node(parent).full_path.as_str());
                self.set_active(parent);
                continue;
            }
            // a region runs its root's own exit as it ends (symmetric with start)
            if exe.parent_id.is_some() && self.hooked(root, CallKind::Exit) {
                self.run_hook(exe, root, CallKind::Exit, None).await?;
            }
            if exe.status == Status::Running {
                exe.status = Status::Done;
                if let Some(parent_id) = exe.parent_id.clone() {
                    let carry = &defn.node(root).carry;
                    let mut data = finished_data(
                        str_or_null(exe.child_id.as_deref()),
                        str_or_null(exe.outcome.as_deref()),
                    );
                    for k in carry {
                        if let Some(v) = field(&exe.context, k) {
                            data.insert(k.clone(), v.clone());
                        }
                    }
                    if !exe.deferred.is_empty() {
                        let held = exe
                            .deferred
                            .drain(..)
                            .map(|e| {
                                serde_json::to_value(e)
                                    .map_err(|e| EngineError::Corrupt(e.to_string()))
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        data.insert("__deferred__".into(), Value::Array(held));
                    }
                    emit(
                        &mut self.fx,
                        Some(parent_id),
                        crate::ids::event_with("Finished", data),
                    );
                }
            }
            return Ok(());
        }
    }

    async fn start(&mut self, exe: &mut Execution) -> Result<(), EngineError> {
        let defn = self.defn;
        exe.status = Status::Running;
        let root = self.root(exe)?;
        let start_node = defn
            .node(root)
            .start_state
            .as_deref()
            .and_then(|name| defn.child(root, name))
            .ok_or_else(|| {
                EngineError::Assertion(format!(
                    "{:?} has no initial state to start in",
                    defn.node(root).full_path
                ))
            })?;
        // a region runs its root's own enter first (a machine root has no hooks)
        if exe.parent_id.is_some() && self.hooked(root, CallKind::Enter) {
            self.run_hook(exe, root, CallKind::Enter, None).await?;
        }
        self.set_active(start_node);
        if self.hooked(start_node, CallKind::Enter) {
            self.run_hook(exe, start_node, CallKind::Enter, None)
                .await?;
        }
        if defn.node(start_node).is_composite() {
            self.descend(exe, start_node, None).await?;
        }
        self.drain(exe).await?;
        self.arm_ttl(exe);
        Ok(())
    }

    /// (Re)arm the inactivity budget; `expires_at` records the deadline so an earlier
    /// arming's `Timeout` is recognised as stale.
    fn arm_ttl(&mut self, exe: &mut Execution) {
        if let Some(delay) = ttl_delay(self.defn, exe) {
            let fire_at = self.host.now() + delay;
            self.fx.timers.push(TimerOp::Schedule {
                path: SmolStr::new_static(TTL_PATH),
                fire_at,
            });
            exe.expires_at = Some(fire_at);
        }
    }

    /// The `ttl` ran out: the model owns the reaction if it handles `Expired` straight into
    /// a terminal; otherwise CANCELLED with outcome `expired`.
    async fn expire(&mut self, exe: &mut Execution, event: &Event) -> Result<(), EngineError> {
        let fire_at = match event.data.get("fire_at") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => n.as_f64(),
            Some(_) => Some(f64::NAN), // equal to nothing
        };
        if exe.status != Status::Running || fire_at != exe.expires_at {
            return Ok(());
        }
        exe.processed_events += 1;
        let expired = crate::ids::event("Expired");
        self.settle(exe);
        if let Some(found) = safe_teardown(self.defn, exe, &expired)? {
            self.fire(exe, found, Some(&expired)).await?;
            return self.drain(exe).await;
        }
        if let Some(site) = exe.active_path.as_deref().and_then(|p| self.defn.get(p)) {
            if self.is_spawn_site(site) {
                self.leave_regions(exe, site);
            }
        }
        exe.status = Status::Cancelled;
        exe.outcome = Some("expired".into());
        Ok(())
    }

    async fn set_state(&mut self, exe: &mut Execution, path: &str) -> Result<(), EngineError> {
        if !is_valid_reposition_target(self.defn, exe, path)
            || !joined(exe)
            || exe.status != Status::Running
        {
            return Ok(());
        }
        exe.deferred.clear();
        let id = node_at(self.defn, path)?;
        self.set_active(id);
        self.drain(exe).await
    }

    async fn process(&mut self, exe: &mut Execution, event: &Event) -> Result<(), EngineError> {
        let defn = self.defn;
        match event.kind.as_str() {
            "Reset" => {
                if exe.status == Status::Cancelling {
                    return Ok(());
                }
                if let Some(site) = exe.active_path.as_deref().and_then(|p| defn.get(p)) {
                    if self.is_spawn_site(site) {
                        self.leave_regions(exe, site);
                    }
                }
                exe.children.clear();
                exe.context.clear();
                if exe.parent_id.is_none() || exe.definition_fqn.is_some() {
                    // a root starts over as created: its context defaults come back
                    exe.context = with_defaults(&defn.context_schema, &Object::new());
                }
                exe.history.clear();
                exe.deferred.clear();
                exe.active_path = None;
                self.active = None;
                self.moved = false;
                exe.outcome = None;
                exe.error = None;
                exe.status = Status::Pending;
                self.start(exe).await
            }
            "Cancel" => {
                if matches!(exe.status, Status::Done | Status::Cancelled) {
                    return Ok(());
                }
                let live = matches!(exe.status, Status::Running | Status::Cancelling)
                    && exe.active_path.is_some();
                let found = if live {
                    self.resolve(exe, &event_pred(event, &exe.context), true)?
                } else {
                    None
                };
                let Some(found) = found else {
                    // forceful: no hooks run
                    exe.status = Status::Cancelled;
                    return Ok(());
                };
                exe.status = Status::Running;
                self.fire(exe, found, Some(event)).await?;
                self.drain(exe).await?;
                exe.processed_events += 1;
                Ok(())
            }
            "Start" => {
                if exe.status == Status::Pending {
                    for (k, v) in &event.data {
                        exe.context.insert(k.clone(), v.clone());
                    }
                    self.start(exe).await?;
                }
                Ok(())
            }
            "SetState" => match event.data.get("current_state") {
                Some(Value::String(path)) => self.set_state(exe, path).await,
                _ => Ok(()),
            },
            "Finished" => {
                let cid = field(&event.data, "child_id").and_then(Value::as_str);
                if let Some(cs) = cid.and_then(|c| exe.children.get_mut(c)) {
                    cs.finished = true;
                    cs.outcome = field(&event.data, "outcome")
                        .and_then(Value::as_str)
                        .map(SmolStr::from);
                    // refilled in place: the same entries as a fresh map, without building
                    // (and dropping) one per `Finished`
                    cs.result.clear();
                    cs.result.extend(
                        event
                            .data
                            .iter()
                            .filter(|(k, _)| {
                                !matches!(k.as_str(), "child_id" | "outcome" | "__deferred__")
                            })
                            .map(|(k, v)| (k.clone(), v.clone())),
                    );
                }
                if let Some(Value::Array(held)) = field(&event.data, "__deferred__") {
                    for raw in held {
                        let ev: Event = serde_json::from_value(raw.clone()).map_err(|e| {
                            EngineError::Corrupt(format!("a deferred event in `Finished`: {e}"))
                        })?;
                        exe.deferred.push(ev);
                    }
                }
                let active = match exe.active_path {
                    Some(_) => Some(self.active(exe)?),
                    None => None,
                };
                if super::invoke::parked_on_single_invoke(defn, exe, active) {
                    let cid = cid.map(str::to_string);
                    let active = active.expect("parked on a state");
                    return self.returned(exe, active, cid.as_deref()).await;
                }
                // an orthogonal region's join: re-drain (the gate opens once all finished)
                if exe.status == Status::Running {
                    self.drain(exe).await?;
                }
                Ok(())
            }
            "Timeout" => {
                let path = field(&event.data, "path").and_then(Value::as_str);
                if path == Some(TTL_PATH) {
                    return self.expire(exe, event).await;
                }
                let Some(path) = path else {
                    return Ok(());
                };
                if exe.status != Status::Running || !is_active(defn, exe, path) {
                    return Ok(()); // stale: the state was left (or left and re-entered)
                }
                // the timed-out state's own transition, bubbling up, not the innermost one
                let found = resolve_at(defn, path, &event_pred(event, &exe.context));
                if let Some(found) = found {
                    self.fire(exe, found, Some(event)).await?;
                    self.drain(exe).await?;
                    exe.processed_events += 1;
                }
                Ok(())
            }
            _ => {
                if exe.status != Status::Running {
                    return Ok(());
                }
                let found = self.resolve(exe, &event_pred(event, &exe.context), true)?;
                match found {
                    Some(found) => self.fire(exe, found, Some(event)).await?,
                    None => {
                        let active = self.active(exe)?;
                        if is_deferred(defn, active, &event.kind) {
                            exe.deferred.push(event.clone());
                        } else {
                            if self.hooked(active, CallKind::Activity) {
                                self.run_hook(exe, active, CallKind::Activity, Some(event))
                                    .await?;
                            }
                        }
                    }
                }
                self.drain(exe).await?;
                exe.processed_events += 1;
                self.arm_ttl(exe);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn region(outcome: Option<&str>, result: Value) -> ChildState {
        ChildState {
            root_path: "F.A".into(),
            outcome: outcome.map(SmolStr::from),
            result: result.as_object().cloned().unwrap(),
            ..ChildState::default()
        }
    }

    /// The value a join leaves, built from scratch (no previous value to reuse).
    fn fresh(exe: &Execution) -> String {
        let mut again = exe.clone();
        if let Some(v) = again.context.get_mut("region_results") {
            *v = Value::Null; // keeps the key's position, forces the building path
        }
        expose_region_results(&mut again);
        serde_json::to_string(&again.context).unwrap()
    }

    #[test]
    fn region_results_rewritten_in_place_equal_a_fresh_build() {
        let mut exe = Execution::new("m").with_id("e");
        exe.context.insert("before".into(), json!(1));
        exe.children
            .insert("e:F.A:0".into(), region(Some("success"), json!({"x": 1})));
        let mut b = region(None, json!({}));
        b.key = "F.B".into();
        exe.children.insert("e:F.B:0".into(), b);
        expose_region_results(&mut exe);
        exe.context.insert("after".into(), json!(2));
        assert_eq!(
            serde_json::to_string(&exe.context).unwrap(),
            r#"{"before":1,"region_results":{"F.A:0":{"outcome":"success","x":1},"F.B":{"outcome":null}},"after":2}"#
        );
        // the next join: same layout, new values (a string, a null, a carried `outcome`)
        let cs = &mut exe.children[0];
        cs.outcome = None;
        cs.result = json!({"x": "long string value"})
            .as_object()
            .cloned()
            .unwrap();
        exe.children[1].outcome = Some("failed".into());
        let expected = fresh(&exe);
        expose_region_results(&mut exe);
        assert_eq!(serde_json::to_string(&exe.context).unwrap(), expected);
        assert!(expected.contains(r#""F.A:0":{"outcome":null,"x":"long string value"}"#));
        // a carried `outcome` overrides the region's own, in the first position
        exe.children[0].result = json!({"outcome": "carried", "x": 3})
            .as_object()
            .cloned()
            .unwrap();
        exe.children[0].outcome = Some("success".into());
        let expected = fresh(&exe);
        expose_region_results(&mut exe);
        assert_eq!(serde_json::to_string(&exe.context).unwrap(), expected);
        assert!(expected.contains(r#""F.A:0":{"outcome":"carried","x":3}"#));
        // a different layout (a new carried key) is rebuilt
        exe.children[1].result = json!({"y": [1, 2]}).as_object().cloned().unwrap();
        let expected = fresh(&exe);
        expose_region_results(&mut exe);
        assert_eq!(serde_json::to_string(&exe.context).unwrap(), expected);
        assert!(expected.contains(r#""F.B":{"outcome":"failed","y":[1,2]}"#));
        // nothing reported: the previous value stays as it was
        let before = serde_json::to_string(&exe.context).unwrap();
        for cs in exe.children.values_mut() {
            cs.outcome = None;
            cs.result.clear();
        }
        exe.children[0].result.insert("outcome".into(), Value::Null);
        expose_region_results(&mut exe);
        assert_eq!(serde_json::to_string(&exe.context).unwrap(), before);
    }

    #[test]
    fn child_ids_are_harels() {
        assert_eq!(child_id("e", "Fork.A", 0), "e:Fork.A:0");
        assert_eq!(child_id("e", "F", 1234567), "e:F:1234567");
        assert_eq!(child_id("x", "F", u64::MAX), format!("x:F:{}", u64::MAX));
        // longer than the stack buffer: built on the heap, the same text
        let (long_id, long_path) = ("e".repeat(100), "P".repeat(40));
        assert_eq!(
            child_id(&long_id, &long_path, 7),
            format!("{long_id}:{long_path}:7")
        );
    }
}
