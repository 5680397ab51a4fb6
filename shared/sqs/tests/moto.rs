//! SqsTransport against the moto server: run under `scripts/with-moto.sh cargo test -p harel-sqs`.

use std::time::Duration;

use harel_model::Event;
use harel_sqs::{
    DedupeKey, Outgoing, SqsTransport, Transport, REASON_ATTRIBUTE, SOURCE_ID_ATTRIBUTE,
};

async fn client() -> aws_sdk_sqs::Client {
    let endpoint = std::env::var("AWS_ENDPOINT_URL")
        .or_else(|_| std::env::var("MOTO_ENDPOINT"))
        .expect("AWS_ENDPOINT_URL is not set: run these tests under scripts/with-moto.sh");
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .load()
        .await;
    aws_sdk_sqs::Client::new(&config)
}

async fn fresh(client: &aws_sdk_sqs::Client, tag: &str) -> String {
    let name = format!("t-{tag}-{}", uuid::Uuid::new_v4().simple());
    SqsTransport::create_fifo_queue(client, &name)
        .await
        .expect("queue created")
}

/// Receive and delete everything currently visible on `url`.
async fn drain(t: &SqsTransport, url: &str) -> Vec<harel_sqs::Received> {
    let mut all = Vec::new();
    loop {
        let got = t
            .receive_from(url, 10, Duration::ZERO, Duration::from_secs(30))
            .await
            .expect("receive");
        if got.is_empty() {
            return all;
        }
        for m in &got {
            t.delete(url, &m.receipt_handle).await.expect("delete");
        }
        all.extend(got);
    }
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn batch_publish_keeps_group_body_and_order() {
    let c = client().await;
    let url = fresh(&c, "order").await;
    let t = SqsTransport::new(c, &url);
    // 25 messages over 3 groups: three SendMessageBatch calls
    let events: Vec<(String, Event)> = (0..25)
        .map(|i| {
            let mut data = serde_json::Map::new();
            data.insert("n".into(), serde_json::json!(i));
            (
                format!("exe-{}", i % 3),
                Event::new(format!("E{i}")).with_data(data),
            )
        })
        .collect();
    let batch: Vec<Outgoing> = events
        .iter()
        .map(|(g, e)| Outgoing::event(g.clone(), e, DedupeKey::Event).expect("valid"))
        .collect();
    t.publish_batch(&batch).await.expect("all sent");

    let got = drain(&t, &url).await;
    assert_eq!(got.len(), 25);
    for group in ["exe-0", "exe-1", "exe-2"] {
        let sent: Vec<String> = events
            .iter()
            .filter(|(g, _)| g == group)
            .map(|(_, e)| e.to_json())
            .collect();
        let received: Vec<String> = got
            .iter()
            .filter(|m| m.group_id == group)
            .map(|m| m.body.clone())
            .collect();
        assert_eq!(received, sent, "group {group} in order with its bodies");
    }
    // bodies are harel Events again
    let back: Event = serde_json::from_str(&got[0].body).expect("an Event");
    assert!(back.kind.starts_with('E'));
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn same_dedupe_id_is_dropped_and_fan_out_reaches_every_group() {
    let c = client().await;
    let url = fresh(&c, "dedupe").await;
    let t = SqsTransport::new(c, &url);
    let ev = Event::new("Go");
    let to = |g: &str| Outgoing::event(g, &ev, DedupeKey::Event).expect("valid");
    t.publish_batch(&[to("root/a"), to("root/b")])
        .await
        .expect("sent");
    // a relay crashed after sending and sends again: SQS drops both
    t.publish_batch(&[to("root/a"), to("root/b")])
        .await
        .expect("accepted");
    t.publish(to("root/a")).await.expect("accepted");
    let outbox = Outgoing::event("root", &ev, DedupeKey::Outbox { seq: 4 }).expect("valid");
    t.publish(outbox.clone()).await.expect("sent");
    t.publish(outbox).await.expect("accepted");

    let got = drain(&t, &url).await;
    let mut groups: Vec<&str> = got.iter().map(|m| m.group_id.as_str()).collect();
    groups.sort();
    assert_eq!(groups, vec!["root", "root/a", "root/b"]);
    assert!(got.iter().all(|m| m.body == ev.to_json()));
    let outbox_msg = got
        .iter()
        .find(|m| m.group_id == "root")
        .expect("outbox message");
    assert_eq!(
        outbox_msg.dedupe_id,
        DedupeKey::Outbox { seq: 4 }.dedupe_id("root", &ev.id)
    );
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn long_ids_are_hashed_and_accepted() {
    let c = client().await;
    let url = fresh(&c, "long").await;
    let t = SqsTransport::new(c, &url);
    let ev = Event::new("Long").with_id("i".repeat(300));
    t.publish(Outgoing::event("g", &ev, DedupeKey::Event).expect("valid"))
        .await
        .expect("sent");
    t.publish(Outgoing::event("g", &ev, DedupeKey::Event).expect("valid"))
        .await
        .expect("accepted");
    let got = drain(&t, &url).await;
    assert_eq!(got.len(), 1);
    assert!(got[0].dedupe_id.len() <= 128);
}

#[tokio::test]
async fn invalid_group_is_refused_before_sending() {
    let err =
        Outgoing::event("é".repeat(3), &Event::new("A"), DedupeKey::Event).expect_err("invalid");
    assert!(
        err.to_string().contains("invalid SQS message group id"),
        "{err}"
    );
    assert!(Outgoing::event("x".repeat(129), &Event::new("A"), DedupeKey::Event).is_err());
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn park_hides_a_message_until_its_delay() {
    let c = client().await;
    let url = fresh(&c, "park").await;
    let t = SqsTransport::new(c, &url);
    t.publish(Outgoing::event("g", &Event::new("A"), DedupeKey::Event).expect("valid"))
        .await
        .expect("sent");
    let first = t
        .receive(1, Duration::ZERO, Duration::from_secs(30))
        .await
        .expect("receive");
    assert_eq!(first.len(), 1);
    t.park(&first[0].receipt_handle, Duration::from_secs(0))
        .await
        .expect("park 0");
    let again = t
        .receive(1, Duration::ZERO, Duration::from_secs(30))
        .await
        .expect("receive");
    assert_eq!(again.len(), 1, "visible again at once after a zero park");
    assert_eq!(again[0].message_id, first[0].message_id);
    t.park(&again[0].receipt_handle, Duration::from_secs(600))
        .await
        .expect("park 600");
    let hidden = t
        .receive(1, Duration::ZERO, Duration::from_secs(30))
        .await
        .expect("receive");
    assert!(hidden.is_empty(), "parked for ten minutes");
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn dead_letter_carries_reason_and_source() {
    let c = client().await;
    let url = fresh(&c, "main").await;
    let dlq = fresh(&c, "dlq").await;
    let t = SqsTransport::new(c.clone(), &url).with_dead_letter_queue(&dlq);
    t.dead_letter(
        "m-1",
        None,
        "not json {",
        "malformed body: expected value at line 1 column 1",
    )
    .await
    .expect("dead-lettered");
    t.dead_letter("m-2", Some("exe-9"), "{}", "no kind")
        .await
        .expect("dead-lettered");
    // the same message dead-lettered twice (a retried invocation) lands once
    t.dead_letter("m-2", Some("exe-9"), "{}", "no kind")
        .await
        .expect("dead-lettered");
    let got = drain(&t, &dlq).await;
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].body, "not json {");
    assert_eq!(got[0].group_id, harel_sqs::MALFORMED_GROUP);
    assert_eq!(
        got[0].attribute(REASON_ATTRIBUTE),
        Some("malformed body: expected value at line 1 column 1")
    );
    assert_eq!(got[0].attribute(SOURCE_ID_ATTRIBUTE), Some("m-1"));
    assert_eq!(got[1].group_id, "exe-9");

    let no_dlq = SqsTransport::new(c, &url);
    let err = no_dlq
        .dead_letter("m", None, "x", "r")
        .await
        .expect_err("no DLQ");
    assert!(err.to_string().contains("HAREL_DLQ_URL"), "{err}");
}
