//! What the console reads and acts on: the deployed stack (DynamoDB tables, the queue and its
//! dead-letter queue) or the embedded demo (an in-memory store driven in this process). Both
//! are one `ExecutionStore`, so every page, action and the control plane are written once;
//! what only a stack has (a queue, dead letters) is asked for with [`Backend::stack`].

use harel_model::{Execution, ExecutionPage, Object};
use harel_store::prelude::*;
use harel_store::{
    BusEvent, Commit, DefinitionDoc, DueTimer, ListQuery, OutboxEntry, SpawnEntry, StoreResult,
};

use super::demo::Demo;
use crate::commands::stack::Stack;

pub enum Backend {
    /// (boxed: the SDK's configuration makes it several times the demo's size)
    Stack(Box<Stack>),
    Demo(Demo),
}

impl Backend {
    pub fn stack(&self) -> Option<&Stack> {
        match self {
            Backend::Stack(s) => Some(s),
            Backend::Demo(_) => None,
        }
    }

    pub fn demo(&self) -> Option<&Demo> {
        match self {
            Backend::Stack(_) => None,
            Backend::Demo(d) => Some(d),
        }
    }

    /// Where the executions are, for messages ("no execution X in ...").
    pub fn where_(&self) -> String {
        match self {
            Backend::Stack(s) => s.executions_table(),
            Backend::Demo(_) => "the demo's in-memory store".to_string(),
        }
    }
}

/// Every method goes to the one store behind the variant (the overridden defaults too, so
/// each backend keeps its own way of doing them).
macro_rules! delegate {
    ($self:ident, $s:ident => $call:expr) => {
        match $self {
            Backend::Stack(stack) => {
                let $s = &stack.store;
                $call.await
            }
            Backend::Demo(demo) => {
                let $s = demo.store();
                $call.await
            }
        }
    };
}

impl Executions for Backend {
    async fn load(&self, id: &str) -> StoreResult<Option<Execution>> {
        delegate!(self, s => s.load(id))
    }

    async fn load_for_event(
        &self,
        id: &str,
        event_id: &str,
    ) -> StoreResult<(Option<Execution>, bool)> {
        delegate!(self, s => s.load_for_event(id, event_id))
    }

    async fn save(&self, exe: &mut Execution) -> StoreResult<()> {
        delegate!(self, s => s.save(exe))
    }

    async fn commit(&self, exe: &mut Execution, commit: Commit) -> StoreResult<Vec<u64>> {
        delegate!(self, s => s.commit(exe, commit))
    }

    async fn is_processed(&self, id: &str, event_id: &str) -> StoreResult<bool> {
        delegate!(self, s => s.is_processed(id, event_id))
    }

    async fn list_executions(&self, query: &ListQuery) -> StoreResult<ExecutionPage> {
        delegate!(self, s => s.list_executions(query))
    }

    async fn close(&self) {
        delegate!(self, s => s.close())
    }
}

impl Definitions for Backend {
    async fn put_definition(&self, doc: &DefinitionDoc) -> StoreResult<bool> {
        delegate!(self, s => s.put_definition(doc))
    }

    async fn commit_keeping(
        &self,
        exe: &mut Execution,
        commit: Commit,
        doc: &DefinitionDoc,
    ) -> StoreResult<Vec<u64>> {
        delegate!(self, s => s.commit_keeping(exe, commit, doc))
    }

    async fn get_definition(&self, version: &str) -> StoreResult<Option<DefinitionDoc>> {
        delegate!(self, s => s.get_definition(version))
    }

    async fn list_definitions(&self) -> StoreResult<Vec<DefinitionDoc>> {
        delegate!(self, s => s.list_definitions())
    }
}

impl Outbox for Backend {
    async fn pending_outbox(&self) -> StoreResult<Vec<OutboxEntry>> {
        delegate!(self, s => s.pending_outbox())
    }

    async fn ack_outbox(&self, seq: u64) -> StoreResult<()> {
        delegate!(self, s => s.ack_outbox(seq))
    }

    async fn pending_published(&self) -> StoreResult<Vec<BusEvent>> {
        delegate!(self, s => s.pending_published())
    }

    async fn ack_published(&self, event_ids: &[&str]) -> StoreResult<()> {
        delegate!(self, s => s.ack_published(event_ids))
    }

    async fn retry_published(&self, event_id: &str, attempts: u32) -> StoreResult<()> {
        delegate!(self, s => s.retry_published(event_id, attempts))
    }

    async fn pending_spawns(&self) -> StoreResult<Vec<SpawnEntry>> {
        delegate!(self, s => s.pending_spawns())
    }

    async fn ack_spawn(&self, seq: u64) -> StoreResult<()> {
        delegate!(self, s => s.ack_spawn(seq))
    }
}

impl Timers for Backend {
    async fn due_timers(&self, now: f64) -> StoreResult<Vec<DueTimer>> {
        delegate!(self, s => s.due_timers(now))
    }

    async fn legacy_due_timers(&self, now: f64) -> StoreResult<Vec<DueTimer>> {
        delegate!(self, s => s.legacy_due_timers(now))
    }

    async fn next_timer_due(&self, horizon: f64) -> StoreResult<Option<f64>> {
        delegate!(self, s => s.next_timer_due(horizon))
    }

    async fn armed_timers(&self, id: &str) -> StoreResult<Vec<DueTimer>> {
        delegate!(self, s => s.armed_timers(id))
    }

    async fn delete_timer(&self, id: &str, path: &str, fire_at: f64) -> StoreResult<()> {
        delegate!(self, s => s.delete_timer(id, path, fire_at))
    }
}

impl Traces for Backend {
    async fn read_trace(&self, id: &str) -> StoreResult<Vec<Object>> {
        delegate!(self, s => s.read_trace(id))
    }

    async fn append_trace(&self, id: &str, entry: Object) -> StoreResult<()> {
        delegate!(self, s => s.append_trace(id, entry))
    }
}

impl Purge for Backend {
    async fn ids_with_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        delegate!(self, s => s.ids_with_prefix(prefix))
    }

    async fn descendant_ids(&self, root_id: &str) -> StoreResult<Vec<String>> {
        delegate!(self, s => s.descendant_ids(root_id))
    }

    async fn purge(&self, id: &str, expected_version: u64) -> StoreResult<bool> {
        delegate!(self, s => s.purge(id, expected_version))
    }
}
