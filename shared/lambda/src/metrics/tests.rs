use serde_json::{json, Value};

use super::*;
use crate::worker::{BatchOutcome, Observation, RecordError, RecordOutcome};
use aws_lambda_events::sqs::SqsMessage;

fn directive(doc: &Value) -> &Value {
    &doc["_aws"]["CloudWatchMetrics"][0]
}

#[test]
fn a_document_has_the_metadata_and_its_values_at_the_root() {
    let mut m = InvocationMetrics::new("worker", 1_700_000_000_123);
    m.count(Some("Order"), COMMITS, 2);
    m.count(Some("Order"), CONFLICTS, 1);
    m.time(Some("Order"), TIMER_LAG, 12.5);
    let docs = m.documents().expect("valid");
    assert_eq!(docs.len(), 2, "{docs:?}");
    let function = &docs[0];
    assert_eq!(function["_aws"]["Timestamp"], json!(1_700_000_000_123u64));
    assert_eq!(directive(function)["Namespace"], json!("harel"));
    assert_eq!(
        directive(function)["Dimensions"],
        json!([["service", "Function"]])
    );
    assert_eq!(function["Function"], json!("worker"));
    assert_eq!(function["service"], json!("harel"));
    assert!(function.get("ColdStart").is_none(), "a warm invocation");
    assert_eq!(function["Commits"], json!(2.0));
    assert_eq!(function["TimerLag"], json!(12.5));
    assert!(function.get("Machine").is_none());
    let order = &docs[1];
    assert_eq!(
        directive(order)["Dimensions"],
        json!([["service", "Function", "Machine"]])
    );
    assert_eq!(order["Machine"], json!("Order"));
    assert_eq!(order["Conflicts"], json!(1.0));
    // every metric defined is at the root, with its unit
    for def in directive(order)["Metrics"].as_array().expect("metrics") {
        let name = def["Name"].as_str().expect("name");
        assert!(order.get(name).is_some(), "{name} has no value");
        assert!(["Count", "Milliseconds"].contains(&def["Unit"].as_str().expect("unit")));
    }
}

#[test]
fn the_namespace_and_the_service_dimension_come_from_powertools_variables() {
    let lookup = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    };
    assert_eq!(
        MetricsSettings::from_lookup(lookup(&[])),
        Ok(MetricsSettings::default())
    );
    let settings = MetricsSettings::from_lookup(lookup(&[
        (POWERTOOLS_METRICS_NAMESPACE, "acme/orders"),
        ("POWERTOOLS_SERVICE_NAME", "harel-dev"),
    ]))
    .expect("valid");
    let docs = InvocationMetrics::new("relay", 5)
        .with_settings(&settings)
        .with_cold_start(true)
        .documents()
        .expect("valid");
    assert_eq!(docs.len(), 1);
    assert_eq!(directive(&docs[0])["Namespace"], json!("acme/orders"));
    assert_eq!(docs[0]["service"], json!("harel-dev"));
    assert_eq!(docs[0]["Function"], json!("relay"));
    assert_eq!(docs[0]["ColdStart"], json!(1.0));
    assert_eq!(
        directive(&docs[0])["Metrics"],
        json!([{"Name": "ColdStart", "Unit": "Count"}])
    );
    let long = "n".repeat(256);
    assert!(matches!(
        MetricsSettings::from_lookup(
            |name| (name == POWERTOOLS_METRICS_NAMESPACE).then(|| long.clone())
        ),
        Err(EmfError::InvalidName { .. })
    ));
}

#[test]
fn many_samples_spill_into_further_documents() {
    let mut m = InvocationMetrics::new("sweeper", 1);
    m.count(None, TIMERS_FIRED, 250);
    for i in 0..250 {
        m.time(None, TIMER_LAG, i as f64);
    }
    let docs = m.documents().expect("valid");
    assert_eq!(docs.len(), 3);
    let lens: Vec<usize> = docs
        .iter()
        .map(|d| d["TimerLag"].as_array().map_or(1, Vec::len))
        .collect();
    assert_eq!(lens, vec![100, 100, 50]);
    assert_eq!(docs[0]["TimersFired"], json!(250.0));
    assert!(docs[1].get("TimersFired").is_none(), "counted once");
}

#[test]
fn remote_actions_have_documents_of_their_own() {
    let mut m = InvocationMetrics::new("worker", 7);
    m.count(None, EVENTS_PROCESSED, 1);
    m.action_count("billing.charge", REMOTE_CALLS, 2);
    m.action_count("billing.charge", REMOTE_ERRORS, 1);
    m.action_count("billing.charge", REMOTE_RETRIES, 1);
    m.action_time("billing.charge", REMOTE_LATENCY, 12.5);
    m.action_time("billing.charge", REMOTE_LATENCY, 30.0);
    let docs = m.documents().expect("valid");
    assert_eq!(docs.len(), 2);
    assert!(
        docs[0].get("RemoteCalls").is_none(),
        "not in the function's document"
    );
    let action = &docs[1];
    assert_eq!(action["Action"], json!("billing.charge"));
    assert_eq!(action["Function"], json!("worker"));
    assert_eq!(
        action["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
        json!([["service", "Function", "Action"]])
    );
    assert_eq!(action["RemoteCalls"], json!(2.0));
    assert_eq!(action["RemoteErrors"], json!(1.0));
    assert_eq!(action["RemoteRetries"], json!(1.0));
    assert_eq!(action["RemoteLatency"], json!([12.5, 30.0]));
}

#[test]
fn webhooks_are_counted_per_hook_and_for_the_function() {
    let mut m = InvocationMetrics::new("api", 7);
    m.hook_count("stripe", WEBHOOKS_IGNORED, 1);
    m.hook_count("github", WEBHOOKS_DELIVERED, 1);
    let docs = m.documents().expect("valid");
    assert_eq!(docs.len(), 3, "{docs:?}");
    assert_eq!(docs[0]["Function"], json!("api"));
    assert_eq!(docs[0]["WebhooksIgnored"], json!(1.0));
    assert_eq!(docs[0]["WebhooksDelivered"], json!(1.0));
    // by name: github first
    let stripe = &docs[2];
    assert_eq!(stripe["Hook"], json!("stripe"));
    assert_eq!(
        directive(stripe)["Dimensions"],
        json!([["service", "Function", "Hook"]])
    );
    assert_eq!(stripe["WebhooksIgnored"], json!(1.0));
    assert!(stripe.get("WebhooksDelivered").is_none());
}

#[test]
fn the_worker_reads_redeliveries_and_ages_from_the_sqs_attributes() {
    let message = |id: &str, attributes: &[(&str, &str)]| {
        let mut message = SqsMessage::default();
        message.message_id = Some(id.into());
        for (k, v) in attributes {
            message.attributes.insert(k.to_string(), v.to_string());
        }
        message
    };
    let messages = [
        message(
            "m1",
            &[
                ("ApproximateReceiveCount", "3"),
                ("SentTimestamp", "1767225600000"),
            ],
        ),
        message("m2", &[]),
    ];
    let mut outcome = BatchOutcome::default();
    for id in ["m1", "m2", "m3"] {
        let handled = RecordOutcome::Created {
            execution_id: id.into(),
        };
        outcome.records.push((id.into(), Ok(handled)));
    }
    let m = worker_metrics(&outcome, &messages, 1_767_225_600_250);
    assert_eq!(m.total(REDELIVERIES), 1);
    assert_eq!(m.total.timings[&MESSAGE_AGE], vec![250.0]);
}

fn observed(machine: &str, version: Option<&str>) -> Observation {
    Observation {
        machine: Some(machine.into()),
        version: version.map(Into::into),
        ..Observation::default()
    }
}

#[test]
fn each_machine_version_has_a_document_of_the_deploy_counts() {
    let (old, new) = ("0123456789abcdef", "fedcba9876543210");
    let mut outcome = BatchOutcome::default();
    let processed = |id: &str| {
        Ok(RecordOutcome::Processed {
            execution_id: id.into(),
        })
    };
    let records = [
        (processed("e1"), observed("Order", Some(old))),
        (processed("e2"), observed("Order", Some(new))),
        (
            processed("e3"),
            Observation {
                failed_execution: true,
                commits: 1,
                ..observed("Order", Some(new))
            },
        ),
        (
            Err(RecordError::Blocked("e4".into())),
            observed("Order", Some(old)),
        ),
        (processed("e5"), observed("Order", None)),
    ];
    for (i, (result, seen)) in records.into_iter().enumerate() {
        outcome.records.push((format!("m{i}"), result));
        outcome.observed.push(seen);
    }
    let m = worker_metrics(&outcome, &[], 9);
    let docs = m.documents().expect("valid");
    assert_eq!(docs.len(), 2, "the function's and Order's: {docs:#?}");
    assert_eq!(docs[1]["EventsProcessed"], json!(4.0));
    let versions = m.version_documents().expect("valid");
    assert_eq!(versions.len(), 2, "{versions:#?}");
    for (doc, version) in versions.iter().zip([old, new]) {
        assert_eq!(
            directive(doc)["Dimensions"],
            json!([["service", "Function", "Machine", "Version"]])
        );
        assert_eq!(doc["Function"], json!("worker"));
        assert_eq!(doc["Machine"], json!("Order"));
        assert_eq!(doc["Version"], json!(version));
        let names: Vec<&str> = directive(doc)["Metrics"]
            .as_array()
            .expect("metrics")
            .iter()
            .map(|d| d["Name"].as_str().expect("name"))
            .collect();
        assert_eq!(
            names,
            [
                "DlqMoves",
                "EventsProcessed",
                "FailedExecutions",
                "RecordsFailed"
            ],
            "the deploy counts only, zeros included"
        );
    }
    let counts = |doc: &Value| {
        [
            "EventsProcessed",
            "FailedExecutions",
            "RecordsFailed",
            "DlqMoves",
        ]
        .map(|name| doc[name].as_f64().expect(name))
    };
    assert_eq!(counts(&versions[0]), [1.0, 0.0, 1.0, 0.0], "old");
    assert_eq!(counts(&versions[1]), [2.0, 1.0, 0.0, 0.0], "new");
}

#[test]
fn unpinned_executions_have_no_version_document() {
    let mut outcome = BatchOutcome::default();
    for (i, machine) in ["Order", "Flow"].into_iter().enumerate() {
        let handled = RecordOutcome::Processed {
            execution_id: format!("e{i}"),
        };
        outcome.records.push((format!("m{i}"), Ok(handled)));
        outcome.observed.push(observed(machine, None));
    }
    let m = worker_metrics(&outcome, &[], 9);
    assert_eq!(m.documents().expect("valid").len(), 3);
    assert_eq!(m.version_documents().expect("valid"), Vec::<Value>::new());
}
