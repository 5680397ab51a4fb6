//! The store's cost per kind of step, side by side with harel Python's `DynamoDBStore` doing
//! the same steps in the same run: requests, and capacity units computed from the item sizes
//! on the wire (moto reports placeholder capacities, so they are not used). Both sides are
//! recorded at the HTTP level (here the wire recorder, `harel_testwire::Recorder`; in Python
//! botocore's event hooks), and one estimator prices both.
//!
//!     scripts/bench-store.sh      (runs this under scripts/with-moto.sh)

use std::collections::HashMap;

use harel_dynamodb::DynamoDbStore;
use harel_model::{Event, Execution, Object, Status};
use harel_store::prelude::*;
use harel_store::{Commit, Spawn, TimerOp};
use harel_testwire::units::item_size;
use harel_testwire::Recorder;
use serde_json::{json, Value};

#[derive(Clone, Debug)]
struct Rec {
    step: String,
    op: String,
    request: Value,
    response: Option<Value>,
}

/// The recorded calls as the estimator reads them (the Python side prints the same).
fn recs(recorder: &Recorder) -> Vec<Rec> {
    recorder
        .take()
        .calls
        .into_iter()
        .map(|c| Rec {
            step: c.step,
            op: c.operation,
            request: c.request.unwrap_or(Value::Null),
            response: c.response,
        })
        .collect()
}

// ---- pricing: DynamoDB's capacity rules over the typed items on the wire (item sizes by
// harel_testwire::units, the one sizing every test and benchmark uses) ----

fn units(size: usize, per: usize) -> f64 {
    size.div_ceil(per).max(1) as f64
}

fn consistent_factor(req: &Value) -> f64 {
    if req["ConsistentRead"].as_bool() == Some(true) {
        1.0
    } else {
        0.5
    }
}

/// (WCU, RCU) of one request. Deletes of items whose size the wire doesn't show, and reads
/// with a projection, are priced at their minimum (a lower bound, the same for both sides).
fn price(rec: &Rec) -> (f64, f64) {
    let req = &rec.request;
    let resp = rec.response.clone().unwrap_or(Value::Null);
    match rec.op.as_str() {
        "PutItem" => (units(item_size(&req["Item"]), 1024), 0.0),
        "DeleteItem" | "UpdateItem" => (1.0, 0.0),
        "TransactWriteItems" => {
            let w = req["TransactItems"]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .map(|t| match t.get("Put") {
                            Some(p) => 2.0 * units(item_size(&p["Item"]), 1024),
                            None => 2.0,
                        })
                        .sum()
                })
                .unwrap_or(0.0);
            (w, 0.0)
        }
        "BatchWriteItem" => {
            let w = req["RequestItems"]
                .as_object()
                .map(|tables| {
                    tables
                        .values()
                        .flat_map(|writes| writes.as_array().cloned().unwrap_or_default())
                        .map(|w| match w.get("PutRequest") {
                            Some(p) => units(item_size(&p["Item"]), 1024),
                            None => 1.0,
                        })
                        .sum()
                })
                .unwrap_or(0.0);
            (w, 0.0)
        }
        "GetItem" => (
            0.0,
            units(item_size(&resp["Item"]), 4096) * consistent_factor(req),
        ),
        "BatchGetItem" => {
            let mut r = 0.0;
            if let Some(tables) = req["RequestItems"].as_object() {
                for (table, ka) in tables {
                    let factor = consistent_factor(ka);
                    let asked = ka["Keys"].as_array().map_or(0, Vec::len);
                    let got = resp["Responses"][table]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    r += got
                        .iter()
                        .map(|i| units(item_size(i), 4096) * factor)
                        .sum::<f64>();
                    r += asked.saturating_sub(got.len()) as f64 * factor;
                }
            }
            (0.0, r)
        }
        "Query" | "Scan" => {
            let total: usize = resp["Items"]
                .as_array()
                .map(|items| items.iter().map(item_size).sum())
                .unwrap_or(0);
            (0.0, units(total, 4096) * consistent_factor(req))
        }
        _ => (0.0, 0.0),
    }
}

#[derive(Default, Clone)]
struct Cost {
    requests: usize,
    wcu: f64,
    rcu: f64,
    ops: Vec<String>,
}

fn tally(records: &[Rec]) -> (Vec<String>, HashMap<String, Cost>) {
    let mut order = Vec::new();
    let mut by_step: HashMap<String, Cost> = HashMap::new();
    for r in records.iter().filter(|r| r.step != "setup") {
        if !by_step.contains_key(&r.step) {
            order.push(r.step.clone());
        }
        let c = by_step.entry(r.step.clone()).or_default();
        let (w, rd) = price(r);
        c.requests += 1;
        c.wcu += w;
        c.rcu += rd;
        c.ops.push(r.op.clone());
    }
    (order, by_step)
}

// ---- the steps, as the Python side runs them ----

fn obj(v: Value) -> Object {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("literal objects"),
    }
}

fn bench_exe() -> Execution {
    let mut e = Execution::new("bench").with_id("bench");
    e.status = Status::Running;
    e.active_path = Some("A".into());
    e.context = obj(json!({"n": 1, "pad": "x".repeat(300)}));
    e
}

async fn step(
    store: &DynamoDbStore,
    rec: &Recorder,
    name: &str,
    event_id: &str,
    mut commit: Commit,
) {
    rec.step(name);
    let (exe, done) = store
        .load_for_event("bench", event_id)
        .await
        .expect("load_for_event");
    assert!(!done);
    let mut exe = exe.expect("the bench execution exists");
    commit.processed_event_id = Some(event_id.into());
    store.commit(&mut exe, commit).await.expect("commit");
}

async fn run_rust(endpoint: &str, prefix: &str, consistent: bool) -> Vec<Rec> {
    let (client, rec) = recording_client(endpoint).await;
    let store = DynamoDbStore::new(client.clone(), prefix)
        .expect("prefix")
        .with_consistent_reads(consistent);
    store.ensure_tables().await.expect("tables");

    rec.step("create");
    let mut exe = bench_exe();
    let c = Commit {
        emits: vec![(Some("bench".into()), Event::new("Start"))],
        ..Commit::default()
    };
    store.commit(&mut exe, c).await.expect("create");
    step(&store, &rec, "state-only event", "ev1", Commit::default()).await;
    let ping = Event::new("Ping").with_data(obj(json!({"k": 1})));
    step(
        &store,
        &rec,
        "event + 1 emit",
        "ev2",
        Commit {
            emits: vec![(Some("other".into()), ping)],
            ..Commit::default()
        },
    )
    .await;
    let timer = |path: &str, fire_at| TimerOp::Schedule {
        path: path.into(),
        fire_at,
    };
    step(
        &store,
        &rec,
        "event + timer",
        "ev3",
        Commit {
            timers: vec![timer("A", 1_700_000_000.5)],
            ..Commit::default()
        },
    )
    .await;
    let spawn = |c: &str, r: &str| Spawn {
        child_id: c.into(),
        root_path: r.into(),
        context: obj(json!({"n": 1})),
    };
    step(
        &store,
        &rec,
        "orthogonal fork (2 spawns)",
        "ev4",
        Commit {
            spawns: vec![spawn("bench:R1:1", "R1"), spawn("bench:R2:1", "R2")],
            ..Commit::default()
        },
    )
    .await;
    let trace = obj(
        json!({"event_kind": "Tick", "event_data": {}, "from_path": "A", "to_path": "A", "actions": [],
        "context_out": {"n": 1, "pad": "x".repeat(300)}, "timestamp": 1_700_000_000.5}),
    );
    step(
        &store,
        &rec,
        "event, trace on",
        "ev5",
        Commit {
            trace: Some(trace.clone()),
            ..Commit::default()
        },
    )
    .await;
    step(
        &store,
        &rec,
        "event, trace on (2nd)",
        "ev6",
        Commit {
            trace: Some(trace.clone()),
            ..Commit::default()
        },
    )
    .await;
    step(
        &store,
        &rec,
        "emit + timer + trace",
        "ev7",
        Commit {
            emits: vec![(Some("other".into()), Event::new("Ping"))],
            timers: vec![timer("B", 1_700_000_001.5)],
            trace: Some(trace),
            ..Commit::default()
        },
    )
    .await;
    rec.step("setup");
    let mut stale = store.load("bench").await.expect("load").expect("present");
    stale.version -= 1;
    rec.step("stale commit (CAS miss)");
    assert!(store
        .commit(&mut stale, Commit::default())
        .await
        .is_err_and(|e| e.is_conflict()));
    run_runner(&client, prefix, consistent, &rec).await;
    recs(&rec)
}

/// Status-change events on (`with_events`): what the commit adds to a step that changes the
/// status, and what the relay spends to put them (`publish_events`: a Scan of the pending
/// rows, `PutEvents` 10 at a time, one BatchWriteItem to acknowledge each request's).
/// `PutEvents` is not on DynamoDB's wire: the bus counts it. Returns the records and, per
/// relay step, (events put, PutEvents requests).
async fn run_events(endpoint: &str, prefix: &str) -> (Vec<Rec>, Vec<(String, usize, usize)>) {
    let (client, rec) = recording_client(endpoint).await;
    let store = DynamoDbStore::new(client, prefix)
        .expect("prefix")
        .with_events(harel_store::EventsConfig::default());
    store.ensure_tables().await.expect("tables");
    let bus = harel_runtime::MemoryBus::new();
    let deadline = || std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut puts = Vec::new();

    rec.step("events on: create (a status change)");
    let mut exe = bench_exe();
    exe.version = 0;
    let c = Commit {
        emits: vec![(Some("bench".into()), Event::new("Start"))],
        ..Commit::default()
    };
    store.commit(&mut exe, c).await.expect("create");
    step(
        &store,
        &rec,
        "events on: state-only event (no change)",
        "ev1",
        Commit::default(),
    )
    .await;
    rec.step("events on: finishing event (a status change)");
    let (exe, _) = store.load_for_event("bench", "ev2").await.expect("load");
    let mut exe = exe.expect("present");
    exe.status = Status::Done;
    exe.outcome = Some("success".into());
    let c = Commit {
        processed_event_id: Some("ev2".into()),
        ..Commit::default()
    };
    store.commit(&mut exe, c).await.expect("finish");
    for (name, n) in [
        ("events on: relay puts 2 events", 0),
        ("events on: relay puts 20 events", 20),
    ] {
        rec.step("setup");
        for i in 0..n {
            let mut other = bench_exe().with_id(format!("bench-{i}"));
            other.version = 0;
            store
                .commit(&mut other, Commit::default())
                .await
                .expect("create");
        }
        rec.step(name);
        let report = harel_runtime::publish_events(&store, &bus, deadline())
            .await
            .expect("publish");
        puts.push((name.to_string(), report.put, report.requests));
    }
    let records = recs(&rec);
    (records, puts)
}

/// A DynamoDB client whose every request and answer is recorded, under the current step.
async fn recording_client(endpoint: &str) -> (aws_sdk_dynamodb::Client, Recorder) {
    let rec = Recorder::new().with_bodies();
    rec.step("setup");
    let client = harel_benches::recorded_dynamodb(endpoint, &rec).await;
    (client, rec)
}

/// The embedded runner (`DurableRunner`, what `harel run --store dynamodb` drives) over the
/// same tables: whole steps, the relay's look at the outbox and the spawns included.
async fn run_runner(
    client: &aws_sdk_dynamodb::Client,
    prefix: &str,
    consistent: bool,
    rec: &Recorder,
) {
    // tables of its own: the relay's look at the outbox must not meet the store steps' entries
    rec.step("setup");
    let store = DynamoDbStore::new(client.clone(), &format!("{prefix}r"))
        .expect("prefix")
        .with_consistent_reads(consistent);
    store.ensure_tables().await.expect("tables");
    let machine = concat!(env!("CARGO_MANIFEST_DIR"), "/py/bench_runner.stm");
    let defn = harel_lang::load_file(std::path::Path::new(machine), Some("BenchRun"))
        .expect("bench_runner.stm loads");
    let runner = harel_runtime::DurableRunner::new(store, [defn]);
    // a version's first create also keeps its definitions item (once per version and stack);
    // every later create, from any process, finds it kept
    rec.step("runner: first create of a version");
    runner
        .create("BenchRun", None, Some("run0"))
        .await
        .expect("first create");
    rec.step("runner: create");
    runner
        .create("BenchRun", None, Some("run1"))
        .await
        .expect("create");
    rec.step("runner: state-only event");
    runner.process("run1", &Event::new("Go")).await.expect("Go");
    rec.step("runner: event + timer");
    let exe = runner
        .process("run1", &Event::new("Wait"))
        .await
        .expect("Wait");
    assert_eq!(exe.active_path.as_deref(), Some("C"));
}

fn run_python(endpoint: &str, prefix: &str) -> Vec<Rec> {
    let mut records = run_python_script("bench_harel.py", endpoint, prefix);
    records.extend(run_python_script(
        "bench_harel_runner.py",
        endpoint,
        &format!("{prefix}r"),
    ));
    records
}

fn run_python_script(name: &str, endpoint: &str, prefix: &str) -> Vec<Rec> {
    let python = std::env::var("HAREL_PYTHON").expect("HAREL_PYTHON (set by scripts/with-moto.sh)");
    let script = format!("{}/py/{name}", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(python)
        .args([script.as_str(), endpoint, prefix])
        .output()
        .expect("harel Python runs");
    assert!(
        out.status.success(),
        "{name} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            Rec {
                step: v["step"].as_str().unwrap_or("").to_string(),
                op: v["op"].as_str().unwrap_or("").to_string(),
                request: v["request"].clone(),
                response: v.get("response").cloned(),
            }
        })
        .collect()
}

fn ratio(ours: f64, theirs: f64) -> String {
    if theirs == 0.0 {
        "-".into()
    } else {
        format!("{:.2}", ours / theirs)
    }
}

/// On-demand price weight: a write request unit costs 5 read request units
/// ($0.625 vs $0.125 per million, us-east-1).
fn dollars(c: &Cost) -> f64 {
    5.0 * c.wcu + c.rcu
}

#[tokio::main]
async fn main() {
    let endpoint = std::env::var("AWS_ENDPOINT_URL")
        .expect("run under scripts/with-moto.sh (AWS_ENDPOINT_URL is not set)");
    let tag = &uuid::Uuid::new_v4().simple().to_string()[..12];
    let ours = run_rust(&endpoint, &format!("brs{tag}"), true).await;
    let eventual = run_rust(&endpoint, &format!("bre{tag}"), false).await;
    let theirs = run_python(&endpoint, &format!("bpy{tag}"));
    let (order, ours) = tally(&ours);
    let (_, eventual) = tally(&eventual);
    let (_, theirs) = tally(&theirs);
    println!(
        "Requests and capacity units per step (WCU/RCU computed from the item sizes on the wire)."
    );
    println!("ours = default (strongly consistent reads); ours-ev = with_consistent_reads(false).");
    println!("cost = 5 x WCU + RCU (on-demand prices); ratios are ours / harel.");
    println!();
    println!("| step | requests harel | ours | WCU harel | ours | RCU harel | ours | ours-ev | requests ratio | cost ratio | cost ratio ours-ev |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let (mut tt, mut to, mut te) = (Cost::default(), Cost::default(), Cost::default());
    for step in &order {
        let o = ours.get(step).cloned().unwrap_or_default();
        let e = eventual.get(step).cloned().unwrap_or_default();
        let t = theirs.get(step).cloned().unwrap_or_default();
        println!(
            "| {step} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            t.requests,
            o.requests,
            t.wcu,
            o.wcu,
            t.rcu,
            o.rcu,
            e.rcu,
            ratio(o.requests as f64, t.requests as f64),
            ratio(dollars(&o), dollars(&t)),
            ratio(dollars(&e), dollars(&t)),
        );
        for (acc, c) in [(&mut tt, &t), (&mut to, &o), (&mut te, &e)] {
            acc.requests += c.requests;
            acc.wcu += c.wcu;
            acc.rcu += c.rcu;
        }
    }
    println!(
        "| **total** | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        tt.requests,
        to.requests,
        tt.wcu,
        to.wcu,
        tt.rcu,
        to.rcu,
        te.rcu,
        ratio(to.requests as f64, tt.requests as f64),
        ratio(dollars(&to), dollars(&tt)),
        ratio(dollars(&te), dollars(&tt)),
    );
    println!();
    for step in &order {
        let o = ours.get(step).cloned().unwrap_or_default();
        let t = theirs.get(step).cloned().unwrap_or_default();
        println!(
            "{step}: harel [{}] / ours [{}]",
            t.ops.join(", "),
            o.ops.join(", ")
        );
    }
    print_events(&endpoint, &format!("bev{tag}"), &ours).await;
}

/// The events table: a status change's cost beside the same step with events off.
async fn print_events(endpoint: &str, prefix: &str, off: &HashMap<String, Cost>) {
    let (records, puts) = run_events(endpoint, prefix).await;
    let (order, on) = tally(&records);
    println!();
    println!("Status-change events on (`HAREL_EVENT_BUS` set): each step beside the same step with events off.");
    println!("PutEvents requests are counted by the bus (EventBridge's, not DynamoDB's).");
    println!();
    println!("| step | requests | WCU | RCU | events off: requests | WCU | RCU | events put | PutEvents requests |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for step in &order {
        let c = on.get(step).cloned().unwrap_or_default();
        let same = match step.as_str() {
            "events on: create (a status change)" => off.get("create"),
            "events on: state-only event (no change)"
            | "events on: finishing event (a status change)" => off.get("state-only event"),
            _ => None,
        };
        let (r, w, rd) = same.map_or(("-".into(), "-".into(), "-".into()), |o| {
            (o.requests.to_string(), o.wcu.to_string(), o.rcu.to_string())
        });
        let (put, requests) = puts
            .iter()
            .find(|(name, _, _)| name == step)
            .map_or(("-".into(), "-".into()), |(_, p, q)| {
                (p.to_string(), q.to_string())
            });
        println!(
            "| {step} | {} | {} | {} | {r} | {w} | {rd} | {put} | {requests} |",
            c.requests, c.wcu, c.rcu
        );
    }
    println!();
    for step in &order {
        let c = on.get(step).cloned().unwrap_or_default();
        println!("{step}: [{}]", c.ops.join(", "));
    }
}
