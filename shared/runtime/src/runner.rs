//! The durable runner (harel `hosting.DurableLogic`): drives an execution's events inline,
//! checkpointing every step in the store, with an inline relay for regions and emits and a
//! timer sweep on its clock. The caller gets the execution back as it is once the event
//! (and everything it caused inline) has been processed.

use std::collections::HashMap;
use std::sync::Arc;

use harel_model::schema::{check_context, check_event, with_defaults};
use harel_model::{Definition, Event, Execution, Object};
use harel_store::{ExecutionStore, StoreError};

use crate::actions::ActionRegistry;
use crate::clock::Clock;
use crate::delivery::inline::Inline;
use crate::driver::{ActionErrorPolicy, Driver};
use crate::RuntimeError;

/// Whether `exe` has orthogonal regions alive (a domain event goes to them).
fn has_live_regions(exe: &Execution) -> bool {
    exe.children.values().any(|c| !c.finished && !c.submachine)
}

/// The [`Driver`] over one store, delivering inline.
pub struct DurableRunner<S> {
    store: S,
    driver: Driver,
}

/// The definitions by id, with every submachine they carry (inline machines, imported
/// machines) registered by its own id, its FQN (harel `_register_submachines`, which lets a
/// submachine replace a definition of the same id).
pub fn register(
    definitions: impl IntoIterator<Item = Definition>,
) -> HashMap<String, Arc<Definition>> {
    let tops: Vec<Arc<Definition>> = definitions.into_iter().map(Arc::new).collect();
    let mut out: HashMap<String, Arc<Definition>> =
        tops.iter().map(|d| (d.id.clone(), Arc::clone(d))).collect();
    for d in &tops {
        for s in d.submachines.values() {
            out.insert(s.id.clone(), Arc::clone(s));
        }
    }
    out
}

impl<S: ExecutionStore> DurableRunner<S> {
    /// A runner over `store` for `definitions` (by their `id`), with `harel.lib.*` bound,
    /// the system clock, the FAILED policy and no trace.
    pub fn new(store: S, definitions: impl IntoIterator<Item = Definition>) -> Self {
        Self::with_registered(store, register(definitions))
    }

    /// A runner over definitions already registered (by [`register`]): shared, not copied.
    pub fn with_registered(store: S, definitions: HashMap<String, Arc<Definition>>) -> Self {
        Self::with_driver(
            store,
            Driver::with_registered(definitions, ActionRegistry::with_stdlib()),
        )
    }

    /// A runner over `store` for an already configured driver.
    pub fn with_driver(store: S, driver: Driver) -> Self {
        DurableRunner { store, driver }
    }

    /// With `registry`'s actions in place of `harel.lib.*` alone (start from
    /// [`ActionRegistry::with_stdlib`] to keep them).
    pub fn with_registry(mut self, registry: ActionRegistry) -> Self {
        self.driver = self.driver.with_registry(registry);
        self
    }

    /// On `clock`: what stamps commits, arms timers and decides which are due (see
    /// [`Driver::with_clock`]).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.driver = self.driver.with_clock(clock);
        self
    }

    /// With `policy` for action errors the model does not handle (see [`ActionErrorPolicy`]).
    pub fn with_policy(mut self, policy: ActionErrorPolicy) -> Self {
        self.driver = self.driver.with_policy(policy);
        self
    }

    /// Whether a new execution is pinned to its machine's deployed version, kept in the
    /// store: see [`Driver::with_pinning`].
    pub fn with_pinning(mut self, pinning: bool) -> Self {
        self.driver = self.driver.with_pinning(pinning);
        self
    }

    /// Record one timeline step per commit in the store's trace ring (harel's `trace=True`).
    pub fn with_trace(mut self, trace: bool) -> Self {
        self.driver = self.driver.with_trace(trace);
        self
    }

    /// The store every step is committed to.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The driver the runner steps executions with (machines, actions, clock, policy).
    pub fn driver(&self) -> &Driver {
        &self.driver
    }

    /// The actions, to bind more after the runner is built.
    pub fn registry_mut(&mut self) -> &mut ActionRegistry {
        self.driver.registry_mut()
    }

    /// The machine registered as `id` (a top-level machine by its name, a submachine by its FQN).
    pub fn definition(&self, id: &str) -> Option<&Definition> {
        self.driver.definition(id).map(Arc::as_ref)
    }

    fn inline(&self) -> Inline<'_, S> {
        Inline {
            driver: &self.driver,
            store: &self.store,
        }
    }

    async fn loaded(&self, execution_id: &str) -> Result<Execution, RuntimeError> {
        self.store
            .load(execution_id)
            .await?
            .ok_or_else(|| RuntimeError::NotFound(execution_id.to_string()))
    }

    /// The execution as last committed (None when there is none).
    pub async fn get(&self, execution_id: &str) -> Result<Option<Execution>, RuntimeError> {
        Ok(self.store.load(execution_id).await?)
    }

    /// Create an execution of `definition_id` and start it: `context` gets the schema's
    /// defaults and must then fit it.
    pub async fn create(
        &self,
        definition_id: &str,
        context: Option<Object>,
        execution_id: Option<&str>,
    ) -> Result<Execution, RuntimeError> {
        let mut exe = Execution::new(definition_id);
        if let Some(id) = execution_id {
            exe.id = id.into();
            // eventually consistent, with the version's check when this process has not kept
            // it yet (`Driver::load_for_create`); a stale "absent" is refused by the commit
            if self
                .driver
                .load_for_create(&self.store, &mut exe)
                .await?
                .is_some()
            {
                return Err(RuntimeError::AlreadyExists(id.to_string()));
            }
        }
        let defn = self
            .definition(definition_id)
            .ok_or_else(|| RuntimeError::UnknownDefinition(definition_id.to_string()))?;
        let context = with_defaults(&defn.context_schema, &context.unwrap_or_default());
        check_context(&defn.context_schema, &context, true)?;
        exe.context = context;
        match self.driver.step(&self.store, &mut exe, None).await {
            Ok(_) => {}
            // it existed after all (the existence check read a stale copy, or another
            // creator came first): the insert-if-absent commit wrote nothing
            Err(RuntimeError::Store(StoreError::Conflict {
                execution_id: id,
                expected: 0,
                ..
            })) if id == exe.id.as_str() => {
                return Err(RuntimeError::AlreadyExists(id));
            }
            Err(e) => return Err(e),
        }
        let touched = self.inline().flush().await?;
        self.current(exe, &touched).await
    }

    /// `exe` as committed, read back only when the relay committed a later step of it (an
    /// event it emitted to itself, a region's verdict): one GetItem a step less than
    /// reading it back always.
    async fn current(
        &self,
        exe: Execution,
        touched: &std::collections::BTreeSet<harel_model::SmolStr>,
    ) -> Result<Execution, RuntimeError> {
        if touched.contains(&exe.id) {
            self.loaded(&exe.id).await
        } else {
            Ok(exe)
        }
    }

    /// Process one event: checked against its declaration before anything runs, broadcast
    /// to live regions when it is a domain event and there are some.
    ///
    /// The execution is read eventually consistent (half the read units): a stale copy
    /// carries an older version, so the step's commit fails its version check and the event
    /// is processed again from a strong read (the stale attempt's actions ran, as they do
    /// when another writer wins a race: each action has its idempotency key, the same on
    /// both attempts). Read strongly instead: an execution the eventual read did not find (it
    /// may be that new), one whose copy has live regions (a broadcast commits nothing on the
    /// parent, so nothing would catch a stale list of regions), and, when no step of it was
    /// committed (the event was processed already), the execution handed back.
    pub async fn process(
        &self,
        execution_id: &str,
        event: &Event,
    ) -> Result<Execution, RuntimeError> {
        let exe = match self.store.load_eventually(execution_id).await? {
            Some(exe) if !has_live_regions(&exe) => exe,
            _ => {
                return self
                    .process_from(self.loaded(execution_id).await?, event)
                    .await
            }
        };
        let read = exe.version;
        match self.process_from(exe, event).await {
            Err(RuntimeError::Store(StoreError::Conflict {
                execution_id: id, ..
            })) if id == execution_id => {
                let exe = self.loaded(execution_id).await?;
                self.process_from(exe, event).await
            }
            Ok(exe) if exe.version == read => self.loaded(execution_id).await,
            other => other,
        }
    }

    async fn process_from(
        &self,
        mut exe: Execution,
        event: &Event,
    ) -> Result<Execution, RuntimeError> {
        let defn = self.driver.resolve(&self.store, &exe).await?;
        check_event(&defn.events, &event.kind, &event.data)?;
        let touched = self.inline().inject(&mut exe, event).await?;
        self.current(exe, &touched).await
    }

    /// One step of `exe` committed, without the relay (what a queue worker does with one
    /// message): `None` starts it. Returns whether the step enqueued outbox emits or spawns
    /// for a relay ([`DurableRunner::recover`]) to deliver.
    pub async fn step(
        &self,
        exe: &mut Execution,
        event: Option<&Event>,
    ) -> Result<bool, RuntimeError> {
        let stepped = self.driver.step(&self.store, exe, event).await?;
        Ok(!stepped.is_empty())
    }

    /// Deliver every timer due on this runner's clock; returns how many fired.
    pub async fn fire_due_timers(&self) -> Result<usize, RuntimeError> {
        self.inline().fire_due_timers().await
    }

    /// Drain what an interrupted relay left (pending spawns and outbox entries).
    pub async fn recover(&self) -> Result<(), RuntimeError> {
        self.inline().flush().await.map(|_| ())
    }

    /// The Definition the control plane decides against: the execution's own.
    async fn control_target(&self, execution_id: &str) -> Result<Arc<Definition>, RuntimeError> {
        let exe = self.loaded(execution_id).await?;
        self.driver.resolve(&self.store, &exe).await
    }

    /// harel `DurableRunner.cancel`: cooperative when the machine models `Cancel` (the
    /// execution goes CANCELLING with a `Cancel` in the outbox, which the inline relay then
    /// delivers, so the machine's cleanup has run to its terminal when this returns),
    /// forceful otherwise. `reason` is the `Cancel`'s data. Regions are cancelled too.
    pub async fn cancel(
        &self,
        execution_id: &str,
        reason: Option<Object>,
    ) -> Result<Execution, RuntimeError> {
        let defn = self.control_target(execution_id).await?;
        let now = self.driver.now();
        let reason = reason.unwrap_or_default();
        harel_control::cancel_with_reason(&self.store, &defn, execution_id, reason, now).await?;
        // harel flushes the whole outbox here, not only this Cancel (`driver._flush_flow`)
        self.inline().flush().await?;
        self.loaded(execution_id).await
    }

    /// Forceful cancel: CANCELLED at once, no hooks; regions too.
    pub async fn terminate(&self, execution_id: &str) -> Result<Execution, RuntimeError> {
        harel_control::terminate(&self.store, execution_id, self.driver.now()).await?;
        self.loaded(execution_id).await
    }

    /// RUNNING -> SUSPENDED, state and timers kept; regions too. An event processed while
    /// SUSPENDED is consumed without effect (harel's engine ignores a domain event unless
    /// RUNNING; only the queue worker parks messages).
    pub async fn suspend(&self, execution_id: &str) -> Result<Execution, RuntimeError> {
        harel_control::suspend(&self.store, execution_id, self.driver.now()).await?;
        self.loaded(execution_id).await
    }

    /// SUSPENDED -> RUNNING, continuing where it stopped; regions too.
    pub async fn resume(&self, execution_id: &str) -> Result<Execution, RuntimeError> {
        harel_control::resume(&self.store, execution_id, self.driver.now()).await?;
        self.loaded(execution_id).await
    }

    /// A FAILED execution back to RUNNING at `target_path` (a leaf of its own branch), once
    /// the bug that failed it is fixed; a no-op unless FAILED. Not propagated, no relay (as
    /// harel).
    pub async fn redrive(
        &self,
        execution_id: &str,
        target_path: &str,
    ) -> Result<Execution, RuntimeError> {
        let defn = self.control_target(execution_id).await?;
        harel_control::redrive(
            &self.store,
            &defn,
            execution_id,
            target_path,
            self.driver.now(),
        )
        .await?;
        self.loaded(execution_id).await
    }

    /// Delete the finished tree rooted at `execution_id` for good (harel's `DurableRunner.purge`), archived
    /// first if `archive` is given; `false` if there is no such execution.
    pub async fn purge(
        &self,
        execution_id: &str,
        archive: Option<&mut (dyn harel_control::Archive + Send + 'static)>,
    ) -> Result<bool, RuntimeError> {
        Ok(harel_control::purge(&self.store, execution_id, archive).await?)
    }

    /// Purge every root tree that finished more than `older_than` seconds ago by the
    /// runner's clock (`harel_control::purge_finished`, which harel's runner leaves to
    /// `harel.engine.control`); `options.now` is replaced by the clock's.
    pub async fn purge_finished(
        &self,
        options: harel_control::PurgeFinished,
        archive: Option<&mut (dyn harel_control::Archive + Send + 'static)>,
    ) -> Result<harel_control::PurgeReport, RuntimeError> {
        let options = harel_control::PurgeFinished {
            now: self.driver.now(),
            ..options
        };
        Ok(harel_control::purge_finished(&self.store, &options, archive).await?)
    }
}
