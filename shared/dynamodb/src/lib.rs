//! The DynamoDB execution store: harel 0.9.0's `DynamoDBStore`, table for table, attribute for
//! attribute, so harel Python and this store share the same tables safely. Where this store
//! spends fewer requests than harel (no counter round trip before an emit, no max-index Query
//! before a traced commit, no read-back after a CAS miss) the README explains why it stays
//! compatible.

pub mod codec;
pub mod commit;
mod definitions;
pub mod errors;
mod executions;
mod list;
pub mod marks;
mod outbox;
mod purge;
mod reindex;
mod scan;
pub mod seq;
pub mod shards;
pub mod tables;
pub mod timers;
mod traces;

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
pub use harel_stack::CommitMode;
use harel_store::prelude::*;
use harel_store::{
    BusEvent, Commit, DefinitionDoc, EventsConfig, ListQuery, OutboxEntry, SpawnEntry, StoreError,
    StoreResult, DEFAULT_TRACE_MAX,
};

use codec::{get_f64, get_opt_s, get_s, get_u64, n_int, py_decimal_str, s, Item};
use commit::{Outcome, Retention, TRACE_IDX_ATTR};
pub use list::ScanProgress;
pub use reindex::Reindexed;
use seq::ClockSeqs;
pub use seq::SeqAllocation;
pub use tables::{Tables, TablesError, RETAIN_UNTIL};

/// How many times a commit is re-laid out after a seq or trace-idx collision.
const COLLISION_ATTEMPTS: usize = 4;
/// Bound on the per-process trace-idx memory (one entry per execution recently written).
const TRACE_CACHE_MAX: usize = 10_000;

/// Why [`DynamoDbStore::create`] gave no store.
#[derive(Debug, thiserror::Error)]
pub enum DynamoDbStoreError {
    /// The prefix is not a valid table prefix.
    #[error(transparent)]
    Tables(#[from] TablesError),
    /// Creating the tables failed on every attempt (the endpoint is down, or refuses the requests).
    #[error("DynamoDB at {endpoint} did not answer after {attempts} attempts: {last}")]
    Unreachable {
        /// The endpoint given, or `"the configured endpoint"` when none was.
        endpoint: String,
        /// How many times the tables were tried.
        attempts: usize,
        /// The last attempt's error.
        last: String,
    },
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
    /// Where commits put the dedupe mark (harel's `processed` table, or the item's window).
    commit_mode: CommitMode,
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
            commit_mode: CommitMode::Compat,
        })
    }

    /// Where commits put an event's dedupe mark, and where reads look for it:
    /// [`CommitMode::Compat`] (the default) writes harel's `processed` item in the step's
    /// transaction; [`CommitMode::Lean`] keeps the last [`marks::MARK_SLOTS`] marks in the
    /// execution item, so a step with nothing else to write is one `UpdateItem` (one write
    /// unit where compat writes four) and its read is one `GetItem`. Lean is for a stack no
    /// harel Python process writes to (harel's Put drops the window, and it neither reads nor
    /// writes these marks); every writer of a stack must use the same mode.
    pub fn with_commit_mode(mut self, mode: CommitMode) -> Self {
        self.commit_mode = mode;
        self
    }

    /// Where this store's commits put the dedupe mark.
    pub fn commit_mode(&self) -> CommitMode {
        self.commit_mode
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

    /// Shards of the timers' `by_due` index this store writes and reads (see
    /// [`with_due_shards`](Self::with_due_shards)).
    pub fn due_shards(&self) -> u32 {
        self.due_shards
    }

    /// The trace ring size (0: unbounded). Set it once, at startup, as harel requires.
    pub fn with_trace_max(mut self, trace_max: usize) -> Self {
        self.trace_max = trace_max;
        self
    }

    /// Eventually consistent reads halve the read capacity of `load` and `load_for_event`
    /// (harel's choice; `is_processed` is always eventually consistent) at the price of needless
    /// conflicts after a stale read
    /// (and the record's redelivery). A read that sees part of a transaction (a fresh
    /// Execution next to a missing dedupe mark) cannot apply an event twice: the commit's
    /// conditional mark refuses it.
    pub fn with_consistent_reads(mut self, consistent: bool) -> Self {
        self.consistent_reads = consistent;
        self
    }

    /// How commits number outbox and spawn entries: by the clock (default, no request) or harel's
    /// counters table (one request per commit that emits or spawns).
    pub fn with_seq_allocation(mut self, allocation: SeqAllocation) -> Self {
        self.seq_allocation = allocation;
        self
    }

    /// The names of the tables, under the store's prefix.
    pub fn tables(&self) -> &Tables {
        &self.tables
    }

    /// The SDK client the store's requests go through.
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
}
