//! The lean commit mode (`CommitMode::Lean`): the dedupe marks in the execution item's window,
//! a step with nothing else to write one `UpdateItem`, and exactly-once kept by the one item
//! being read and written whole. `scripts/with-moto.sh cargo test -p harel-dynamodb --test lean`.

mod common;

use aws_sdk_dynamodb::types::AttributeValue;
use common::faults::{retrying_faulty_client, Fault};
use harel_dynamodb::marks::{self, MARK_SLOTS};
use harel_dynamodb::{CommitMode, DynamoDbStore};
use harel_model::{Event, Execution};
use harel_store::prelude::*;
use harel_store::{Commit, StoreError, TimerOp};

type Item = std::collections::HashMap<String, AttributeValue>;

async fn lean_store_on(client: aws_sdk_dynamodb::Client) -> DynamoDbStore {
    common::store_on(client, 200)
        .await
        .with_commit_mode(CommitMode::Lean)
}

fn step(event_id: &str) -> Commit {
    Commit {
        processed_event_id: Some(event_id.into()),
        ..Commit::default()
    }
}

/// An execution stored at version 1 by a create that applied `created`.
async fn created(store: &DynamoDbStore, id: &str) -> Execution {
    let mut exe = Execution::new("def").with_id(id);
    store
        .commit(&mut exe, step(&format!("{id}-created")))
        .await
        .expect("create");
    exe
}

async fn stored_item(store: &DynamoDbStore, id: &str) -> Item {
    store
        .client()
        .get_item()
        .table_name(store.tables().executions())
        .key("id", AttributeValue::S(id.into()))
        .consistent_read(true)
        .send()
        .await
        .expect("get")
        .item()
        .cloned()
        .expect("stored")
}

async fn processed_rows(store: &DynamoDbStore) -> usize {
    store
        .client()
        .scan()
        .table_name(store.tables().processed())
        .send()
        .await
        .expect("scan")
        .items()
        .len()
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_state_only_step_reads_one_item_and_writes_one() {
    let (client, recorder) = common::recorded_client().await;
    let store = lean_store_on(client).await;
    let mut exe = created(&store, "lean").await;
    // a full window: every slot written, so the item is as large as it gets
    for i in 0..MARK_SLOTS {
        store
            .commit(&mut exe, step(&format!("fill-{i}")))
            .await
            .expect("step");
    }
    recorder.take();

    let (loaded, processed) = store.load_for_event("lean", "ev-1").await.expect("load");
    let mut loaded = loaded.expect("present");
    assert!(!processed);
    store
        .commit(&mut loaded, step("ev-1"))
        .await
        .expect("commit");
    let tally = recorder.take();
    assert_eq!(tally.operations(), ["GetItem", "UpdateItem"], "{tally:?}");
    assert_eq!(
        tally.read_units(),
        1.0,
        "one strongly consistent read of one item"
    );
    assert_eq!(
        tally.write_units(),
        1.0,
        "one write of one item, no transaction"
    );

    // what the write unit rests on: the stored item, its whole window included, is within 1 KB
    // (the wire shows an UpdateItem's new values, not the slots it left)
    let item = stored_item(&store, "lean").await;
    let size: usize = harel_dynamodb::codec::item_size(&item);
    assert!(size <= 1024, "the lean item is {size} bytes: {item:?}");
    let slots = marks::slot_attrs().filter(|a| item.contains_key(a)).count();
    assert_eq!(slots as u64, MARK_SLOTS, "{item:?}");
    assert_eq!(
        processed_rows(&store).await,
        0,
        "no processed items are written"
    );

    // the window now answers for the event, and the read is still one GetItem
    recorder.take();
    let (_, processed) = store.load_for_event("lean", "ev-1").await.expect("load");
    assert!(processed);
    assert!(store.is_processed("lean", "ev-1").await.expect("look"));
    assert!(!store.is_processed("lean", "ev-2").await.expect("look"));
    let tally = recorder.take();
    assert_eq!(tally.operations(), ["GetItem", "GetItem", "GetItem"]);
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_stale_copy_cannot_apply_an_event_twice() {
    let store = lean_store_on(common::client().await).await;
    let exe = created(&store, "twice").await;
    let (mut first, mut second) = (exe.clone(), exe.clone());
    store
        .commit(&mut first, step("ev"))
        .await
        .expect("the first commit");
    // the second worker read before the first committed: the stored item's window says the
    // event is in, whatever its version
    let r = store.commit(&mut second, step("ev")).await;
    assert!(
        matches!(r, Err(StoreError::AlreadyProcessed { ref event_id, .. }) if event_id == "ev"),
        "{r:?}"
    );
    // another event from the same stale copy is a conflict naming the stored version
    let r = store.commit(&mut second, step("other")).await;
    assert!(
        matches!(
            r,
            Err(StoreError::Conflict {
                expected: 1,
                found: Some(2),
                ..
            })
        ),
        "{r:?}"
    );
    // a second create of the same id is refused as the first one's work
    let mut again = Execution::new("def").with_id("twice");
    let r = store.commit(&mut again, step("twice-created")).await;
    assert!(
        matches!(r, Err(StoreError::AlreadyProcessed { .. })),
        "{r:?}"
    );
    let stored = store.load("twice").await.expect("load").expect("present");
    assert_eq!(stored.version, 2, "applied once");
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_lost_answer_is_answered_as_the_success_it_was() {
    let (client, faults) = retrying_faulty_client().await;
    let store = lean_store_on(client).await;
    let mut exe = created(&store, "lost").await;
    // the UpdateItem acts, its answer is lost, the SDK sends it again: the resend meets the
    // write itself (this version, this document), not another writer's
    faults.push(Fault::answer_lost("UpdateItem"));
    store
        .commit(&mut exe, step("ev"))
        .await
        .expect("the resend is read as the success it was");
    assert_eq!(exe.version, 2);
    let stored = store.load("lost").await.expect("load").expect("present");
    assert_eq!(stored.version, 2, "applied once");
    // the same for a step applying no event (a control command): no mark to tell it by
    faults.push(Fault::answer_lost("UpdateItem"));
    store
        .commit(&mut exe, Commit::default())
        .await
        .expect("the resend is read as the success it was");
    assert_eq!(exe.version, 3);
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn the_window_holds_the_last_sixteen_steps() {
    let store = lean_store_on(common::client().await).await;
    let mut exe = created(&store, "window").await;
    store.commit(&mut exe, step("old")).await.expect("step");
    for i in 0..MARK_SLOTS - 1 {
        store
            .commit(&mut exe, step(&format!("later-{i}")))
            .await
            .expect("step");
    }
    // fifteen later steps: still recognised
    assert!(store.is_processed("window", "old").await.expect("look"));
    store
        .commit(&mut exe, step("the-sixteenth"))
        .await
        .expect("step");
    // the sixteenth takes its slot: the documented bound of the window
    assert!(!store.is_processed("window", "old").await.expect("look"));
    // a step without an event leaves the slots as they are
    let before = stored_item(&store, "window").await;
    store
        .commit(&mut exe, Commit::default())
        .await
        .expect("step");
    let after = stored_item(&store, "window").await;
    for slot in marks::slot_attrs() {
        assert_eq!(before.get(&slot), after.get(&slot), "{slot}");
    }
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_step_with_effects_is_one_transaction_without_a_processed_item() {
    let (client, recorder) = common::recorded_client().await;
    let store = lean_store_on(client).await;
    let mut exe = created(&store, "effects").await;
    recorder.take();
    let commit = Commit {
        emits: vec![(Some("effects".into()), Event::new("Next"))],
        timers: vec![TimerOp::Schedule {
            path: "A".into(),
            fire_at: 1_700_000_000.0,
        }],
        processed_event_id: Some("ev".into()),
        ..Commit::default()
    };
    let mut stale = exe.clone();
    store
        .commit(&mut exe, commit.clone())
        .await
        .expect("commit");
    let tally = recorder.take();
    assert_eq!(tally.operations(), ["TransactWriteItems"], "{tally:?}");
    // the Execution, the outbox entry and the timer, each doubled in a transaction: no mark item
    assert_eq!(tally.write_units(), 6.0, "{tally:?}");
    assert_eq!(processed_rows(&store).await, 0);
    assert!(store.is_processed("effects", "ev").await.expect("look"));
    // the same step from a stale copy is refused by the window, inside the transaction too
    let r = store.commit(&mut stale, commit).await;
    assert!(
        matches!(r, Err(StoreError::AlreadyProcessed { .. })),
        "{r:?}"
    );
    assert_eq!(store.pending_outbox().await.expect("outbox").len(), 1);
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_lean_commit_drops_what_the_step_no_longer_has() {
    // the Update sets every attribute a Put would write, and removes the optional ones a Put
    // would have dropped (the retention stamp of an execution no longer finished)
    let store = lean_store_on(common::client().await)
        .await
        .with_retention(std::time::Duration::from_secs(86_400));
    let mut exe = created(&store, "drop").await;
    exe.status = harel_model::Status::Done;
    exe.finished_at = Some(1_700_000_000.0);
    store.commit(&mut exe, step("done")).await.expect("finish");
    assert!(stored_item(&store, "drop")
        .await
        .contains_key("retain_until"));
    exe.status = harel_model::Status::Running;
    exe.finished_at = None;
    store.commit(&mut exe, step("again")).await.expect("revive");
    let item = stored_item(&store, "drop").await;
    assert!(!item.contains_key("retain_until"), "{item:?}");
    assert!(
        matches!(item.get("list_pk"), Some(AttributeValue::S(pk)) if pk.starts_with("RUNNING#")),
        "{item:?}"
    );
}
