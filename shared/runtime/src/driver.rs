//! The driver (harel `driving.DriverLogic` + `FailOnActionError`): runs the engine for one
//! event and commits the step, calls the actions, routes their errors, creates spawned
//! regions, relays the outbox, delivers timeouts and broadcasts to regions.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::Arc;

use harel_engine::invoke::INVOKE_FQN_KEY;
use harel_engine::{
    error_event, has_error_handler, timeout_event, ttl_delay, ActionCall, EngineError, Host,
    StepEffects, TimerOp, TTL_PATH,
};
use harel_model::schema::with_defaults;
use harel_model::{Definition, Event, Execution, SmolStr, Status};
use harel_store::{Commit, ExecutionStore, Spawn, SpawnEntry};
use serde_json::Value;

use crate::actions::{unbound_error, ActionContext, ActionRegistry};
use crate::clock::Clock;
use crate::trace::trace_step;
use crate::RuntimeError;

/// Events an execution handles itself, never broadcast to its regions.
pub const CONTROL_EVENTS: [&str; 6] = [
    "Start", "Reset", "Cancel", "SetState", "Finished", "Timeout",
];

/// What happens to an action (or expression) error no `on error` in the model handles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ActionErrorPolicy {
    /// The execution fails terminally: FAILED with `error` = `Type: message`, committed
    /// (the dead letter). harel's production policy.
    #[default]
    Fail,
    /// The error reaches the caller and the step is not committed.
    Raise,
}

/// The idempotency keys of one step's actions (harel 0.9.0 `_ActionKeys`):
/// `{execution_id}:{event_id | "start"}:{index}:{action_name}`.
pub struct ActionKeys {
    base: String,
    index: usize,
}

impl ActionKeys {
    pub fn new(execution_id: &str, step: &str) -> Self {
        ActionKeys {
            base: format!("{execution_id}:{step}"),
            index: 0,
        }
    }

    pub fn next(&mut self, action_name: &str) -> String {
        let key = format!("{}:{}:{}", self.base, self.index, action_name);
        self.index += 1;
        key
    }
}

struct DriverHost<'r> {
    registry: &'r ActionRegistry,
    clock: &'r dyn Clock,
    execution_id: String,
    keys: &'r mut ActionKeys,
    actions: Vec<String>,
}

impl Host for DriverHost<'_> {
    fn call<'a>(
        &'a mut self,
        call: ActionCall<'a>,
    ) -> impl Future<Output = Result<Value, harel_engine::ActionError>> + Send + 'a {
        let name = &call.action.function;
        let key = self.keys.next(name);
        self.actions.push(name.clone());
        let action = self.registry.resolve(name);
        let execution_id: &'a str = &self.execution_id;
        async move {
            let Some(action) = action else {
                return Err(unbound_error(&call.action.function));
            };
            let ctx = ActionContext {
                context: call.context,
                idempotency_key: &key,
                execution_id,
            };
            action.call(ctx, call.event, &call.action.inputs).await
        }
    }

    fn now(&mut self) -> f64 {
        self.clock.now()
    }
}

/// What the engine is asked to do in a step.
#[derive(Clone, Copy)]
pub(crate) enum StepKind<'e> {
    Start,
    Event(&'e Event),
}

/// A failure being recovered from: (type, message).
type Failure = (String, String);

/// The effects a step commits and the actions it ran.
#[derive(Default)]
struct Driven {
    fx: StepEffects,
    actions: Vec<String>,
}

/// The driver over one store, with the runner's definitions, actions and clock.
pub(crate) struct Driver<'r, S> {
    pub definitions: &'r HashMap<String, Arc<Definition>>,
    pub store: &'r S,
    pub registry: &'r ActionRegistry,
    pub clock: &'r dyn Clock,
    pub policy: ActionErrorPolicy,
    pub trace: bool,
}

fn error_message((kind, message): &Failure, cause: Option<&Failure>) -> String {
    match cause {
        None => format!("{kind}: {message}"),
        Some((ck, cm)) => format!("{kind}: {message} (while recovering from {ck}: {cm})"),
    }
}

impl<'r, S: ExecutionStore> Driver<'r, S> {
    /// harel `_defn_for`: by the execution's `definition_id`, else (a submachine child
    /// whose definition is registered under its FQN only) by its `definition_fqn`.
    pub fn definition_for(&self, exe: &Execution) -> Result<&'r Definition, RuntimeError> {
        self.definitions
            .get(exe.definition_id.as_str())
            .or_else(|| {
                exe.definition_fqn
                    .as_ref()
                    .and_then(|f| self.definitions.get(f.as_str()))
            })
            .map(Arc::as_ref)
            .ok_or_else(|| RuntimeError::UnknownDefinition(exe.definition_id.to_string()))
    }

    /// The policy for an unhandled failure.
    fn on_action_error(&self, exe: &mut Execution, message: String) -> Result<(), RuntimeError> {
        match self.policy {
            ActionErrorPolicy::Fail => {
                tracing::error!(execution = %exe.id, error = %message, "unhandled action error; failing the execution");
                exe.status = Status::Failed;
                exe.error = Some(message);
                Ok(())
            }
            ActionErrorPolicy::Raise => Err(RuntimeError::ActionFailed(message)),
        }
    }

    /// Run the engine for one step, serving its effects; an action or expression error goes
    /// to an `on error` in scope (with `_error` in the context), else to the policy, and
    /// the failed attempt's partial effects are dropped.
    async fn drive(
        &self,
        defn: &Definition,
        exe: &mut Execution,
        step: StepKind<'_>,
        keys: &mut ActionKeys,
    ) -> Result<Driven, RuntimeError> {
        let mut original: Option<Failure> = None;
        let mut recovery: Option<Event> = None;
        loop {
            let mut host = DriverHost {
                registry: self.registry,
                clock: self.clock,
                execution_id: exe.id.to_string(),
                keys: &mut *keys,
                actions: Vec::new(),
            };
            let result = match (&recovery, step) {
                (Some(ev), _) => harel_engine::process(defn, exe, ev, &mut host).await,
                (None, StepKind::Start) => harel_engine::start(defn, exe, &mut host).await,
                (None, StepKind::Event(ev)) => {
                    harel_engine::process(defn, exe, ev, &mut host).await
                }
            };
            let actions = host.actions;
            let (failure, on_exit) = match result {
                Ok(fx) => return Ok(Driven { fx, actions }),
                Err(EngineError::Action { error, kind, .. }) => (
                    (error.kind, error.message),
                    kind == harel_engine::CallKind::Exit,
                ),
                Err(EngineError::Expression(e)) => (
                    (harel_engine::ExpressionError::TYPE_NAME.to_string(), e.0),
                    false,
                ),
                Err(other) => return Err(other.into()),
            };
            if let Some(cause) = &original {
                // already recovering: no second attempt
                self.on_action_error(exe, error_message(&failure, Some(cause)))?;
                return Ok(Driven::default());
            }
            if on_exit {
                // an on_exit must always succeed: leaving applied un-undoable effects, and
                // routing away would re-run this very hook; straight to the policy
                self.on_action_error(exe, error_message(&failure, None))?;
                return Ok(Driven::default());
            }
            let ev = error_event(&failure.0, &failure.1);
            if has_error_handler(defn, exe, &ev)? {
                exe.context
                    .insert("_error".into(), Value::Object(ev.data.clone()));
                original = Some(failure);
                recovery = Some(ev);
                continue;
            }
            self.on_action_error(exe, error_message(&failure, None))?;
            return Ok(Driven::default());
        }
    }

    /// Drive `exe` for one step and commit it atomically with its emits, spawns, timer
    /// operations, dedupe mark and trace. Returns whether it enqueued relay work.
    pub async fn run_step(
        &self,
        exe: &mut Execution,
        step: StepKind<'_>,
    ) -> Result<bool, RuntimeError> {
        let defn = self.definition_for(exe)?;
        let (event, event_id) = match step {
            StepKind::Start => (None, None),
            StepKind::Event(ev) => (Some(ev), Some(ev.id.clone())),
        };
        let from_path = exe.active_path.clone();
        let mut keys = ActionKeys::new(&exe.id, event_id.as_deref().unwrap_or("start"));
        let Driven { fx, actions } = self.drive(defn, exe, step, &mut keys).await?;
        let now = self.clock.now();
        let trace = self.trace.then(|| {
            trace_step(
                event,
                from_path.as_deref(),
                exe,
                &actions,
                now,
                &fx.assigned,
            )
        });
        exe.stamp(now);
        let enqueued = !fx.emits.is_empty() || !fx.spawns.is_empty();
        let commit = Commit {
            emits: fx.emits,
            processed_event_id: event_id,
            timers: fx.timers.into_iter().map(store_timer).collect(),
            spawns: fx
                .spawns
                .into_iter()
                .map(|s| Spawn {
                    child_id: s.child_id,
                    root_path: s.root_path,
                    context: s.context,
                })
                .collect(),
            trace,
        };
        self.store.commit(exe, commit).await?;
        Ok(enqueued)
    }

    /// Create and start one pending child, idempotently (a re-run fork keeps progress). An
    /// orthogonal region runs its parent's definition with only what the fork passed down; a
    /// submachine child runs the machine named by the `__invoke_fqn__` its spawn carries,
    /// with that machine's context defaults, and records the FQN so any worker can resolve
    /// it again. Either inherits the parent's priority.
    async fn create_spawn(&self, entry: &SpawnEntry) -> Result<(), RuntimeError> {
        if self.store.load(&entry.child_id).await?.is_some() {
            return Ok(());
        }
        let mut context = entry.context.clone();
        let submachine = match context.shift_remove(INVOKE_FQN_KEY) {
            None => None,
            Some(Value::String(fqn)) => {
                let defn = self.resolve_machine(&fqn)?;
                context = with_defaults(&defn.context_schema, &context);
                Some((SmolStr::from(&defn.id), SmolStr::from(fqn)))
            }
            Some(other) => {
                return Err(RuntimeError::UnresolvedSubmachine(format!(
                    "{INVOKE_FQN_KEY} of spawn {:?} is not a name: {other}",
                    entry.child_id
                )))
            }
        };
        let parent = self.store.load(&entry.parent_id).await?;
        let Some(parent) = parent else {
            return Err(RuntimeError::NotFound(entry.parent_id.to_string()));
        };
        let (definition_id, fqn) = match submachine {
            Some((id, fqn)) => (id, Some(fqn)),
            None => (parent.definition_id.clone(), None),
        };
        let mut child = Execution::new(definition_id).with_id(entry.child_id.clone());
        child.definition_fqn = fqn;
        child.root_path = entry.root_path.clone();
        child.context = context;
        child.parent_id = Some(entry.parent_id.clone());
        child.child_id = Some(entry.child_id.clone());
        child.priority = parent.priority;
        self.run_step(&mut child, StepKind::Start).await?;
        Ok(())
    }

    /// harel `_resolve_machine`: a submachine by its FQN among the registered definitions
    /// (inline and imported machines are registered under their FQN).
    fn resolve_machine(&self, fqn: &str) -> Result<&Definition, RuntimeError> {
        self.definitions
            .get(fqn)
            .map(Arc::as_ref)
            .ok_or_else(|| RuntimeError::UnresolvedSubmachine(fqn.to_string()))
    }

    /// Drive deferred work to quiescence: create pending regions, deliver pending outbox
    /// events (deduped). Reads the durable store, so an interrupted relay resumes. Returns
    /// the executions it committed a step of (an execution not among them is as its caller
    /// last committed it: no need to read it back).
    pub async fn flush(&self) -> Result<BTreeSet<SmolStr>, RuntimeError> {
        let mut touched = BTreeSet::new();
        loop {
            let spawns = self.store.pending_spawns().await?;
            let outbox = self.store.pending_outbox().await?;
            if spawns.is_empty() && outbox.is_empty() {
                return Ok(touched);
            }
            for s in &spawns {
                self.create_spawn(s).await?;
                touched.insert(s.child_id.clone());
            }
            for s in &spawns {
                self.store.ack_spawn(s.seq).await?;
            }
            for entry in outbox {
                if let Some(target_id) = &entry.target_id {
                    if let Some(mut target) = self.store.load(target_id).await? {
                        if !self.store.is_processed(&target.id, &entry.event.id).await? {
                            self.apply_event(&mut target, &entry.event).await?;
                            touched.insert(target.id.clone());
                        }
                    }
                }
                self.store.ack_outbox(entry.seq).await?;
            }
        }
    }

    /// Deliver a fired timer's `Timeout` inline, then relay.
    pub async fn deliver_timeout(
        &self,
        execution_id: &str,
        event: &Event,
    ) -> Result<(), RuntimeError> {
        if let Some(mut target) = self.store.load(execution_id).await? {
            if !self.store.is_processed(&target.id, &event.id).await? {
                self.apply_event(&mut target, event).await?;
                self.flush().await?;
            }
        }
        Ok(())
    }

    /// Deliver every timer due now, one at a time (two timers of one execution must not
    /// race), and remove it. A SUSPENDED execution's timers stay armed. Timers another
    /// writer armed outside the store's time index (harel Python's) are included.
    pub async fn fire_due_timers(&self) -> Result<usize, RuntimeError> {
        let mut fired = 0;
        let now = self.clock.now();
        let mut due = self.store.due_timers(now).await?;
        due.extend(self.store.legacy_due_timers(now).await?);
        due.sort_by(|a, b| a.fire_at.total_cmp(&b.fire_at));
        for due in due {
            let exe = self.store.load(&due.execution_id).await?;
            if exe.as_ref().is_some_and(|e| e.status == Status::Suspended) {
                continue;
            }
            if exe.is_some_and(|e| self.definitions.contains_key(e.definition_id.as_str())) {
                let event = timeout_event(&due.execution_id, &due.path, due.fire_at);
                self.deliver_timeout(&due.execution_id, &event).await?;
            }
            self.store
                .delete_timer(&due.execution_id, &due.path, due.fire_at)
                .await?;
            fired += 1;
        }
        Ok(fired)
    }

    /// Process one event for `exe`: a domain event goes to its live regions when it has any
    /// (and restarts its `ttl`), anything else to `exe` itself; then relay. Returns what the
    /// relay committed a step of ([`Driver::flush`]).
    pub async fn inject(
        &self,
        exe: &mut Execution,
        event: &Event,
    ) -> Result<BTreeSet<SmolStr>, RuntimeError> {
        let mut live = Vec::new();
        for (cid, cs) in &exe.children {
            if !cs.finished && !cs.submachine {
                if let Some(child) = self.store.load(cid).await? {
                    live.push(child);
                }
            }
        }
        let broadcast = !CONTROL_EVENTS.contains(&event.kind.as_str()) && !live.is_empty();
        if broadcast {
            for mut target in live {
                if !self.store.is_processed(&target.id, &event.id).await? {
                    self.apply_event(&mut target, event).await?;
                }
            }
            self.rearm_ttl(exe, event).await?;
        } else if !self.store.is_processed(&exe.id, &event.id).await? {
            self.apply_event(exe, event).await?;
        }
        self.flush().await
    }

    /// `run_step` for an event the caller found unprocessed. If another writer committed it
    /// meanwhile, the commit's mark condition refuses this one (nothing written): that is
    /// the event done, and `exe`, advanced in memory only, is reloaded.
    async fn apply_event(&self, exe: &mut Execution, event: &Event) -> Result<(), RuntimeError> {
        match self.run_step(exe, StepKind::Event(event)).await {
            Ok(_) => Ok(()),
            Err(RuntimeError::Store(e)) if e.is_already_processed() => self.reload(exe).await,
            Err(e) => Err(e),
        }
    }

    async fn reload(&self, exe: &mut Execution) -> Result<(), RuntimeError> {
        *exe = self
            .store
            .load(&exe.id)
            .await?
            .ok_or_else(|| RuntimeError::NotFound(exe.id.to_string()))?;
        Ok(())
    }

    /// A broadcast never runs `process` on the parent, but it is activity for its `ttl`.
    async fn rearm_ttl(&self, exe: &mut Execution, event: &Event) -> Result<(), RuntimeError> {
        let delay = ttl_delay(self.definition_for(exe)?, exe);
        let Some(delay) = delay else {
            return Ok(());
        };
        if self.store.is_processed(&exe.id, &event.id).await? {
            return Ok(());
        }
        let now = self.clock.now();
        let fire_at = now + delay;
        exe.expires_at = Some(fire_at);
        exe.stamp(now);
        let commit = Commit {
            processed_event_id: Some(event.id.clone()),
            timers: vec![harel_store::TimerOp::Schedule {
                path: TTL_PATH.into(),
                fire_at,
            }],
            ..Commit::default()
        };
        match self.store.commit(exe, commit).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_already_processed() => self.reload(exe).await,
            Err(e) => Err(e.into()),
        }
    }
}

fn store_timer(op: TimerOp) -> harel_store::TimerOp {
    match op {
        TimerOp::Schedule { path, fire_at } => harel_store::TimerOp::Schedule { path, fire_at },
        TimerOp::Cancel { path } => harel_store::TimerOp::Cancel { path },
    }
}
