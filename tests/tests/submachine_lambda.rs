//! Submachines through the serverless runtime on the moto server (`scripts/with-moto.sh
//! cargo test -p harel-tests --test submachine_lambda`): the worker takes its messages from
//! SQS FIFO and commits to the DynamoDB tables; an `invoke` child and the instances of a
//! fan-out are created from their spawn records (by the worker right after the commit, or by
//! the relay), resolved by their FQN among the machines compiled in, addressed by their own
//! ids, and their `Finished` travel back through the queue to the parent.

use std::sync::Arc;
use std::time::{Duration, Instant};

use harel_lambda::{sweep_once, RecordOutcome};
use harel_model::{Definition, Event, Object, Status};
use harel_runtime::DeliverError;
use harel_runtime::Driver;
use harel_runtime::{ActionRegistry, Clock, ManualClock};
use harel_sqs::create_body;
use harel_store::prelude::*;
use harel_testkit::Deployed;
use serde_json::json;

const MACHINES: &str = r#"
event Sign {}

machine Order {
  context { total: int = 12  items: any = ["a", "b", "c"] }
  initial Approval

  state Approval {
    invoke Approver
    with { amount: total }
  }
  state Packing {
    invoke for item in items {
      initial Pack
      carry packed
      state Pack {}
      final Packed success
      from Pack to Packed set context.packed = context.item
    }
    with { item: item }
  }
  final Shipped success
  final Refused failed

  from Approval to Packing on Returned where outcome == "success" and amount == 12
  from Approval to Refused on Returned
  from Packing join all to Shipped else to Refused
}

machine Approver {
  context { amount: int = 0  level: string = "clerk" }
  carry amount, level
  initial Waiting
  state Waiting {}
  final Approved success
  from Waiting to Approved on Sign
}

machine Patient {
  initial Wait
  state Wait {
    invoke {
      initial Nap
      carry slept
      state Nap { timeout 30 }
      final Woke success
      from Nap to Woke on Timeout set context.slept = 30
    }
  }
  final Rested success
  from Wait to Rested on Returned where slept == 30
}

machine Broken {
  initial Call
  state Call { invoke nowhere.Machine }
  final Done success
  from Call to Done on Returned
}
"#;

fn definitions() -> Vec<Definition> {
    ["Order", "Approver", "Patient", "Broken"]
        .into_iter()
        .map(|name| harel_lang::load_str(MACHINES, Some(name), "sub.stm").expect(name))
        .collect()
}

/// The stack with a worker over the machines, on a manual clock.
async fn stack() -> (Deployed, ManualClock) {
    let clock = ManualClock::new(1_700_000_000.0);
    let driver = Driver::new(definitions(), ActionRegistry::with_stdlib())
        .with_clock(Arc::new(clock.clone()));
    (Deployed::start("sub", driver, &[]).await, clock)
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn an_invoke_then_a_fan_out_run_to_the_terminal_over_dynamodb_and_sqs() {
    let (stack, _) = stack().await;
    let id = "order-1";
    stack
        .send(id, create_body("Order", Object::new(), Some(id)))
        .await;
    stack.pump().await;

    // the worker created the invoke child from the spawn, right after the parent's commit
    let parent = stack.load(id).await;
    assert_eq!(parent.active_path.as_deref(), Some("Approval"));
    let child_id = "order-1:Approval:0";
    assert!(parent.children[child_id].submachine);
    let child = stack.load(child_id).await;
    assert_eq!(child.definition_id, "Approver");
    assert_eq!(child.definition_fqn.as_deref(), Some("Approver"));
    assert_eq!(child.parent_id.as_deref(), Some(id));
    assert_eq!(child.status, Status::Running);
    // `with` passed the total; the machine's own defaults filled the rest
    assert_eq!(child.context.get("amount"), Some(&json!(12)));
    assert_eq!(child.context.get("level"), Some(&json!("clerk")));
    assert!(!child.context.contains_key("__invoke_fqn__"));
    assert!(stack
        .worker
        .store
        .pending_spawns()
        .await
        .expect("spawns")
        .is_empty());

    // a domain event to the parent is not broadcast to a submachine: it stays put
    stack.send(id, Event::new("Sign").to_json()).await;
    stack.pump().await;
    assert_eq!(stack.load(child_id).await.status, Status::Running);

    // the child, addressed by its own id, finishes; its Finished reaches the parent as
    // `Returned`, which moves it to the fan-out: three instances, each finishing at once
    stack.send(child_id, Event::new("Sign").to_json()).await;
    stack.pump().await;
    let parent = stack.load(id).await;
    assert_eq!(parent.status, Status::Done, "{parent:?}");
    assert_eq!(parent.active_path.as_deref(), Some("Shipped"));
    assert_eq!(parent.outcome.as_deref(), Some("success"));
    assert_eq!(parent.invoke_seq.get("Approval"), Some(&1));
    assert_eq!(parent.invoke_seq.get("Packing"), Some(&1));
    assert_eq!(
        parent.context["region_results"],
        json!({
            "Packing:0": {"outcome": "success", "packed": "a"},
            "Packing:1": {"outcome": "success", "packed": "b"},
            "Packing:2": {"outcome": "success", "packed": "c"},
        })
    );
    for i in 0..3 {
        let instance = stack.load(&format!("order-1:Packing:0:{i}")).await;
        assert_eq!(instance.definition_id, "Order#Packing");
        assert_eq!(instance.status, Status::Done);
    }
    assert_eq!(
        stack.load(child_id).await.outcome.as_deref(),
        Some("success")
    );
    let store = &stack.worker.store;
    assert!(store.pending_spawns().await.expect("spawns").is_empty());
    assert!(store.pending_outbox().await.expect("outbox").is_empty());
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn reset_cancels_the_running_child_and_the_fresh_one_returns_on_its_timer() {
    let (stack, clock) = stack().await;
    let id = "patient-1";
    stack
        .send(id, create_body("Patient", Object::new(), Some(id)))
        .await;
    stack.pump().await;
    assert_eq!(
        stack.load("patient-1:Wait:0").await.status,
        Status::Running,
        "the inline child naps"
    );

    // Reset while the child runs: it is cancelled (through the queue), a fresh one invoked
    stack.send(id, Event::new("Reset").to_json()).await;
    stack.pump().await;
    let parent = stack.load(id).await;
    assert_eq!(parent.invoke_seq.get("Wait"), Some(&1));
    let keys: Vec<&str> = parent.children.keys().map(|k| k.as_str()).collect();
    assert_eq!(keys, ["patient-1:Wait:1"]);
    assert_eq!(
        stack.load("patient-1:Wait:0").await.status,
        Status::Cancelled
    );
    let fresh = stack.load("patient-1:Wait:1").await;
    assert_eq!(fresh.status, Status::Running);
    assert_eq!(fresh.definition_fqn.as_deref(), Some("Patient#Wait"));

    // the sweeper fires the children's timers; the fresh child's return ends the parent
    clock.advance(30.0);
    let fired = sweep_once(&stack.worker.store, &stack.worker.transport, clock.now())
        .await
        .expect("sweep");
    assert!(fired >= 1, "the fresh child's timer is due");
    stack.pump().await;
    let parent = stack.load(id).await;
    assert_eq!(parent.status, Status::Done, "{parent:?}");
    assert_eq!(parent.active_path.as_deref(), Some("Rested"));
    assert_eq!(
        stack.load("patient-1:Wait:0").await.status,
        Status::Cancelled,
        "a cancelled child's timer changes nothing"
    );
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn an_unknown_submachine_is_a_clear_error_and_the_spawn_stays() {
    let (stack, _) = stack().await;
    let id = "broken-1";
    stack
        .send(id, create_body("Broken", Object::new(), Some(id)))
        .await;
    // the parent's commit stands (the record succeeds); the child cannot be created
    let handled = stack.pump().await;
    assert!(
        matches!(handled.first(), Some(RecordOutcome::Created { .. })),
        "{handled:?}"
    );
    let parent = stack.load(id).await;
    assert_eq!(parent.status, Status::Running);
    assert_eq!(parent.active_path.as_deref(), Some("Call"));
    let store = &stack.worker.store;
    let pending = store.pending_spawns().await.expect("spawns");
    assert_eq!(pending.len(), 1, "the spawn waits for the operator");
    assert_eq!(pending[0].child_id, "broken-1:Call:0");
    assert!(store.load("broken-1:Call:0").await.expect("load").is_none());

    // the relay says why, and keeps it
    let err = harel_lambda::relay(
        store,
        &stack.worker.transport,
        &stack.worker.driver,
        Instant::now() + Duration::from_secs(30),
    )
    .await
    .expect_err("an unknown FQN");
    assert!(matches!(err, DeliverError::Spawn { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("\"nowhere.Machine\"") && message.contains("no machine compiled"),
        "{message}"
    );
    assert_eq!(store.pending_spawns().await.expect("spawns").len(), 1);
}
