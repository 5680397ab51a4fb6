//! A `Driver` over the pure engine (`harel-engine`) with Rust actions bound by name: harel's
//! `TransportDriverLogic._run_flow` + `FailOnActionError` for one step. It stands in for
//! `harel-runtime`'s driver, which was not available when this crate was written; it covers
//! the production policy (an action error routes to `on error`, else fails the execution)
//! but not the opt-in trace.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use harel_engine::{ActionCall, ActionError, CallKind, EngineError, Host, StepEffects};
use harel_model::{Definition, Event, Execution, Object, Status};
use harel_store::{Commit, ExecutionStore, Spawn, TimerOp};
use serde_json::Value;

use crate::driver::{DriveError, Driver, Stepped};

/// A Rust action: the live context, the triggering event, the action's inputs.
pub type ActionFn =
    Arc<dyn Fn(&mut Object, Option<&Event>, &Object) -> Result<Value, ActionError> + Send + Sync>;

/// Actions by the name a machine binds them with.
#[derive(Clone)]
pub struct Actions {
    map: HashMap<String, ActionFn>,
}

impl Default for Actions {
    fn default() -> Self {
        Self::new()
    }
}

impl Actions {
    /// The registry with harel's standard selector `harel.lib.join_success` (what
    /// `join all|any` desugars to).
    pub fn new() -> Self {
        let mut actions = Actions {
            map: HashMap::new(),
        };
        actions.register("harel.lib.join_success", join_success);
        actions
    }

    pub fn register(
        &mut self,
        name: impl Into<String>,
        action: impl Fn(&mut Object, Option<&Event>, &Object) -> Result<Value, ActionError>
            + Send
            + Sync
            + 'static,
    ) -> &mut Self {
        self.map.insert(name.into(), Arc::new(action));
        self
    }

    pub fn get(&self, name: &str) -> Option<&ActionFn> {
        self.map.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }
}

/// harel's `harel.lib.join_success`: "pass" when the regions' outcomes satisfy `mode`.
fn join_success(
    context: &mut Object,
    _event: Option<&Event>,
    inputs: &Object,
) -> Result<Value, ActionError> {
    let mode = inputs.get("mode").and_then(Value::as_str).unwrap_or("all");
    let oks: Vec<bool> = context
        .get("region_results")
        .and_then(Value::as_object)
        .map(|r| {
            r.values()
                .map(|v| v.get("outcome").and_then(Value::as_str) == Some("success"))
                .collect()
        })
        .unwrap_or_default();
    let passed = !oks.is_empty()
        && if mode == "all" {
            oks.iter().all(|b| *b)
        } else {
            oks.iter().any(|b| *b)
        };
    Ok(Value::String(if passed { "pass" } else { "fail" }.into()))
}

/// Epoch seconds.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> f64;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    }
}

/// A clock tests move by hand.
#[derive(Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    pub fn at(now: f64) -> Self {
        ManualClock(AtomicU64::new(now.to_bits()))
    }
    pub fn set(&self, now: f64) {
        self.0.store(now.to_bits(), Ordering::SeqCst);
    }
    pub fn advance(&self, seconds: f64) {
        self.set(self.now() + seconds);
    }
    pub fn now_secs(&self) -> f64 {
        self.now()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::SeqCst))
    }
}

impl<C: Clock> Clock for Arc<C> {
    fn now(&self) -> f64 {
        (**self).now()
    }
}

pub struct EngineDriver<C: Clock = SystemClock> {
    definitions: HashMap<String, Arc<Definition>>,
    actions: Actions,
    clock: C,
}

impl EngineDriver<SystemClock> {
    pub fn new(definitions: Vec<Definition>, actions: Actions) -> Self {
        Self::with_clock(definitions, actions, SystemClock)
    }
}

impl<C: Clock> EngineDriver<C> {
    pub fn with_clock(definitions: Vec<Definition>, actions: Actions, clock: C) -> Self {
        let definitions = definitions
            .into_iter()
            .map(|d| (d.id.clone(), Arc::new(d)))
            .collect();
        EngineDriver {
            definitions,
            actions,
            clock,
        }
    }

    pub fn machine_ids(&self) -> impl Iterator<Item = &str> {
        self.definitions.keys().map(String::as_str)
    }

    /// Every action a machine names that no Rust action is bound to: checked at cold start, so
    /// a missing binding is an error then and not a FAILED execution later.
    pub fn unbound_actions(&self) -> Vec<(String, String)> {
        let mut missing = Vec::new();
        for (id, defn) in &self.definitions {
            for node in &defn.nodes {
                for action in node_actions(node) {
                    if self.actions.get(&action).is_none() {
                        missing.push((id.clone(), action));
                    }
                }
            }
        }
        missing.sort();
        missing.dedup();
        missing
    }
}

fn node_actions(node: &harel_model::Node) -> Vec<String> {
    let mut names = Vec::new();
    for hook in [&node.on_enter, &node.on_exit, &node.on_activity]
        .into_iter()
        .flatten()
    {
        names.push(hook.function.clone());
    }
    for t in &node.transitions {
        if let Some(selector) = &t.selector {
            names.push(selector.action.function.clone());
        }
    }
    names
}

struct EngineHost<'d, C: Clock> {
    actions: &'d Actions,
    clock: &'d C,
}

impl<C: Clock> Host for EngineHost<'_, C> {
    fn call<'a>(
        &'a mut self,
        call: ActionCall<'a>,
    ) -> impl std::future::Future<Output = Result<Value, ActionError>> + Send + 'a {
        let result = match self.actions.get(&call.action.function) {
            Some(action) => action(call.context, call.event, &call.action.inputs),
            // harel fails to import an unbound function at call time: the same error path
            None => Err(ActionError::new(
                "ModuleNotFoundError",
                format!("no action bound to {:?}", call.action.function),
            )),
        };
        std::future::ready(result)
    }

    fn now(&mut self) -> f64 {
        self.clock.now()
    }
}

/// The error a FAILED execution records and an `error` event carries.
fn describe(err: &EngineError) -> Option<(String, String, bool)> {
    match err {
        EngineError::Action { error, kind, .. } => Some((
            error.kind.clone(),
            error.message.clone(),
            *kind == CallKind::Exit,
        )),
        EngineError::Expression(e) => Some((
            harel_engine::ExpressionError::TYPE_NAME.to_string(),
            e.0.clone(),
            false,
        )),
        _ => None,
    }
}

fn convert_timers(timers: Vec<harel_engine::TimerOp>) -> Vec<TimerOp> {
    timers
        .into_iter()
        .map(|t| match t {
            harel_engine::TimerOp::Schedule { path, fire_at } => {
                TimerOp::Schedule { path, fire_at }
            }
            harel_engine::TimerOp::Cancel { path } => TimerOp::Cancel { path },
        })
        .collect()
}

impl<C: Clock> EngineDriver<C> {
    async fn run(
        &self,
        defn: &Definition,
        exe: &mut Execution,
        event: Option<&Event>,
    ) -> Result<StepEffects, DriveError> {
        let mut host = EngineHost {
            actions: &self.actions,
            clock: &self.clock,
        };
        let first = match event {
            None => harel_engine::start(defn, exe, &mut host).await,
            Some(ev) => harel_engine::process(defn, exe, ev, &mut host).await,
        };
        let err = match first {
            Ok(fx) => return Ok(fx),
            Err(e) => e,
        };
        let execution_id = exe.id.clone();
        let engine_error = |e: &EngineError| DriveError::Engine {
            execution_id: execution_id.clone(),
            message: e.to_string(),
        };
        let Some((kind, message, on_exit)) = describe(&err) else {
            return Err(engine_error(&err));
        };
        // `on_exit` must always succeed (harel): straight to the policy
        if !on_exit {
            let ev = harel_engine::error_event(&kind, &message);
            let handled =
                harel_engine::has_error_handler(defn, exe, &ev).map_err(|e| engine_error(&e))?;
            if handled {
                exe.context
                    .insert("_error".into(), Value::Object(ev.data.clone()));
                match harel_engine::process(defn, exe, &ev, &mut host).await {
                    Ok(fx) => return Ok(fx),
                    Err(second) => {
                        let Some((k2, m2, _)) = describe(&second) else {
                            return Err(engine_error(&second));
                        };
                        fail(
                            exe,
                            format!("{k2}: {m2} (while recovering from {kind}: {message})"),
                        );
                        return Ok(StepEffects::default());
                    }
                }
            }
        }
        fail(exe, format!("{kind}: {message}"));
        Ok(StepEffects::default())
    }
}

/// harel's `FailOnActionError`: the execution fails terminally and the step's partial
/// effects are dropped.
fn fail(exe: &mut Execution, error: String) {
    tracing::error!(execution_id = %exe.id, %error, "unhandled action error; failing execution");
    exe.status = Status::Failed;
    exe.error = Some(error);
}

impl<C: Clock> Driver for EngineDriver<C> {
    fn definition(&self, definition_id: &str) -> Option<Arc<Definition>> {
        self.definitions.get(definition_id).cloned()
    }

    async fn step<S: ExecutionStore>(
        &self,
        store: &S,
        exe: &mut Execution,
        event: Option<&Event>,
    ) -> Result<Stepped, DriveError> {
        let defn = self
            .definition(&exe.definition_id)
            .ok_or_else(|| DriveError::UnknownMachine(exe.definition_id.clone()))?;
        let fx = self.run(&defn, exe, event).await?;
        exe.stamp(self.clock.now());
        let spawns: Vec<Spawn> = fx
            .spawns
            .into_iter()
            .map(|c| Spawn {
                child_id: c.child_id,
                root_path: c.root_path,
                context: c.context,
            })
            .collect();
        let commit = Commit {
            emits: fx.emits.clone(),
            processed_event_id: event.map(|e| e.id.clone()),
            timers: convert_timers(fx.timers),
            spawns: spawns.clone(),
            trace: None,
        };
        let seqs = store.commit(exe, commit).await?;
        let outbox = seqs
            .into_iter()
            .zip(fx.emits)
            .map(|(seq, (target, ev))| (seq, target, ev))
            .collect();
        Ok(Stepped { outbox, spawns })
    }

    fn now(&self) -> f64 {
        self.clock.now()
    }
}
