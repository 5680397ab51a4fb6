//! What a page of `harel console` costs: the requests it makes to AWS and the bytes it
//! serves, for the first page and an execution page (and the others), on a moto stack of N
//! executions run through the worker, for each N given (default 20 and 400): what a page
//! reads must not grow with the table.
//!
//!     scripts/bench-console.sh [N ...]      (runs this under scripts/with-moto.sh)
//!
//! The console runs as the operator runs it (the `harel` binary beside this example, or
//! `HAREL_BIN`), its AWS endpoint pointed at a counting proxy in front of moto: every
//! request is counted on the wire with its operation (`X-Amz-Target`, e.g.
//! `DynamoDB_20120810.Query`, `AmazonSQS.ReceiveMessage`).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::response::Response;
use harel_model::{Event, Object};
use harel_runtime::Driver;
use harel_testkit::{pump, send, MotoStack};

/// Requests seen, by operation.
type Seen = Arc<Mutex<BTreeMap<String, usize>>>;

#[derive(Clone)]
struct Proxy {
    upstream: String,
    http: reqwest::Client,
    seen: Seen,
}

/// Forwards one request to moto as it came, counting it.
async fn forward(State(p): State<Proxy>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let op = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .unwrap_or_else(|| format!("{} {}", parts.method, parts.uri.path()));
    *p.seen.lock().expect("the counts").entry(op).or_default() += 1;
    let body = to_bytes(body, usize::MAX).await.expect("the request body");
    let url = format!(
        "{}{}",
        p.upstream,
        parts
            .uri
            .path_and_query()
            .map(|q| q.as_str())
            .unwrap_or("/")
    );
    let mut out = p.http.request(parts.method, url).body(body);
    for (name, value) in &parts.headers {
        if name != "host" && name != "content-length" {
            out = out.header(name, value);
        }
    }
    let answer = out.send().await.expect("moto answers");
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if name != "content-length" && name != "transfer-encoding" {
            response = response.header(name, value);
        }
    }
    let bytes = answer.bytes().await.expect("moto's body");
    response.body(Body::from(bytes)).expect("a response")
}

async fn start_proxy(upstream: String) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let proxy = Proxy {
        upstream,
        http: reqwest::Client::new(),
        seen: Arc::clone(&seen),
    };
    let app = axum::Router::new().fallback(forward).with_state(proxy);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

struct Console(Child);

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn harel_bin() -> std::path::PathBuf {
    if let Some(bin) = std::env::var_os("HAREL_BIN") {
        return bin.into();
    }
    // target/<profile>/examples/bench_console -> target/<profile>/harel
    let me = std::env::current_exe().expect("this example's path");
    me.parent()
        .and_then(|p| p.parent())
        .expect("target/<profile>")
        .join("harel")
}

/// N Order executions (every fourth one placed, so a timer is armed), one Fulfilment with
/// its two regions, through the worker.
async fn stack(n: usize) -> MotoStack {
    let moto = MotoStack::new("bcon").await;
    let worker = moto.worker(
        Driver::new(
            harel_app::machines::definitions().expect("app machines"),
            harel_app::actions::actions(),
        ),
        &[],
    );
    let source = moto.source();
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        for i in chunk {
            let id = format!("ord-{i}");
            send(
                &source,
                &id,
                harel_sqs::create_body("Order", Object::new(), Some(&id)),
            )
            .await;
            if i % 4 == 0 {
                send(&source, &id, Event::new("PlaceOrder").to_json()).await;
            }
        }
        pump(&source, &worker).await;
    }
    send(
        &source,
        "ful-1",
        harel_sqs::create_body("Fulfilment", Object::new(), Some("ful-1")),
    )
    .await;
    pump(&source, &worker).await;
    moto
}

#[tokio::main]
async fn main() {
    let sizes: Vec<usize> = match std::env::args().skip(1).collect::<Vec<_>>() {
        args if args.is_empty() => vec![20, 400],
        args => args
            .iter()
            .map(|a| a.parse().expect("N is a number of executions"))
            .collect(),
    };
    let upstream = std::env::var("AWS_ENDPOINT_URL")
        .expect("run under scripts/with-moto.sh (AWS_ENDPOINT_URL is not set)");
    let (proxy, seen) = start_proxy(upstream).await;
    let http = reqwest::Client::new();
    let machines = concat!(env!("CARGO_MANIFEST_DIR"), "/../functions/app/machines");
    let pages = [
        ("/", "the executions (first page)"),
        ("/executions/ord-0", "an execution (a timer armed)"),
        ("/executions/ful-1", "an execution with 2 regions"),
        ("/executions/ord-0/live", "its live refresh (every 2 s)"),
        ("/?machine=Order&status=RUNNING", "the executions, filtered"),
        ("/machines", "the machines"),
        ("/dead-letters", "the dead letters (none)"),
    ];
    println!("| executions in the table | page | requests to AWS | by operation | bytes served |");
    println!("|---:|---|---:|---|---:|");
    for n in sizes {
        let moto = stack(n).await;
        let mut console = Command::new(harel_bin())
            .args(["console", "--port", "0", "--machines", machines])
            .args(["--table-prefix", &moto.prefix])
            .args(["--queue-url", &moto.queue, "--dlq-url", &moto.dlq])
            .env("AWS_ENDPOINT_URL", &proxy)
            .env_remove("HAREL_STACK")
            .stdout(Stdio::piped())
            .spawn()
            .expect("harel console starts");
        let mut first = String::new();
        BufReader::new(console.stdout.take().expect("its stdout"))
            .read_line(&mut first)
            .expect("its address");
        let _console = Console(console);
        let base = first
            .trim()
            .strip_prefix("harel console on ")
            .expect("the console's address")
            .trim_end_matches('/')
            .to_string();
        for (path, what) in pages {
            seen.lock().expect("the counts").clear();
            let r = http
                .get(format!("{base}{path}"))
                .send()
                .await
                .expect("the console answers");
            assert!(r.status().is_success(), "{path}: {}", r.status());
            let bytes = r.bytes().await.expect("the page").len();
            let counts = seen.lock().expect("the counts").clone();
            let total: usize = counts.values().sum();
            let by: Vec<String> = counts
                .iter()
                .map(|(op, k)| {
                    let short = op.rsplit('.').next().unwrap_or(op);
                    format!("{short} {k}")
                })
                .collect();
            println!(
                "| {n} | `{path}` {what} | {total} | {} | {bytes} |",
                by.join(", ")
            );
        }
    }
    // the two assets, once per browser (cached after)
    let css = include_str!("../src/commands/console/console.css").len();
    let js = include_str!("../src/commands/console/console.js").len();
    println!("\nassets, once per browser: console.css {css} bytes, console.js {js} bytes");
}
