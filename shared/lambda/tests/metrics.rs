//! The EMF documents of the worker, sweeper and relay count what happened: a batch with a
//! conflict and a dead letter, a redelivery, a fork's commits, a failed execution, timer lag.

mod common;

use std::time::{Duration, Instant};

use aws_lambda_events::sqs::SqsMessage;
use common::{harness, record};
use harel_lambda::metrics::{relay_metrics, sweeper_metrics, worker_metrics};
use harel_lambda::{fire_due, relay, RecordError, SweepReport};
use harel_model::{Event, Object};
use harel_queue::create_body;
use serde_json::{json, Value};

#[tokio::test]
async fn a_batch_with_a_conflict_and_a_dead_letter_counts_them() {
    let h = harness(false);
    h.send("k-1", create_body("Flow", Object::new(), None))
        .await;
    h.pump(2).await;
    h.send_event("k-1", Event::new("Go")).await;
    h.send("k-2", "not JSON".into()).await;
    let batch = h.transport.take(10);
    assert_eq!(batch.len(), 2);
    h.worker
        .store
        .conflict_next_commit
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let outcome = h
        .worker
        .handle_batch(batch.iter().map(record).collect(), None)
        .await;
    assert!(matches!(
        &outcome.records[0].1,
        Err(RecordError::Conflict(_))
    ));
    // the Go is a redelivery (its second receive), sent 1.5 s before
    let now_ms = 1_767_225_601_500;
    let sqs = |message_id: &str, receive_count: u32, sent_ms: u64| {
        let mut message = SqsMessage::default();
        message.message_id = Some(message_id.to_string());
        for (name, value) in [
            ("ApproximateReceiveCount", receive_count.to_string()),
            ("SentTimestamp", sent_ms.to_string()),
        ] {
            message.attributes.insert(name.to_string(), value);
        }
        message
    };
    let messages = vec![
        sqs(&batch[0].message_id, 2, now_ms - 1_500),
        sqs(&batch[1].message_id, 1, now_ms - 20),
    ];
    let docs = worker_metrics(&outcome, &messages, now_ms)
        .documents()
        .expect("valid EMF");
    assert_eq!(docs.len(), 2, "the function's and Flow's: {docs:#?}");
    for doc in &docs {
        assert_valid_emf(doc);
    }
    let function = &docs[0];
    assert_eq!(function["Function"], "worker");
    assert_eq!(function["Conflicts"], json!(1.0));
    assert_eq!(function["DlqMoves"], json!(1.0));
    assert_eq!(function["RecordsFailed"], json!(1.0));
    assert_eq!(function["Redeliveries"], json!(1.0));
    assert_eq!(function["EventsProcessed"], json!(0.0));
    assert_eq!(function["Commits"], json!(0.0));
    assert_eq!(function["MessageAge"], json!([1500.0, 20.0]));
    let flow = &docs[1];
    assert_eq!(flow["Machine"], "Flow");
    assert_eq!(flow["Conflicts"], json!(1.0));
    assert_eq!(flow["Redeliveries"], json!(1.0));
    assert!(flow.get("DlqMoves").is_none(), "not JSON: no machine");

    // redelivered, the Go commits; after its timer the Timeout forks two regions (three
    // commits) with a lag the worker measures against the timer's due time
    let again = h.worker.handle_batch(vec![record(&batch[0])], None).await;
    let m = worker_metrics(&again, &[], now_ms);
    assert_eq!(m.total(harel_lambda::metrics::COMMITS), 1);
    assert_eq!(m.total(harel_lambda::metrics::EVENTS_PROCESSED), 1);
    h.clock.advance(8.0);
    let mut report = SweepReport::default();
    fire_due(
        &h.worker.store,
        &*h.transport,
        harel_runtime::Clock::now(&h.clock),
        &mut report,
    )
    .await
    .expect("sweep");
    assert_eq!(
        report.timer_lag_ms,
        vec![3000],
        "due at +5 s, swept at +8 s"
    );
    let sweeper = sweeper_metrics(&report, now_ms).documents().expect("valid");
    assert_valid_emf(&sweeper[0]);
    assert_eq!(sweeper[0]["TimerLag"], json!(3000.0));
    assert_eq!(sweeper[0]["TimersFired"], json!(1.0));
    h.clock.advance(0.25);
    let timeout = h.transport.take(10);
    let forked = h
        .worker
        .handle_batch(timeout.iter().map(record).collect(), None)
        .await;
    let docs = worker_metrics(&forked, &[], now_ms)
        .documents()
        .expect("valid");
    assert_eq!(docs[0]["Commits"], json!(3.0), "{docs:#?}");
    assert_eq!(docs[0]["TimerLag"], json!(3250.0));

    // an action error fails the execution, not the record
    h.send("k-3", create_body("Flow", Object::new(), None))
        .await;
    h.send_event("k-3", Event::new("Boom")).await;
    let batch = h.transport.take(10);
    let boom = h
        .worker
        .handle_batch(batch.iter().map(record).collect(), None)
        .await;
    let docs = worker_metrics(&boom, &[], now_ms)
        .documents()
        .expect("valid");
    assert_eq!(docs[0]["FailedExecutions"], json!(1.0), "{docs:#?}");
    assert_eq!(docs[0]["RecordsFailed"], json!(0.0));

    let relayed = relay(
        &h.worker.store,
        &*h.transport,
        &h.worker.driver,
        Instant::now() + Duration::from_secs(30),
    )
    .await
    .expect("relay");
    let docs = relay_metrics(&relayed, now_ms).documents().expect("valid");
    assert_valid_emf(&docs[0]);
    assert_eq!(docs[0]["Function"], "relay");
}

#[tokio::test]
async fn the_worker_counts_per_version_the_executions_pinned_to_one() {
    use harel_store::prelude::*;
    let h = harness(false);
    h.send("k-v", create_body("Flow", Object::new(), None))
        .await;
    let created = h.pump(1).await;
    h.send_event("k-v", Event::new("Go")).await;
    let routed = h.pump(1).await;
    let exe = h
        .worker
        .store
        .load("k-v")
        .await
        .expect("load")
        .expect("created");
    let pinned = exe.pinned_version().expect("a new execution is pinned");
    for outcome in [&created[0], &routed[0]] {
        assert_eq!(outcome.observed[0].version.as_deref(), Some(pinned));
        let m = worker_metrics(outcome, &[], 1);
        let docs = m.version_documents().expect("valid");
        assert_eq!(docs.len(), 1, "{docs:#?}");
        assert_valid_emf(&docs[0]);
        assert_eq!(docs[0]["Machine"], "Flow");
        assert_eq!(docs[0]["Version"], pinned);
        assert_eq!(docs[0]["EventsProcessed"], json!(1.0));
        assert_eq!(docs[0]["RecordsFailed"], json!(0.0));
    }
}

/// The specification's structure: `_aws` with a millisecond timestamp and one directive
/// whose dimensions and metrics all have values at the root (numbers, or arrays of at most
/// 100 numbers), at most 100 metrics and 30 dimensions per set.
fn assert_valid_emf(doc: &Value) {
    let aws = &doc["_aws"];
    assert!(aws["Timestamp"].as_u64().is_some(), "{doc}");
    let directives = aws["CloudWatchMetrics"].as_array().expect("directives");
    assert_eq!(directives.len(), 1);
    let directive = &directives[0];
    assert_eq!(directive["Namespace"], "harel");
    for set in directive["Dimensions"].as_array().expect("dimension sets") {
        let set = set.as_array().expect("a set");
        assert!(!set.is_empty() && set.len() <= 30);
        for key in set {
            let key = key.as_str().expect("a dimension name");
            assert!(
                doc[key].as_str().is_some_and(|v| !v.is_empty()),
                "{key}: {doc}"
            );
        }
    }
    let metrics = directive["Metrics"].as_array().expect("metrics");
    assert!(!metrics.is_empty() && metrics.len() <= 100);
    for metric in metrics {
        let name = metric["Name"].as_str().expect("name");
        assert!(["Count", "Milliseconds"].contains(&metric["Unit"].as_str().expect("unit")));
        match &doc[name] {
            Value::Number(_) => {}
            Value::Array(values) => {
                assert!(values.len() <= 100 && values.iter().all(Value::is_number))
            }
            other => panic!("{name} = {other}"),
        }
    }
}
