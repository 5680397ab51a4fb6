//! Events on EventBridge, end to end on moto (`scripts/with-moto.sh cargo test -p harel-tests
//! --test events_bridge`): executions run through the worker (the queue, the DynamoDB store)
//! and the control plane, the relay's `publish_events` puts what they committed on a bus of
//! their own, and a rule on that bus sends everything to an SQS queue, which must then hold
//! exactly one `Execution Status Change` per status change and the machine's domain event. A
//! publisher that dies between `PutEvents` and its acknowledgement puts the event again with
//! the same `event_id`; harel Python's relay over the same tables neither sees nor touches
//! the events.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use harel_dynamodb::DynamoDbStore;
use harel_lambda::eventbridge::EventBridgeBus;
use harel_lambda::Worker;
use harel_runtime::delivery::events::{BusError, EntryFailure, EventBus};
use harel_runtime::{publish_events, ActionError, ActionRegistry, Driver};
use harel_store::prelude::*;
use harel_store::{BusEvent, Commit, EventsConfig};
use harel_testkit::{pump, send, MotoStack};
use harel_tests::differential::{harel_python, workspace_root};
use serde_json::{json, Value};

fn machines() -> Vec<harel_model::Definition> {
    let path = workspace_root().join("tests/tests/events_flow.stm");
    ["Flow", "Ping"]
        .iter()
        .map(|m| harel_lang::load_file(&path, Some(m)).expect("the machine loads"))
        .collect()
}

fn driver() -> Driver {
    let mut registry = ActionRegistry::with_stdlib();
    registry.register_fn("test.boom", |_, _, _| {
        Err(ActionError::new("ValueError", "boom"))
    });
    Driver::new(machines(), registry)
}

/// A bus of its own, a rule taking everything harel sends on it, and the rule's SQS target.
struct Bus {
    name: String,
    client: aws_sdk_eventbridge::Client,
    target: String,
    sqs: aws_sdk_sqs::Client,
    dlq: String,
}

/// The consumers' example in template.yaml (`FailedExecutionsRule`): its `EventPattern` as
/// written there, with the `EventSource` parameter's default for its `!Ref`.
fn failed_executions_pattern() -> Value {
    let text = std::fs::read_to_string(workspace_root().join("template.yaml")).expect("template");
    let template: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("template parses");
    let pattern = &template["Resources"]["FailedExecutionsRule"]["Properties"]["EventPattern"];
    let mut pattern: Value = serde_json::to_value(pattern).expect("the pattern as JSON");
    let source = template["Parameters"]["EventSource"]["Default"]
        .as_str()
        .expect("EventSource has a default");
    // the one `!Ref` in the pattern: serde_yaml_ng gives a tagged value as {"!Ref": name}
    assert_eq!(
        pattern["source"],
        json!([{"!Ref": "EventSource"}]),
        "{pattern}"
    );
    pattern["source"] = json!([source]);
    pattern
}

impl Bus {
    /// A second rule on the bus, with its own queue: returns the queue's URL.
    async fn rule_to_queue(&self, name: &str, pattern: &Value) -> String {
        let queue = self
            .sqs
            .create_queue()
            .queue_name(format!("{}-{name}", self.name))
            .send()
            .await
            .expect("the rule's queue")
            .queue_url()
            .expect("a url")
            .to_string();
        let arn = self
            .sqs
            .get_queue_attributes()
            .queue_url(&queue)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
            .send()
            .await
            .expect("the queue's attributes")
            .attributes()
            .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn))
            .expect("an ARN")
            .clone();
        self.client
            .put_rule()
            .name(name)
            .event_bus_name(&self.name)
            .event_pattern(pattern.to_string())
            .send()
            .await
            .expect("the rule");
        self.client
            .put_targets()
            .rule(name)
            .event_bus_name(&self.name)
            .targets(
                aws_sdk_eventbridge::types::Target::builder()
                    .id("queue")
                    .arn(arn)
                    .build()
                    .expect("a target"),
            )
            .send()
            .await
            .expect("the target");
        queue
    }

    async fn new(stack: &MotoStack) -> Bus {
        let client = aws_sdk_eventbridge::Client::new(&stack.sdk);
        let name = format!("{}-bus", stack.prefix);
        client
            .create_event_bus()
            .name(&name)
            .send()
            .await
            .expect("the bus");
        let sqs = stack.sqs.clone();
        let target = sqs
            .create_queue()
            .queue_name(format!("{}-target", stack.prefix))
            .send()
            .await
            .expect("the target queue")
            .queue_url()
            .expect("a url")
            .to_string();
        let dlq = sqs
            .create_queue()
            .queue_name(format!("{}-events-dlq", stack.prefix))
            .send()
            .await
            .expect("the events dlq")
            .queue_url()
            .expect("a url")
            .to_string();
        let arn = sqs
            .get_queue_attributes()
            .queue_url(&target)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
            .send()
            .await
            .expect("the target's attributes")
            .attributes()
            .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn))
            .expect("an ARN")
            .clone();
        client
            .put_rule()
            .name("all-harel")
            .event_bus_name(&name)
            .event_pattern(json!({"source": ["harel"]}).to_string())
            .send()
            .await
            .expect("the rule");
        client
            .put_targets()
            .rule("all-harel")
            .event_bus_name(&name)
            .targets(
                aws_sdk_eventbridge::types::Target::builder()
                    .id("queue")
                    .arn(arn)
                    .build()
                    .expect("a target"),
            )
            .send()
            .await
            .expect("the target");
        Bus {
            name,
            client,
            target,
            sqs,
            dlq,
        }
    }

    fn adapter(&self) -> EventBridgeBus {
        EventBridgeBus::new(self.client.clone(), &self.name, self.sqs.clone(), &self.dlq)
    }

    /// Everything the rule delivered so far (EventBridge's envelope, `detail` inside).
    async fn received(&self) -> Vec<Value> {
        received_on(&self.sqs, &self.target).await
    }
}

/// Everything a rule's queue holds so far, taken off it.
async fn received_on(sqs: &aws_sdk_sqs::Client, queue: &str) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let got = sqs
            .receive_message()
            .queue_url(queue)
            .max_number_of_messages(10)
            .send()
            .await
            .expect("receive");
        let messages = got.messages();
        if messages.is_empty() {
            return out;
        }
        for m in messages {
            out.push(serde_json::from_str(m.body().expect("a body")).expect("JSON"));
            sqs.delete_message()
                .queue_url(queue)
                .receipt_handle(m.receipt_handle().expect("a handle"))
                .send()
                .await
                .expect("delete");
        }
    }
}

fn store(stack: &MotoStack) -> DynamoDbStore {
    stack.store().with_events(EventsConfig::default())
}

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

/// (detail-type, status or "-") per execution, in the order of their sequence.
fn by_execution(events: &[Value]) -> BTreeMap<String, Vec<(String, String)>> {
    let mut sorted: Vec<&Value> = events.iter().collect();
    sorted.sort_by_key(|e| {
        (
            e["detail"]["sequence"].as_u64().unwrap_or(u64::MAX),
            e["detail-type"] != "Execution Status Change",
        )
    });
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for e in sorted {
        out.entry(e["detail"]["execution_id"].as_str().unwrap().to_string())
            .or_default()
            .push((
                e["detail-type"].as_str().unwrap().to_string(),
                e["detail"]["status"].as_str().unwrap_or("-").to_string(),
            ));
    }
    out
}

fn create(id: &str) -> String {
    json!({"kind": "harel:create", "data": {"definition_id": "Flow", "execution_id": id}})
        .to_string()
}

fn event(kind: &str) -> String {
    json!({"kind": kind, "data": {}}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn every_status_change_reaches_a_rule_target_exactly_once() {
    let stack = MotoStack::new("ev").await;
    let bus = Bus::new(&stack).await;
    let failed_queue = bus
        .rule_to_queue("failed-executions", &failed_executions_pattern())
        .await;
    let worker = Arc::new(Worker::<_, _, harel_idempotency::MemoryClient>::new(
        store(&stack),
        stack.transport(),
        driver(),
        None,
        stack.config(&[]),
    ));
    let source = stack.source();
    for id in [
        "done-1", "failed-1", "cancel-1", "pause-1", "more-1", "more-2",
    ] {
        send(&source, id, create(id)).await;
    }
    pump(&source, &worker).await;
    send(&source, "done-1", event("Go")).await;
    send(&source, "failed-1", event("Fail")).await;
    pump(&source, &worker).await;
    send(&source, "done-1", event("Go")).await;
    pump(&source, &worker).await;
    let operator = store(&stack);
    let now = worker.driver.now();
    harel_control::terminate(&operator, "cancel-1", now)
        .await
        .expect("terminate");
    harel_control::suspend(&operator, "pause-1", now)
        .await
        .expect("suspend");
    harel_control::resume(&operator, "pause-1", now)
        .await
        .expect("resume");
    // a control command that changes nothing (already CANCELLED) writes nothing
    harel_control::terminate(&operator, "cancel-1", now)
        .await
        .expect("terminate again");

    let report = publish_events(&worker.store, &bus.adapter(), deadline())
        .await
        .expect("publish");
    assert_eq!(report.put, 12, "{report:?}");
    assert_eq!(
        report.requests, 2,
        "12 events in requests of 10: {report:?}"
    );
    assert!(worker.store.pending_published().await.unwrap().is_empty());

    let received = bus.received().await;
    let change = |s: &str| ("Execution Status Change".to_string(), s.to_string());
    let expected = BTreeMap::from([
        (
            "done-1".to_string(),
            vec![
                change("RUNNING"),
                ("OrderShipped".to_string(), "-".to_string()),
                change("DONE"),
            ],
        ),
        (
            "failed-1".to_string(),
            vec![change("RUNNING"), change("FAILED")],
        ),
        (
            "cancel-1".to_string(),
            vec![change("RUNNING"), change("CANCELLED")],
        ),
        (
            "pause-1".to_string(),
            vec![change("RUNNING"), change("SUSPENDED"), change("RUNNING")],
        ),
        ("more-1".to_string(), vec![change("RUNNING")]),
        ("more-2".to_string(), vec![change("RUNNING")]),
    ]);
    assert_eq!(by_execution(&received), expected, "{received:#?}");
    let ids: std::collections::HashSet<&str> = received
        .iter()
        .map(|e| e["detail"]["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), received.len(), "every event_id once");
    let done = received
        .iter()
        .find(|e| e["detail"]["status"] == "DONE")
        .unwrap();
    assert_eq!(done["source"], "harel");
    assert_eq!(done["detail"]["machine"], "Flow");
    assert_eq!(done["detail"]["previous_status"], "RUNNING");
    assert_eq!(done["detail"]["outcome"], "success");
    let shipped = received
        .iter()
        .find(|e| e["detail-type"] == "OrderShipped")
        .unwrap();
    assert_eq!(shipped["detail"]["order_id"], "o-1");

    // the template's consumer example takes the one FAILED change, and nothing else
    let failed = received_on(&bus.sqs, &failed_queue).await;
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0]["detail"]["execution_id"], "failed-1");
    assert_eq!(failed[0]["detail"]["status"], "FAILED");
    assert_eq!(failed[0]["detail"]["previous_status"], "RUNNING");

    // nothing left: a second run puts nothing
    let again = publish_events(&worker.store, &bus.adapter(), deadline())
        .await
        .expect("publish");
    assert_eq!((again.put, again.requests), (0, 0));
    assert!(bus.received().await.is_empty());
}

/// The bus, then a crash before the answer reaches the publisher.
struct CrashAfterPut(EventBridgeBus);

impl EventBus for CrashAfterPut {
    async fn put(&self, events: &[BusEvent]) -> Result<Vec<Option<EntryFailure>>, BusError> {
        self.0.put(events).await?;
        Err(BusError::Put("the publisher died after PutEvents".into()))
    }
    async fn dead_letter(&self, event: &BusEvent, reason: &str) -> Result<(), BusError> {
        self.0.dead_letter(event, reason).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_publisher_killed_between_put_and_ack_puts_the_same_event_id_again() {
    let stack = MotoStack::new("evc").await;
    let bus = Bus::new(&stack).await;
    let worker = Arc::new(Worker::<_, _, harel_idempotency::MemoryClient>::new(
        store(&stack),
        stack.transport(),
        driver(),
        None,
        stack.config(&[]),
    ));
    let source = stack.source();
    send(&source, "crash-1", create("crash-1")).await;
    pump(&source, &worker).await;
    assert!(
        publish_events(&worker.store, &CrashAfterPut(bus.adapter()), deadline())
            .await
            .is_err()
    );
    assert_eq!(worker.store.pending_published().await.unwrap().len(), 1);
    let report = publish_events(&worker.store, &bus.adapter(), deadline())
        .await
        .expect("the next run");
    assert_eq!(report.put, 1);
    let received = bus.received().await;
    assert_eq!(received.len(), 2, "put twice: {received:#?}");
    assert_eq!(
        received[0]["detail"]["event_id"], received[1]["detail"]["event_id"],
        "with the same event_id, for consumers to dedupe"
    );
}

/// harel Python's relay (`DurableRunner.recover`) over the same tables: it delivers the
/// outbox it knows and never reads the events table.
const HAREL_RELAY: &str = r#"
import sys, boto3
from harel.dsl import definition_from_dsl_file
from harel.engine.durable import DurableRunner
from harel.engine.store.dynamodb import DynamoDBStore
endpoint, prefix, path = sys.argv[1:4]
client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="test", aws_secret_access_key="test")
store = DynamoDBStore(client, prefix=prefix, create_schema=False)
defn = definition_from_dsl_file(path, "Ping")
DurableRunner(store, {defn.id: defn}, execution="inline").recover(defn.id)
print(store.load("py-1").status.value)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn harel_pythons_relay_ignores_the_events() {
    let stack = MotoStack::new("evp").await;
    let ours = store(&stack);
    let driver = driver().with_pinning(false);
    let mut target = harel_model::Execution::new("Ping").with_id("py-1");
    driver.step(&ours, &mut target, None).await.expect("py-1");
    // an outbox entry for harel Python's relay to deliver, beside the events
    let mut source = harel_model::Execution::new("Ping").with_id("py-src");
    source.status = harel_model::Status::Running;
    source.active_path = Some("Ping.Waiting".into());
    source.stamp(1.0);
    let commit = Commit {
        emits: vec![(Some("py-1".into()), harel_model::Event::new("Go"))],
        ..Commit::default()
    };
    ours.commit(&mut source, commit).await.expect("py-src");
    let before = ours.pending_published().await.unwrap();
    assert_eq!(before.len(), 2, "each creation's status change");

    let out = Command::new(harel_python().expect("the harel Python venv"))
        .arg("-c")
        .arg(HAREL_RELAY)
        .arg(harel_testkit::endpoint())
        .arg(&stack.prefix)
        .arg(workspace_root().join("tests/tests/events_flow.stm"))
        .output()
        .expect("harel Python runs");
    assert!(
        out.status.success(),
        "harel Python's relay failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "DONE");
    assert!(ours.pending_outbox().await.unwrap().is_empty());
    assert_eq!(
        ours.pending_published().await.unwrap(),
        before,
        "the events are ours alone"
    );
}
