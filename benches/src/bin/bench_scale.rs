//! Costs that follow the work, not the data: what the periodic reads of a stack cost as the
//! stored data grows, measured on the wire (requests, and the items each answer read: the
//! `ScannedCount` DynamoDB bills a Query or a Scan for) on a moto server.
//!
//!     scripts/bench-scale.sh [N ...]      (runs this under scripts/with-moto.sh)
//!
//! Each section seeds its own tables for each size N and prints a markdown table. Sections:
//! `timers` (the sweeper). A section is a function from the sizes to its table; add one to
//! `SECTIONS`.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use harel_dynamodb::codec::py_decimal_str;
use harel_dynamodb::timers::{due_shard, DUE_SHARD_ATTR};
use harel_dynamodb::DynamoDbStore;
use harel_lambda::{sweep, SweepPlan};
use harel_model::Execution;
use harel_sqs::MemoryTransport;
use harel_store::prelude::*;
use harel_store::{Commit, TimerOp};
use harel_testwire::Recorder;

/// What a measured stretch sent: its requests (by operation) and what the Queries and Scans
/// among them read (their `ScannedCount`).
type Tally = harel_testwire::Tally;

struct Bench {
    sdk: aws_config::SdkConfig,
    tag: String,
}

impl Bench {
    /// A store on fresh tables, its client counted.
    async fn store(&self, section: &str, n: usize) -> (DynamoDbStore, Recorder) {
        let wire = Recorder::new();
        let client = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&self.sdk)
                .http_client(wire.http_client())
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

async fn timers(bench: &Bench, sizes: &[usize]) -> Vec<TimersRow> {
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
            r.index.requests(),
            r.index.scanned(),
            r.index_ms,
            r.scan.requests(),
            r.scan.scanned(),
            r.scan_ms,
            r.busy.requests(),
            r.busy_fired,
            r.idle.requests(),
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
            r.n,
            r.index.by_operation(),
            r.scan.by_operation(),
            r.busy.by_operation(),
            r.idle.by_operation()
        );
    }
    rows
}

/// On-demand list prices (us-east-1) the cost table uses.
mod price {
    /// DynamoDB, per read / write request unit.
    pub const RRU: f64 = 0.125e-6;
    pub const WRU: f64 = 0.625e-6;
    /// DynamoDB storage, per GB-month.
    pub const STORAGE_GB: f64 = 0.25;
    /// Lambda arm64 (samconfig's architecture), per GB-second and per request.
    pub const GB_S: f64 = 0.000_013_333_4;
    pub const INVOKE: f64 = 0.2e-6;
}

const MINUTES_A_MONTH: f64 = 60.0 * 24.0 * 30.0;
/// The sweeper's memory (template.yaml: Globals MemorySize).
const SWEEPER_GB: f64 = 0.25;

/// What a month of one scenario costs in the parts this work changed (the sweeper, the growth
/// of the tables, the indexes' writes), before and after, from the figures measured above.
struct Scenario {
    name: &'static str,
    events: f64,
    armed: f64,
    /// Timers that fire in the month (the rest are cancelled or re-armed before their time).
    fired: f64,
}

/// A Scan's read units: 0.5 (eventually consistent) per 4 KB of items read, at least 0.5.
fn scan_rru(items: f64, item_bytes: f64) -> f64 {
    ((items * item_bytes / 4096.0).ceil() * 0.5).max(0.5)
}

fn cost(rows: &[TimersRow]) {
    let item_bytes = {
        let WriteRequest { put_request, .. } = timer_row("exe-000001", "Waiting", LATER);
        harel_dynamodb::codec::item_size(put_request.expect("a put").item()) as f64
    };
    // the Scan's items read per stored timer, measured (its curve is linear: extrapolated to
    // sizes the bench did not seed)
    let last = rows.last().expect("at least one size");
    let scanned_per_stored = last.scan.scanned() as f64 / (last.n + DUE) as f64;
    let look_requests = rows.iter().map(|r| r.idle.requests()).max().unwrap_or(0) as f64;
    let idle_tick_s = rows.iter().map(|r| r.idle_ms).fold(f64::MAX, f64::min) / 1000.0;
    let scenarios = [
        Scenario {
            name: "idle stack (nothing armed)",
            events: 0.0,
            armed: 0.0,
            fired: 0.0,
        },
        Scenario {
            name: "idle stack, 20 k timers armed a day ahead",
            events: 0.0,
            armed: 20_000.0,
            fired: 0.0,
        },
        Scenario {
            name: "1 M events/month, 100 k armed timers",
            events: 1e6,
            armed: 100_000.0,
            fired: 100_000.0,
        },
        Scenario {
            name: "100 M events/month, 10 M armed timers",
            events: 100e6,
            armed: 10e6,
            fired: 10e6,
        },
    ];
    println!("### What a month costs, before and after (on-demand list prices, us-east-1)\n");
    println!(
        "| scenario | timers fired | before: sweeper reads | before: sweeper duration | before: storage after a year | **before** | after: sweeper reads | after: sweeper duration | after: index writes | after: storage (steady) | **after** |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for sc in &scenarios {
        // before: one invocation a minute polling every second for its 50 s window, each
        // poll a Scan of the whole table
        let polls = 50.0 * MINUTES_A_MONTH;
        let before_reads = polls * scan_rru(sc.armed * scanned_per_stored, item_bytes) * price::RRU;
        let before_duration =
            MINUTES_A_MONTH * 50.0 * SWEEPER_GB * price::GB_S + MINUTES_A_MONTH * price::INVOKE;
        // finished work never left: a year of executions (5 events each, ~2 KB), a dedupe
        // mark per event (~100 B) and no trace
        let gb_a_month = (sc.events / 5.0 * 2048.0 + sc.events * 100.0) / 1e9;
        let before_storage = 12.0 * gb_a_month * price::STORAGE_GB;
        // after: a tick a minute looks (the measured requests, 0.5 RRU each); a minute with
        // something due runs on toward it, at most the whole minute (as many minutes as timers
        // fire, at most all of them) and looks twice more; the compatibility Scan every 5
        // minutes reads the rows harel Python wrote (none here)
        let busy_minutes = sc.fired.min(MINUTES_A_MONTH);
        let after_reads = (MINUTES_A_MONTH + busy_minutes * 2.0) * look_requests * 0.5 * price::RRU
            + sc.fired * 0.5 * price::RRU
            + MINUTES_A_MONTH / 5.0 * 0.5 * price::RRU;
        let after_duration =
            (MINUTES_A_MONTH - busy_minutes) * idle_tick_s * SWEEPER_GB * price::GB_S
                + busy_minutes * 60.0 * SWEEPER_GB * price::GB_S
                + MINUTES_A_MONTH * price::INVOKE;
        // the indexes: by_due written when a timer is armed and when it goes (1 WRU each; the
        // armed ones counted as armed and gone once a month);
        // the listing indexes when an execution starts and when it finishes (a key change
        // is a delete and a put: 3 WRU per index over a life), two indexes
        let index_writes = (sc.armed * 2.0 + sc.events / 5.0 * 3.0 * 2.0) * price::WRU;
        // retention 30 days: a month of executions, 30 days of marks
        let after_storage = gb_a_month * price::STORAGE_GB;
        let before = before_reads + before_duration + before_storage;
        let after = after_reads + after_duration + index_writes + after_storage;
        println!(
            "| {} | {} | ${:.2} | ${:.2} | ${:.2} | **${:.2}** | ${:.2} | ${:.2} | ${:.2} | ${:.2} | **${:.2}** |",
            sc.name,
            sc.fired,
            before_reads,
            before_duration,
            before_storage,
            before,
            after_reads,
            after_duration,
            index_writes,
            after_storage,
            after
        );
    }
    println!(
        "\nFrom the run above: a timer row is {item_bytes:.0} bytes, the Scan reads \
         {scanned_per_stored:.2} items per stored timer, a look is {look_requests:.0} Queries, an \
         idle tick {:.0} ms (moto's; a busy minute is billed whole). Only what this work changed \
         is priced: each event's own requests (the worker's reads, commit and SQS messages) are \
         the same before and after and not in these columns. Before, the 10 M-timer sweeper \
         could not finish one poll within its interval at all.\n",
        idle_tick_s * 1000.0
    );
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
    let rows = timers(&bench, &sizes).await;
    cost(&rows);
}
