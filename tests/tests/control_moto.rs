//! The control plane against the serverless runtime on the moto server
//! (`scripts/with-moto.sh cargo test -p harel-tests --test control_moto`): the commands write the
//! DynamoDB tables, the worker takes its messages from SQS FIFO, the relay publishes the
//! cooperative `Cancel`.

use std::collections::HashMap;
use std::sync::Arc;

use harel_control::{CancelMode, Command};
use harel_lambda::{RecordError, RecordOutcome};
use harel_model::{Definition, Event, Status};
use harel_runtime::admission::Skip;
use harel_runtime::Driver;
use harel_runtime::{ActionRegistry, Clock, ManualClock};
use harel_sqs::create_body;
use harel_store::prelude::*;
use harel_testkit::{endpoint, pump_once, relay, Deployed};
use serde_json::json;

const MACHINES: &str = include_str!("../../shared/control/tests/machines/control.stm");

fn definitions() -> HashMap<String, Definition> {
    ["Job", "Plain", "Split"]
        .into_iter()
        .map(|name| {
            let defn = harel_lang::load_str(MACHINES, Some(name), "control.stm").expect(name);
            (name.to_string(), defn)
        })
        .collect()
}

/// The one stack fixture (tables, queue, a worker; its reader is the operator's store client,
/// that the control commands go through), with the machines and the clock the commands use.
struct Stack {
    deployed: Deployed,
    definitions: HashMap<String, Definition>,
    clock: ManualClock,
}

impl std::ops::Deref for Stack {
    type Target = Deployed;
    fn deref(&self) -> &Deployed {
        &self.deployed
    }
}

/// What became of one record.
type Outcome = Result<RecordOutcome, RecordError>;

impl Stack {
    async fn new() -> Stack {
        let clock = ManualClock::new(1_700_000_000.0);
        let definitions = definitions();
        let driver = Driver::new(
            definitions.values().cloned().collect(),
            ActionRegistry::with_stdlib(),
        )
        .with_clock(Arc::new(clock.clone()));
        // a parked message is visible again at once, so the test sees it come back
        let deployed =
            Deployed::start("ctl", driver, &[("HAREL_SUSPEND_RECHECK_SECONDS", "0")]).await;
        Stack {
            deployed,
            definitions,
            clock,
        }
    }

    fn now(&self) -> f64 {
        self.clock.now()
    }

    fn defn(&self, name: &str) -> &Definition {
        &self.definitions[name]
    }

    async fn send_event(&self, id: &str, kind: &str) {
        self.send(id, Event::new(kind).to_json()).await;
    }

    async fn create(&self, machine: &str, id: &str) {
        self.send(id, create_body(machine, Default::default(), Some(id)))
            .await;
        let outcomes = self.pump().await;
        assert!(
            matches!(outcomes.first(), Some(Ok(RecordOutcome::Created { .. }))),
            "{outcomes:?}"
        );
    }

    /// Receive one batch and hand it to the worker as the Lambda event source does: the
    /// successes are deleted, the failures come back (their visibility as the worker set it).
    async fn pump_once(&self) -> Vec<Outcome> {
        pump_once(&self.source, &self.worker)
            .await
            .into_iter()
            .map(|(_, r)| r)
            .collect()
    }

    /// Batches until the queue is empty; every record must succeed.
    async fn pump(&self) -> Vec<Outcome> {
        let mut all = Vec::new();
        for _ in 0..20 {
            let batch = self.pump_once().await;
            if batch.is_empty() {
                return all;
            }
            assert!(
                batch.iter().all(Result::is_ok),
                "a record failed: {batch:?}"
            );
            all.extend(batch);
        }
        panic!("the queue never drained");
    }

    async fn relay(&self) {
        relay(&self.worker).await;
    }

    async fn statuses(&self, ids: &[&str]) -> Vec<Status> {
        let mut out = Vec::new();
        for id in ids {
            out.push(self.load(id).await.status);
        }
        out
    }
}

fn skipped(outcomes: &[Outcome], reason: Skip) -> usize {
    outcomes
        .iter()
        .filter(|o| matches!(o, Ok(RecordOutcome::Skipped { reason: r, .. }) if *r == reason))
        .count()
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn cooperative_cancel_skips_the_backlog_then_runs_the_cleanup() {
    let stack = Stack::new().await;
    let id = "job-1";
    stack.create("Job", id).await;
    // a backlog queued before the cancel
    stack.send_event(id, "Step").await;
    stack.send_event(id, "Step").await;

    let out = harel_control::cancel(&stack.reader, stack.defn("Job"), id, stack.now())
        .await
        .expect("cancel");
    assert_eq!(out.mode, Some(CancelMode::Cooperative));
    let step = out.own_step().expect("written");
    assert_eq!(
        (step.from_status, step.to_status),
        (Status::Running, Status::Cancelling)
    );
    assert_eq!(step.cause, "control");
    assert_eq!(out.enqueued.len(), 1, "the Cancel, in the same commit");
    assert_eq!(out.enqueued[0].event.kind, "Cancel");
    let exe = stack.load(id).await;
    assert_eq!(exe.status, Status::Cancelling);
    assert_eq!(exe.active_path.as_deref(), Some("Working"));
    // the Cancel is in the outbox until the relay publishes it (behind the backlog)
    let pending = stack.worker.store.pending_outbox().await.expect("outbox");
    assert!(pending
        .iter()
        .any(|e| e.event.id == out.enqueued[0].event.id));

    stack.relay().await;
    let outcomes = stack.pump().await;
    assert_eq!(skipped(&outcomes, Skip::Cancelling), 2, "{outcomes:?}");
    let exe = stack.load(id).await;
    assert_eq!(exe.status, Status::Done);
    assert_eq!(exe.outcome.as_deref(), Some("cancelled"));
    assert_eq!(exe.active_path.as_deref(), Some("Aborted"));
    assert_eq!(exe.context["steps"], json!(0), "the backlog did nothing");
    assert_eq!(exe.context["cleanups"], json!(1), "the cleanup ran once");

    // a second cancel of a finished execution changes nothing
    let again = harel_control::cancel(&stack.reader, stack.defn("Job"), id, stack.now())
        .await
        .expect("cancel");
    assert!(!again.changed());
    assert_eq!(stack.load(id).await.version, exe.version);
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn cancel_without_a_cancel_transition_is_forceful_and_the_backlog_drains_as_no_ops() {
    let stack = Stack::new().await;
    let id = "plain-1";
    stack.create("Plain", id).await;
    stack.send_event(id, "Step").await;
    let out = harel_control::cancel(&stack.reader, stack.defn("Plain"), id, stack.now())
        .await
        .expect("cancel");
    assert_eq!(out.mode, Some(CancelMode::Forceful));
    assert!(out.enqueued.is_empty());
    assert_eq!(out.own_step().expect("written").command, Command::Cancel);
    let outcomes = stack.pump().await;
    assert_eq!(skipped(&outcomes, Skip::Cancelled), 1, "{outcomes:?}");
    let exe = stack.load(id).await;
    assert_eq!(exe.status, Status::Cancelled);
    assert_eq!(exe.context["steps"], json!(0));
    assert!(exe.finished_at.is_some());
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn suspend_parks_the_group_and_resume_continues_it() {
    let stack = Stack::new().await;
    let id = "job-2";
    stack.create("Job", id).await;
    let out = harel_control::suspend(&stack.reader, id, stack.now())
        .await
        .expect("suspend");
    assert_eq!(
        out.own_step().map(|s| (s.from_status, s.to_status)),
        Some((Status::Running, Status::Suspended))
    );
    stack.send_event(id, "Step").await;
    stack.send_event(id, "Step").await;
    let first = stack.pump_once().await;
    assert!(
        matches!(first.first(), Some(Err(RecordError::Parked(p))) if p == id),
        "{first:?}"
    );
    // parked, not consumed: it comes back, and still parks
    let again = stack.pump_once().await;
    assert!(
        matches!(again.first(), Some(Err(RecordError::Parked(_)))),
        "{again:?}"
    );
    let exe = stack.load(id).await;
    assert_eq!(exe.status, Status::Suspended);
    assert_eq!(exe.context["steps"], json!(0));

    // suspending again, or resuming something RUNNING, is a no-op
    assert!(!harel_control::suspend(&stack.reader, id, stack.now())
        .await
        .expect("suspend")
        .changed());
    let out = harel_control::resume(&stack.reader, id, stack.now())
        .await
        .expect("resume");
    assert_eq!(out.own_step().map(|s| s.to_status), Some(Status::Running));
    assert!(!harel_control::resume(&stack.reader, id, stack.now())
        .await
        .expect("resume")
        .changed());
    stack.pump().await;
    let exe = stack.load(id).await;
    assert_eq!(exe.status, Status::Running);
    assert_eq!(
        exe.context["steps"],
        json!(2),
        "both parked events ran, in order"
    );
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn commands_propagate_to_the_regions() {
    let stack = Stack::new().await;
    let id = "split-1";
    stack.create("Split", id).await;
    let parent = stack.load(id).await;
    let regions: Vec<String> = parent.children.keys().map(|k| k.to_string()).collect();
    assert_eq!(regions.len(), 2, "{parent:?}");
    let all: Vec<&str> = std::iter::once(id)
        .chain(regions.iter().map(String::as_str))
        .collect();

    let out = harel_control::suspend(&stack.reader, id, stack.now())
        .await
        .expect("suspend");
    assert_eq!(out.steps.len(), 3, "the parent and both regions: {out:?}");
    assert_eq!(stack.statuses(&all).await, vec![Status::Suspended; 3]);

    // a domain event sent now waits; after the resume it reaches the regions
    stack.send_event(id, "Step").await;
    let parked = stack.pump_once().await;
    assert!(
        matches!(parked.first(), Some(Err(RecordError::Parked(_)))),
        "{parked:?}"
    );
    harel_control::resume(&stack.reader, id, stack.now())
        .await
        .expect("resume");
    assert_eq!(stack.statuses(&all).await, vec![Status::Running; 3]);
    stack.pump().await;
    let left = regions
        .iter()
        .find(|r| r.contains("Left"))
        .expect("the Left region");
    assert_eq!(
        stack.load(left).await.active_path.as_deref(),
        Some("Both.Left.L2")
    );

    let out = harel_control::terminate(&stack.reader, id, stack.now())
        .await
        .expect("terminate");
    assert!(out.steps.iter().all(|s| s.command == Command::Terminate));
    assert_eq!(stack.statuses(&all).await, vec![Status::Cancelled; 3]);
    // finished: nothing moves it any more
    assert!(!harel_control::resume(&stack.reader, id, stack.now())
        .await
        .expect("resume")
        .changed());
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn cooperative_cancel_of_an_orthogonal_parent_cancels_the_regions_and_cleans_up() {
    let stack = Stack::new().await;
    let id = "split-2";
    stack.create("Split", id).await;
    let regions: Vec<String> = stack
        .load(id)
        .await
        .children
        .keys()
        .map(|k| k.to_string())
        .collect();
    let out = harel_control::cancel(&stack.reader, stack.defn("Split"), id, stack.now())
        .await
        .expect("cancel");
    assert_eq!(out.mode, Some(CancelMode::Cooperative));
    for region in &regions {
        assert_eq!(
            stack.load(region).await.status,
            Status::Cancelled,
            "{region}"
        );
    }
    assert_eq!(stack.load(id).await.status, Status::Cancelling);
    stack.relay().await;
    stack.pump().await;
    let exe = stack.load(id).await;
    assert_eq!(
        (exe.status, exe.outcome.as_deref()),
        (Status::Done, Some("cancelled"))
    );
    assert_eq!(exe.context["cleanups"], json!(1));
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn unknown_executions_and_wrong_machines_are_errors() {
    let stack = Stack::new().await;
    let err = harel_control::suspend(&stack.reader, "nobody", stack.now())
        .await
        .expect_err("unknown");
    assert!(matches!(err, harel_control::ControlError::NotFound(ref id) if id == "nobody"));
    stack.create("Plain", "plain-2").await;
    let err = harel_control::cancel(&stack.reader, stack.defn("Job"), "plain-2", stack.now())
        .await
        .expect_err("wrong machine");
    assert!(err.to_string().contains("runs machine \"Plain\""), "{err}");
    assert_eq!(stack.load("plain-2").await.status, Status::Running);
}

/// harel 0.9.0's own control plane (`harel.engine.control`) over its DynamoDBStore, on the
/// same tables; the execution as harel then loads it.
fn harel_python(
    stack: &Stack,
    command: &str,
    id: &str,
    machine: Option<&str>,
) -> serde_json::Value {
    let python = std::env::var("HAREL_PYTHON").expect(
        "HAREL_PYTHON is not set: run under scripts/with-moto.sh (it points it at the venv with harel 0.9.0)",
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/py/harel_control.py");
    let out = std::process::Command::new(python)
        .args([script, &endpoint(), &stack.moto.prefix, command, id])
        .args(machine)
        .output()
        .expect("harel Python runs");
    assert!(
        out.status.success(),
        "harel Python {command} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn harel_pythons_control_plane_drives_our_worker_and_reads_ours() {
    let stack = Stack::new().await;
    let id = "py-job";
    stack.create("Job", id).await;

    // suspended by harel Python: our worker parks the group; resumed by it: ours continues
    let py = harel_python(&stack, "suspend", id, None);
    assert_eq!(py["execution"]["status"], "SUSPENDED");
    stack.send_event(id, "Step").await;
    let parked = stack.pump_once().await;
    assert!(
        matches!(parked.first(), Some(Err(RecordError::Parked(_)))),
        "{parked:?}"
    );
    let py = harel_python(&stack, "resume", id, None);
    assert_eq!(py["execution"]["status"], "RUNNING");
    stack.pump().await;
    assert_eq!(stack.load(id).await.context["steps"], json!(1));

    // cancelled cooperatively by harel Python: its Cancel waits in the outbox (harel's
    // counter seq); our relay publishes it behind the backlog, our worker skips the backlog
    // and runs the cleanup
    stack.send_event(id, "Step").await;
    let py = harel_python(&stack, "cancel", id, Some("Job"));
    assert_eq!(py["execution"]["status"], "CANCELLING");
    assert_eq!(py["outbox"][0]["kind"], "Cancel");
    assert_eq!(py["outbox"][0]["target_id"], id);
    stack.relay().await;
    let outcomes = stack.pump().await;
    assert_eq!(skipped(&outcomes, Skip::Cancelling), 1, "{outcomes:?}");
    let exe = stack.load(id).await;
    assert_eq!(
        (exe.status, exe.outcome.as_deref()),
        (Status::Done, Some("cancelled"))
    );
    assert_eq!(exe.context["steps"], json!(1));
    assert_eq!(exe.context["cleanups"], json!(1));

    // an orthogonal execution our worker forked: harel Python finds its regions from our
    // record and terminates them too
    stack.create("Split", "py-split").await;
    let regions: Vec<String> = stack
        .load("py-split")
        .await
        .children
        .keys()
        .map(|k| k.to_string())
        .collect();
    let py = harel_python(&stack, "terminate", "py-split", None);
    assert_eq!(py["execution"]["status"], "CANCELLED");
    for region in &regions {
        assert_eq!(
            stack.load(region).await.status,
            Status::Cancelled,
            "{region}"
        );
    }

    // and what our control plane writes, harel Python reads
    stack.create("Plain", "rs-plain").await;
    harel_control::suspend(&stack.reader, "rs-plain", stack.now())
        .await
        .expect("suspend");
    let py = harel_python(&stack, "read", "rs-plain", None);
    assert_eq!(py["execution"]["status"], "SUSPENDED");
    let py = harel_python(&stack, "resume", "rs-plain", None);
    assert_eq!(py["execution"]["status"], "RUNNING");
    assert_eq!(stack.load("rs-plain").await.status, Status::Running);
}
