//! Scheduled starts through the real `sweeper` binary on moto (`scripts/with-moto.sh cargo
//! test -p harel-sweeper --test schedules`): the binary runs under a Lambda Runtime API
//! emulator (this file's, on a loopback port: `next` hands it an event, `response` takes its
//! answer) and talks to moto through a counting proxy (this file's too), so the requests of
//! each tick are counted off the wire. The worker then processes the create, and harel
//! Python's DynamoDBStore works on the same tables afterwards. A bad schedules file stops
//! the binary's cold start with the file, the entry and the reason.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use harel_model::Status;
use harel_store::prelude::*;
use harel_testkit::actions::read_request;
use harel_testkit::{pump, MotoStack};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Mutex as AsyncMutex};

/// Requests by "Operation table-or-queue", as the proxy forwarded them.
type Counts = Arc<Mutex<BTreeMap<String, usize>>>;

/// A proxy in front of moto counting each request by its `X-Amz-Target` operation and the
/// table (or queue) its body names; one request per connection.
async fn counting_proxy(moto: String) -> (String, Counts) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("addr");
    let counts: Counts = Arc::default();
    let upstream = moto
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let c = counts.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else {
                return;
            };
            let (c, upstream) = (c.clone(), upstream.clone());
            tokio::spawn(async move {
                if let Some(req) = read_request(&mut client).await {
                    let op = req
                        .header("x-amz-target")
                        .and_then(|t| t.rsplit('.').next())
                        .unwrap_or("?")
                        .to_string();
                    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
                    let target = body["TableName"]
                        .as_str()
                        .map(String::from)
                        .or_else(|| {
                            body["RequestItems"]
                                .as_object()
                                .map(|o| o.keys().cloned().collect::<Vec<_>>().join(","))
                        })
                        .or_else(|| {
                            body["QueueUrl"]
                                .as_str()
                                .and_then(|u| u.rsplit('/').next())
                                .map(String::from)
                        })
                        .unwrap_or_default();
                    *c.lock()
                        .unwrap()
                        .entry(format!("{op} {target}"))
                        .or_default() += 1;
                    let mut head = format!("{} {} HTTP/1.1\r\n", req.method, req.path);
                    for (n, v) in &req.headers {
                        if n != "connection" {
                            head.push_str(&format!("{n}: {v}\r\n"));
                        }
                    }
                    head.push_str("connection: close\r\n\r\n");
                    let mut up = TcpStream::connect(&upstream).await.expect("moto");
                    up.write_all(head.as_bytes()).await.expect("forward");
                    up.write_all(&req.body).await.expect("forward");
                    let mut answer = Vec::new();
                    up.read_to_end(&mut answer).await.expect("moto answers");
                    // moto's answer said `connection: close`: the client opens a new one
                    let _ = client.write_all(&answer).await;
                }
            });
        }
    });
    (format!("http://{addr}"), counts)
}

fn take(counts: &Counts) -> BTreeMap<String, usize> {
    std::mem::take(&mut *counts.lock().unwrap())
}

/// The Lambda Runtime API, enough for one function process: each `invoke` is handed out on
/// the next `GET .../invocation/next` and answered by its `POST .../response` (or `/error`).
struct RuntimeApi {
    addr: String,
    events: mpsc::UnboundedSender<Value>,
    answers: AsyncMutex<mpsc::UnboundedReceiver<Result<Value, String>>>,
}

impl RuntimeApi {
    async fn start() -> RuntimeApi {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let addr = listener.local_addr().expect("addr").to_string();
        let (events, rx) = mpsc::unbounded_channel::<Value>();
        let (answer_tx, answers) = mpsc::unbounded_channel();
        let rx = Arc::new(AsyncMutex::new(rx));
        tokio::spawn(async move {
            let mut n = 0u64;
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let (rx, answer_tx) = (rx.clone(), answer_tx.clone());
                n += 1;
                let request_id = format!("req-{n}");
                tokio::spawn(async move {
                    while let Some(req) = read_request(&mut socket).await {
                        let reply = if req.path.ends_with("/invocation/next") {
                            let Some(event) = rx.lock().await.recv().await else {
                                return;
                            };
                            let body = event.to_string();
                            let deadline = std::time::SystemTime::now()
                                .duration_since(std::time::UNIX_EPOCH)
                                .unwrap()
                                .as_millis()
                                + 60_000;
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nlambda-runtime-aws-request-id: {request_id}\r\nlambda-runtime-deadline-ms: {deadline}\r\nlambda-runtime-invoked-function-arn: arn:aws:lambda:us-east-1:123456789012:function:sweeper\r\ncontent-length: {}\r\n\r\n{body}",
                                body.len()
                            )
                        } else {
                            let body = String::from_utf8_lossy(&req.body).to_string();
                            let answer = if req.path.ends_with("/response") {
                                Ok(serde_json::from_str(&body).unwrap_or(Value::Null))
                            } else {
                                Err(format!("{} {body}", req.path))
                            };
                            let _ = answer_tx.send(answer);
                            "HTTP/1.1 202 Accepted\r\ncontent-length: 2\r\n\r\n{}".to_string()
                        };
                        if socket.write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        RuntimeApi {
            addr,
            events,
            answers: AsyncMutex::new(answers),
        }
    }

    async fn invoke(&self, event: Value) -> Result<Value, String> {
        self.events.send(event).expect("the emulator runs");
        tokio::time::timeout(Duration::from_secs(60), self.answers.lock().await.recv())
            .await
            .expect("the function answers within a minute")
            .expect("an answer")
    }
}

/// The sweeper process, killed when the test ends.
struct Function(Child);

impl Drop for Function {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sweeper(stack: &MotoStack, endpoint: &str, schedules: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sweeper"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(stack.settings(&[]))
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("HAREL_SCHEDULES_FILE", schedules)
        // no compatibility Scan: the counts are the schedules' and the index's
        .env("HAREL_COMPAT_SWEEP_MINUTES", "0")
        .env("AWS_LAMBDA_FUNCTION_NAME", "sweeper")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_LOG_LEVEL", "warn");
    cmd
}

fn tick_event() -> Value {
    serde_json::from_str(include_str!("../../../events/sweeper-tick.json")).expect("the sample")
}

const SCHEDULES: &str = "\
every-minute:
  machine: Order
  rate: 1 minute
  context: {items: 3}
  overlap: allow
new-year:
  machine: Order
  cron: \"0 3 1 1 *\"
  timezone: Europe/Madrid
";

/// harel Python's DynamoDBStore on the same tables: it loads the scheduled execution, runs
/// one of its own (Order, from examples/) and reserves from the counters table the marks
/// share; prints what it saw.
const HAREL_SIDE: &str = r#"
import json, os, sys
import boto3
from harel.dsl import definition_from_dsl_file
from harel.engine.durable import DurableRunner
from harel.engine.store.dynamodb import DynamoDBStore

prefix, path, scheduled = sys.argv[1:4]
client = boto3.client("dynamodb", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1",
                      aws_access_key_id="test", aws_secret_access_key="test")
store = DynamoDBStore(client, prefix=prefix, create_schema=False)
seen = store.load(scheduled)
defn = definition_from_dsl_file(path, "Order")
runner = DurableRunner(store, {defn.id: defn}, execution="inline")
runner.create(defn.id, execution_id="py-order")
mine = store.load("py-order")
a = store._next_seq("outbox", 1)
b = store._next_seq("outbox", 1)
print(json.dumps({"scheduled": [seen.status.value, seen.definition_id, seen.context.get("items")],
                  "mine": [mine.status.value, mine.definition_id], "seq": b - a}))
"#;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn the_sweeper_binary_starts_a_schedule_once_and_harel_python_still_works() {
    // the ticks below must fall in one minute: start early in one
    let second = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        % 60;
    if second > 40 {
        tokio::time::sleep(Duration::from_secs(61 - second)).await;
    }
    let stack = MotoStack::new("sch").await;
    let dir = std::env::temp_dir().join(format!("harel-schedules-{}", stack.prefix));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let file = dir.join("schedules.yaml");
    std::fs::write(&file, SCHEDULES).expect("the file");
    let (proxy, counts) = counting_proxy(harel_testkit::endpoint()).await;
    let runtime = RuntimeApi::start().await;
    let _function = Function(
        sweeper(&stack, &proxy, &file)
            .env("AWS_LAMBDA_RUNTIME_API", &runtime.addr)
            .stdout(Stdio::null())
            .spawn()
            .expect("the sweeper binary starts"),
    );
    let store = stack.store();
    let table = |suffix: &str| format!("{}_{suffix}", stack.prefix);
    let counters = table("counters");
    let queue = format!("{}-q.fifo", stack.prefix);
    let mut rows: Vec<(&str, BTreeMap<String, usize>)> = Vec::new();

    // the first tick: the current minute's fire of every-minute starts; both marks written
    let first = runtime.invoke(tick_event()).await.expect("the first tick");
    let started = first["started"].as_array().expect("started").clone();
    assert_eq!(started.len(), 1, "{first}");
    let id = started[0].as_str().unwrap().to_string();
    assert!(id.starts_with("every-minute-"), "{id}");
    let c = take(&counts);
    assert_eq!(
        c.get(&format!("BatchGetItem {counters}")),
        Some(&1),
        "{c:?}"
    );
    assert_eq!(c.get(&format!("PutItem {counters}")), Some(&2), "{c:?}");
    assert_eq!(
        c.get(&format!("SendMessageBatch {queue}")),
        Some(&1),
        "{c:?}"
    );
    rows.push(("first tick (2 schedules, 1 due)", c));

    // the same minute again (a retried tick): nothing due, one read
    let again = runtime.invoke(tick_event()).await.expect("a retried tick");
    assert_eq!(again["started"], json!([]), "{again}");
    let c = take(&counts);
    assert_eq!(
        c.get(&format!("BatchGetItem {counters}")),
        Some(&1),
        "{c:?}"
    );
    assert!(
        !c.keys()
            .any(|k| k.starts_with("PutItem") || k.starts_with("Send")),
        "an idle tick writes and sends nothing: {c:?}"
    );
    assert!(!c.keys().any(|k| k.starts_with("Scan")), "{c:?}");
    rows.push(("idle tick", c));

    // the worker processes the create: the execution exists, with the entry's context
    let worker = stack.worker(harel_app::aws::driver().expect("the app's machines"), &[]);
    let handled = pump(&stack.source(), &worker).await;
    assert_eq!(handled.len(), 1, "one create on the queue: {handled:?}");
    let exe = store
        .load(&id)
        .await
        .unwrap()
        .expect("created by the worker");
    assert_eq!(exe.definition_id, "Order");
    assert_eq!(exe.status, Status::Running);
    assert_eq!(exe.context["items"], json!(3));

    // the next minute, as its tick sees it: every-minute's mark a minute back
    let client = aws_sdk_dynamodb::Client::new(&stack.sdk);
    let key = aws_sdk_dynamodb::types::AttributeValue::S("harel:schedule:every-minute".into());
    let mark = client
        .get_item()
        .table_name(&counters)
        .key("id", key.clone())
        .send()
        .await
        .unwrap();
    let through: i64 = mark.item().unwrap()["through"]
        .as_n()
        .unwrap()
        .parse()
        .unwrap();
    client
        .update_item()
        .table_name(&counters)
        .key("id", key)
        .update_expression("SET through = :t")
        .expression_attribute_values(
            ":t",
            aws_sdk_dynamodb::types::AttributeValue::N((through - 60).to_string()),
        )
        .send()
        .await
        .unwrap();
    let next = runtime.invoke(tick_event()).await.expect("the next minute");
    assert_eq!(next["started"].as_array().map(Vec::len), Some(1), "{next}");
    let c = take(&counts);
    assert_eq!(
        c.get(&format!("BatchGetItem {counters}")),
        Some(&1),
        "{c:?}"
    );
    assert_eq!(c.get(&format!("PutItem {counters}")), Some(&1), "{c:?}");
    assert_eq!(
        c.get(&format!("SendMessageBatch {queue}")),
        Some(&1),
        "{c:?}"
    );
    rows.push(("next minute (1 due)", c));
    // the worker sees nothing new (the fire's create was the one already sent, or a newer
    // minute's): at most one more execution, and never a second one with the same id
    pump(&stack.source(), &worker).await;

    println!("\nrequests per tick (the sweeper binary, through the proxy):");
    for (what, c) in &rows {
        let shown: Vec<String> = c
            .iter()
            .map(|(k, n)| format!("{n} {}", k.replace(&stack.prefix, "P")))
            .collect();
        println!("  {what}: {}", shown.join(", "));
    }

    // harel Python on the same tables afterwards
    let order = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/order.stm");
    let out = Command::new(harel_testkit::actions::python())
        .arg("-c")
        .arg(HAREL_SIDE)
        .args([&stack.prefix, order, &id])
        .env("AWS_ENDPOINT_URL", harel_testkit::endpoint())
        .output()
        .expect("harel Python runs");
    assert!(
        out.status.success(),
        "harel Python failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(seen["scheduled"], json!(["RUNNING", "Order", 3]));
    assert_eq!(seen["seq"], json!(1), "the outbox counter beside the marks");
    assert_eq!(seen["mine"], json!(["RUNNING", "Order"]), "{seen}");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_bad_schedules_file_stops_the_cold_start_with_file_entry_and_reason() {
    let stack = MotoStack::new("schbad").await;
    let dir = std::env::temp_dir().join(format!("harel-schedules-{}", stack.prefix));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    for (name, text, needles) in [
        (
            "machine.yaml",
            "nightly:\n  machine: Report\n  cron: \"0 3 * * *\"\n",
            vec!["entry \"nightly\", machine", "unknown machine \"Report\""],
        ),
        (
            "cron.yaml",
            "nightly:\n  machine: Order\n  cron: \"0 3 * *\"\n",
            vec!["entry \"nightly\", cron", "invalid cron expression"],
        ),
        (
            "context.yaml",
            "nightly:\n  machine: Order\n  cron: \"0 3 * * *\"\n  context: {items: many}\n",
            vec!["entry \"nightly\", context", "machine Order refuses it"],
        ),
        (
            "zone.json",
            r#"{"nightly": {"machine": "Order", "cron": "0 3 * * *", "timezone": "Mars/Olympus"}}"#,
            vec!["entry \"nightly\", timezone", "unknown time zone"],
        ),
    ] {
        let file = dir.join(name);
        std::fs::write(&file, text).expect("the file");
        let out = sweeper(&stack, &harel_testkit::endpoint(), &file)
            // no Runtime API: the process must stop before it would ask for an event
            .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
            .output()
            .expect("the sweeper binary runs");
        assert!(!out.status.success(), "{name}: the cold start went on");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let said = format!("schedules file {}", file.display());
        assert!(stderr.contains(&said), "{name}: {stderr}");
        for needle in needles {
            assert!(
                stderr.contains(needle),
                "{name}: {stderr}\n  missing: {needle}"
            );
        }
    }
}
