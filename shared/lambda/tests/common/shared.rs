//! A store handle tests can share with the worker: counts the calls (the benchmark's request
//! figures) and injects a conflict into the next commit on demand.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use harel_model::{Event, Execution, ExecutionPage, Object};
use harel_store::prelude::*;
use harel_store::{
    Commit, DefinitionDoc, DueTimer, ListQuery, MemoryStore, OutboxEntry, SpawnEntry, StoreError,
    StoreResult,
};

#[derive(Clone, Default)]
pub(crate) struct Shared {
    pub inner: Arc<MemoryStore>,
    pub calls: Arc<AtomicUsize>,
    pub conflict_next_commit: Arc<AtomicBool>,
    /// Timers the time index still shows after their delete (an eventually consistent
    /// index lagging), appended to `due_timers` and `next_timer_due`.
    pub stale_timers: Arc<std::sync::Mutex<Vec<DueTimer>>>,
    /// The next eventually consistent read of an execution answers "absent" (a replica that
    /// has not seen it yet).
    pub stale_absent_next_load: Arc<AtomicBool>,
}

impl Shared {
    fn count(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
    }
    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Executions for Shared {
    async fn load(&self, execution_id: &str) -> StoreResult<Option<Execution>> {
        self.count();
        self.inner.load(execution_id).await
    }

    async fn load_eventually(&self, execution_id: &str) -> StoreResult<Option<Execution>> {
        self.count();
        if self.stale_absent_next_load.swap(false, Ordering::SeqCst) {
            return Ok(None);
        }
        self.inner.load_eventually(execution_id).await
    }

    async fn load_for_event(
        &self,
        execution_id: &str,
        event_id: &str,
    ) -> StoreResult<(Option<Execution>, bool)> {
        self.count();
        self.inner.load_for_event(execution_id, event_id).await
    }

    async fn commit(&self, exe: &mut Execution, commit: Commit) -> StoreResult<Vec<u64>> {
        self.count();
        if self.conflict_next_commit.swap(false, Ordering::SeqCst) {
            return Err(StoreError::Conflict {
                execution_id: exe.id.to_string(),
                expected: exe.version,
                found: Some(exe.version + 1),
            });
        }
        self.inner.commit(exe, commit).await
    }

    async fn is_processed(&self, execution_id: &str, event_id: &str) -> StoreResult<bool> {
        self.count();
        self.inner.is_processed(execution_id, event_id).await
    }

    async fn list_executions(&self, query: &ListQuery) -> StoreResult<ExecutionPage> {
        self.count();
        self.inner.list_executions(query).await
    }
}

impl Definitions for Shared {
    async fn put_definition(&self, doc: &DefinitionDoc) -> StoreResult<bool> {
        self.count();
        self.inner.put_definition(doc).await
    }

    async fn get_definition(&self, version: &str) -> StoreResult<Option<DefinitionDoc>> {
        self.count();
        self.inner.get_definition(version).await
    }
}

impl Outbox for Shared {
    async fn pending_outbox(&self) -> StoreResult<Vec<OutboxEntry>> {
        self.count();
        self.inner.pending_outbox().await
    }

    async fn ack_outbox(&self, seq: u64) -> StoreResult<()> {
        self.count();
        self.inner.ack_outbox(seq).await
    }

    async fn pending_spawns(&self) -> StoreResult<Vec<SpawnEntry>> {
        self.count();
        self.inner.pending_spawns().await
    }

    async fn ack_spawn(&self, seq: u64) -> StoreResult<()> {
        self.count();
        self.inner.ack_spawn(seq).await
    }
}

impl Timers for Shared {
    async fn due_timers(&self, now: f64) -> StoreResult<Vec<DueTimer>> {
        self.count();
        let mut due = self.inner.due_timers(now).await?;
        let stale = self.stale_timers.lock().expect("stale").clone();
        due.extend(stale.into_iter().filter(|t| t.fire_at <= now));
        Ok(due)
    }

    async fn legacy_due_timers(&self, now: f64) -> StoreResult<Vec<DueTimer>> {
        self.count();
        self.inner.legacy_due_timers(now).await
    }

    async fn next_timer_due(&self, horizon: f64) -> StoreResult<Option<f64>> {
        self.count();
        let stale = self.stale_timers.lock().expect("stale").clone();
        let next = self.inner.next_timer_due(horizon).await?;
        Ok(stale
            .iter()
            .map(|t| t.fire_at)
            .filter(|&at| at <= horizon)
            .chain(next)
            .min_by(f64::total_cmp))
    }

    async fn armed_timers(&self, execution_id: &str) -> StoreResult<Vec<DueTimer>> {
        self.count();
        self.inner.armed_timers(execution_id).await
    }

    async fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> StoreResult<()> {
        self.count();
        self.inner.delete_timer(execution_id, path, fire_at).await
    }
}

impl Traces for Shared {
    async fn read_trace(&self, execution_id: &str) -> StoreResult<Vec<Object>> {
        self.inner.read_trace(execution_id).await
    }

    async fn append_trace(&self, execution_id: &str, entry: Object) -> StoreResult<()> {
        self.inner.append_trace(execution_id, entry).await
    }
}

impl Purge for Shared {
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

#[allow(dead_code)]
fn _uses(_: Event) {}
