//! What a remote action adds to a step, against the same action compiled in, in one run
//! (`scripts/bench-remote.sh`): a machine whose every step enters a state running one action
//! (a counter up), driven N steps over the in-memory store three ways: the Rust action, the
//! action served by harel Python's `handler(fn)` over HTTP on loopback, and over Lambda's
//! Invoke API on loopback (the AWS SDK's `Invoke`, `RequestResponse`). Prints a Markdown
//! table: requests and bytes per step, and the step's latency (mean, p50, p95).
//!
//! `cargo run -p harel-remote --example bench_remote -- [STEPS]` (default 300).

use std::time::Instant;

use harel_model::Event;
use harel_remote::{bind, ActionMap, Clients, Format, Secrets};
use harel_runtime::{ActionRegistry, DurableRunner};
use harel_store::MemoryStore;
use harel_testwire::ActionServer;
use serde_json::{json, Value};

const MACHINE: &str = r#"
event Tick {}
bind { count = bench.count }
machine Bench {
  context { n: int = 0 }
  initial A
  state A { on enter count }
  state B { on enter count }
  from A to B on Tick
  from B to A on Tick
}
"#;

struct Row {
    name: &'static str,
    steps: usize,
    requests: u64,
    bytes_sent: u64,
    bytes_received: u64,
    micros: Vec<f64>,
}

async fn drive(registry: ActionRegistry, steps: usize) -> Vec<f64> {
    let defn = harel_lang::load_str(MACHINE, None, "bench.stm").expect("the machine");
    let runner = DurableRunner::new(MemoryStore::new(), [defn]).with_registry(registry);
    let exe = runner.create("Bench", None, None).await.expect("create");
    let mut micros = Vec::with_capacity(steps);
    for _ in 0..steps {
        let started = Instant::now();
        runner
            .process(&exe.id, &Event::new("Tick"))
            .await
            .expect("step");
        micros.push(started.elapsed().as_secs_f64() * 1e6);
    }
    let done = runner.get(&exe.id).await.expect("load").expect("exists");
    assert_eq!(
        done.context["n"],
        json!(steps + 1),
        "every step ran the action once"
    );
    micros
}

async fn remote(name: &'static str, target: String, clients: Clients, steps: usize) -> Row {
    let map = ActionMap::parse(
        &json!({ "bench.count": target }).to_string(),
        Format::Json,
        "bench.json",
    )
    .expect("map");
    let mut registry = ActionRegistry::with_stdlib();
    bind(&mut registry, &map, &clients, |_| None, &Secrets::none()).expect("bound");
    // one warm-up step off the books (the connection, the Python side's first import)
    drive(registry.clone(), 1).await;
    clients.take_stats();
    let micros = drive(registry, steps).await;
    let stats = clients
        .take_stats()
        .remove("bench.count")
        .unwrap_or_default();
    Row {
        name,
        steps,
        requests: stats.calls + stats.retries,
        bytes_sent: stats.bytes_sent,
        bytes_received: stats.bytes_received,
        micros,
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() {
    let steps: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("STEPS is a number"))
        .unwrap_or(300);
    let server = ActionServer::start();
    let mut rows = Vec::new();

    let mut compiled = ActionRegistry::with_stdlib();
    compiled.register_fn("bench.count", |ctx, _e, _i| {
        let n = ctx.context.get("n").and_then(Value::as_i64).unwrap_or(0);
        ctx.context.insert("n".into(), json!(n + 1));
        Ok(Value::Null)
    });
    drive(compiled.clone(), 1).await;
    rows.push(Row {
        name: "compiled-in Rust action",
        steps,
        requests: 0,
        bytes_sent: 0,
        bytes_received: 0,
        micros: drive(compiled, steps).await,
    });
    rows.push(
        remote(
            "remote, HTTP (harel handler)",
            server.http("count"),
            Clients::new(None),
            steps,
        )
        .await,
    );
    let sdk = server.lambda_sdk().await;
    rows.push(
        remote(
            "remote, Lambda Invoke API (harel handler)",
            "lambda:count".to_string(),
            Clients::new(Some(&sdk)),
            steps,
        )
        .await,
    );

    println!("{steps} steps each, one action per step, in-memory store, loopback, debug build\n");
    println!("| action | requests/step | bytes sent/step | bytes received/step | mean ms | p50 ms | p95 ms | added to a step (mean) |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let base = rows[0].micros.iter().sum::<f64>() / rows[0].micros.len() as f64;
    for row in &rows {
        let mut sorted = row.micros.clone();
        sorted.sort_by(f64::total_cmp);
        let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
        let per = |n: u64| n as f64 / row.steps as f64;
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.3} | {:.3} | {:.3} | {} |",
            row.name,
            per(row.requests),
            per(row.bytes_sent),
            per(row.bytes_received),
            mean / 1000.0,
            percentile(&sorted, 0.5) / 1000.0,
            percentile(&sorted, 0.95) / 1000.0,
            if row.requests == 0 {
                "-".to_string()
            } else {
                format!("+{:.3} ms", (mean - base) / 1000.0)
            }
        );
    }
}
