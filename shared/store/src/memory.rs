//! The in-memory store (harel's `DictStore`): the embedded default of the CLI and the tests.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use harel_model::{Execution, ExecutionPage, ExecutionSummary, Object, SmolStr};

use crate::listing::{page_of, sort_key, Cursor};
use crate::{
    BusEvent, Commit, DefinitionDoc, Definitions, DueTimer, EventsConfig, Executions, ListQuery,
    Outbox, OutboxEntry, Purge, SpawnEntry, StoreError, StoreResult, TimerOp, Timers, Traces,
    DEFAULT_TRACE_MAX,
};

#[derive(Default)]
struct Inner {
    executions: BTreeMap<SmolStr, Execution>,
    processed: HashSet<(SmolStr, SmolStr)>,
    outbox: BTreeMap<u64, OutboxEntry>,
    spawns: BTreeMap<u64, SpawnEntry>,
    timers: HashMap<(SmolStr, SmolStr), f64>,
    trace: HashMap<String, BTreeMap<u64, Object>>,
    next_outbox: u64,
    next_spawn: u64,
    definitions: BTreeMap<String, DefinitionDoc>,
    /// Events for the bus, by commit order.
    published: BTreeMap<u64, BusEvent>,
    next_published: u64,
}

/// Everything in one mutex: each method is trivially atomic.
pub struct MemoryStore {
    inner: Mutex<Inner>,
    trace_max: usize,
    events: Option<EventsConfig>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store keeping the last [`DEFAULT_TRACE_MAX`] trace steps per execution and
    /// writing no bus events.
    pub fn new() -> Self {
        Self::with_trace_max(DEFAULT_TRACE_MAX)
    }

    /// An empty store keeping the last `trace_max` trace steps per execution.
    pub fn with_trace_max(trace_max: usize) -> Self {
        MemoryStore {
            inner: Mutex::new(Inner {
                next_outbox: 1,
                next_spawn: 1,
                ..Inner::default()
            }),
            trace_max,
            events: None,
        }
    }

    /// Write events for the bus with the commits, as the DynamoDB store does ([`crate::events`]).
    pub fn with_events(mut self, events: EventsConfig) -> Self {
        self.events = Some(events);
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // a panic while holding the lock leaves plain data behind; keep serving it
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every timer armed now, for inspection: (execution_id, path, fire_at).
    pub fn timers(&self) -> Vec<DueTimer> {
        let inner = self.lock();
        let mut out: Vec<DueTimer> = inner
            .timers
            .iter()
            .map(|((e, p), f)| DueTimer {
                execution_id: e.to_string(),
                path: p.to_string(),
                fire_at: *f,
            })
            .collect();
        out.sort_by(|a, b| a.fire_at.total_cmp(&b.fire_at).then(a.path.cmp(&b.path)));
        out
    }

    /// Every stored execution, by id.
    pub fn executions(&self) -> Vec<Execution> {
        self.lock().executions.values().cloned().collect()
    }
}

/// The client-side listing filter shared by backends that can't filter inside the JSON.
pub fn matches(summary: &ExecutionSummary, query: &ListQuery) -> bool {
    if let Some(statuses) = &query.status {
        if !statuses.contains(&summary.status) {
            return false;
        }
    }
    if let Some(def) = &query.definition_id {
        if &summary.definition_id != def {
            return false;
        }
    }
    !(query.roots_only && summary.parent_id.is_some())
}

impl Executions for MemoryStore {
    async fn load(&self, execution_id: &str) -> StoreResult<Option<Execution>> {
        Ok(self.lock().executions.get(execution_id).cloned())
    }

    async fn load_for_event(
        &self,
        execution_id: &str,
        event_id: &str,
    ) -> StoreResult<(Option<Execution>, bool)> {
        let inner = self.lock();
        let exe = inner.executions.get(execution_id).cloned();
        let done = inner
            .processed
            .contains(&(execution_id.into(), event_id.into()));
        Ok((exe, done))
    }

    async fn commit(&self, exe: &mut Execution, commit: Commit) -> StoreResult<Vec<u64>> {
        let mut inner = self.lock();
        let stored = inner.executions.get(exe.id.as_str()).map(|e| e.version);
        let ok = match stored {
            None => exe.version == 0,
            Some(v) => v == exe.version && exe.version > 0,
        };
        if let Some(event_id) = &commit.processed_event_id {
            if inner
                .processed
                .contains(&(exe.id.clone(), event_id.clone()))
            {
                return Err(StoreError::AlreadyProcessed {
                    execution_id: exe.id.to_string(),
                    event_id: event_id.to_string(),
                });
            }
        }
        if !ok {
            return Err(StoreError::Conflict {
                execution_id: exe.id.to_string(),
                expected: exe.version,
                found: stored,
            });
        }
        let rows = match &self.events {
            Some(events) => events.rows(exe, &commit.published),
            None => Vec::new(),
        };
        for row in rows {
            let n = inner.next_published;
            inner.next_published += 1;
            inner.published.insert(n, row);
        }
        exe.version += 1;
        exe.stored_status = harel_model::StoredStatus(Some(exe.status));
        inner.executions.insert(exe.id.clone(), exe.clone());
        let mut seqs = Vec::with_capacity(commit.emits.len());
        for (target_id, event) in commit.emits {
            let seq = inner.next_outbox;
            inner.next_outbox += 1;
            inner.outbox.insert(
                seq,
                OutboxEntry {
                    seq,
                    target_id,
                    event,
                },
            );
            seqs.push(seq);
        }
        for spawn in commit.spawns {
            let seq = inner.next_spawn;
            inner.next_spawn += 1;
            inner.spawns.insert(
                seq,
                SpawnEntry {
                    seq,
                    parent_id: exe.id.clone(),
                    child_id: spawn.child_id,
                    root_path: spawn.root_path,
                    context: spawn.context,
                },
            );
        }
        if let Some(event_id) = commit.processed_event_id {
            inner.processed.insert((exe.id.clone(), event_id));
        }
        for op in commit.timers {
            match op {
                TimerOp::Schedule { path, fire_at } => {
                    inner.timers.insert((exe.id.clone(), path), fire_at);
                }
                TimerOp::Cancel { path } => {
                    inner.timers.remove(&(exe.id.clone(), path));
                }
            }
        }
        if let Some(entry) = commit.trace {
            append(&mut inner, &exe.id, entry, self.trace_max);
        }
        Ok(seqs)
    }

    async fn is_processed(&self, execution_id: &str, event_id: &str) -> StoreResult<bool> {
        Ok(self
            .lock()
            .processed
            .contains(&(execution_id.into(), event_id.into())))
    }

    async fn list_executions(&self, query: &ListQuery) -> StoreResult<ExecutionPage> {
        let cursor = Cursor::after(query.cursor.as_deref(), query.scan)?;
        let inner = self.lock();
        let mut all: Vec<(String, ExecutionSummary)> = inner
            .executions
            .values()
            .map(|e| (sort_key(e), ExecutionSummary::of(e)))
            .filter(|(_, s)| matches(s, query))
            .collect();
        all.sort_by(|a, b| b.0.cmp(&a.0));
        Ok(page_of(all, cursor, query.limit, query.scan))
    }
}

impl Definitions for MemoryStore {
    async fn put_definition(&self, doc: &DefinitionDoc) -> StoreResult<bool> {
        let mut inner = self.lock();
        if inner.definitions.contains_key(&doc.version) {
            return Ok(false);
        }
        inner.definitions.insert(doc.version.clone(), doc.clone());
        Ok(true)
    }

    async fn get_definition(&self, version: &str) -> StoreResult<Option<DefinitionDoc>> {
        Ok(self.lock().definitions.get(version).cloned())
    }

    async fn list_definitions(&self) -> StoreResult<Vec<DefinitionDoc>> {
        Ok(self.lock().definitions.values().cloned().collect())
    }
}

impl Outbox for MemoryStore {
    async fn pending_outbox(&self) -> StoreResult<Vec<OutboxEntry>> {
        Ok(self.lock().outbox.values().cloned().collect())
    }

    async fn ack_outbox(&self, seq: u64) -> StoreResult<()> {
        self.lock().outbox.remove(&seq);
        Ok(())
    }

    async fn pending_published(&self) -> StoreResult<Vec<BusEvent>> {
        Ok(self.lock().published.values().cloned().collect())
    }

    async fn ack_published(&self, event_ids: &[&str]) -> StoreResult<()> {
        self.lock()
            .published
            .retain(|_, e| !event_ids.contains(&e.event_id.as_str()));
        Ok(())
    }

    async fn retry_published(&self, event_id: &str, attempts: u32) -> StoreResult<()> {
        for e in self.lock().published.values_mut() {
            if e.event_id == event_id {
                e.attempts = attempts;
            }
        }
        Ok(())
    }

    async fn pending_spawns(&self) -> StoreResult<Vec<SpawnEntry>> {
        Ok(self.lock().spawns.values().cloned().collect())
    }

    async fn ack_spawn(&self, seq: u64) -> StoreResult<()> {
        self.lock().spawns.remove(&seq);
        Ok(())
    }
}

impl Timers for MemoryStore {
    async fn armed_timers(&self, execution_id: &str) -> StoreResult<Vec<DueTimer>> {
        let mut out = self.timers();
        out.retain(|t| t.execution_id == execution_id);
        Ok(out)
    }

    async fn due_timers(&self, now: f64) -> StoreResult<Vec<DueTimer>> {
        let mut due: Vec<DueTimer> = self
            .timers()
            .into_iter()
            .filter(|t| t.fire_at <= now)
            .collect();
        due.sort_by(|a, b| a.fire_at.total_cmp(&b.fire_at));
        Ok(due)
    }

    async fn next_timer_due(&self, horizon: f64) -> StoreResult<Option<f64>> {
        Ok(self
            .lock()
            .timers
            .values()
            .copied()
            .filter(|&at| at <= horizon)
            .min_by(f64::total_cmp))
    }

    async fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> StoreResult<()> {
        let mut inner = self.lock();
        let key = (SmolStr::from(execution_id), SmolStr::from(path));
        if inner.timers.get(&key) == Some(&fire_at) {
            inner.timers.remove(&key);
        }
        Ok(())
    }
}

impl Traces for MemoryStore {
    async fn read_trace(&self, execution_id: &str) -> StoreResult<Vec<Object>> {
        let inner = self.lock();
        Ok(inner
            .trace
            .get(execution_id)
            .map(|ring| {
                ring.iter()
                    .map(|(idx, entry)| {
                        let mut e = entry.clone();
                        e.insert("index".into(), (*idx).into());
                        e
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn append_trace(&self, execution_id: &str, entry: Object) -> StoreResult<()> {
        let mut inner = self.lock();
        append(&mut inner, execution_id, entry, self.trace_max);
        Ok(())
    }
}

impl Purge for MemoryStore {
    async fn ids_with_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        Ok(self
            .lock()
            .executions
            .keys()
            .filter(|id| id.starts_with(prefix))
            .map(SmolStr::to_string)
            .collect())
    }

    async fn purge(&self, execution_id: &str, expected_version: u64) -> StoreResult<bool> {
        let mut inner = self.lock();
        let present = match inner.executions.get(execution_id) {
            Some(e) if e.version != expected_version => return Ok(false),
            Some(_) => true,
            None => false,
        };
        inner.executions.remove(execution_id);
        inner.processed.retain(|(e, _)| e != execution_id);
        inner.trace.remove(execution_id);
        inner.timers.retain(|(e, _), _| e != execution_id);
        inner
            .outbox
            .retain(|_, o| o.target_id.as_deref() != Some(execution_id));
        inner.spawns.retain(|_, s| s.parent_id != execution_id);
        Ok(present)
    }
}

fn append(inner: &mut Inner, execution_id: &str, mut entry: Object, trace_max: usize) {
    let ring = inner.trace.entry(execution_id.to_string()).or_default();
    let idx = match entry.remove("index").and_then(|v| v.as_u64()) {
        Some(i) => i,
        None => ring.keys().next_back().map_or(0, |m| m + 1),
    };
    ring.insert(idx, entry);
    if trace_max > 0 && idx >= trace_max as u64 {
        ring.remove(&(idx - trace_max as u64));
    }
}
