//! What one event costs, in requests and in dollars, through the functions' own wiring next
//! to harel Python's worker, in one run on a moto server. Four workloads of one machine
//! (`py/cost.stm`): a state-only event, an event that arms a timer, an event that forks 10
//! regions (10 child executions), each a batch of its own (a quiet queue); and state-only
//! events ten at a time, one full batch (a busy queue).
//!
//! Ours: the worker as a Lambda invocation runs it (`harel_app::aws::boot_app`, the
//! idempotency layer on Powertools' table included), fed as the SQS event source feeds it
//! (receive up to 10, one invocation per batch, one `DeleteMessageBatch` for what succeeded),
//! then one relay invocation. harel Python's: `harel.worker`'s `AsyncWorker` over its DynamoDB
//! store and SQS transport (`py/cost_harel.py`), claiming one message at a time as its loop
//! does. Both sides' DynamoDB and SQS requests are recorded at the HTTP level and priced by
//! the same rules (`harel_testwire::units`); the clients' sends and the empty receives that
//! end a drain are not counted. Lambda's billed duration is estimated from the process CPU
//! time around each handling, measured on a second pass whose requests are not recorded,
//! rounded up to the millisecond as Lambda bills.
//!
//!     scripts/cost-table.sh      (runs this under scripts/with-moto.sh)

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use harel_app::aws::{boot_app, AppWorker};
use harel_app::Application;
use harel_dynamodb::CommitMode;
use harel_lambda::{RecordOutcome, Role};
use harel_model::Event;
use harel_sqs::{create_body, SqsTransport};
use harel_store::prelude::*;
use harel_testkit::{config_from, records, send, MotoStack, Recorder};
use harel_testwire::Call;
use serde_json::Value;

/// Executions per workload: requests are the same each time, CPU time is averaged.
const RUNS: usize = 10;

/// The workloads: (name, the event sent from Idle, the state it leads to, how many
/// executions are sent it at once). One at a time, each event is a batch of its own: what an
/// event costs on a quiet queue, a receive, a delete and an invocation its own. Ten at once
/// (ten executions, so ten message groups) fill the event source's batch as a busy queue does:
/// the receive, the delete and the invocation shared by ten events.
const WORKLOADS: [(&str, &str, &str, usize); 4] = [
    ("state-only event", "Poke", "Moved", 1),
    ("event arming a timer", "Arm", "Armed", 1),
    ("fan-out of 10 children", "Fan", "Fanned", 1),
    (
        "state-only event, busy queue (10 a batch)",
        "Poke",
        "Moved",
        10,
    ),
];

// us-east-1 on-demand list prices, in dollars per million
const WRITE_UNIT: f64 = 0.625;
const READ_UNIT: f64 = 0.125;
const SQS_FIFO_REQUEST: f64 = 0.50;
const LAMBDA_REQUEST: f64 = 0.20;
/// Lambda arm64, per GB-second (not per million).
const LAMBDA_GB_SECOND: f64 = 0.000_013_333_4;
/// The functions' memory (template.yaml, Globals: MemorySize).
const MEMORY_MB: f64 = 256.0;

/// The process's CPU time (every thread), from `CLOCK_PROCESS_CPUTIME_ID`.
fn cpu_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given, which lives on this stack frame
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// One side's totals over a workload's runs.
#[derive(Default, Clone)]
struct Side {
    runs: usize,
    dynamodb: usize,
    read_units: f64,
    write_units: f64,
    sqs: usize,
    /// CPU time of each invocation.
    invocations: Vec<Duration>,
    ops: BTreeMap<String, usize>,
}

impl Side {
    fn add(&mut self, call: &Call) {
        // an empty receive ends a drain: the poller's idling, not the event's cost
        let empty_receive = call.operation == "ReceiveMessage"
            && call
                .response
                .as_ref()
                .and_then(|r| r["Messages"].as_array())
                .is_none_or(Vec::is_empty);
        if empty_receive {
            return;
        }
        match call.service.as_str() {
            "dynamodb" => {
                self.dynamodb += 1;
                self.read_units += call.read_units;
                self.write_units += call.write_units;
            }
            "sqs" => self.sqs += 1,
            other => panic!("a request to {other} ({})", call.operation),
        }
        *self
            .ops
            .entry(format!("{}.{}", call.service, call.operation))
            .or_default() += 1;
    }

    fn per_event(&self, total: f64) -> f64 {
        total / self.runs as f64
    }

    fn cpu_ms(&self) -> f64 {
        self.per_event(
            self.invocations
                .iter()
                .map(|d| d.as_secs_f64() * 1000.0)
                .sum(),
        )
    }

    /// Lambda bills each invocation's duration rounded up to the millisecond.
    fn billed_ms(&self) -> f64 {
        self.per_event(
            self.invocations
                .iter()
                .map(|d| (d.as_secs_f64() * 1000.0).ceil().max(1.0))
                .sum(),
        )
    }

    /// Dollars per million events: DynamoDB, SQS, Lambda requests, Lambda compute.
    fn dollars(&self) -> [f64; 4] {
        let gb_seconds = self.billed_ms() / 1000.0 * MEMORY_MB / 1024.0;
        [
            self.per_event(self.write_units) * WRITE_UNIT
                + self.per_event(self.read_units) * READ_UNIT,
            self.per_event(self.sqs as f64) * SQS_FIFO_REQUEST,
            self.per_event(self.invocations.len() as f64) * LAMBDA_REQUEST,
            gb_seconds * LAMBDA_GB_SECOND * 1e6,
        ]
    }

    fn row(&self) -> Vec<f64> {
        let d = self.dollars();
        vec![
            self.per_event(self.dynamodb as f64),
            self.per_event(self.read_units),
            self.per_event(self.write_units),
            self.per_event(self.sqs as f64),
            self.per_event(self.invocations.len() as f64),
            self.cpu_ms(),
            self.billed_ms(),
            d[0],
            d[1],
            d[2] + d[3],
            d.iter().sum(),
        ]
    }
}

/// The worker and the relay as booted functions, on one SDK configuration.
struct Functions {
    worker: Arc<AppWorker>,
    relay: harel_app::aws::Services,
    /// The event source's handle on the queue (its receives and deletes are billed).
    source: SqsTransport,
    sqs: aws_sdk_sqs::Client,
    queue: String,
}

impl Functions {
    async fn boot(
        moto: &MotoStack,
        sdk: &aws_config::SdkConfig,
        machine: &harel_model::Definition,
        mode: CommitMode,
    ) -> Functions {
        let mode = [(harel_stack::COMMIT_MODE, mode.as_str())];
        let app = || {
            Application::compiled()
                .expect("the compiled-in machines")
                .with(vec![machine.clone()], |_| {})
        };
        let worker = boot_app(app(), Role::Worker, moto.config(&mode), sdk)
            .await
            .expect("the worker boots");
        assert!(
            worker.idempotency.is_some(),
            "the idempotency layer is on, as deployed"
        );
        let settings = moto.settings(&mode);
        let pairs: Vec<(&str, &str)> = settings
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let relay = boot_app(app(), Role::Relay, config_from(Role::Relay, &pairs), sdk)
            .await
            .expect("the relay boots");
        let sqs = aws_sdk_sqs::Client::new(sdk);
        Functions {
            source: SqsTransport::new(sqs.clone(), &moto.queue),
            worker: worker.into_worker(),
            relay,
            sqs,
            queue: moto.queue.clone(),
        }
    }

    /// Batches into the worker until the queue is empty, as the event source does; the CPU
    /// time of each invocation.
    async fn drain(&self) -> Vec<Duration> {
        let mut cpu = Vec::new();
        loop {
            let got = self
                .source
                .receive(10, Duration::ZERO, Duration::from_secs(30))
                .await
                .expect("receive");
            if got.is_empty() {
                return cpu;
            }
            let start = cpu_now();
            let outcome = self.worker.handle_batch(records(&got), None).await;
            cpu.push(cpu_now() - start);
            assert!(
                outcome
                    .records
                    .iter()
                    .all(|(_, r): &(String, Result<RecordOutcome, _>)| r.is_ok()),
                "a record failed: {:?}",
                outcome.records
            );
            let entries = got
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(&m.receipt_handle)
                        .build()
                        .expect("a complete entry")
                })
                .collect();
            self.sqs
                .delete_message_batch()
                .queue_url(&self.queue)
                .set_entries(Some(entries))
                .send()
                .await
                .expect("delete the batch");
        }
    }

    /// One relay invocation: its CPU time when it found work.
    async fn relay(&self) -> Option<Duration> {
        let start = cpu_now();
        let report = harel_lambda::relay(
            &self.relay.store,
            &self.relay.transport,
            &self.relay.driver,
            Instant::now() + Duration::from_secs(30),
        )
        .await
        .expect("relay");
        let cpu = cpu_now() - start;
        let d = &report.delivered;
        (d.published + d.children_created + d.acked_outbox + d.acked_spawns > 0).then_some(cpu)
    }
}

/// Our side: the functions twice on one stack, booted as they boot: once with every request
/// recorded (what an event costs in requests), once on plain clients (the CPU time, without
/// the recorder's own work).
struct Ours {
    moto: MotoStack,
    wire: Recorder,
    counted: Functions,
    quiet: Functions,
    /// The clients' handle on the queue (not recorded).
    client: SqsTransport,
}

impl Ours {
    async fn boot(machine: harel_model::Definition, mode: CommitMode) -> Ours {
        let moto = MotoStack::new("cost").await;
        moto.create_idempotency_table(&aws_sdk_dynamodb::Client::new(&moto.sdk))
            .await;
        let wire = Recorder::new().with_bodies();
        wire.step("setup");
        let recorded = moto
            .sdk
            .to_builder()
            .http_client(wire.http_client())
            .build();
        Ours {
            counted: Functions::boot(&moto, &recorded, &machine, mode).await,
            quiet: Functions::boot(&moto, &moto.sdk, &machine, mode).await,
            client: moto.source(),
            wire,
            moto,
        }
    }

    /// Create the executions `ids`, run them to Idle, send each `kind` at once: what
    /// `functions` spent on those events (each invocation's CPU time), their requests recorded
    /// under `workload` when recorded.
    async fn events(
        &self,
        functions: &Functions,
        workload: &str,
        ids: &[String],
        kind: &str,
        state: &str,
        side: &mut Side,
    ) -> Vec<Duration> {
        self.wire.step("setup");
        for id in ids {
            let body = create_body("Cost", Default::default(), Some(id));
            send(&self.client, id, body).await;
        }
        functions.drain().await;
        functions.relay().await;
        for id in ids {
            send(&self.client, id, Event::new(kind).to_json()).await;
        }
        self.wire.take();
        self.wire.step(workload);
        let mut cpu = functions.drain().await;
        for call in &self.wire.take().calls {
            side.add(call);
        }
        // a relay tick that finds nothing runs whatever the events: neither its invocation
        // nor its requests are this event's
        if let Some(relayed) = functions.relay().await {
            cpu.push(relayed);
            for call in &self.wire.take().calls {
                side.add(call);
            }
        }
        self.wire.step("setup");
        self.wire.take();
        for id in ids {
            let exe = self
                .moto
                .store()
                .load(id)
                .await
                .expect("load")
                .expect("stored");
            let path = exe.active_path.unwrap_or_default();
            assert!(path.starts_with(state), "{id} is in {path}, not {state}");
        }
        cpu
    }

    /// The largest execution item on this stack, as DynamoDB sizes it (what an UpdateItem of
    /// it is billed by).
    async fn largest_execution_item(&self) -> (String, usize) {
        let store = self.moto.store();
        let scan = store
            .client()
            .scan()
            .table_name(store.tables().executions())
            .send()
            .await
            .expect("scan");
        scan.items()
            .iter()
            .map(|item| {
                let id = match item.get("id") {
                    Some(aws_sdk_dynamodb::types::AttributeValue::S(id)) => id.clone(),
                    _ => String::new(),
                };
                (id, harel_dynamodb::codec::item_size(item))
            })
            .max_by_key(|(_, size)| *size)
            .unwrap_or_default()
    }

    /// `RUNS` events of `kind`, sent `at_once` executions at a time; `prefix` keeps the
    /// workloads' execution ids apart.
    async fn run(
        &self,
        (workload, kind, state, at_once): (&str, &str, &str, usize),
        prefix: &str,
    ) -> Side {
        let mut side = Side {
            runs: RUNS,
            ..Side::default()
        };
        let mut counted = Vec::new();
        let mut quiet = Vec::new();
        let mut unused = Side::default();
        for round in 0..RUNS / at_once {
            let ids = |pass: &str| -> Vec<String> {
                (0..at_once)
                    .map(|j| format!("{prefix}-{pass}{}", round * at_once + j))
                    .collect()
            };
            counted.extend(
                self.events(&self.counted, workload, &ids(""), kind, state, &mut side)
                    .await,
            );
            quiet.extend(
                self.events(&self.quiet, workload, &ids("q"), kind, state, &mut unused)
                    .await,
            );
        }
        assert_eq!(
            counted.len(),
            quiet.len(),
            "both passes took as many invocations"
        );
        side.invocations = quiet;
        side
    }
}

/// harel Python's side, from `py/cost_harel.py`'s lines.
fn python(endpoint: &str, machine: &str) -> BTreeMap<String, Side> {
    let python = std::env::var("HAREL_PYTHON").expect("HAREL_PYTHON (set by scripts/with-moto.sh)");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/py/cost_harel.py");
    let prefix = format!("cpy{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let out = std::process::Command::new(python)
        .args([script, endpoint, &prefix, machine, &RUNS.to_string()])
        .output()
        .expect("harel Python runs");
    assert!(
        out.status.success(),
        "cost_harel.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut sides = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        let mut side = Side {
            runs: v["runs"].as_u64().expect("runs") as usize,
            ..Side::default()
        };
        for c in v["calls"].as_array().expect("calls") {
            let op = c["op"].as_str().expect("op");
            let status = c["status"].as_u64().unwrap_or(0) as u16;
            let request = c["request"].clone();
            let response = c.get("response").cloned().unwrap_or(Value::Null);
            let call = match c["service"].as_str() {
                Some("dynamodb") => Call::dynamodb(op, status, request, response),
                service => Call {
                    service: service.unwrap_or_default().into(),
                    operation: op.into(),
                    status: Some(status),
                    request: Some(request),
                    response: Some(response),
                    ..Call::default()
                },
            };
            side.add(&call);
        }
        side.invocations = v["cpu"]
            .as_array()
            .expect("cpu")
            .iter()
            .map(|s| Duration::from_secs_f64(s.as_f64().expect("seconds")))
            .collect();
        sides.insert(v["workload"].as_str().expect("workload").to_string(), side);
    }
    sides
}

fn ratio(ours: f64, theirs: f64) -> String {
    if theirs == 0.0 {
        if ours == 0.0 {
            "-".into()
        } else {
            "inf".into()
        }
    } else {
        format!("{:.2}", ours / theirs)
    }
}

fn num(v: f64) -> String {
    if v == v.round() {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[tokio::main]
async fn main() {
    let endpoint = std::env::var("AWS_ENDPOINT_URL")
        .expect("run under scripts/with-moto.sh (AWS_ENDPOINT_URL is not set)");
    let machine = concat!(env!("CARGO_MANIFEST_DIR"), "/py/cost.stm");
    let defn =
        harel_lang::load_file(std::path::Path::new(machine), Some("Cost")).expect("cost.stm loads");
    // ours in each commit mode, each on a stack of its own
    let mut our_sides: Vec<(CommitMode, Vec<Side>)> = Vec::new();
    let mut lean_item = (String::new(), 0);
    for mode in [CommitMode::Compat, CommitMode::Lean] {
        let ours = Ours::boot(defn.clone(), mode).await;
        let mut sides = Vec::new();
        for (w, workload) in WORKLOADS.into_iter().enumerate() {
            let prefix = format!("{}{w}", workload.1.to_lowercase());
            sides.push(ours.run(workload, &prefix).await);
        }
        if mode == CommitMode::Lean {
            lean_item = ours.largest_execution_item().await;
        }
        our_sides.push((mode, sides));
    }
    let theirs = python(&endpoint, machine);

    println!(
        "What one event costs, per event (averaged over {RUNS} executions per workload), on moto."
    );
    println!("ours: in each commit mode (HAREL_COMMIT_MODE: compat, harel's processed table; lean, the marks in the execution item),");
    println!("  the worker (idempotency layer on) and the relay, booted as the functions boot (boot_app),");
    println!("  fed as Lambda's SQS event source feeds them (receive up to 10, one invocation per batch,");
    println!("  one DeleteMessageBatch); then one relay invocation, counted (invocation and requests) only");
    println!("  when it found work: an idle tick (its look at the pending rows) runs on its schedule whatever the events.");
    println!("harel: harel Python 0.9.0's worker (harel.worker: AsyncWorker, AsyncDynamoDBStore, AsyncSqsTransport),");
    println!("  claiming one message at a time; priced as if each handled message were one Lambda invocation.");
    println!("Not counted on either side: the client's send, the empty receives that end a drain.");
    println!("Read/write units: computed from the request and answer bodies as DynamoDB bills (harel_testwire::units).");
    println!("Billed duration: the process CPU time around each handling (on a second pass of as many executions,");
    println!("  requests not recorded), rounded up to 1 ms per invocation");
    println!("  (a lower bound: Lambda bills wall time, which adds the requests' round trips).");
    println!(
        "Prices (us-east-1 on-demand): DynamoDB ${WRITE_UNIT} per million write request units, ${READ_UNIT} per million read request units;"
    );
    println!("  SQS FIFO ${SQS_FIFO_REQUEST} per million requests (64 KB chunks; every message here is under 64 KB);");
    println!(
        "  Lambda arm64 ${LAMBDA_REQUEST} per million requests, ${LAMBDA_GB_SECOND} per GB-second at {MEMORY_MB} MB (template.yaml; at 128 MB, halve the compute)."
    );
    println!();
    println!("| workload | side | DynamoDB requests | read units | write units | SQS requests | Lambda invocations | CPU ms | billed ms | $/M DynamoDB | $/M SQS | $/M Lambda | $/M total |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let cells = |r: &[f64]| r.iter().map(|v| num(*v)).collect::<Vec<_>>().join(" | ");
    for (w, (workload, ..)) in WORKLOADS.iter().enumerate() {
        let t = theirs.get(*workload).cloned().unwrap_or_default();
        let rt = t.row();
        let mut first = true;
        for (mode, sides) in &our_sides {
            let name = if first { *workload } else { "" };
            first = false;
            println!("| {name} | ours, {mode} | {} |", cells(&sides[w].row()));
        }
        println!("| | harel | {} |", cells(&rt));
        for (mode, sides) in &our_sides {
            let ratios: Vec<String> = sides[w]
                .row()
                .iter()
                .zip(&rt)
                .map(|(a, b)| ratio(*a, *b))
                .collect();
            println!("| | {mode} / harel | {} |", ratios.join(" | "));
        }
    }
    println!();
    let per = |s: &Side| {
        s.ops
            .iter()
            .map(|(op, n)| format!("{op} {}", num(*n as f64 / s.runs as f64)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (w, (workload, ..)) in WORKLOADS.iter().enumerate() {
        let t = theirs.get(*workload).cloned().unwrap_or_default();
        let ours: Vec<String> = our_sides
            .iter()
            .map(|(mode, sides)| format!("ours, {mode} [{}]", per(&sides[w])))
            .collect();
        println!(
            "{workload}, per event: {}; harel [{}]",
            ours.join("; "),
            per(&t)
        );
    }
    println!();
    println!("The wire prices an UpdateItem by the values it sets, not the item it leaves: lean's largest");
    let (id, size) = lean_item;
    println!("execution item here ({id}), its window of dedupe marks included, is {size} bytes:");
    println!("{} write units a write of it.", size.div_ceil(1024));
}
