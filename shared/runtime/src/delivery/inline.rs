//! Delivery in process (harel's `DurableLogic`): a step's spawns are created and started, its
//! outbox events applied to their targets, each a committed step of its own, until nothing is
//! pending. Everything is read from the durable store, so an interrupted relay resumes.

use std::collections::BTreeSet;

use harel_engine::timeout_event;
use harel_model::{Event, Execution, SmolStr, Status};
use harel_store::{Commit, ExecutionStore};

use super::{create_child, restart_ttl, route, Route};
use crate::driver::Driver;
use crate::RuntimeError;

/// The driver over one store, delivering inline.
pub(crate) struct Inline<'r, S> {
    pub driver: &'r Driver,
    pub store: &'r S,
}

impl<S: ExecutionStore> Inline<'_, S> {
    /// Drive deferred work to quiescence: create pending children, deliver pending outbox
    /// events (deduped). Returns the executions it committed a step of (an execution not
    /// among them is as its caller last committed it: no need to read it back).
    pub(crate) async fn flush(&self) -> Result<BTreeSet<SmolStr>, RuntimeError> {
        let mut touched = BTreeSet::new();
        loop {
            let spawns = self.store.pending_spawns().await?;
            let outbox = self.store.pending_outbox().await?;
            if spawns.is_empty() && outbox.is_empty() {
                return Ok(touched);
            }
            for s in &spawns {
                create_child(self.driver, self.store, s).await?;
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
    async fn deliver_timeout(&self, execution_id: &str, event: &Event) -> Result<(), RuntimeError> {
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
    pub(crate) async fn fire_due_timers(&self) -> Result<usize, RuntimeError> {
        let mut fired = 0;
        let now = self.driver.now();
        let mut due = self.store.due_timers(now).await?;
        due.extend(self.store.legacy_due_timers(now).await?);
        due.sort_by(|a, b| a.fire_at.total_cmp(&b.fire_at));
        for due in due {
            let exe = self.store.load(&due.execution_id).await?;
            if exe.as_ref().is_some_and(|e| e.status == Status::Suspended) {
                continue;
            }
            if exe.is_some_and(|e| {
                e.pinned_version().is_some() || self.driver.definition(&e.definition_id).is_some()
            }) {
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

    /// Process one event for `exe` where [`route`] sends it, then relay. Returns what the
    /// relay committed a step of ([`Inline::flush`]).
    pub(crate) async fn inject(
        &self,
        exe: &mut Execution,
        event: &Event,
    ) -> Result<BTreeSet<SmolStr>, RuntimeError> {
        match route(self.store, exe, event).await? {
            Route::Regions(regions) => {
                for mut target in regions {
                    if !self.store.is_processed(&target.id, &event.id).await? {
                        self.apply_event(&mut target, event).await?;
                    }
                }
                self.rearm_ttl(exe, event).await?;
            }
            Route::Itself => {
                if !self.store.is_processed(&exe.id, &event.id).await? {
                    self.apply_event(exe, event).await?;
                }
            }
        }
        self.flush().await
    }

    /// A step for an event the caller found unprocessed. If another writer committed it
    /// meanwhile, the commit's mark condition refuses this one (nothing written): that is
    /// the event done, and `exe`, advanced in memory only, is reloaded.
    async fn apply_event(&self, exe: &mut Execution, event: &Event) -> Result<(), RuntimeError> {
        match self.driver.step(self.store, exe, Some(event)).await {
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

    /// The parent of an inline broadcast is committed only when its `ttl` restarts: the
    /// regions' own marks already make a repeated broadcast harmless.
    async fn rearm_ttl(&self, exe: &mut Execution, event: &Event) -> Result<(), RuntimeError> {
        let defn = self.driver.resolve(self.store, exe).await?;
        let defn = defn.as_ref();
        if harel_engine::ttl_delay(defn, exe).is_none()
            || self.store.is_processed(&exe.id, &event.id).await?
        {
            return Ok(());
        }
        let now = self.driver.now();
        let Some(timer) = restart_ttl(defn, exe, now) else {
            return Ok(());
        };
        exe.stamp(now);
        let commit = Commit {
            processed_event_id: Some(event.id.clone()),
            timers: vec![timer],
            ..Commit::default()
        };
        match self.store.commit(exe, commit).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_already_processed() => self.reload(exe).await,
            Err(e) => Err(e.into()),
        }
    }
}
