//! The DynamoDB execution store: harel 0.9.0's `DynamoDBStore`, table for table, attribute for
//! attribute, so harel Python and this store share the same tables safely. Where this store
//! spends fewer requests than harel (no counter round trip before an emit, no max-index Query
//! before a traced commit, no read-back after a CAS miss) the README explains why it stays
//! compatible.

pub mod codec;
pub mod commit;
pub mod errors;
mod list;
pub mod seq;
pub mod tables;
pub mod timers;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::scan::builders::ScanFluentBuilder;
use aws_sdk_dynamodb::types::{
    AttributeValue, DeleteRequest, KeysAndAttributes, ReturnConsumedCapacity, ReturnValue,
    WriteRequest,
};
use aws_sdk_dynamodb::Client;
use futures_util::future::join_all;
use harel_model::{Event, Execution, ExecutionPage, Object, SmolStr};
use harel_store::prelude::*;
use harel_store::{
    BusEvent, Commit, DefinitionDoc, DueTimer, EventsConfig, ListQuery, OutboxEntry, SpawnEntry,
    StoreError, StoreResult, DEFAULT_TRACE_MAX,
};

use codec::{get_f64, get_opt_s, get_s, get_u64, n_int, py_decimal_str, s, Item};
use commit::{Outcome, Retention, TRACE_IDX_ATTR};
pub use list::ScanProgress;
use seq::ClockSeqs;
pub use seq::SeqAllocation;
pub use tables::{Tables, TablesError, RETAIN_UNTIL};

/// How many times a commit is re-laid out after a seq or trace-idx collision.
const COLLISION_ATTEMPTS: usize = 4;
/// Bound on the per-process trace-idx memory (one entry per execution recently written).
const TRACE_CACHE_MAX: usize = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum DynamoDbStoreError {
    #[error(transparent)]
    Tables(#[from] TablesError),
    #[error("DynamoDB at {endpoint} did not answer after {attempts} attempts: {last}")]
    Unreachable {
        endpoint: String,
        attempts: usize,
        last: String,
    },
}

fn definition_of(table: &str, item: &Item) -> StoreResult<DefinitionDoc> {
    let text = get_s(item, "document").map_err(|e| errors::corrupt(table, e))?;
    Ok(DefinitionDoc {
        version: get_s(item, "version")
            .map_err(|e| errors::corrupt(table, e))?
            .to_string(),
        machine: get_s(item, "machine")
            .map_err(|e| errors::corrupt(table, e))?
            .to_string(),
        created_at: get_f64(item, "created_at").map_err(|e| errors::corrupt(table, e))?,
        document: serde_json::from_str(text)
            .map_err(|e| StoreError::Corrupt(format!("{table}: document: {e}")))?,
    })
}

fn already_processed(exe: &Execution, commit: &Commit) -> StoreError {
    StoreError::AlreadyProcessed {
        execution_id: exe.id.to_string(),
        event_id: commit
            .processed_event_id
            .as_deref()
            .unwrap_or_default()
            .to_string(),
    }
}

/// A durable `ExecutionStore` over DynamoDB, compatible with harel's `DynamoDBStore`.
pub struct DynamoDbStore {
    client: Client,
    tables: Tables,
    trace_max: usize,
    seq_allocation: SeqAllocation,
    clock: ClockSeqs,
    /// execution id -> (version, highest trace idx stored or None if none), as last seen by
    /// this process; used only while the version still matches.
    trace_known: Mutex<HashMap<String, (u64, Option<u64>)>>,
    /// Strongly consistent `load`/`load_for_event` (the default).
    consistent_reads: bool,
    /// How long finished work is kept, in seconds (zero: forever).
    retention_secs: u64,
    /// Told after each page of a `scan` listing.
    scan_progress: Option<Arc<ScanProgress>>,
    /// Shards of the timers' `by_due` index: the same on every writer and sweeper.
    due_shards: u32,
    /// The events for the bus its commits write (None: none).
    events: Option<EventsConfig>,
}

impl DynamoDbStore {
    /// A store over an injected client; the tables must exist (see `ensure_tables`).
    pub fn new(client: Client, prefix: &str) -> Result<Self, TablesError> {
        Ok(DynamoDbStore {
            client,
            tables: Tables::new(prefix)?,
            trace_max: DEFAULT_TRACE_MAX,
            seq_allocation: SeqAllocation::default(),
            clock: ClockSeqs::default(),
            trace_known: Mutex::new(HashMap::new()),
            consistent_reads: true,
            retention_secs: 0,
            scan_progress: None,
            due_shards: timers::DEFAULT_DUE_SHARDS,
            events: None,
        })
    }

    /// Write events for the bus with the commits ([`harel_store::events`]) in the `events`
    /// table, for a publisher to put.
    pub fn with_events(mut self, events: EventsConfig) -> Self {
        self.events = Some(events);
        self
    }

    /// Keep finished work this long, then let DynamoDB's TTL remove it (zero, the default:
    /// keep forever). A commit that makes an execution DONE or CANCELLED stamps its item
    /// `retain_until` = finished_at + retention; dedupe marks get write time +
    /// max(retention, 15 days) (SQS redelivers for up to 14 days), trace rows write time +
    /// retention. FAILED and live executions carry none.
    pub fn with_retention(mut self, retention: Duration) -> Self {
        self.retention_secs = retention.as_secs();
        self
    }

    /// Called after each page a `scan` listing reads, with the pages and items read so far.
    pub fn set_scan_progress(&mut self, progress: Arc<ScanProgress>) {
        self.scan_progress = Some(progress);
    }

    fn retention_now(&self) -> Retention {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        Retention {
            secs: self.retention_secs,
            now,
        }
    }

    /// Shards of the timers' `by_due` index (1..=100, default 8): each look at what is due
    /// is one Query per shard, and a burst of timers due in one second spreads its index
    /// writes over this many partitions (about 1000 writes a second each). Every writer and
    /// sweeper of the tables must agree; rows in a shard a sweeper does not read are found by
    /// its compatibility Scan, late.
    pub fn with_due_shards(mut self, shards: u32) -> Result<Self, StoreError> {
        self.due_shards = timers::check_shards(shards)?;
        Ok(self)
    }

    pub fn due_shards(&self) -> u32 {
        self.due_shards
    }

    /// The trace ring size (0: unbounded). Set it once, at startup, as harel requires.
    pub fn with_trace_max(mut self, trace_max: usize) -> Self {
        self.trace_max = trace_max;
        self
    }

    /// Eventually consistent reads halve the read capacity of `load` and `load_for_event`
    /// (harel's choice; `is_processed` is always eventually consistent) at the price of needless conflicts after a stale read
    /// (and the record's redelivery). A read that sees part of a transaction (a fresh
    /// Execution next to a missing dedupe mark) cannot apply an event twice: the commit's
    /// conditional mark refuses it.
    pub fn with_consistent_reads(mut self, consistent: bool) -> Self {
        self.consistent_reads = consistent;
        self
    }

    pub fn with_seq_allocation(mut self, allocation: SeqAllocation) -> Self {
        self.seq_allocation = allocation;
        self
    }

    pub fn tables(&self) -> &Tables {
        &self.tables
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Create the seven tables if missing (idempotent).
    pub async fn ensure_tables(&self) -> Result<(), TablesError> {
        self.tables.ensure(&self.client).await
    }

    /// A client from the SDK's standard configuration (environment, profile, including
    /// `AWS_ENDPOINT_URL`), with `endpoint` overriding it when given (then, as harel's
    /// `create`, dummy credentials if none are configured; region `us-east-1` if none is);
    /// the tables are created if missing, retrying until the endpoint answers (an emulator
    /// still starting up).
    pub async fn create(
        endpoint: Option<&str>,
        prefix: &str,
        attempts: usize,
        delay: Duration,
    ) -> Result<Self, DynamoDbStoreError> {
        let region = aws_config::meta::region::RegionProviderChain::default_provider()
            .or_else(aws_config::Region::new("us-east-1"));
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest()).region(region);
        if let Some(url) = endpoint {
            loader = loader.endpoint_url(url);
            // as harel's `create`: an emulator (DynamoDB Local, LocalStack, moto) takes any
            // credentials, so don't fail for lack of them when none are configured
            if std::env::var_os("AWS_ACCESS_KEY_ID").is_none()
                && std::env::var_os("AWS_PROFILE").is_none()
            {
                loader = loader.credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                    "test",
                    "test",
                    None,
                    None,
                    "harel-create",
                ));
            }
        }
        let config = loader.load().await;
        let client = Client::new(&config);
        let store = DynamoDbStore::new(client, prefix)?;
        let mut last = String::new();
        for attempt in 0..attempts.max(1) {
            if attempt > 0 {
                tokio::time::sleep(delay).await;
            }
            match store.ensure_tables().await {
                Ok(()) => return Ok(store),
                Err(e) => last = e.to_string(),
            }
        }
        Err(DynamoDbStoreError::Unreachable {
            endpoint: endpoint.unwrap_or("the configured endpoint").to_string(),
            attempts: attempts.max(1),
            last,
        })
    }

    /// A store over a client from the SDK's standard configuration (environment, profile,
    /// `AWS_ENDPOINT_URL`); creates nothing.
    pub async fn from_env(prefix: &str) -> Result<Self, TablesError> {
        let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        DynamoDbStore::new(Client::new(&config), prefix)
    }

    /// The stored Execution document exactly as it is stored (the `data` attribute), checked
    /// to parse; `None` if there is no such execution.
    pub async fn load_raw(&self, execution_id: &str) -> StoreResult<Option<String>> {
        let resp = self
            .client
            .get_item()
            .table_name(self.tables.executions())
            .key("id", s(execution_id))
            .projection_expression("#d")
            .expression_attribute_names("#d", "data")
            .consistent_read(self.consistent_reads)
            .send()
            .await
            .map_err(|e| errors::classify("GetItem", &self.tables.executions(), e))?;
        let Some(item) = resp.item() else {
            return Ok(None);
        };
        let table = self.tables.executions();
        let data = get_s(item, "data").map_err(|e| errors::corrupt(&table, e))?;
        Execution::from_json(data)
            .map_err(|e| StoreError::Corrupt(format!("{table}: execution data: {e}")))?;
        Ok(Some(data.to_string()))
    }

    fn remember_trace(&self, id: &str, version: u64, max: Option<u64>) {
        let mut known = self.trace_known.lock().unwrap_or_else(|e| e.into_inner());
        if known.len() >= TRACE_CACHE_MAX {
            known.clear();
        }
        known.insert(id.to_string(), (version, max));
    }

    fn forget_trace(&self, id: &str) {
        self.trace_known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }

    fn known_trace_max(&self, id: &str, version: u64) -> Option<Option<u64>> {
        if version == 0 {
            // a brand-new execution has no trace yet (purge removes a reused id's)
            return Some(None);
        }
        self.trace_known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .filter(|(v, _)| *v == version)
            .map(|(_, max)| *max)
    }

    /// harel's `_max_trace_idx`: a Query on the partition, newest first, one row.
    async fn query_trace_max(&self, execution_id: &str) -> StoreResult<Option<u64>> {
        let resp = self
            .client
            .query()
            .table_name(self.tables.trace())
            .key_condition_expression("execution_id = :e")
            .expression_attribute_values(":e", s(execution_id))
            .projection_expression("idx")
            .scan_index_forward(false)
            .limit(1)
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| errors::classify("Query", &self.tables.trace(), e))?;
        match resp.items().first() {
            Some(item) => Ok(Some(
                get_u64(item, "idx").map_err(|e| errors::corrupt(&self.tables.trace(), e))?,
            )),
            None => Ok(None),
        }
    }

    /// harel's `_next_seq`: reserve `count` ids from a named counter; the first.
    async fn counter_block(&self, name: &str, count: u64) -> StoreResult<u64> {
        let resp = self
            .client
            .update_item()
            .table_name(self.tables.counters())
            .key("id", s(name))
            .update_expression("ADD n :k")
            .expression_attribute_values(":k", n_int(count))
            .return_values(ReturnValue::UpdatedNew)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|e| errors::classify("UpdateItem", &self.tables.counters(), e))?;
        let attrs = resp.attributes().cloned().unwrap_or_default();
        let n = get_u64(&attrs, "n").map_err(|e| errors::corrupt(&self.tables.counters(), e))?;
        Ok(n + 1 - count)
    }

    async fn seq_block(&self, name: &str, count: usize) -> StoreResult<u64> {
        if count == 0 {
            return Ok(0);
        }
        match self.seq_allocation {
            SeqAllocation::Clock => Ok(self.clock.reserve(count as u64)),
            SeqAllocation::Counter => self.counter_block(name, count as u64).await,
        }
    }

    /// The stored version of an execution (after a CAS miss without ALL_OLD).
    async fn stored_version(&self, execution_id: &str) -> StoreResult<Option<u64>> {
        let resp = self
            .client
            .get_item()
            .table_name(self.tables.executions())
            .key("id", s(execution_id))
            .projection_expression("version")
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| errors::classify("GetItem", &self.tables.executions(), e))?;
        resp.item()
            .map(|item| get_u64(item, "version"))
            .transpose()
            .map_err(|e| errors::corrupt(&self.tables.executions(), e))
    }

    /// Whether the mark is there, read strongly consistent whatever `consistent_reads` says
    /// (it decides between a conflict and a duplicate).
    async fn processed_consistently(
        &self,
        execution_id: &str,
        event_id: &str,
    ) -> StoreResult<bool> {
        let resp = self
            .client
            .get_item()
            .table_name(self.tables.processed())
            .key("execution_id", s(execution_id))
            .key("event_id", s(event_id))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| errors::classify("GetItem", &self.tables.processed(), e))?;
        Ok(resp.item().is_some())
    }

    /// Parse an executions item (`data`, and the trace idx we keep beside it).
    /// The commit, with a machine version kept in its transaction when `keep` has one.
    async fn commit_with(
        &self,
        exe: &mut Execution,
        commit: Commit,
        keep: Option<&DefinitionDoc>,
    ) -> StoreResult<Vec<u64>> {
        let mut known_trace_max = self.known_trace_max(&exe.id, exe.version);
        let published = match &self.events {
            Some(events) => events.rows(exe, &commit.published),
            None => Vec::new(),
        };
        for _ in 0..COLLISION_ATTEMPTS {
            let outbox_base = self.seq_block("outbox", commit.emits.len()).await?;
            let spawn_base = self.seq_block("spawn", commit.spawns.len()).await?;
            if commit.trace.is_some() && known_trace_max.is_none() {
                known_trace_max = Some(self.query_trace_max(&exe.id).await?);
            }
            let mut plan = commit::plan(commit::Inputs {
                tables: &self.tables,
                exe,
                commit: &commit,
                outbox_base,
                spawn_base,
                known_trace_max,
                trace_max: self.trace_max,
                retention: self.retention_now(),
                due_shards: self.due_shards,
                published: &published,
            })?;
            if let Some(doc) = keep {
                commit::keep_definition(&mut plan, &self.tables, doc)?;
            }
            let result = commit::request(&self.client, &plan)
                .send()
                .await
                .map(|_| ());
            match commit::send_outcome(&plan, result) {
                Outcome::Committed => {
                    exe.version += 1;
                    exe.stored_status = harel_model::StoredStatus(Some(exe.status));
                    match plan.trace_idx {
                        Some(idx) => self.remember_trace(&exe.id, exe.version, Some(idx)),
                        None if known_trace_max == Some(None) => {
                            self.remember_trace(&exe.id, exe.version, None)
                        }
                        None => self.forget_trace(&exe.id),
                    }
                    return Ok(plan.outbox_seqs);
                }
                Outcome::AlreadyProcessed => {
                    return Err(already_processed(exe, &commit));
                }
                Outcome::Conflict(found) => {
                    let found = match found {
                        Some(found) => found,
                        None => {
                            // no reasons to tell the mark's condition from the version's
                            // (an older emulator's bare ConditionalCheckFailedException)
                            if let Some(event_id) = &commit.processed_event_id {
                                if self.processed_consistently(&exe.id, event_id).await? {
                                    return Err(already_processed(exe, &commit));
                                }
                            }
                            self.stored_version(&exe.id).await?
                        }
                    };
                    self.forget_trace(&exe.id);
                    return Err(StoreError::Conflict {
                        execution_id: exe.id.to_string(),
                        expected: exe.version,
                        found,
                    });
                }
                Outcome::SeqCollision => continue,
                Outcome::TraceCollision => {
                    known_trace_max = None;
                    continue;
                }
                Outcome::Failed(err) => return Err(err),
            }
        }
        Err(StoreError::retryable(format!(
            "the commit of execution {:?} met existing outbox seqs or trace indexes {COLLISION_ATTEMPTS} times",
            exe.id
        )))
    }

    fn execution_of(&self, item: &Item) -> StoreResult<Execution> {
        let table = self.tables.executions();
        let data = get_s(item, "data").map_err(|e| errors::corrupt(&table, e))?;
        let exe = Execution::from_json(data)
            .map_err(|e| StoreError::Corrupt(format!("{table}: execution data: {e}")))?;
        if let Ok(idx) = get_u64(item, TRACE_IDX_ATTR) {
            self.remember_trace(&exe.id, exe.version, Some(idx));
        }
        Ok(exe)
    }

    /// One Query per shard of `by_due` for `fire_at <= until`, soonest first, concurrently;
    /// `limit` stops each shard at its first page of that many rows, else every page is read.
    async fn query_due_shards(
        &self,
        until: &str,
        limit: Option<i32>,
    ) -> StoreResult<Vec<Vec<Item>>> {
        let table = self.tables.timers();
        let queries = (0..self.due_shards).map(|shard| {
            let table = table.clone();
            async move {
                let mut items = Vec::new();
                let mut start: Option<Item> = None;
                loop {
                    let resp = self
                        .client
                        .query()
                        .table_name(&table)
                        .index_name(timers::DUE_INDEX)
                        .key_condition_expression("#ds = :s AND fire_at <= :until")
                        .expression_attribute_names("#ds", timers::DUE_SHARD_ATTR)
                        .expression_attribute_values(":s", s(shard.to_string()))
                        .expression_attribute_values(":until", AttributeValue::N(until.to_string()))
                        .scan_index_forward(true)
                        .set_limit(limit)
                        .set_exclusive_start_key(start.take())
                        .return_consumed_capacity(ReturnConsumedCapacity::Total)
                        .send()
                        .await
                        .map_err(|e| errors::classify("Query", &table, e))?;
                    items.extend(resp.items().iter().cloned());
                    match resp.last_evaluated_key() {
                        Some(key) if !key.is_empty() && limit.is_none() => {
                            start = Some(key.clone())
                        }
                        _ => return Ok::<_, StoreError>(items),
                    }
                }
            }
        });
        let mut out = Vec::with_capacity(self.due_shards as usize);
        for result in join_all(queries).await {
            out.push(result?);
        }
        Ok(out)
    }

    /// Scan a whole table, following `LastEvaluatedKey` through every page. Not an `async
    /// fn` around `scan_pages`: one more nested future would push the sweeper's main future
    /// past the compiler's layout depth limit.
    fn scan_all<'a>(
        &'a self,
        table: &'a str,
        configure: impl Fn(ScanFluentBuilder) -> ScanFluentBuilder + 'a,
    ) -> impl std::future::Future<Output = StoreResult<Vec<Item>>> + 'a {
        self.scan_pages(table, configure, |_, _| {})
    }

    /// `scan_all`, telling `on_page` the pages and items read after each page.
    async fn scan_pages(
        &self,
        table: &str,
        configure: impl Fn(ScanFluentBuilder) -> ScanFluentBuilder,
        on_page: impl Fn(usize, usize),
    ) -> StoreResult<Vec<Item>> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        let mut pages = 0;
        loop {
            let req = configure(self.client.scan().table_name(table))
                .set_exclusive_start_key(start.take())
                .return_consumed_capacity(ReturnConsumedCapacity::Total);
            let resp = req
                .send()
                .await
                .map_err(|e| errors::classify("Scan", table, e))?;
            items.extend(resp.items().iter().cloned());
            pages += 1;
            on_page(pages, items.len());
            match resp.last_evaluated_key() {
                Some(key) if !key.is_empty() => start = Some(key.clone()),
                _ => return Ok(items),
            }
        }
    }

    /// Every item of `table` in the partition of `execution_id`, in sort-key order (a Query
    /// of its key, all pages): what one execution has there, whatever the table holds.
    async fn partition(
        &self,
        table: &str,
        execution_id: &str,
        configure: impl Fn(QueryFluentBuilder) -> QueryFluentBuilder,
    ) -> StoreResult<Vec<Item>> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let req = self
                .client
                .query()
                .table_name(table)
                .key_condition_expression("execution_id = :e")
                .expression_attribute_values(":e", s(execution_id))
                .set_exclusive_start_key(start.take());
            let resp = configure(req)
                .send()
                .await
                .map_err(|e| errors::classify("Query", table, e))?;
            items.extend(resp.items().iter().cloned());
            match resp.last_evaluated_key() {
                Some(key) if !key.is_empty() => start = Some(key.clone()),
                _ => return Ok(items),
            }
        }
    }

    /// Every key of `table` in the partition of `execution_id`.
    async fn partition_keys(
        &self,
        table: &str,
        sort_key: &str,
        execution_id: &str,
    ) -> StoreResult<Vec<Item>> {
        self.partition(table, execution_id, |q| {
            q.projection_expression("execution_id, #sk")
                .expression_attribute_names("#sk", sort_key)
        })
        .await
    }

    /// Delete by key, 25 per BatchWriteItem, re-sending whatever comes back unprocessed.
    async fn delete_keys(&self, table: &str, keys: Vec<Item>) -> StoreResult<()> {
        for chunk in keys.chunks(25) {
            let mut pending: Vec<WriteRequest> = chunk
                .iter()
                .map(|k| {
                    WriteRequest::builder()
                        .delete_request(
                            DeleteRequest::builder()
                                .set_key(Some(k.clone()))
                                .build()
                                .expect("key is set"),
                        )
                        .build()
                })
                .collect();
            let mut backoff = Duration::from_millis(50);
            while !pending.is_empty() {
                let resp = self
                    .client
                    .batch_write_item()
                    .request_items(table, pending)
                    .send()
                    .await
                    .map_err(|e| errors::classify("BatchWriteItem", table, e))?;
                pending = resp
                    .unprocessed_items()
                    .and_then(|u| u.get(table))
                    .cloned()
                    .unwrap_or_default();
                if !pending.is_empty() {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
        Ok(())
    }

    async fn put_trace(&self, execution_id: &str, idx: u64, entry: &Object) -> StoreResult<()> {
        let retain = self.retention_now().trace();
        self.client
            .put_item()
            .table_name(self.tables.trace())
            .set_item(retain.map(|until| HashMap::from([(RETAIN_UNTIL.to_string(), n_int(until))])))
            .item("execution_id", s(execution_id))
            .item("idx", n_int(idx))
            .item(
                "entry",
                s(harel_model::pyjson::json_dumps(
                    &serde_json::Value::Object(entry.clone()),
                    false,
                )),
            )
            .send()
            .await
            .map_err(|e| errors::classify("PutItem", &self.tables.trace(), e))?;
        if self.trace_max > 0 && idx >= self.trace_max as u64 {
            self.client
                .delete_item()
                .table_name(self.tables.trace())
                .key("execution_id", s(execution_id))
                .key("idx", n_int(idx - self.trace_max as u64))
                .send()
                .await
                .map_err(|e| errors::classify("DeleteItem", &self.tables.trace(), e))?;
        }
        Ok(())
    }
}

impl Executions for DynamoDbStore {
    async fn load(&self, execution_id: &str) -> StoreResult<Option<Execution>> {
        // strongly consistent: a stale copy would only buy a needless CAS conflict
        let resp = self
            .client
            .get_item()
            .table_name(self.tables.executions())
            .key("id", s(execution_id))
            .projection_expression("#d, #t")
            .expression_attribute_names("#d", "data")
            .expression_attribute_names("#t", TRACE_IDX_ATTR)
            .consistent_read(self.consistent_reads)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|e| errors::classify("GetItem", &self.tables.executions(), e))?;
        resp.item().map(|item| self.execution_of(item)).transpose()
    }

    async fn load_for_event(
        &self,
        execution_id: &str,
        event_id: &str,
    ) -> StoreResult<(Option<Execution>, bool)> {
        // one BatchGetItem, both reads strongly consistent: a stale execution costs a needless
        // conflict, and a stale (missing) dedupe mark next to a fresh execution would process
        // the event twice
        let exe_table = self.tables.executions();
        let proc_table = self.tables.processed();
        let exe_keys = KeysAndAttributes::builder()
            .keys(HashMap::from([("id".to_string(), s(execution_id))]))
            .projection_expression("#d, #t")
            .expression_attribute_names("#d", "data")
            .expression_attribute_names("#t", TRACE_IDX_ATTR)
            .consistent_read(self.consistent_reads)
            .build()
            .expect("keys are set");
        let proc_keys = KeysAndAttributes::builder()
            .keys(HashMap::from([
                ("execution_id".to_string(), s(execution_id)),
                ("event_id".to_string(), s(event_id)),
            ]))
            .consistent_read(self.consistent_reads)
            .build()
            .expect("keys are set");
        let mut request: HashMap<String, KeysAndAttributes> = HashMap::from([
            (exe_table.clone(), exe_keys),
            (proc_table.clone(), proc_keys),
        ]);
        let mut exe_item: Option<Item> = None;
        let mut processed = false;
        let mut backoff = Duration::from_millis(50);
        // unlike harel, keys DynamoDB leaves unprocessed (throttling) are asked again rather
        // than read as "absent"
        for _ in 0..8 {
            let resp = self
                .client
                .batch_get_item()
                .set_request_items(Some(request.clone()))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(|e| {
                    errors::classify("BatchGetItem", &format!("{exe_table}, {proc_table}"), e)
                })?;
            if let Some(responses) = resp.responses() {
                if let Some(item) = responses.get(&exe_table).and_then(|v| v.first()) {
                    exe_item = Some(item.clone());
                }
                if responses.get(&proc_table).is_some_and(|v| !v.is_empty()) {
                    processed = true;
                }
            }
            request = resp.unprocessed_keys().cloned().unwrap_or_default();
            request.retain(|_, k| !k.keys().is_empty());
            if request.is_empty() {
                let exe = exe_item.map(|item| self.execution_of(&item)).transpose()?;
                return Ok((exe, processed));
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
        Err(StoreError::retryable(format!(
            "DynamoDB BatchGetItem left keys of {execution_id:?} unprocessed after 8 attempts"
        )))
    }

    async fn commit(&self, exe: &mut Execution, commit: Commit) -> StoreResult<Vec<u64>> {
        self.commit_with(exe, commit, None).await
    }

    /// Eventually consistent whatever `consistent_reads` says (half the read units, as
    /// harel reads it): a mark, once written, stays as long as its execution, so "there" is
    /// exact, and a stale "not there" only lets the step run to its commit, whose mark
    /// condition refuses it (`StoreError::AlreadyProcessed`).
    async fn is_processed(&self, execution_id: &str, event_id: &str) -> StoreResult<bool> {
        let resp = self
            .client
            .get_item()
            .table_name(self.tables.processed())
            .key("execution_id", s(execution_id))
            .key("event_id", s(event_id))
            .consistent_read(false)
            .send()
            .await
            .map_err(|e| errors::classify("GetItem", &self.tables.processed(), e))?;
        Ok(resp.item().is_some())
    }

    async fn list_executions(&self, query: &ListQuery) -> StoreResult<ExecutionPage> {
        self.list(query).await
    }
}

impl Definitions for DynamoDbStore {
    async fn commit_keeping(
        &self,
        exe: &mut Execution,
        commit: Commit,
        doc: &DefinitionDoc,
    ) -> StoreResult<Vec<u64>> {
        self.commit_with(exe, commit, Some(doc)).await
    }

    async fn put_definition(&self, doc: &DefinitionDoc) -> StoreResult<bool> {
        let table = self.tables.definitions();
        let created_at = codec::n_float(doc.created_at)
            .map_err(|e| StoreError::other(format!("{table}: created_at: {e}")))?;
        let result = self
            .client
            .put_item()
            .table_name(&table)
            .item("version", s(&doc.version))
            .item("machine", s(&doc.machine))
            .item("created_at", created_at)
            .item("document", s(doc.document.to_string()))
            .condition_expression("attribute_not_exists(#v)")
            .expression_attribute_names("#v", "version")
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            // a version is its content: whoever kept it first kept the same thing
            Err(e) if e.code() == Some("ConditionalCheckFailedException") => Ok(false),
            Err(e) => Err(errors::classify("PutItem", &table, e)),
        }
    }

    async fn get_definition(&self, version: &str) -> StoreResult<Option<DefinitionDoc>> {
        let table = self.tables.definitions();
        // strongly consistent: the put may have been another process's a moment ago
        let resp = self
            .client
            .get_item()
            .table_name(&table)
            .key("version", s(version))
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|e| errors::classify("GetItem", &table, e))?;
        resp.item()
            .map(|item| definition_of(&table, item))
            .transpose()
    }

    async fn list_definitions(&self) -> StoreResult<Vec<DefinitionDoc>> {
        let table = self.tables.definitions();
        let items = self
            .scan_all(&table, |req| req.consistent_read(true))
            .await?;
        let mut docs = items
            .iter()
            .map(|item| definition_of(&table, item))
            .collect::<StoreResult<Vec<_>>>()?;
        docs.sort_by(|a, b| a.created_at.total_cmp(&b.created_at));
        Ok(docs)
    }
}

impl Outbox for DynamoDbStore {
    async fn pending_outbox(&self) -> StoreResult<Vec<OutboxEntry>> {
        let table = self.tables.outbox();
        let rows = self.scan_all(&table, |r| r).await?;
        let mut out = Vec::with_capacity(rows.len());
        for item in &rows {
            let seq = get_u64(item, "seq").map_err(|e| errors::corrupt(&table, e))?;
            let target_id = get_opt_s(item, "target_id").map_err(|e| errors::corrupt(&table, e))?;
            let text = get_s(item, "event").map_err(|e| errors::corrupt(&table, e))?;
            let event: Event = serde_json::from_str(text)
                .map_err(|e| StoreError::Corrupt(format!("{table}: event of seq {seq}: {e}")))?;
            out.push(OutboxEntry {
                seq,
                target_id: target_id.map(SmolStr::from),
                event,
            });
        }
        out.sort_by_key(|e| e.seq);
        Ok(out)
    }

    async fn ack_outbox(&self, seq: u64) -> StoreResult<()> {
        self.client
            .delete_item()
            .table_name(self.tables.outbox())
            .key("seq", n_int(seq))
            .send()
            .await
            .map_err(|e| errors::classify("DeleteItem", &self.tables.outbox(), e))?;
        Ok(())
    }

    async fn pending_published(&self) -> StoreResult<Vec<BusEvent>> {
        let table = self.tables.events();
        let rows = self.scan_all(&table, |r| r.consistent_read(true)).await?;
        let mut out = Vec::with_capacity(rows.len());
        for item in &rows {
            let corrupt = |e| errors::corrupt(&table, e);
            let text = get_s(item, "entry").map_err(corrupt)?;
            let mut event: BusEvent = serde_json::from_str(text)
                .map_err(|e| StoreError::Corrupt(format!("{table}: event entry: {e}")))?;
            if let Some(attempts) = item.get("attempts").and_then(|a| a.as_n().ok()) {
                event.attempts = attempts.parse().unwrap_or(event.attempts);
            }
            out.push(event);
        }
        // oldest first; within one commit, in the order it wrote them
        out.sort_by(|a, b| {
            a.time
                .total_cmp(&b.time)
                .then_with(|| a.execution_id.cmp(&b.execution_id))
                .then_with(|| (a.sequence, a.index).cmp(&(b.sequence, b.index)))
        });
        Ok(out)
    }

    async fn ack_published(&self, event_ids: &[&str]) -> StoreResult<()> {
        let keys = event_ids
            .iter()
            .map(|id| HashMap::from([("event_id".to_string(), s(*id))]))
            .collect();
        self.delete_keys(&self.tables.events(), keys).await
    }

    async fn retry_published(&self, event_id: &str, attempts: u32) -> StoreResult<()> {
        // only while the row is there: an event acknowledged meanwhile stays gone
        let result = self
            .client
            .update_item()
            .table_name(self.tables.events())
            .key("event_id", s(event_id))
            .update_expression("SET attempts = :a")
            .condition_expression("attribute_exists(event_id)")
            .expression_attribute_values(":a", n_int(attempts as u64))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Some("ConditionalCheckFailedException") => Ok(()),
            Err(e) => Err(errors::classify("UpdateItem", &self.tables.events(), e)),
        }
    }

    async fn pending_spawns(&self) -> StoreResult<Vec<SpawnEntry>> {
        let table = self.tables.spawns();
        let rows = self.scan_all(&table, |r| r).await?;
        let mut out = Vec::with_capacity(rows.len());
        for item in &rows {
            let corrupt = |e| errors::corrupt(&table, e);
            let seq = get_u64(item, "seq").map_err(corrupt)?;
            let text = get_s(item, "context").map_err(corrupt)?;
            let context: Object = serde_json::from_str(text)
                .map_err(|e| StoreError::Corrupt(format!("{table}: context of seq {seq}: {e}")))?;
            out.push(SpawnEntry {
                seq,
                parent_id: get_s(item, "parent_id").map_err(corrupt)?.into(),
                child_id: get_s(item, "child_id").map_err(corrupt)?.into(),
                root_path: get_s(item, "root_path").map_err(corrupt)?.into(),
                context,
            });
        }
        out.sort_by_key(|e| e.seq);
        Ok(out)
    }

    async fn ack_spawn(&self, seq: u64) -> StoreResult<()> {
        self.client
            .delete_item()
            .table_name(self.tables.spawns())
            .key("seq", n_int(seq))
            .send()
            .await
            .map_err(|e| errors::classify("DeleteItem", &self.tables.spawns(), e))?;
        Ok(())
    }
}

impl Timers for DynamoDbStore {
    async fn due_timers(&self, now: f64) -> StoreResult<Vec<DueTimer>> {
        let now = py_decimal_str(now).map_err(|e| StoreError::other(format!("due_timers: {e}")))?;
        let table = self.tables.timers();
        let mut out = Vec::new();
        for rows in self.query_due_shards(&now, None).await? {
            for item in &rows {
                out.push(timers::due_timer_of(&table, item)?);
            }
        }
        out.sort_by(|a, b| a.fire_at.total_cmp(&b.fire_at));
        Ok(out)
    }

    async fn legacy_due_timers(&self, now: f64) -> StoreResult<Vec<DueTimer>> {
        let table = self.tables.timers();
        let now = py_decimal_str(now)
            .map_err(|e| StoreError::other(format!("legacy_due_timers: {e}")))?;
        // rows the index misses: harel Python's (no shard), and shards past ours (a writer
        // configured with more shards), so a mismatch is late, never lost
        let shards: Vec<String> = (0..self.due_shards).map(|i| format!(":s{i}")).collect();
        let filter = format!(
            "fire_at <= :now AND (attribute_not_exists(#ds) OR NOT (#ds IN ({})))",
            shards.join(", ")
        );
        let rows = self
            .scan_all(&table, |r| {
                let mut r = r
                    .filter_expression(&filter)
                    .expression_attribute_names("#ds", timers::DUE_SHARD_ATTR)
                    .expression_attribute_values(":now", AttributeValue::N(now.clone()));
                for (i, name) in shards.iter().enumerate() {
                    r = r.expression_attribute_values(name, s(i.to_string()));
                }
                r
            })
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for item in &rows {
            out.push(timers::due_timer_of(&table, item)?);
        }
        out.sort_by(|a, b| a.fire_at.total_cmp(&b.fire_at));
        Ok(out)
    }

    async fn next_timer_due(&self, horizon: f64) -> StoreResult<Option<f64>> {
        let horizon = py_decimal_str(horizon)
            .map_err(|e| StoreError::other(format!("next_timer_due: {e}")))?;
        let table = self.tables.timers();
        let mut next: Option<f64> = None;
        for rows in self.query_due_shards(&horizon, Some(1)).await? {
            if let Some(item) = rows.first() {
                let at = get_f64(item, "fire_at").map_err(|e| errors::corrupt(&table, e))?;
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        Ok(next)
    }

    async fn armed_timers(&self, execution_id: &str) -> StoreResult<Vec<DueTimer>> {
        let table = self.tables.timers();
        let corrupt = |e| errors::corrupt(&table, e);
        let mut out = self
            .partition(&table, execution_id, |q| q)
            .await?
            .iter()
            .map(|item| {
                Ok(DueTimer {
                    execution_id: execution_id.to_string(),
                    path: get_s(item, "path").map_err(corrupt)?.to_string(),
                    fire_at: get_f64(item, "fire_at").map_err(corrupt)?,
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        out.sort_by(|a, b| a.fire_at.total_cmp(&b.fire_at).then(a.path.cmp(&b.path)));
        Ok(out)
    }

    async fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> StoreResult<()> {
        let guard = codec::n_float(fire_at)
            .map_err(|e| StoreError::other(format!("delete_timer {path:?}: {e}")))?;
        let result = self
            .client
            .delete_item()
            .table_name(self.tables.timers())
            .key("execution_id", s(execution_id))
            .key("path", s(path))
            .condition_expression("fire_at = :f")
            .expression_attribute_values(":f", guard)
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // the timer was re-armed (or already fired): a stale sweep is a no-op
            Err(e) if e.code() == Some("ConditionalCheckFailedException") => Ok(()),
            Err(e) => Err(errors::classify("DeleteItem", &self.tables.timers(), e)),
        }
    }
}

impl Traces for DynamoDbStore {
    async fn read_trace(&self, execution_id: &str) -> StoreResult<Vec<Object>> {
        // all pages (harel reads one Query page, which would cut a ring past 1 MB short)
        let table = self.tables.trace();
        let mut out = Vec::new();
        for item in self.partition(&table, execution_id, |q| q).await? {
            let idx = get_u64(&item, "idx").map_err(|e| errors::corrupt(&table, e))?;
            let text = get_s(&item, "entry").map_err(|e| errors::corrupt(&table, e))?;
            let mut entry: Object = serde_json::from_str(text)
                .map_err(|e| StoreError::Corrupt(format!("{table}: entry {idx}: {e}")))?;
            entry.insert("index".into(), idx.into());
            out.push(entry);
        }
        Ok(out)
    }

    async fn append_trace(&self, execution_id: &str, entry: Object) -> StoreResult<()> {
        let idx = match entry.get("index").and_then(|v| v.as_u64()) {
            Some(idx) => idx,
            None => self
                .query_trace_max(execution_id)
                .await?
                .map_or(0, |m| m + 1),
        };
        // a commit of this process must not trust its remembered max past this write
        self.forget_trace(execution_id);
        self.put_trace(execution_id, idx, &entry).await
    }
}

impl Purge for DynamoDbStore {
    async fn ids_with_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        self.ids_with_prefix_scan(prefix).await
    }

    async fn descendant_ids(&self, root_id: &str) -> StoreResult<Vec<String>> {
        self.tree_by_parent(root_id).await
    }

    async fn purge(&self, execution_id: &str, expected_version: u64) -> StoreResult<bool> {
        self.purge_one(execution_id, expected_version).await
    }
}

impl DynamoDbStore {
    /// harel's `ids_with_prefix`: a Scan of the whole table.
    async fn ids_with_prefix_scan(&self, prefix: &str) -> StoreResult<Vec<String>> {
        let table = self.tables.executions();
        let rows = self
            .scan_all(&table, |r| {
                r.filter_expression("begins_with(#i, :p)")
                    .expression_attribute_names("#i", "id")
                    .expression_attribute_values(":p", s(prefix))
                    .projection_expression("#i")
            })
            .await?;
        rows.iter()
            .map(|item| {
                get_s(item, "id")
                    .map(str::to_string)
                    .map_err(|e| errors::corrupt(&table, e))
            })
            .collect()
    }

    async fn purge_one(&self, execution_id: &str, expected_version: u64) -> StoreResult<bool> {
        let result = self
            .client
            .delete_item()
            .table_name(self.tables.executions())
            .key("id", s(execution_id))
            .condition_expression("version = :v")
            .expression_attribute_values(":v", n_int(expected_version))
            .send()
            .await;
        let deleted = match result {
            Ok(_) => true,
            Err(e) if e.code() == Some("ConditionalCheckFailedException") => {
                if self.stored_version(execution_id).await?.is_some() {
                    return Ok(false); // moved on: touch nothing
                }
                false
            }
            Err(e) => return Err(errors::classify("DeleteItem", &self.tables.executions(), e)),
        };
        self.forget_trace(execution_id);
        // not in the Execution's transaction, as in harel: the dedupe and trace rows are
        // unbounded; the Execution goes first, so a crash here leaves only unreachable rows
        // that a retry (Execution absent) still removes
        for (table, sort_key) in [
            (self.tables.processed(), "event_id"),
            (self.tables.trace(), "idx"),
            (self.tables.timers(), "path"),
        ] {
            let keys = self.partition_keys(&table, sort_key, execution_id).await?;
            self.delete_keys(&table, keys).await?;
        }
        for (table, attr) in [
            (self.tables.outbox(), "target_id"),
            (self.tables.spawns(), "parent_id"),
        ] {
            let rows = self
                .scan_all(&table, |r| {
                    r.filter_expression("#a = :v")
                        .expression_attribute_names("#a", attr)
                        .expression_attribute_values(":v", s(execution_id))
                        .projection_expression("seq")
                })
                .await?;
            let keys = rows
                .into_iter()
                .filter_map(|item| item.get("seq").cloned())
                .map(|seq| HashMap::from([("seq".to_string(), seq)]))
                .collect();
            self.delete_keys(&table, keys).await?;
        }
        Ok(deleted)
    }
}
