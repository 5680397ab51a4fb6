//! A store shared by several holders of one process (the local API server and the runner
//! that drains its queue): every method goes to the one store behind the `Arc`.

use std::future::Future;
use std::sync::Arc;

use harel_model::{Execution, ExecutionPage, Object};

use crate::{
    Commit, DefinitionDoc, Definitions, DueTimer, ExecutionStore, Executions, ListQuery, Outbox,
    OutboxEntry, Purge, SpawnEntry, StoreResult, Timers, Traces,
};

impl<S: ExecutionStore> Executions for Arc<S> {
    fn load(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = StoreResult<Option<Execution>>> + Send {
        (**self).load(execution_id)
    }

    fn load_eventually(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = StoreResult<Option<Execution>>> + Send {
        (**self).load_eventually(execution_id)
    }

    fn load_for_event(
        &self,
        execution_id: &str,
        event_id: &str,
    ) -> impl Future<Output = StoreResult<(Option<Execution>, bool)>> + Send {
        (**self).load_for_event(execution_id, event_id)
    }

    fn save(&self, exe: &mut Execution) -> impl Future<Output = StoreResult<()>> + Send {
        (**self).save(exe)
    }

    fn commit(
        &self,
        exe: &mut Execution,
        commit: Commit,
    ) -> impl Future<Output = StoreResult<Vec<u64>>> + Send {
        (**self).commit(exe, commit)
    }

    fn is_processed(
        &self,
        execution_id: &str,
        event_id: &str,
    ) -> impl Future<Output = StoreResult<bool>> + Send {
        (**self).is_processed(execution_id, event_id)
    }

    fn list_executions(
        &self,
        query: &ListQuery,
    ) -> impl Future<Output = StoreResult<ExecutionPage>> + Send {
        (**self).list_executions(query)
    }

    fn close(&self) -> impl Future<Output = ()> + Send {
        (**self).close()
    }
}

impl<S: ExecutionStore> Definitions for Arc<S> {
    fn put_definition(
        &self,
        doc: &DefinitionDoc,
    ) -> impl Future<Output = StoreResult<bool>> + Send {
        (**self).put_definition(doc)
    }

    fn commit_keeping(
        &self,
        exe: &mut Execution,
        commit: Commit,
        doc: &DefinitionDoc,
    ) -> impl Future<Output = StoreResult<Vec<u64>>> + Send {
        (**self).commit_keeping(exe, commit, doc)
    }

    fn get_definition(
        &self,
        version: &str,
    ) -> impl Future<Output = StoreResult<Option<DefinitionDoc>>> + Send {
        (**self).get_definition(version)
    }

    fn has_definition(&self, version: &str) -> impl Future<Output = StoreResult<bool>> + Send {
        (**self).has_definition(version)
    }

    fn load_with_definition(
        &self,
        execution_id: &str,
        version: &str,
    ) -> impl Future<Output = StoreResult<(Option<Execution>, bool)>> + Send {
        (**self).load_with_definition(execution_id, version)
    }

    fn list_definitions(&self) -> impl Future<Output = StoreResult<Vec<DefinitionDoc>>> + Send {
        (**self).list_definitions()
    }
}

impl<S: ExecutionStore> Outbox for Arc<S> {
    fn pending_outbox(&self) -> impl Future<Output = StoreResult<Vec<OutboxEntry>>> + Send {
        (**self).pending_outbox()
    }

    fn ack_outbox(&self, seq: u64) -> impl Future<Output = StoreResult<()>> + Send {
        (**self).ack_outbox(seq)
    }

    fn pending_spawns(&self) -> impl Future<Output = StoreResult<Vec<SpawnEntry>>> + Send {
        (**self).pending_spawns()
    }

    fn ack_spawn(&self, seq: u64) -> impl Future<Output = StoreResult<()>> + Send {
        (**self).ack_spawn(seq)
    }
}

impl<S: ExecutionStore> Timers for Arc<S> {
    fn due_timers(&self, now: f64) -> impl Future<Output = StoreResult<Vec<DueTimer>>> + Send {
        (**self).due_timers(now)
    }

    fn legacy_due_timers(
        &self,
        now: f64,
    ) -> impl Future<Output = StoreResult<Vec<DueTimer>>> + Send {
        (**self).legacy_due_timers(now)
    }

    fn next_timer_due(
        &self,
        horizon: f64,
    ) -> impl Future<Output = StoreResult<Option<f64>>> + Send {
        (**self).next_timer_due(horizon)
    }

    fn due_and_next(
        &self,
        now: f64,
        horizon: f64,
    ) -> impl Future<Output = StoreResult<crate::DueAndNext>> + Send {
        (**self).due_and_next(now, horizon)
    }

    fn armed_timers(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = StoreResult<Vec<DueTimer>>> + Send {
        (**self).armed_timers(execution_id)
    }

    fn delete_timer(
        &self,
        execution_id: &str,
        path: &str,
        fire_at: f64,
    ) -> impl Future<Output = StoreResult<()>> + Send {
        (**self).delete_timer(execution_id, path, fire_at)
    }
}

impl<S: ExecutionStore> Traces for Arc<S> {
    fn read_trace(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = StoreResult<Vec<Object>>> + Send {
        (**self).read_trace(execution_id)
    }

    fn append_trace(
        &self,
        execution_id: &str,
        entry: Object,
    ) -> impl Future<Output = StoreResult<()>> + Send {
        (**self).append_trace(execution_id, entry)
    }
}

impl<S: ExecutionStore> Purge for Arc<S> {
    fn ids_with_prefix(
        &self,
        prefix: &str,
    ) -> impl Future<Output = StoreResult<Vec<String>>> + Send {
        (**self).ids_with_prefix(prefix)
    }

    fn descendant_ids(
        &self,
        root_id: &str,
    ) -> impl Future<Output = StoreResult<Vec<String>>> + Send {
        (**self).descendant_ids(root_id)
    }

    fn purge(
        &self,
        execution_id: &str,
        expected_version: u64,
    ) -> impl Future<Output = StoreResult<bool>> + Send {
        (**self).purge(execution_id, expected_version)
    }
}
