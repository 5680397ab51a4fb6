//! The execution store port: harel's `ExecutionStore` protocol (`harel/engine/store/_base.py`
//! in the 0.9.0 package) as one async trait, with an in-memory implementation (the embedded
//! default of the CLI and the unit tests) beside the DynamoDB one (`harel-dynamodb`).
//!
//! One `commit` is the atomic checkpoint of a step: the CAS-conditioned Execution write, its
//! outbox emits, spawn intents, processed (dedupe) mark, timer schedules/cancels and trace
//! entry, all or nothing.

use std::future::Future;

use harel_model::{Event, Execution, ExecutionPage, Object, SmolStr, Status};
pub use harel_model::{Spawn, TimerOp};

#[cfg(feature = "contract")]
pub mod contract;
pub mod events;
pub mod hooked;
pub mod listing;
pub mod memory;
mod shared;
pub use events::{BusEvent, DomainEvent, EventsConfig};
pub use hooked::{CommitHook, Hooked};
pub use memory::MemoryStore;

/// Every capability trait, for code that calls store methods on a concrete store
/// (`use harel_store::prelude::*;`): a trait's methods are callable where it is in scope.
pub mod prelude {
    pub use crate::{Definitions, ExecutionStore, Executions, Outbox, Purge, Timers, Traces};
}

/// Ring size of the opt-in trace: the last N steps per execution are kept.
pub const DEFAULT_TRACE_MAX: usize = 200;

/// A deferred event awaiting delivery.
#[derive(Clone, Debug, PartialEq)]
pub struct OutboxEntry {
    /// Its place in the store's outbox counter: unique, increasing in commit order; what
    /// [`Outbox::ack_outbox`] takes (and the queue's dedupe key).
    pub seq: u64,
    /// The execution to deliver to (None: no target).
    pub target_id: Option<SmolStr>,
    /// The event, as the step emitted it.
    pub event: Event,
}

/// A pending child creation (an orthogonal region, invoke or fan-out child), committed with
/// the parent's step; the relay creates the child idempotently afterwards.
#[derive(Clone, Debug, PartialEq)]
pub struct SpawnEntry {
    /// Its place in the store's spawn counter: unique, increasing in commit order; what
    /// [`Outbox::ack_spawn`] takes.
    pub seq: u64,
    /// The execution whose step asked for the child.
    pub parent_id: SmolStr,
    /// The child's execution id, deterministic so a repeated create finds it (see [`Spawn::child_id`]).
    pub child_id: SmolStr,
    /// The region node the child runs from; "" for a submachine (see [`Spawn::root_path`]).
    pub root_path: SmolStr,
    /// The context the child starts with.
    pub context: Object,
}

/// A timer that is due: (execution_id, path, fire_at).
#[derive(Clone, Debug, PartialEq)]
pub struct DueTimer {
    /// The execution the timer belongs to.
    pub execution_id: String,
    /// The state path it was armed for (or the engine's `@ttl`), one timer per (execution, path).
    pub path: String,
    /// When it fires, Unix seconds; also the guard [`Timers::delete_timer`] checks.
    pub fire_at: f64,
}

/// The sweeper's one look at the timers ([`Timers::due_and_next`]): what to fire now, and
/// when to look again.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DueAndNext {
    /// The timers due (`fire_at <= now`), soonest first, as [`Timers::due_timers`] has them.
    pub due: Vec<DueTimer>,
    /// The earliest `fire_at` not after the horizon among the timers not in `due` (None:
    /// nothing more by then). While `due` is not empty it may be None though more come later:
    /// the sweeper looks again once it has fired them.
    pub next: Option<f64>,
}

/// Everything one step commits beside the Execution itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Commit {
    /// Outbox events, each `(target execution id, event)`.
    pub emits: Vec<(Option<SmolStr>, Event)>,
    /// The event this step processed: recorded as a dedupe mark.
    pub processed_event_id: Option<SmolStr>,
    /// Timers armed and disarmed by the step, applied in order (a cancel then a re-arm of one
    /// path leaves it armed).
    pub timers: Vec<TimerOp>,
    /// Children the step asks for, stored as [`SpawnEntry`]s for the relay to create.
    pub spawns: Vec<Spawn>,
    /// One trace step (opt-in timeline), appended to the execution's ring.
    pub trace: Option<Object>,
    /// Domain events for the bus (`harel.lib.publish`), written with the step when the store
    /// publishes events ([`EventsConfig`]), dropped when it does not.
    pub published: Vec<DomainEvent>,
}

/// One machine version, kept durably the first time an execution uses it, so an execution
/// continues on it after a deploy that no longer ships it.
#[derive(Clone, Debug, PartialEq)]
pub struct DefinitionDoc {
    /// The content hash (see harel-runtime's `versions`): the key, and never reused for
    /// other content.
    pub version: String,
    /// The machine's definition id.
    pub machine: String,
    /// Epoch seconds of the first put.
    pub created_at: f64,
    /// What the version is rebuilt from (harel-runtime's bundle: the normalized machine
    /// dicts, imports and fragments resolved).
    pub document: serde_json::Value,
}

/// The filters of `list_executions`. Pages come newest first (by `created_at`, then id; see
/// [`listing`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ListQuery {
    /// Any of these statuses (None: all).
    pub status: Option<Vec<Status>>,
    /// Only executions of this machine (None: every machine).
    pub definition_id: Option<String>,
    /// Only executions without a parent.
    pub roots_only: bool,
    /// The most executions in one page (100 by default).
    pub limit: usize,
    /// The opaque `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Read every stored execution instead of the backend's listing index: slower, but it
    /// also finds the rows an index leaves out (on DynamoDB, those last written by harel
    /// Python). Its cursors are not interchangeable with the index listing's.
    pub scan: bool,
}

impl Default for ListQuery {
    fn default() -> Self {
        ListQuery {
            status: None,
            definition_id: None,
            roots_only: false,
            limit: 100,
            cursor: None,
            scan: false,
        }
    }
}

/// Why a store operation failed. [`Conflict`](Self::Conflict) and
/// [`AlreadyProcessed`](Self::AlreadyProcessed) are verdicts on a commit (nothing was
/// written); [`Retryable`](Self::Retryable) is a transient failure worth trying again as is.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The optimistic-concurrency check failed: another writer moved the execution on.
    #[error("stale write to {execution_id}: expected version {expected}, found {}", found.map_or("None".to_string(), |v| v.to_string()))]
    Conflict {
        /// The execution the commit was for.
        execution_id: String,
        /// The version the writer read (0: it meant to insert).
        expected: u64,
        /// The version stored now (None: no row, e.g. it was purged).
        found: Option<u64>,
    },
    /// The execution (its id given) is already stored and cannot be created again. The stores in
    /// this crate and `harel-dynamodb` report an insert that meets a stored row as a
    /// [`Conflict`](Self::Conflict) with `expected` 0 instead; a caller creating an execution
    /// accepts either.
    #[error("execution {0:?} already exists")]
    AlreadyExists(String),
    /// The commit carried the dedupe mark of an event this execution has already processed
    /// (another writer committed it first, whatever this one had read): nothing was
    /// written, and the event must be acknowledged, not applied again.
    #[error("execution {execution_id:?} already processed event {event_id:?}: nothing written")]
    AlreadyProcessed {
        /// The execution the commit was for.
        execution_id: String,
        /// The event it already processed.
        event_id: String,
    },
    /// A write that cannot fit the backend's limits (item or transaction size, item count);
    /// nothing was written.
    #[error("{0}")]
    TooLarge(String),
    /// A transient failure (throttling, a transaction conflict, a timeout): retry later.
    #[error("retryable store error: {message}")]
    Retryable {
        /// What failed, for the logs.
        message: String,
        /// The backend's own error, when there is one.
        #[source]
        source: Option<Source>,
    },
    /// Stored data that cannot be read back (corrupt JSON, a missing attribute).
    #[error("corrupt store data: {0}")]
    Corrupt(String),
    /// Any other failure: a rejected request, a refused cursor, a backend error that retrying
    /// will not fix.
    #[error("store error: {message}")]
    Other {
        /// What failed, for the logs.
        message: String,
        /// The backend's own error, when there is one.
        #[source]
        source: Option<Source>,
    },
}

/// A backend's error kept as the source of a [`StoreError`] (an SDK error, a codec error).
pub type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

impl StoreError {
    /// A transient failure described by `message` alone.
    pub fn retryable(message: impl Into<String>) -> Self {
        StoreError::Retryable {
            message: message.into(),
            source: None,
        }
    }

    /// Any other failure described by `message` alone.
    pub fn other(message: impl Into<String>) -> Self {
        StoreError::Other {
            message: message.into(),
            source: None,
        }
    }

    /// Keep `source` as the cause of a `Retryable` or `Other` error (the others carry what
    /// they need in their fields).
    pub fn with_source(mut self, cause: impl Into<Source>) -> Self {
        if let StoreError::Retryable { source, .. } | StoreError::Other { source, .. } = &mut self {
            *source = Some(cause.into());
        }
        self
    }

    /// Whether it is a [`Conflict`](Self::Conflict): another writer moved the execution on (or
    /// created it first), so what the caller read is stale.
    pub fn is_conflict(&self) -> bool {
        matches!(self, StoreError::Conflict { .. })
    }

    /// The commit found its event's dedupe mark already written (see `AlreadyProcessed`).
    pub fn is_already_processed(&self) -> bool {
        matches!(self, StoreError::AlreadyProcessed { .. })
    }
}

/// What every store operation returns.
pub type StoreResult<T> = Result<T, StoreError>;

/// harel's store protocol (`ExecutionStore` in harel), as narrow capabilities: a function
/// bounds its store by what it uses (the sweeper by [`Timers`], the relay by [`Outbox`]),
/// and a backend implements each. Every method is one logical operation; `commit` is atomic.
/// Every type with all six is an `ExecutionStore`.
pub trait ExecutionStore: Executions + Definitions + Outbox + Timers + Traces + Purge {}

impl<S> ExecutionStore for S where S: Executions + Definitions + Outbox + Timers + Traces + Purge {}

/// Reading and writing executions: the step's atomic commit and the worker's hot path.
pub trait Executions: Send + Sync {
    /// The execution `execution_id` as last committed (None: never created, or purged).
    fn load(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = StoreResult<Option<Execution>>> + Send;

    /// `load`, where the backend may answer from a copy a moment stale (DynamoDB: an
    /// eventually consistent read, half the read units of `load`'s). Only for a read whose
    /// staleness what follows it catches: a stale copy carries an older version, so the
    /// commit after it fails its version check (`StoreError::Conflict`) and the caller reads
    /// again with `load`; an absent answer may be stale too, and is asked again of `load`
    /// before it is believed. By default, `load`.
    fn load_eventually(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = StoreResult<Option<Execution>>> + Send {
        self.load(execution_id)
    }

    /// The execution and whether it already processed `event_id`, in one round trip where the
    /// backend allows (the worker's hot path).
    fn load_for_event(
        &self,
        execution_id: &str,
        event_id: &str,
    ) -> impl Future<Output = StoreResult<(Option<Execution>, bool)>> + Send;

    /// `commit(exe, Commit::default())`: the version-checked write alone.
    fn save(&self, exe: &mut Execution) -> impl Future<Output = StoreResult<()>> + Send {
        async move { self.commit(exe, Commit::default()).await.map(|_| ()) }
    }

    /// Atomically write `exe` at version+1 iff the stored row is still at `exe.version`
    /// (insert iff absent when `exe.version == 0`) and, when the commit carries a
    /// `processed_event_id`, iff that event's dedupe mark is absent, with everything in
    /// `commit`. A present mark is `StoreError::AlreadyProcessed` (whatever the version), a
    /// moved version `StoreError::Conflict`: the dedupe is part of the write, not of an
    /// earlier read. On success `exe.version` is bumped; on any failure it is left as it
    /// was. Returns the outbox seq of each emit, in order.
    fn commit(
        &self,
        exe: &mut Execution,
        commit: Commit,
    ) -> impl Future<Output = StoreResult<Vec<u64>>> + Send;

    /// Whether `execution_id` already committed a step for `event_id` (its dedupe mark).
    fn is_processed(
        &self,
        execution_id: &str,
        event_id: &str,
    ) -> impl Future<Output = StoreResult<bool>> + Send;

    /// One page of execution summaries matching `query`, newest first; its `next_cursor` (None
    /// on the last page) goes in the next query's `cursor`. A cursor that is not one of this
    /// listing's is refused.
    fn list_executions(
        &self,
        query: &ListQuery,
    ) -> impl Future<Output = StoreResult<ExecutionPage>> + Send;

    /// The host is done with the store: a backend holding something to release does it here.
    /// A no-op by default, and for every backend in this workspace.
    fn close(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// Keeping machine versions, the first with the commit of the first execution that uses it.
pub trait Definitions: Executions {
    /// Keep `doc` unless its version is kept already (a version's content never changes, so
    /// the first writer wins and a second put is a no-op): true when this call stored it.
    /// The default refuses: a store that keeps no versions cannot pin executions, and must
    /// say so rather than lose them.
    fn put_definition(
        &self,
        doc: &DefinitionDoc,
    ) -> impl Future<Output = StoreResult<bool>> + Send {
        let message = format!(
            "this store keeps no machine versions (cannot keep version {} of {})",
            doc.version, doc.machine
        );
        async move { Err(StoreError::other(message)) }
    }

    /// `commit`, keeping `doc` as [`Definitions::put_definition`] does: how a version is
    /// kept with the first execution that uses it. Where the backend can, in the same
    /// atomic write (no request of its own); by default, a put before the commit (a version
    /// kept for a commit that then fails is harmless: a version is its content).
    fn commit_keeping(
        &self,
        exe: &mut Execution,
        commit: Commit,
        doc: &DefinitionDoc,
    ) -> impl Future<Output = StoreResult<Vec<u64>>> + Send {
        async move {
            self.put_definition(doc).await?;
            self.commit(exe, commit).await
        }
    }

    /// Whether `version` is kept, read as cheaply as the backend allows (DynamoDB: eventually
    /// consistent). "Kept" is exact: a kept version is never removed. A stale "not kept" only
    /// makes the caller keep it again with its commit, the same content. By default,
    /// `get_definition`.
    fn has_definition(&self, version: &str) -> impl Future<Output = StoreResult<bool>> + Send {
        async move { Ok(self.get_definition(version).await?.is_some()) }
    }

    /// A create's two reads at once, in one round trip where the backend allows: whether the
    /// execution exists ([`Executions::load_eventually`], so a stale "absent" is caught by
    /// the create's insert-if-absent commit) and whether `version`, the one the new execution
    /// is pinned to, is kept ([`Definitions::has_definition`]).
    fn load_with_definition(
        &self,
        execution_id: &str,
        version: &str,
    ) -> impl Future<Output = StoreResult<(Option<Execution>, bool)>> + Send {
        async move {
            let exe = self.load_eventually(execution_id).await?;
            Ok((exe, self.has_definition(version).await?))
        }
    }

    /// The kept version, if any.
    fn get_definition(
        &self,
        version: &str,
    ) -> impl Future<Output = StoreResult<Option<DefinitionDoc>>> + Send {
        let _ = version;
        async { Ok(None) }
    }

    /// Every kept version (operators' tools: `harel deploy-check`).
    fn list_definitions(&self) -> impl Future<Output = StoreResult<Vec<DefinitionDoc>>> + Send {
        async { Ok(Vec::new()) }
    }
}

/// What commits left behind for delivery: outbox events, spawn intents, events for the bus (the relay's reads and acknowledgements).
pub trait Outbox: Send + Sync {
    /// Undelivered outbox entries, oldest first.
    fn pending_outbox(&self) -> impl Future<Output = StoreResult<Vec<OutboxEntry>>> + Send;

    /// The entry `seq` was delivered: remove it (acking an absent one is a no-op).
    fn ack_outbox(&self, seq: u64) -> impl Future<Output = StoreResult<()>> + Send;

    /// Events for the bus not yet put ([`events`]), oldest first. A store that writes none
    /// has none.
    fn pending_published(&self) -> impl Future<Output = StoreResult<Vec<BusEvent>>> + Send {
        async { Ok(Vec::new()) }
    }

    /// These events were put (or dead-lettered): forget them. A batch, because a publisher
    /// puts ten at a time and one delete request for all of them costs a tenth of ten.
    fn ack_published(&self, event_ids: &[&str]) -> impl Future<Output = StoreResult<()>> + Send {
        let _ = event_ids;
        async { Ok(()) }
    }

    /// A put of the event failed: record its `attempts` so far, so a publisher dead-letters
    /// it once past its limit rather than retrying forever.
    fn retry_published(
        &self,
        event_id: &str,
        attempts: u32,
    ) -> impl Future<Output = StoreResult<()>> + Send {
        let _ = (event_id, attempts);
        async { Ok(()) }
    }

    /// Undelivered spawn intents, oldest first.
    fn pending_spawns(&self) -> impl Future<Output = StoreResult<Vec<SpawnEntry>>> + Send;

    /// The spawn `seq`'s child was created: remove the intent (acking an absent one is a no-op).
    fn ack_spawn(&self, seq: u64) -> impl Future<Output = StoreResult<()>> + Send;
}

/// Durable timers: what is due, for the sweeper, and one execution's armed timers.
pub trait Timers: Send + Sync {
    /// Timers with `fire_at <= now`, soonest first, among those the store indexes by time:
    /// every timer this store armed. A backend shared with writers that do not index their
    /// timers (harel Python on DynamoDB) returns theirs from `legacy_due_timers` instead.
    fn due_timers(&self, now: f64) -> impl Future<Output = StoreResult<Vec<DueTimer>>> + Send;

    /// The due timers `due_timers` cannot see (rows armed by a writer that does not index
    /// them), soonest first. The two never overlap, and together they are every due timer.
    /// A store whose every timer is indexed has none.
    fn legacy_due_timers(
        &self,
        now: f64,
    ) -> impl Future<Output = StoreResult<Vec<DueTimer>>> + Send {
        let _ = now;
        async { Ok(Vec::new()) }
    }

    /// The earliest `fire_at` not after `horizon` among the timers `due_timers` sees (None:
    /// nothing is due by then). The sweeper's cheap look before it sleeps or returns.
    fn next_timer_due(
        &self,
        horizon: f64,
    ) -> impl Future<Output = StoreResult<Option<f64>>> + Send {
        async move { Ok(self.due_timers(horizon).await?.first().map(|t| t.fire_at)) }
    }

    /// The sweeper's look: the timers due at `now` and the next `fire_at` not after `horizon`,
    /// in one pass where [`Timers::due_timers`] and [`Timers::next_timer_due`] would be two
    /// (a busy tick reads the index once per look, not twice). The default makes those calls.
    fn due_and_next(
        &self,
        now: f64,
        horizon: f64,
    ) -> impl Future<Output = StoreResult<DueAndNext>> + Send {
        async move {
            let due = self.due_timers(now).await?;
            let next = match due.is_empty() {
                true => self.next_timer_due(horizon).await?,
                // not needed before the due ones are fired (see DueAndNext::next)
                false => None,
            };
            Ok(DueAndNext { due, next })
        }
    }

    /// The timers armed for one execution, soonest first: what an operator's view shows. Read
    /// by the execution's key, so it costs its own timers, not the table.
    fn armed_timers(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = StoreResult<Vec<DueTimer>>> + Send;

    /// Remove the timer for (execution, path) only if it still fires at `fire_at`, so a
    /// re-schedule survives a stale sweep (a failed guard is a no-op).
    fn delete_timer(
        &self,
        execution_id: &str,
        path: &str,
        fire_at: f64,
    ) -> impl Future<Output = StoreResult<()>> + Send;
}

/// The opt-in step trace of an execution.
pub trait Traces: Send + Sync {
    /// The trace steps, oldest first, each with its `index`.
    fn read_trace(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = StoreResult<Vec<Object>>> + Send;

    /// Append one step outside a commit (the step's `index` is used when present).
    fn append_trace(
        &self,
        execution_id: &str,
        entry: Object,
    ) -> impl Future<Output = StoreResult<()>> + Send;
}

/// Deleting finished executions and everything keyed by them (retention, `harel purge`).
pub trait Purge: Send + Sync {
    /// Ids of every stored execution whose id starts with `prefix` (a tree's descendants).
    fn ids_with_prefix(
        &self,
        prefix: &str,
    ) -> impl Future<Output = StoreResult<Vec<String>>> + Send;

    /// Ids of `root_id`'s stored descendants, for `purge` to gather a tree (harel's
    /// `_collect_tree_flow` adds what the members' `children` list, and keeps only ids whose
    /// `parent_id` chain reaches the root, so extra ids are harmless). harel's way, the ids
    /// under the prefix a child's id extends its parent's with, is the default; a backend
    /// where that is a table scan walks the parent links instead.
    fn descendant_ids(
        &self,
        root_id: &str,
    ) -> impl Future<Output = StoreResult<Vec<String>>> + Send {
        let prefix = format!("{root_id}:");
        async move { self.ids_with_prefix(&prefix).await }
    }

    /// Delete the execution and everything keyed by it iff it is still at `expected_version`.
    fn purge(
        &self,
        execution_id: &str,
        expected_version: u64,
    ) -> impl Future<Output = StoreResult<bool>> + Send;
}
