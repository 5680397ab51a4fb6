//! The `Driver` over `harel-runtime`: each step runs through `DurableRunner::step` (one step
//! committed, no inline relay), on a store handle that records what the commit enqueued so
//! the worker can deliver exactly that. Actions, their idempotency keys, `on error` routing,
//! the FAILED policy and `harel.lib.*` are the runtime's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use harel_model::{Definition, Event, Execution};
use harel_runtime::{ActionRegistry, Clock, DurableRunner, RuntimeError, SystemClock};
use harel_store::{Commit, CommitHook, ExecutionStore, Hooked, StoreError, StoreResult, TimerOp};

use crate::driver::{DriveError, Driver, Stepped};

pub struct RuntimeDriver {
    by_id: HashMap<String, Arc<Definition>>,
    registry: ActionRegistry,
    clock: Arc<dyn Clock>,
    trace: bool,
}

impl RuntimeDriver {
    /// `registry` should come from `ActionRegistry::with_stdlib()` plus the application's
    /// actions (`join all|any` needs `harel.lib.join_success`).
    pub fn new(definitions: Vec<Definition>, registry: ActionRegistry) -> Self {
        // inline and imported submachines too, by their FQN (a spawn names one of those)
        let by_id = harel_runtime::register(definitions);
        RuntimeDriver {
            by_id,
            registry,
            clock: Arc::new(SystemClock),
            trace: false,
        }
    }

    /// harel's `trace=True`: each step's commit carries its trace entry (the store keeps the
    /// ring; give it the configured `trace_max`).
    pub fn with_trace(mut self, trace: bool) -> Self {
        self.trace = trace;
        self
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    pub fn machine_ids(&self) -> impl Iterator<Item = &str> {
        self.by_id.keys().map(String::as_str)
    }

    /// Every (machine, action) a machine (or a submachine it carries) names that no action
    /// is bound to: checked at cold start, so a missing binding stops the function then instead of failing executions.
    pub fn unbound_actions(&self) -> Vec<(String, String)> {
        let mut missing = Vec::new();
        for defn in self.by_id.values() {
            for node in &defn.nodes {
                let hooks = [&node.on_enter, &node.on_exit, &node.on_activity];
                let selectors = node
                    .transitions
                    .iter()
                    .filter_map(|t| t.selector.as_ref().map(|s| &s.action));
                for action in hooks.into_iter().flatten().chain(selectors) {
                    if !self.registry.contains(&action.function) {
                        missing.push((defn.id.clone(), action.function.clone()));
                    }
                }
            }
        }
        missing.sort();
        missing.dedup();
        missing
    }
}

impl From<RuntimeError> for DriveError {
    fn from(e: RuntimeError) -> Self {
        match e {
            RuntimeError::Store(s) => DriveError::Store(s),
            RuntimeError::UnknownDefinition(id) => DriveError::UnknownMachine(id),
            other => DriveError::Engine {
                execution_id: String::new(),
                message: other.to_string(),
            },
        }
    }
}

impl Driver for RuntimeDriver {
    fn definition(&self, definition_id: &str) -> Option<Arc<Definition>> {
        self.by_id.get(definition_id).cloned()
    }

    async fn step<S: ExecutionStore>(
        &self,
        store: &S,
        exe: &mut Execution,
        event: Option<&Event>,
    ) -> Result<Stepped, DriveError> {
        // harel's `_defn_for`: a submachine child whose definition is known here only by
        // the FQN it was invoked by (its id differs when a resolver built it) still runs
        let known = self.by_id.contains_key(exe.definition_id.as_str())
            || exe
                .definition_fqn
                .as_ref()
                .is_some_and(|f| self.by_id.contains_key(f.as_str()));
        if !known {
            return Err(DriveError::UnknownMachine(exe.definition_id.to_string()));
        }
        // a runner per step over the borrowed store: the runtime owns its store by value.
        // It shares the definitions (a map of `Arc`s), nothing is deep-copied.
        let runner = DurableRunner::with_registered(
            Hooked::new(store, Recording::default()),
            self.by_id.clone(),
        )
        .with_registry(self.registry.clone())
        .with_clock(self.clock.clone())
        .with_trace(self.trace);
        runner
            .step(exe, event)
            .await
            .map_err(|e| match DriveError::from(e) {
                DriveError::Engine { message, .. } => DriveError::Engine {
                    execution_id: exe.id.to_string(),
                    message,
                },
                other => other,
            })?;
        Ok(runner.store().hook.take())
    }

    fn now(&self) -> f64 {
        self.clock.now()
    }
}

/// Remembers what a step's commits enqueued (around the borrowed store's own commit).
#[derive(Default)]
struct Recording {
    enqueued: Mutex<Stepped>,
}

impl Recording {
    fn take(&self) -> Stepped {
        std::mem::take(&mut *self.enqueued.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl<S: ExecutionStore> CommitHook<S> for Recording {
    async fn commit(
        &self,
        inner: &S,
        exe: &mut Execution,
        commit: Commit,
    ) -> StoreResult<Vec<u64>> {
        let emits = commit.emits.clone();
        let spawns = commit.spawns.clone();
        let armed: Vec<f64> = commit
            .timers
            .iter()
            .filter_map(|op| match op {
                TimerOp::Schedule { fire_at, .. } => Some(*fire_at),
                TimerOp::Cancel { .. } => None,
            })
            .collect();
        let seqs = inner.commit(exe, commit).await?;
        if seqs.len() != emits.len() {
            return Err(StoreError::Other(format!(
                "the store returned {} outbox seqs for {} emits",
                seqs.len(),
                emits.len()
            )));
        }
        let mut enqueued = self.enqueued.lock().unwrap_or_else(|e| e.into_inner());
        enqueued.outbox.extend(
            seqs.iter()
                .zip(emits)
                .map(|(seq, (target, ev))| (*seq, target, ev)),
        );
        enqueued.spawns.extend(spawns);
        enqueued.armed.extend(armed);
        Ok(seqs)
    }
}
