//! Costs that follow the work, not the data: what the periodic reads of a stack cost as the
//! stored data grows, measured on the wire (requests, and the items each answer read: the
//! `ScannedCount` DynamoDB bills a Query or a Scan for) on a moto server.
//!
//!     scripts/bench-scale.sh [N ...]      (runs this under scripts/with-moto.sh)
//!
//! Each section seeds its own tables for each size N and prints a markdown table. Sections:
//! `timers` (the sweeper). A section is a function from the sizes to its table; add one to
//! `SECTIONS`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::interceptors::{
    AfterDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::operation::scan::ScanOutput;
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use harel_dynamodb::codec::py_decimal_str;
use harel_dynamodb::timers::{due_shard, DUE_SHARD_ATTR};
use harel_dynamodb::DynamoDbStore;
use harel_lambda::{sweep, SweepPlan};
use harel_model::Execution;
use harel_sqs::MemoryTransport;
use harel_store::{Commit, ExecutionStore, TimerOp};

/// Requests by operation and the items their answers read, since the last `take`.
#[derive(Clone, Debug, Default)]
struct Wire(Arc<Mutex<(BTreeMap<String, usize>, u64)>>);

#[derive(Debug, Default)]
struct Tally {
    requests: usize,
    by_op: BTreeMap<String, usize>,
    items_read: u64,
}

impl Wire {
    fn take(&self) -> Tally {
        let (by_op, items_read) = std::mem::take(&mut *self.0.lock().expect("wire"));
        Tally {
            requests: by_op.values().sum(),
            by_op,
            items_read,
        }
    }
}

impl Intercept for Wire {
    fn name(&self) -> &'static str {
        "Wire"
    }
    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let op = context
            .request()
            .headers()
            .get("x-amz-target")
            .and_then(|t| t.rsplit('.').next())
            .unwrap_or("unknown")
            .to_string();
        *self.0.lock().expect("wire").0.entry(op).or_default() += 1;
        Ok(())
    }
    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let Ok(output) = context.output_or_error() else {
            return Ok(());
        };
        let scanned = if let Some(q) = output.downcast_ref::<QueryOutput>() {
            q.scanned_count()
        } else if let Some(s) = output.downcast_ref::<ScanOutput>() {
            s.scanned_count()
        } else {
            0
        };
        self.0.lock().expect("wire").1 += scanned as u64;
        Ok(())
    }
}

struct Bench {
    sdk: aws_config::SdkConfig,
    tag: String,
}

impl Bench {
    /// A store on fresh tables, its client counted.
    async fn store(&self, section: &str, n: usize) -> (DynamoDbStore, Wire) {
        let wire = Wire::default();
        let client = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&self.sdk)
                .interceptor(wire.clone())
                .build(),
        );
        let prefix = format!("b{}{section}{n}", self.tag);
        let store = DynamoDbStore::new(client, &prefix).expect("prefix");
        store.ensure_tables().await.expect("tables");
        wire.take();
        (store, wire)
    }
}

/// `rows` written 25 to a BatchWriteItem (unprocessed ones sent again).
async fn batch_put(client: &aws_sdk_dynamodb::Client, table: &str, rows: Vec<WriteRequest>) {
    for chunk in rows.chunks(25) {
        let mut pending = chunk.to_vec();
        while !pending.is_empty() {
            let resp = client
                .batch_write_item()
                .request_items(table, pending)
                .send()
                .await
                .expect("BatchWriteItem");
            pending = resp
                .unprocessed_items()
                .and_then(|u| u.get(table))
                .cloned()
                .unwrap_or_default();
        }
    }
}

// ---- timers: the sweeper's poll and an idle invocation ----

const DUE: usize = 5;
const NOW: f64 = 1_800_000_030.0;
const LATER: f64 = 1_900_000_000.0;

struct TimersRow {
    n: usize,
    index: Tally,
    index_ms: f64,
    scan: Tally,
    scan_ms: f64,
    busy: Tally,
    busy_fired: usize,
    idle: Tally,
    idle_ms: f64,
}

/// A timer row exactly as the store's commit writes it (harel's three attributes and the
/// index's shard).
fn timer_row(execution_id: &str, path: &str, fire_at: f64) -> WriteRequest {
    let item = [
        ("execution_id", AttributeValue::S(execution_id.into())),
        ("path", AttributeValue::S(path.into())),
        (
            "fire_at",
            AttributeValue::N(py_decimal_str(fire_at).expect("a finite time")),
        ),
        (
            DUE_SHARD_ATTR,
            AttributeValue::S(due_shard(execution_id, path, 8).to_string()),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    WriteRequest::builder()
        .put_request(
            PutRequest::builder()
                .set_item(Some(item))
                .build()
                .expect("item"),
        )
        .build()
}

async fn timers_at(bench: &Bench, n: usize) -> TimersRow {
    let (store, wire) = bench.store("t", n).await;
    let table = store.tables().timers();
    let seeded = Instant::now();
    let rows = (0..n)
        .map(|i| timer_row(&format!("exe-{i:06}"), "Waiting", LATER + i as f64))
        .collect();
    batch_put(store.client(), &table, rows).await;
    for i in 0..DUE {
        // the due ones through the real commit
        let mut exe = Execution::new("Bench").with_id(format!("due-{i}"));
        let commit = Commit {
            timers: vec![TimerOp::Schedule {
                path: "Waiting".into(),
                fire_at: NOW - 1.0 - i as f64,
            }],
            ..Commit::default()
        };
        store.commit(&mut exe, commit).await.expect("commit");
    }
    eprintln!(
        "timers: seeded {n} + {DUE} in {:.1} s",
        seeded.elapsed().as_secs_f64()
    );
    wire.take();

    // one poll through the index
    let started = Instant::now();
    let due = store.due_timers(NOW).await.expect("due_timers");
    let index_ms = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(due.len(), DUE, "the index finds the due timers");
    let index = wire.take();
    // the same poll as before: a Scan of the whole table, filtered (harel's due_timers)
    let started = Instant::now();
    let mut start = None;
    let mut found = 0;
    loop {
        let resp = store
            .client()
            .scan()
            .table_name(&table)
            .filter_expression("fire_at <= :now")
            .expression_attribute_values(
                ":now",
                AttributeValue::N(py_decimal_str(NOW).expect("now")),
            )
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .expect("Scan");
        found += resp.items().len();
        match resp.last_evaluated_key() {
            Some(k) if !k.is_empty() => start = Some(k.clone()),
            _ => break,
        }
    }
    let scan_ms = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(found, DUE, "the Scan finds the same timers");
    let scan = wire.take();

    let transport = MemoryTransport::new();
    let far = Instant::now() + Duration::from_secs(600);
    // the compatibility Scan off: its cost is the scan columns, once every few minutes
    let tick =
        || SweepPlan::scheduled(NOW, Duration::from_secs(60), 0, Duration::from_secs(1), far);
    // a tick with the 5 due: fires them (publishes go to memory), then finds nothing more
    let busy_report = sweep(&store, &transport, || NOW, tick())
        .await
        .expect("sweep");
    let busy = wire.take();
    // the next tick: nothing due within its minute
    let started = Instant::now();
    let idle_report = sweep(&store, &transport, || NOW, tick())
        .await
        .expect("sweep");
    let idle_ms = started.elapsed().as_secs_f64() * 1000.0;
    let idle = wire.take();
    assert_eq!(idle_report.fired, 0);
    TimersRow {
        n,
        index,
        index_ms,
        scan,
        scan_ms,
        busy,
        busy_fired: busy_report.fired,
        idle,
        idle_ms,
    }
}

async fn timers(bench: &Bench, sizes: &[usize]) {
    let mut rows = Vec::new();
    for &n in sizes {
        rows.push(timers_at(bench, n).await);
    }
    println!("### Timers: one sweeper poll, {DUE} timers due, N armed for later\n");
    println!("| timers stored | index: requests | index: items read | index: ms | scan: requests | scan: items read | scan: ms | tick with {DUE} due: requests (fired) | idle tick: requests | idle tick: ms |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.1} | {} | {} | {:.1} | {} ({}) | {} | {:.1} |",
            r.n + DUE,
            r.index.requests,
            r.index.items_read,
            r.index_ms,
            r.scan.requests,
            r.scan.items_read,
            r.scan_ms,
            r.busy.requests,
            r.busy_fired,
            r.idle.requests,
            r.idle_ms
        );
    }
    println!(
        "\nItems read are the answers' ScannedCount (what DynamoDB bills). Durations are moto's, \
         which goes through every row of the table for an index Query as for a Scan; the \
         tick's publishes go to memory and are not counted.\n"
    );
    for r in &rows {
        eprintln!(
            "timers {}: index {:?}, scan {:?}, busy tick {:?}, idle tick {:?}",
            r.n, r.index.by_op, r.scan.by_op, r.busy.by_op, r.idle.by_op
        );
    }
}

#[tokio::main]
async fn main() {
    let endpoint = std::env::var("AWS_ENDPOINT_URL")
        .expect("AWS_ENDPOINT_URL is not set: run scripts/bench-scale.sh (it starts moto)");
    let sizes: Vec<usize> = match std::env::args().skip(1).collect::<Vec<_>>() {
        args if args.is_empty() => vec![1_000, 10_000, 100_000],
        args => args
            .iter()
            .map(|a| a.replace('_', "").parse().expect("sizes are whole numbers"))
            .collect(),
    };
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .load()
        .await;
    let bench = Bench {
        sdk,
        tag: uuid::Uuid::new_v4().simple().to_string()[..6].to_string(),
    };
    println!("## Costs that follow the work (moto, one run; sizes {sizes:?})\n");
    timers(&bench, &sizes).await;
}
