//! Timers by time on moto (`scripts/with-moto.sh cargo test -p harel-app --test timers`): a
//! burst due in one second spreads over every shard and fires exactly once; an idle sweeper
//! returns at once after one Query per shard; a poll reads the due timers, not the stored
//! ones; a timer armed while no sweeper runs fires about a second after its time, through
//! the worker's wake.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harel_dynamodb::timers::DEFAULT_DUE_SHARDS;
use harel_dynamodb::DynamoDbStore;
use harel_lambda::wake::{WakeFuture, Waker};
use harel_lambda::{sweep, SweepPlan, Worker};
use harel_model::{Event, Execution};
use harel_runtime::Driver;
use harel_runtime::{Clock, SystemClock};
use harel_sqs::create_body;
use harel_sqs::{Received, SqsTransport};
use harel_store::prelude::*;
use harel_store::{Commit, TimerOp};
use harel_testkit::{pump, send, MotoStack, Recorder};
use serde_json::Value;

/// The application with the tests' own machine (`Flow`, harel_testkit::machines) added.
fn app() -> harel_app::Application {
    harel_app::Application::compiled().expect("machines").with(
        harel_testkit::machines::flow(),
        harel_testkit::machines::register_flow_actions,
    )
}

/// The DynamoDB requests since the last take, by operation, and the items they read
/// (`ScannedCount` of each answer: what DynamoDB bills a Query or a Scan for).
fn take(wire: &Recorder) -> (BTreeMap<String, usize>, u64) {
    let tally = wire.take();
    (tally.by_operation(), tally.scanned())
}

/// Arm one timer on each of `count` fresh executions, through the store's commit (one at a
/// time: moto does not isolate concurrent transactions).
async fn arm(store: &DynamoDbStore, tag: &str, count: usize, fire_at: f64) {
    for i in 0..count {
        let mut exe = Execution::new("Flow").with_id(format!("{tag}-{i}"));
        let commit = Commit {
            timers: vec![TimerOp::Schedule {
                path: "Waiting".into(),
                fire_at,
            }],
            ..Commit::default()
        };
        store.commit(&mut exe, commit).await.expect("commit");
    }
}

/// Everything visible on the queue, deleted as it is read.
async fn drain(source: &SqsTransport) -> Vec<Received> {
    let mut all = Vec::new();
    let mut empty = 0;
    while empty < 2 {
        let got = source
            .receive(10, Duration::ZERO, Duration::from_secs(60))
            .await
            .expect("receive");
        if got.is_empty() {
            empty += 1;
            continue;
        }
        empty = 0;
        for m in &got {
            source
                .delete(source.queue_url(), &m.receipt_handle)
                .await
                .expect("delete");
        }
        all.extend(got);
    }
    all
}

fn far() -> Instant {
    Instant::now() + Duration::from_secs(600)
}

fn tick(now: f64, compat_every_minutes: u64) -> SweepPlan {
    SweepPlan::scheduled(
        now,
        Duration::from_secs(60),
        compat_every_minutes,
        Duration::from_secs(1),
        far(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_burst_due_in_one_second_lands_on_every_shard_and_fires_exactly_once() {
    let moto = MotoStack::new("tb").await;
    let store = moto.store();
    let fire_at = 2_000_000.5;
    arm(&store, "burst", 500, fire_at).await;

    let rows = store
        .client()
        .scan()
        .table_name(store.tables().timers())
        .send()
        .await
        .expect("scan");
    let mut per_shard: BTreeMap<String, usize> = BTreeMap::new();
    for item in rows.items() {
        let shard = item["due_shard"].as_s().expect("a shard").clone();
        *per_shard.entry(shard).or_default() += 1;
    }
    assert_eq!(
        per_shard.len(),
        DEFAULT_DUE_SHARDS as usize,
        "{per_shard:?}"
    );
    assert_eq!(per_shard.values().sum::<usize>(), 500);
    assert!(
        per_shard.values().all(|&n| n >= 35),
        "spread: {per_shard:?}"
    );

    let now = fire_at + 0.5;
    let report = sweep(&store, &moto.transport(), || now, tick(now, 0))
        .await
        .expect("sweep");
    assert_eq!(report.fired, 500);
    let messages = drain(&moto.source()).await;
    assert_eq!(messages.len(), 500, "one Timeout per timer, no copy");
    let groups: BTreeSet<&str> = messages.iter().map(|m| m.group_id.as_str()).collect();
    assert_eq!(groups.len(), 500, "each execution's Timeout once");
    assert!(messages.iter().all(|m| m.body.contains("\"Timeout\"")));

    let again = sweep(&store, &moto.transport(), || now, tick(now, 0))
        .await
        .expect("sweep");
    assert_eq!((again.fired, again.looks), (0, 1), "nothing left to fire");
    assert!(drain(&moto.source()).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn an_idle_sweeper_returns_at_once_after_one_query_per_shard() {
    let moto = MotoStack::new("ti").await;
    let (store, wire) = moto.counted_store();
    arm(&store, "idle", 50, 5_000_000.0).await; // armed, due long after the window
    wire.take();
    // minute 33333 of the epoch: not one of the compatibility Scan's (every 5th)
    let now = 2_000_000.0;
    let started = Instant::now();
    let report = sweep(&store, &moto.transport(), || now, tick(now, 5))
        .await
        .expect("sweep");
    let took = started.elapsed();
    let (requests, _) = take(&wire);
    assert_eq!((report.looks, report.polls, report.fired), (1, 0, 0));
    assert_eq!(
        requests,
        BTreeMap::from([("Query".to_string(), DEFAULT_DUE_SHARDS as usize)]),
        "one Limit-1 Query per shard, nothing else"
    );
    assert!(took < Duration::from_secs(2), "returned at once: {took:?}");
    println!("idle sweeper invocation: {took:?}, {requests:?}");

    // on a compatibility minute the tick adds one Scan (harel Python's timers)
    let now = 33_335.0 * 60.0;
    let report = sweep(&store, &moto.transport(), || now, tick(now, 5))
        .await
        .expect("sweep");
    assert_eq!(report.compat_scans, 1);
    let (requests, _) = take(&wire);
    assert_eq!(
        requests,
        BTreeMap::from([
            ("Query".to_string(), DEFAULT_DUE_SHARDS as usize),
            ("Scan".to_string(), 1)
        ])
    );
}

/// A tick with a timer due reads the index in one pass per look: the look that finds it
/// due also fires it (no separate look and poll), and one more look finds nothing left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_busy_tick_fires_from_its_look_and_looks_once_more() {
    let moto = MotoStack::new("tp").await;
    let (store, wire) = moto.counted_store();
    arm(&store, "busy", 1, 1_999_990.0).await;
    arm(&store, "later", 3, 5_000_000.0).await;
    wire.take();
    let now = 2_000_000.0; // not a compatibility minute
    let report = sweep(&store, &moto.transport(), || now, tick(now, 5))
        .await
        .expect("sweep");
    let (requests, read) = take(&wire);
    assert_eq!((report.looks, report.polls, report.fired), (2, 1, 1));
    let shards = DEFAULT_DUE_SHARDS as usize;
    assert_eq!(
        requests,
        BTreeMap::from([
            ("Query".to_string(), 2 * shards),
            ("DeleteItem".to_string(), 1)
        ]),
        "two looks (a Query per shard each) and the fired timer's delete"
    );
    assert!(read <= 2, "rows read: the due one (and none twice): {read}");
    assert_eq!(drain(&moto.source()).await.len(), 1, "its Timeout, once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_poll_reads_the_timers_due_not_the_timers_stored() {
    let moto = MotoStack::new("tr").await;
    let (store, wire) = moto.counted_store();
    arm(&store, "later", 300, 5_000_000.0).await;
    arm(&store, "due", 5, 1_000_000.0).await;
    wire.take();
    let due = store.due_timers(1_000_001.0).await.expect("due");
    let (requests, read) = take(&wire);
    assert_eq!(due.len(), 5);
    assert_eq!(read, 5, "items read through the index = timers due");
    assert_eq!(requests["Query"], DEFAULT_DUE_SHARDS as usize);
    // the compatibility Scan (harel's due_timers too) reads the whole table for its answer
    let legacy = store.legacy_due_timers(1_000_001.0).await.expect("legacy");
    let (_, read) = take(&wire);
    assert!(legacy.is_empty(), "our rows are all indexed");
    assert_eq!(read, 305, "a Scan reads every timer stored");
}

/// Plays Lambda's asynchronous Invoke: the woken sweeper runs in a task of its own.
struct SpawnSweeper {
    store: Arc<DynamoDbStore>,
    transport: Arc<SqsTransport>,
    wakes: Mutex<Vec<f64>>,
}

impl Waker for SpawnSweeper {
    fn wake(&self, until: f64) -> WakeFuture<'_> {
        self.wakes.lock().expect("wakes").push(until);
        let (store, transport) = (self.store.clone(), self.transport.clone());
        tokio::spawn(async move {
            let plan = SweepPlan::woken(
                SystemClock.now(),
                until,
                Duration::from_secs(60),
                Duration::from_secs(1),
                far(),
            );
            sweep(&*store, &*transport, || SystemClock.now(), plan)
                .await
                .expect("woken sweep")
        });
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_timer_armed_while_the_sweeper_is_idle_fires_about_a_second_after_its_time() {
    let moto = MotoStack::new("tw").await;
    let store = Arc::new(moto.store());
    // the tick before: nothing armed, it returns at once
    let now = SystemClock.now();
    let before = sweep(
        &*store,
        &moto.transport(),
        || SystemClock.now(),
        tick(now, 0),
    )
    .await
    .expect("tick");
    assert_eq!((before.looks, before.fired), (1, 0));

    let waker = Arc::new(SpawnSweeper {
        store: store.clone(),
        transport: Arc::new(moto.transport()),
        wakes: Mutex::new(Vec::new()),
    });
    let app = app();
    let driver = Driver::new(app.machines, app.actions);
    let worker = Arc::new(
        Worker::new(
            moto.store(),
            moto.transport(),
            driver,
            None::<harel_idempotency::Idempotency<aws_sdk_dynamodb::Client>>,
            moto.config(&[]),
        )
        .with_waker(waker.clone()),
    );
    let source = moto.source();
    send(
        &source,
        "wake-1",
        create_body("Flow", Default::default(), None),
    )
    .await;
    send(&source, "wake-1", Event::new("Go").to_json()).await; // Waiting: timeout 5
    pump(&source, &worker).await;
    let exe = worker
        .store
        .load("wake-1")
        .await
        .expect("load")
        .expect("exists");
    assert_eq!(exe.active_path.as_deref(), Some("Waiting"));
    assert_eq!(waker.wakes.lock().expect("wakes").len(), 1, "one wake");

    let deadline = Instant::now() + Duration::from_secs(20);
    let (message, received_at) = loop {
        let got = source
            .receive(1, Duration::from_secs(1), Duration::from_secs(60))
            .await
            .expect("receive");
        if let Some(m) = got.into_iter().next() {
            break (m, SystemClock.now());
        }
        assert!(Instant::now() < deadline, "the Timeout never came");
    };
    let event: Value = serde_json::from_str(&message.body).expect("an event");
    assert_eq!(event["kind"], "Timeout");
    let fire_at = event["data"]["fire_at"].as_f64().expect("fire_at");
    let lag = received_at - fire_at;
    println!("woken sweeper: the Timeout was on the queue {lag:.3} s after its time");
    assert!((0.0..2.0).contains(&lag), "lag {lag:.3} s");
}
