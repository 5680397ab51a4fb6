//! A store that is another store except for `commit`, which runs through a [`CommitHook`].
//! Recording what a step enqueued, counting processed marks and racing a concurrent writer in
//! tests are all "the same store, and something around the commit": the hook says only that,
//! and every other operation is forwarded here once. The store is held through a pointer
//! (`&S`, `Box<S>`, `Arc<S>`), so a hook can wrap a borrowed store for one step as well as an
//! owned one.

use std::future::Future;
use std::ops::Deref;

use harel_model::{Execution, ExecutionPage, Object};

use crate::{
    BusEvent, Commit, DefinitionDoc, Definitions, DueTimer, ExecutionStore, Executions, ListQuery,
    Outbox, OutboxEntry, Purge, SpawnEntry, StoreResult, Timers, Traces,
};

/// What runs in place of `inner.commit` (it calls `inner.commit` itself, or not).
pub trait CommitHook<S: ExecutionStore + ?Sized>: Send + Sync {
    /// Commit `exe` and `commit` in place of `inner.commit`, keeping that method's promise to the
    /// caller (atomic, version-checked, the version bumped only on success).
    fn commit(
        &self,
        inner: &S,
        exe: &mut Execution,
        commit: Commit,
    ) -> impl Future<Output = StoreResult<Vec<u64>>> + Send;
}

/// The store behind `inner` with `hook` around its commits.
pub struct Hooked<P, H> {
    /// The store (a pointer to it) every operation but `commit` is forwarded to.
    pub inner: P,
    /// What runs in place of the store's `commit`.
    pub hook: H,
}

impl<P, H> Hooked<P, H> {
    /// The store `inner` with `hook` around its commits.
    pub fn new(inner: P, hook: H) -> Self {
        Hooked { inner, hook }
    }
}

impl<P, H> Executions for Hooked<P, H>
where
    P: Deref + Send + Sync,
    P::Target: ExecutionStore + Sized,
    H: CommitHook<P::Target>,
{
    async fn load(&self, execution_id: &str) -> StoreResult<Option<Execution>> {
        self.inner.load(execution_id).await
    }

    async fn load_eventually(&self, execution_id: &str) -> StoreResult<Option<Execution>> {
        self.inner.load_eventually(execution_id).await
    }

    async fn load_for_event(
        &self,
        execution_id: &str,
        event_id: &str,
    ) -> StoreResult<(Option<Execution>, bool)> {
        self.inner.load_for_event(execution_id, event_id).await
    }

    async fn commit(&self, exe: &mut Execution, commit: Commit) -> StoreResult<Vec<u64>> {
        self.hook.commit(&self.inner, exe, commit).await
    }

    async fn is_processed(&self, execution_id: &str, event_id: &str) -> StoreResult<bool> {
        self.inner.is_processed(execution_id, event_id).await
    }

    async fn list_executions(&self, query: &ListQuery) -> StoreResult<ExecutionPage> {
        self.inner.list_executions(query).await
    }

    async fn close(&self) {
        self.inner.close().await
    }
}

impl<P, H> Definitions for Hooked<P, H>
where
    P: Deref + Send + Sync,
    P::Target: ExecutionStore + Sized,
    H: CommitHook<P::Target>,
{
    async fn put_definition(&self, doc: &DefinitionDoc) -> StoreResult<bool> {
        self.inner.put_definition(doc).await
    }

    async fn get_definition(&self, version: &str) -> StoreResult<Option<DefinitionDoc>> {
        self.inner.get_definition(version).await
    }

    async fn has_definition(&self, version: &str) -> StoreResult<bool> {
        self.inner.has_definition(version).await
    }

    async fn load_with_definition(
        &self,
        execution_id: &str,
        version: &str,
    ) -> StoreResult<(Option<Execution>, bool)> {
        self.inner.load_with_definition(execution_id, version).await
    }

    async fn list_definitions(&self) -> StoreResult<Vec<DefinitionDoc>> {
        self.inner.list_definitions().await
    }
}

impl<P, H> Outbox for Hooked<P, H>
where
    P: Deref + Send + Sync,
    P::Target: ExecutionStore + Sized,
    H: CommitHook<P::Target>,
{
    async fn pending_outbox(&self) -> StoreResult<Vec<OutboxEntry>> {
        self.inner.pending_outbox().await
    }

    async fn ack_outbox(&self, seq: u64) -> StoreResult<()> {
        self.inner.ack_outbox(seq).await
    }

    async fn pending_published(&self) -> StoreResult<Vec<BusEvent>> {
        self.inner.pending_published().await
    }

    async fn ack_published(&self, event_ids: &[&str]) -> StoreResult<()> {
        self.inner.ack_published(event_ids).await
    }

    async fn retry_published(&self, event_id: &str, attempts: u32) -> StoreResult<()> {
        self.inner.retry_published(event_id, attempts).await
    }

    async fn pending_spawns(&self) -> StoreResult<Vec<SpawnEntry>> {
        self.inner.pending_spawns().await
    }

    async fn ack_spawn(&self, seq: u64) -> StoreResult<()> {
        self.inner.ack_spawn(seq).await
    }
}

impl<P, H> Timers for Hooked<P, H>
where
    P: Deref + Send + Sync,
    P::Target: ExecutionStore + Sized,
    H: CommitHook<P::Target>,
{
    async fn due_timers(&self, now: f64) -> StoreResult<Vec<DueTimer>> {
        self.inner.due_timers(now).await
    }

    async fn legacy_due_timers(&self, now: f64) -> StoreResult<Vec<DueTimer>> {
        self.inner.legacy_due_timers(now).await
    }

    async fn next_timer_due(&self, horizon: f64) -> StoreResult<Option<f64>> {
        self.inner.next_timer_due(horizon).await
    }

    async fn due_and_next(&self, now: f64, horizon: f64) -> StoreResult<crate::DueAndNext> {
        self.inner.due_and_next(now, horizon).await
    }

    async fn armed_timers(&self, execution_id: &str) -> StoreResult<Vec<DueTimer>> {
        self.inner.armed_timers(execution_id).await
    }

    async fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> StoreResult<()> {
        self.inner.delete_timer(execution_id, path, fire_at).await
    }
}

impl<P, H> Traces for Hooked<P, H>
where
    P: Deref + Send + Sync,
    P::Target: ExecutionStore + Sized,
    H: CommitHook<P::Target>,
{
    async fn read_trace(&self, execution_id: &str) -> StoreResult<Vec<Object>> {
        self.inner.read_trace(execution_id).await
    }

    async fn append_trace(&self, execution_id: &str, entry: Object) -> StoreResult<()> {
        self.inner.append_trace(execution_id, entry).await
    }
}

impl<P, H> Purge for Hooked<P, H>
where
    P: Deref + Send + Sync,
    P::Target: ExecutionStore + Sized,
    H: CommitHook<P::Target>,
{
    async fn ids_with_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        self.inner.ids_with_prefix(prefix).await
    }

    async fn descendant_ids(&self, root_id: &str) -> StoreResult<Vec<String>> {
        self.inner.descendant_ids(root_id).await
    }

    async fn purge(&self, execution_id: &str, expected_version: u64) -> StoreResult<bool> {
        self.inner.purge(execution_id, expected_version).await
    }
}
