//! The handlers in-process: MemoryStore + MemoryTransport, the worker through batches as
//! the Lambda event source sends them, the relay and the sweeper.

mod common;

use std::time::{Duration, Instant};

use common::*;
use harel_lambda::worker::DeadLetterReason;
use harel_lambda::{relay, sweep_once, RecordError, RecordOutcome, SweepPlan};
use harel_model::{Event, Object, Status};
use harel_queue::create_body;
use harel_queue::{Transport, REASON_ATTRIBUTE};
use harel_runtime::admission::Skip;
use harel_runtime::Clock;
use harel_store::prelude::*;

fn far() -> Instant {
    Instant::now() + Duration::from_secs(60)
}

#[tokio::test]
async fn full_run_creates_forks_joins_fires_timers_and_finishes() {
    let h = harness(true);
    let mut ctx = Object::new();
    ctx.insert("amount".into(), serde_json::json!(7));
    h.send("f-1", create_body("Flow", ctx, None)).await;
    h.pump(5).await;
    let exe = h.exe("f-1").await;
    assert_eq!(exe.status, Status::Running);
    assert_eq!(exe.active_path.as_deref(), Some("Idle"));
    assert_eq!(exe.context.get("amount"), Some(&serde_json::json!(7)));

    // a state-only event arms the timer
    h.send_event("f-1", Event::new("Go")).await;
    h.pump(5).await;
    assert_eq!(h.exe("f-1").await.active_path.as_deref(), Some("Waiting"));
    let store = &h.worker.store;
    assert_eq!(
        sweep_once(store, &*h.transport, h.clock.now())
            .await
            .expect("sweep"),
        0,
        "not due yet"
    );
    h.clock.advance(6.0);
    assert_eq!(
        sweep_once(store, &*h.transport, h.clock.now())
            .await
            .expect("sweep"),
        1
    );
    assert!(
        store
            .due_timers(h.clock.now())
            .await
            .expect("timers")
            .is_empty(),
        "timer deleted"
    );

    // the Timeout forks two regions: the worker creates and starts them at once
    h.pump(5).await;
    let parent = h.exe("f-1").await;
    assert_eq!(parent.active_path.as_deref(), Some("Work"));
    assert_eq!(parent.children.len(), 2);
    for child in parent.children.keys() {
        assert_eq!(
            h.exe(child).await.status,
            Status::Running,
            "{child} started"
        );
    }
    assert!(
        store.pending_spawns().await.expect("spawns").is_empty(),
        "spawns acked"
    );

    // domain events are broadcast to the live regions; their Finished come back as emits
    h.send_event("f-1", Event::new("DoneA")).await;
    h.send_event("f-1", Event::new("DoneB")).await;
    h.pump(10).await;
    let exe = h.exe("f-1").await;
    assert_eq!(exe.active_path.as_deref(), Some("Shipping"), "{exe:?}");
    assert_eq!(h.counted.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(exe.context.contains_key("region_results"));

    h.send_event("f-1", Event::new("Ship")).await;
    h.pump(5).await;
    let exe = h.exe("f-1").await;
    assert_eq!(exe.status, Status::Done);
    assert_eq!(exe.outcome.as_deref(), Some("success"));
    assert!(
        store.pending_outbox().await.expect("outbox").is_empty(),
        "everything delivered inline"
    );
    assert!(h.transport.dead_letters().is_empty());
}

#[tokio::test]
async fn duplicate_deliveries_change_nothing() {
    let h = harness(true);
    h.send("d-1", create_body("Flow", Object::new(), Some("d-1")))
        .await;
    h.pump(2).await;
    let go = Event::new("Go");
    h.send_event("d-1", go.clone()).await;
    let batch = h.transport.take(10);
    let records: Vec<_> = batch.iter().map(record).collect();
    let first = h.worker.handle_batch(records.clone(), None).await;
    assert!(first.failed_ids().is_empty());
    let after_first = h.exe("d-1").await;
    // the same SQS message again (a visibility timeout ran out): the idempotency layer replays
    let again = h.worker.handle_batch(records, None).await;
    assert!(
        matches!(again.records[0].1, Ok(RecordOutcome::Processed { .. })),
        "{:?}",
        again.records
    );
    // the same event in a new message (a client retried): the processed mark drops it
    h.send_event("d-1", go).await;
    let outcome = h.pump(2).await;
    assert!(
        matches!(
            &outcome[0].records[0].1,
            Ok(RecordOutcome::Skipped {
                reason: Skip::AlreadyProcessed | Skip::ProcessedByAnotherWriter,
                ..
            })
        ),
        "{:?}",
        outcome[0].records
    );
    assert_eq!(h.exe("d-1").await, after_first, "nothing changed");

    // a second create for the same id is a no-op that says so
    h.send("d-1", create_body("Flow", Object::new(), Some("d-1")))
        .await;
    let outcome = h.pump(2).await;
    assert!(
        matches!(&outcome[0].records[0].1, Ok(RecordOutcome::AlreadyExists { execution_id }) if execution_id == "d-1")
    );

    // its existence check is eventually consistent: a stale "absent" is refused by the
    // insert-if-absent commit, and the create is the same no-op
    h.worker
        .store
        .stale_absent_next_load
        .store(true, std::sync::atomic::Ordering::SeqCst);
    h.send("d-1", create_body("Flow", Object::new(), Some("d-1")))
        .await;
    let outcome = h.pump(2).await;
    assert!(
        !h.worker
            .store
            .stale_absent_next_load
            .load(std::sync::atomic::Ordering::SeqCst),
        "the create read eventually consistent"
    );
    assert!(
        matches!(&outcome[0].records[0].1, Ok(RecordOutcome::AlreadyExists { execution_id }) if execution_id == "d-1"),
        "{:?}",
        outcome[0].records
    );
    assert_eq!(h.exe("d-1").await, after_first, "nothing changed");
}

#[tokio::test]
async fn a_crash_between_commit_and_delivery_is_finished_by_the_relay() {
    let h = harness(false);
    h.send("c-1", create_body("Flow", Object::new(), None))
        .await;
    h.pump(2).await;
    h.send_event("c-1", Event::new("Go")).await;
    h.pump(2).await;
    h.clock.advance(10.0);
    sweep_once(&h.worker.store, &*h.transport, h.clock.now())
        .await
        .expect("sweep");
    h.pump(2).await; // forked: two regions
    h.send_event("c-1", Event::new("DoneA")).await;
    h.pump(1).await; // broadcast to the regions' groups
                     // region A finishes; publishing its Finished to the parent fails (the worker "crashed")
    let batch = h.transport.take(10);
    assert_eq!(
        batch.len(),
        2,
        "DoneA for each region; only region A moves and emits"
    );
    h.transport.fail_next_publishes(1);
    let outcome = h
        .worker
        .handle_batch(batch.iter().map(record).collect(), None)
        .await;
    assert!(
        outcome.failed_ids().is_empty(),
        "the commit is done: the record succeeds"
    );
    assert!(h.transport.is_empty(), "nothing was published");
    let pending = h.worker.store.pending_outbox().await.expect("outbox");
    assert_eq!(pending.len(), 1, "the Finished waits in the outbox");
    assert_eq!(pending[0].event.kind, "Finished");

    let report = relay(&h.worker.store, &*h.transport, &h.worker.driver, far())
        .await
        .expect("relay");
    assert_eq!(report.delivered.published, 1);
    assert!(h
        .worker
        .store
        .pending_outbox()
        .await
        .expect("outbox")
        .is_empty());
    // the relay ran again right after (a crash before the ack): the same dedupe id, dropped
    let entry = &pending[0];
    h.transport
        .publish(
            harel_queue::Outgoing::event(
                entry.target_id.clone().expect("a target"),
                &entry.event,
                harel_queue::DedupeKey::Outbox { seq: entry.seq },
            )
            .expect("valid"),
        )
        .await
        .expect("accepted");
    assert_eq!(h.transport.len(), 1, "the resend was deduplicated");
    h.pump(2).await;
    let parent = h.exe("c-1").await;
    assert!(parent.children.values().any(|c| c.finished), "{parent:?}");
}

#[tokio::test]
async fn relay_creates_pending_children_and_delivers_their_emits() {
    // a crash right after the fork's commit: spawns pending, no child exists yet
    let h = harness(false);
    h.send("r-1", create_body("Flow", Object::new(), None))
        .await;
    h.pump(2).await;
    h.send_event("r-1", Event::new("Go")).await;
    h.pump(2).await;
    h.clock.advance(10.0);
    let mut exe = h.exe("r-1").await;
    let timeout = harel_engine::timeout_event("r-1", "Waiting", 1005.0);
    let stepped = h
        .worker
        .driver
        .step(&h.worker.store, &mut exe, Some(&timeout))
        .await
        .expect("step");
    assert_eq!(stepped.spawns.len(), 2);
    let report = relay(&h.worker.store, &*h.transport, &h.worker.driver, far())
        .await
        .expect("relay");
    assert_eq!(report.delivered.children_created, 2);
    assert_eq!(report.delivered.acked_spawns, 2);
    for child in h.exe("r-1").await.children.keys() {
        assert_eq!(h.exe(child).await.status, Status::Running);
    }
    // a second run finds nothing
    let again = relay(&h.worker.store, &*h.transport, &h.worker.driver, far())
        .await
        .expect("relay");
    assert_eq!(again.passes, 0);
    // out of time: a region finishes, its Finished is pending, and the relay has no time left
    let child = h
        .exe("r-1")
        .await
        .children
        .keys()
        .next()
        .expect("a region")
        .clone();
    let mut region = h.exe(&child).await;
    let done = if child.contains("Work.A") {
        "DoneA"
    } else {
        "DoneB"
    };
    let stepped = h
        .worker
        .driver
        .step(&h.worker.store, &mut region, Some(&Event::new(done)))
        .await
        .expect("step");
    assert_eq!(stepped.outbox.len(), 1, "{child}: the region's Finished");
    let late = relay(
        &h.worker.store,
        &*h.transport,
        &h.worker.driver,
        Instant::now(),
    )
    .await
    .expect("relay");
    assert!(late.out_of_time);
    assert_eq!(
        h.worker.store.pending_outbox().await.expect("outbox").len(),
        1,
        "left for the next run"
    );
    let next = relay(&h.worker.store, &*h.transport, &h.worker.driver, far())
        .await
        .expect("relay");
    assert_eq!(next.delivered.published, 1);
}

#[tokio::test]
async fn conflict_fails_the_record_and_later_records_of_its_group() {
    let h = harness(false);
    h.send("k-1", create_body("Flow", Object::new(), None))
        .await;
    h.send("k-2", create_body("Flow", Object::new(), None))
        .await;
    h.pump(2).await;
    h.send_event("k-1", Event::new("Go")).await;
    h.send_event("k-1", Event::new("Boom")).await;
    h.send_event("k-2", Event::new("Go")).await;
    let batch = h.transport.take(10);
    // another writer moved k-1 on between the worker's load and its commit
    h.worker
        .store
        .conflict_next_commit
        .store(true, std::sync::atomic::Ordering::SeqCst);
    // one group at a time, so the injected conflict hits k-1's first record
    let outcome = h
        .worker
        .handle_batch(batch.iter().take(2).map(record).collect(), None)
        .await;
    assert!(
        matches!(&outcome.records[0].1, Err(RecordError::Conflict(_))),
        "{:?}",
        outcome.records
    );
    assert!(
        matches!(&outcome.records[1].1, Err(RecordError::Blocked(g)) if g == "k-1"),
        "{:?}",
        outcome.records
    );
    assert_eq!(
        h.exe("k-1").await.active_path.as_deref(),
        Some("Idle"),
        "nothing committed"
    );
    // SQS redelivers both, in order: they succeed now
    let again = h
        .worker
        .handle_batch(batch.iter().map(record).collect(), None)
        .await;
    assert!(again.failed_ids().is_empty(), "{:?}", again.records);
    assert_eq!(
        h.exe("k-1").await.active_path.as_deref(),
        Some("Waiting"),
        "Go, then Boom is ignored in Waiting"
    );
    assert_eq!(h.exe("k-2").await.active_path.as_deref(), Some("Waiting"));
}

#[tokio::test]
async fn fifo_order_under_partial_failure() {
    let h = harness(false);
    h.send("p-1", create_body("Flow", Object::new(), None))
        .await;
    h.pump(2).await;
    // suspend p-1 by hand: its records are parked, later ones blocked, other groups go on
    let mut exe = h.exe("p-1").await;
    exe.status = Status::Suspended;
    h.worker.store.save(&mut exe).await.expect("suspend");
    h.send("q-1", create_body("Flow", Object::new(), None))
        .await;
    h.send_event("p-1", Event::new("Go")).await;
    h.send_event("p-1", Event::new("Ship")).await;
    h.send_event("q-1", Event::new("Go")).await;
    let batch = h.transport.take(10);
    let outcome = h
        .worker
        .handle_batch(batch.iter().map(record).collect(), None)
        .await;
    let results: Vec<_> = outcome.records.iter().map(|(_, r)| r).collect();
    assert!(
        matches!(results[0], Ok(RecordOutcome::Created { .. })),
        "{:?}",
        results[0]
    );
    assert!(
        matches!(results[1], Err(RecordError::Parked(_))),
        "{:?}",
        results[1]
    );
    assert!(
        matches!(results[2], Err(RecordError::Blocked(_))),
        "{:?}",
        results[2]
    );
    assert!(
        matches!(results[3], Ok(RecordOutcome::Processed { .. })),
        "{:?}",
        results[3]
    );
    assert_eq!(
        outcome.failed_ids(),
        vec![batch[1].message_id.clone(), batch[2].message_id.clone()]
    );
    let parked = h.transport.parked();
    // the record behind the parked one is parked as long (not left to the visibility timeout)
    assert_eq!(
        parked,
        vec![
            (batch[1].receipt_handle.clone(), Duration::from_secs(5)),
            (batch[2].receipt_handle.clone(), Duration::from_secs(5))
        ]
    );
    let response = outcome.to_response();
    assert_eq!(response.batch_item_failures.len(), 2);
    assert_eq!(
        response.batch_item_failures[0].item_identifier,
        batch[1].message_id
    );
    assert_eq!(h.exe("q-1").await.active_path.as_deref(), Some("Waiting"));
    assert_eq!(
        h.exe("p-1").await.active_path.as_deref(),
        Some("Idle"),
        "nothing ran for p-1"
    );
}

#[tokio::test]
async fn malformed_messages_go_to_the_dead_letter_queue_with_the_reason() {
    let h = harness(true);
    h.send("m-1", "not json".to_string()).await;
    h.send("m-1", r#"{"no": "kind"}"#.to_string()).await;
    h.send("m-2", create_body("Nope", Object::new(), None))
        .await;
    let mut bad_ctx = Object::new();
    bad_ctx.insert("amount".into(), serde_json::json!("seven"));
    h.send("m-3", create_body("Flow", bad_ctx, None)).await;
    h.send("m-4", create_body("Flow", Object::new(), None))
        .await;
    let outcome = h.pump(2).await;
    assert!(
        outcome[0].failed_ids().is_empty(),
        "dead letters are not retried"
    );
    let dead = h.transport.dead_letters();
    let reasons: Vec<&str> = dead
        .iter()
        .map(|m| m.attribute(REASON_ATTRIBUTE).expect("reason"))
        .collect();
    assert_eq!(dead.len(), 4, "{reasons:?}");
    assert!(reasons[0].contains("not JSON"));
    assert!(reasons[1].contains("not a harel Event"));
    assert!(reasons[2].contains("unknown machine \"Nope\""));
    assert!(reasons[3].contains("invalid context"), "{}", reasons[3]);
    assert_eq!(dead[0].body, "not json");
    // the group goes on: m-4 was created
    assert_eq!(h.exe("m-4").await.status, Status::Running);
    // no group at all
    let record = harel_lambda::Record::new("x", "r", None, "{}");
    let out = h.worker.handle_batch(vec![record], None).await;
    assert!(
        matches!(&out.records[0].1, Ok(RecordOutcome::DeadLettered { reason: DeadLetterReason::Malformed(why) }) if why.contains("MessageGroupId"))
    );
}

#[tokio::test]
async fn an_action_error_fails_the_execution_not_the_batch() {
    let h = harness(false);
    h.send("e-1", create_body("Flow", Object::new(), None))
        .await;
    h.pump(2).await;
    h.send_event("e-1", Event::new("Boom")).await;
    let outcome = h.pump(2).await;
    assert!(outcome[0].failed_ids().is_empty());
    let exe = h.exe("e-1").await;
    assert_eq!(exe.status, Status::Failed);
    assert_eq!(exe.error.as_deref(), Some("RuntimeError: the crate fell"));
}

#[tokio::test]
async fn an_event_that_does_not_fit_its_declaration_is_dead_lettered() {
    let h = harness(false);
    h.send("v-1", create_body("Flow", Object::new(), None))
        .await;
    h.pump(2).await;
    let mut data = Object::new();
    data.insert("carrier".into(), serde_json::json!(5));
    h.send_event("v-1", Event::new("Ship").with_data(data))
        .await;
    h.send_event("v-1", Event::new("Go")).await;
    let outcome = h.pump(2).await;
    assert!(outcome[0].failed_ids().is_empty());
    let dead = h.transport.dead_letters();
    assert_eq!(dead.len(), 1);
    let reason = dead[0].attribute(REASON_ATTRIBUTE).expect("reason");
    assert!(
        reason.starts_with("event Ship for v-1:") && reason.contains("carrier"),
        "{reason}"
    );
    assert_eq!(
        h.exe("v-1").await.active_path.as_deref(),
        Some("Waiting"),
        "the group went on"
    );
}

#[tokio::test]
async fn the_sweeper_sleeps_toward_the_next_timer_and_stops_before_the_deadline() {
    let h = harness(false);
    h.send("t-1", create_body("Flow", Object::new(), None))
        .await;
    h.send_event("t-1", Event::new("Go")).await;
    h.pump(2).await;
    // the timer fires 5 s after the manual clock's 1000; the sweeper's clock runs 50 times
    // faster than real time, so it becomes due about 100 ms into the window
    let start = Instant::now();
    let clock = move || 1000.0 + start.elapsed().as_secs_f64() * 50.0;
    let plan = SweepPlan::scheduled(
        1000.0,
        Duration::from_secs(20),
        0,
        Duration::from_millis(20),
        far(),
    );
    let report = harel_lambda::sweep(&h.worker.store, &*h.transport, clock, plan)
        .await
        .expect("sweep");
    assert_eq!(report.fired, 1);
    assert_eq!(report.polls, 1, "one fire pass, when the timer was due");
    assert!(
        report.looks >= 3,
        "it looked again while sleeping: {}",
        report.looks
    );
    // nothing left in its window: it returned at once after firing, not at the window's end
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(95) && took < Duration::from_millis(350),
        "{took:?}"
    );
    assert!(h.transport.take_all()[0].body.contains("Timeout"));

    // idle: one look, nothing fired, back at once
    let start = Instant::now();
    let plan = SweepPlan::scheduled(
        1000.0,
        Duration::from_secs(60),
        0,
        Duration::from_secs(1),
        far(),
    );
    let report = harel_lambda::sweep(&h.worker.store, &*h.transport, || 1000.0, plan)
        .await
        .expect("sweep");
    assert_eq!((report.looks, report.polls, report.fired), (1, 0, 0));
    assert!(start.elapsed() < Duration::from_millis(50));

    // a deadline before the next due time ends it early
    h.send("t-2", create_body("Flow", Object::new(), None))
        .await;
    h.send_event("t-2", Event::new("Go")).await;
    h.pump(2).await;
    let start = Instant::now();
    let plan = SweepPlan::scheduled(
        0.0,
        Duration::from_secs(1_000_000),
        0,
        Duration::from_secs(30),
        Instant::now() + Duration::from_millis(100),
    );
    let report = harel_lambda::sweep(&h.worker.store, &*h.transport, || 0.0, plan)
        .await
        .expect("sweep");
    assert!(start.elapsed() < Duration::from_secs(1));
    assert!(report.out_of_time);
    assert_eq!(report.fired, 0);
}

/// The worker wakes a sweeper once for a batch that armed a timer due within the window, and
/// not again while that wake still covers what later batches arm.
#[tokio::test]
async fn a_batch_arming_a_timer_due_before_the_next_tick_wakes_the_sweeper_once() {
    let h = harness(false);
    let window = common::config().sweep_window.as_secs_f64();
    h.send("w-1", create_body("Flow", Object::new(), None))
        .await;
    h.pump(1).await;
    assert!(
        h.waker.take().is_empty(),
        "a create arming no timer wakes nobody"
    );
    h.send_event("w-1", Event::new("Go")).await; // Waiting: timeout 5
    h.send("w-2", create_body("Flow", Object::new(), None))
        .await;
    h.send_event("w-2", Event::new("Go")).await;
    h.pump(1).await;
    assert_eq!(
        h.waker.take(),
        vec![1000.0 + window],
        "two timers armed in one batch: one wake, for the whole window"
    );
    h.send("w-3", create_body("Flow", Object::new(), None))
        .await;
    h.send_event("w-3", Event::new("Go")).await;
    h.pump(1).await;
    assert!(h.waker.take().is_empty(), "the earlier wake covers 1005");
    h.clock.set(1000.0 + window);
    h.send("w-4", create_body("Flow", Object::new(), None))
        .await;
    h.send_event("w-4", Event::new("Go")).await;
    h.pump(1).await;
    assert_eq!(
        h.waker.take(),
        vec![1000.0 + 2.0 * window],
        "past the covered window"
    );
}

/// An index that still shows a fired timer for a while: the sweeper neither publishes it
/// again nor spins on it; it pauses and looks again until the index catches up.
#[tokio::test]
async fn a_fired_timer_the_index_still_shows_is_not_fired_again() {
    let h = harness(false);
    h.send("s-1", create_body("Flow", Object::new(), None))
        .await;
    h.send_event("s-1", Event::new("Go")).await;
    h.pump(2).await;
    let due = h.worker.store.due_timers(1005.0).await.expect("due");
    assert_eq!(due.len(), 1);
    *h.worker.store.stale_timers.lock().expect("stale") = due;
    let store = h.worker.store.clone();
    // the index catches up 500 ms into the tick
    let lagging = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        store.stale_timers.lock().expect("stale").clear();
    });
    let plan = SweepPlan::scheduled(
        1005.0,
        Duration::from_secs(60),
        0,
        Duration::from_secs(1),
        far(),
    );
    let report = harel_lambda::sweep(&h.worker.store, &*h.transport, || 1005.0, plan)
        .await
        .expect("sweep");
    lagging.await.expect("lag");
    assert_eq!(report.fired, 1, "fired once");
    assert_eq!(h.transport.take_all().len(), 1, "published once");
    assert!(
        (2..=5).contains(&report.polls),
        "paused between looks while the index lagged: {} fire passes",
        report.polls
    );
}
