//! `harel dlq` against a stack on the moto server
//! (`scripts/with-moto.sh cargo test -p harel-cli --test dlq`): messages the real worker
//! dead-letters are listed, shown, redriven and then processed by the worker, deleted; the
//! ones that must stay (malformed, a finished execution's) stay and say why.

use std::process::{Command, Output};

use harel_model::{Event, Object, Status};
use harel_runtime::Driver;
use harel_store::prelude::*;
use harel_testkit::{pump, send, MotoStack};
use serde_json::Value;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn harel(moto: &MotoStack, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harel"))
        .args(args)
        .args([
            "--table-prefix",
            &moto.prefix,
            "--queue-url",
            &moto.queue,
            "--dlq-url",
            &moto.dlq,
        ])
        .env_remove("HAREL_TABLE_PREFIX")
        .env_remove("HAREL_QUEUE_URL")
        .env_remove("HAREL_DLQ_URL")
        .env_remove("HAREL_STACK")
        .output()
        .expect("harel runs")
}

fn json(out: &Output) -> Value {
    serde_json::from_str(text(&out.stdout).trim())
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)))
}

fn listed(moto: &MotoStack) -> Vec<Value> {
    let out = harel(moto, &["dlq", "list", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    json(&out).as_array().expect("an array").clone()
}

fn id_of(letters: &[Value], execution: &str) -> String {
    letters
        .iter()
        .find(|l| l["execution_id"] == execution)
        .unwrap_or_else(|| panic!("no dead letter for {execution}: {letters:?}"))["message_id"]
        .as_str()
        .expect("an id")
        .to_string()
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn dead_letters_are_listed_shown_redriven_and_processed_or_left_saying_why() {
    let moto = MotoStack::new("dlq").await;
    let machines = harel_app::machines::definitions().expect("app machines");
    // an older worker without the Order machine: its create can never succeed there
    let old = moto.worker(Driver::new(Vec::new(), harel_app::actions::actions()), &[]);
    let new = moto.worker(Driver::new(machines, harel_app::actions::actions()), &[]);
    let source = moto.source();

    send(
        &source,
        "ord-1",
        harel_sqs::create_body("Order", Object::new(), None),
    )
    .await;
    send(&source, "bad-1", "{oops".to_string()).await;
    pump(&source, &old).await;

    let letters = listed(&moto);
    assert_eq!(letters.len(), 2, "{letters:?}");
    let ord = letters
        .iter()
        .find(|l| l["execution_id"] == "ord-1")
        .expect("the create");
    assert_eq!(ord["event_kind"], "harel:create");
    assert!(
        ord["reason"]
            .as_str()
            .expect("a reason")
            .contains("unknown machine \"Order\""),
        "{ord}"
    );
    assert!(ord["dead_lettered_at"].as_str().is_some(), "{ord}");
    assert!(ord["receive_count"].as_u64().expect("a count") >= 1);
    let bad = letters
        .iter()
        .find(|l| l["execution_id"] == "bad-1")
        .expect("the malformed one");
    assert_eq!(bad["event_kind"], Value::Null);
    assert!(bad["reason"]
        .as_str()
        .expect("a reason")
        .contains("not JSON"));
    let ord_id = id_of(&letters, "ord-1");
    let bad_id = id_of(&letters, "bad-1");

    // the text forms
    let out = harel(&moto, &["dlq", "list"]);
    assert!(
        text(&out.stdout).contains("ord-1  harel:create"),
        "{}",
        text(&out.stdout)
    );
    let out = harel(&moto, &["dlq", "show", &ord_id]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    for needle in [
        "execution:   ord-1",
        "unknown machine",
        "\"definition_id\": \"Order\"",
    ] {
        assert!(shown.contains(needle), "{needle:?} not in {shown}");
    }
    let out = harel(&moto, &["dlq", "show", "no-such-message"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));

    // a dry run says what would move and what stays; nothing moves
    let out = harel(&moto, &["dlq", "redrive", "--all", "--dry-run", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "one stays: {}",
        text(&out.stderr)
    );
    let plan = json(&out);
    let verdict = |exe: &str| {
        plan["results"]
            .as_array()
            .expect("results")
            .iter()
            .find(|r| r["execution_id"] == exe)
            .cloned()
            .unwrap_or_else(|| panic!("{exe} not in {plan}"))
    };
    assert_eq!(verdict("ord-1")["verdict"], "would_redrive");
    assert_eq!(verdict("bad-1")["verdict"], "left");
    assert!(verdict("bad-1")["why"]
        .as_str()
        .expect("why")
        .contains("malformed"));
    assert_eq!(listed(&moto).len(), 2, "a dry run moves nothing");

    // redriven: back on the main queue in its group, then the new worker creates it
    let out = harel(&moto, &["dlq", "redrive", &ord_id]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("ord-1: redriven"),
        "{}",
        text(&out.stdout)
    );
    let handled = pump(&source, &new).await;
    assert_eq!(handled.len(), 1, "{handled:?}");
    let exe = moto
        .store()
        .load("ord-1")
        .await
        .expect("load")
        .expect("created");
    assert_eq!(exe.status, Status::Running);
    assert_eq!(exe.definition_id, "Order");

    // the malformed one is not moved, silently or otherwise
    let out = harel(&moto, &["dlq", "redrive", &bad_id]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stdout).contains("left: malformed: body is not JSON"),
        "{}",
        text(&out.stdout)
    );
    let left = listed(&moto);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["message_id"], bad_id.as_str());

    // an event the machine's declaration refuses, for an execution then terminated
    let wrong = Event::new("PaymentAuthorized")
        .with_data(serde_json::from_str(r#"{"amount": "lots"}"#).expect("an object"))
        .to_json();
    send(&source, "ord-1", wrong).await;
    pump(&source, &new).await;
    let letters = listed(&moto);
    let pay_id = id_of(&letters, "ord-1");
    let out = harel(&moto, &["terminate", "ord-1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = harel(&moto, &["dlq", "redrive", &pay_id]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stdout).contains("execution ord-1 is finished (CANCELLED)"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(listed(&moto).len(), 2, "both stay");

    // deleted for good; an unknown id is not found
    let out = harel(&moto, &["dlq", "delete", &bad_id, &pay_id]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(listed(&moto).is_empty());
    let out = harel(&moto, &["dlq", "delete", &bad_id]);
    assert_eq!(out.status.code(), Some(3));
    let out = harel(&moto, &["dlq", "list"]);
    assert_eq!(text(&out.stdout), "no dead letters\n");
}
