//! What a state-only event costs the worker as deployed (`boot_app`: the idempotency layer on,
//! Powertools' schema) in DynamoDB requests and capacity units, in each commit mode, priced
//! from the wire by `harel_testwire::units`. harel Python's worker spends 1 read unit and 4
//! write units on such an event (`scripts/cost-table.sh`, which runs it beside ours).
//!
//! `scripts/with-moto.sh cargo test -p harel-tests --test worker_units -- --include-ignored`

use harel_app::aws::boot_app;
use harel_app::Application;
use harel_lambda::Role;
use harel_model::Event;
use harel_sqs::create_body;
use harel_stack::COMMIT_MODE;
use harel_store::prelude::*;
use harel_testkit::{pump_once, send, MotoStack, Recorder};
use harel_testwire::Tally;

const MACHINE: &str = "
event Tick {}
machine Units {
  context { n: int = 1 }
  initial A
  state A {}
  state B {}
  from A to B on Tick
  from B to A on Tick
}
";

/// Events sent after the create: more than the lean window's 16 slots, so the last ones are
/// priced on an item whose window is full.
const EVENTS: usize = 20;

/// The DynamoDB calls of each Tick after the create, one tally per event.
async fn ticks(mode: &str) -> (Vec<Tally>, MotoStack) {
    let moto = MotoStack::new("units").await;
    moto.create_idempotency_table(&aws_sdk_dynamodb::Client::new(&moto.sdk))
        .await;
    let wire = Recorder::new().with_bodies();
    let recorded = moto
        .sdk
        .to_builder()
        .http_client(wire.http_client())
        .build();
    let defn = harel_lang::load_str(MACHINE, Some("Units"), "units.stm").expect("the machine");
    let app = Application::compiled()
        .expect("the compiled-in machines")
        .with(vec![defn], |_| {});
    let worker = boot_app(
        app,
        Role::Worker,
        moto.config(&[(COMMIT_MODE, mode)]),
        &recorded,
    )
    .await
    .expect("the worker boots")
    .into_worker();
    let source = moto.source();
    let drain = || async { while !pump_once(&source, &worker).await.is_empty() {} };
    send(
        &source,
        "u",
        create_body("Units", Default::default(), Some("u")),
    )
    .await;
    drain().await;
    let mut tallies = Vec::new();
    for _ in 0..EVENTS {
        send(&source, "u", Event::new("Tick").to_json()).await;
        wire.take();
        drain().await;
        let mut tally = wire.take();
        tally.calls.retain(|c| c.service == "dynamodb");
        tallies.push(tally);
    }
    let exe = moto.store().load("u").await.expect("load").expect("stored");
    assert_eq!(exe.version as usize, 1 + EVENTS, "every Tick applied once");
    (tallies, moto)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_lean_state_only_event_writes_three_units_and_reads_one() {
    let (tallies, moto) = ticks("lean").await;
    for (i, tally) in tallies.iter().enumerate() {
        // the idempotency layer's claim and completion, the one-item read, the one-item write
        assert_eq!(
            tally.operations(),
            ["PutItem", "GetItem", "UpdateItem", "UpdateItem"],
            "event {i}"
        );
        assert!(tally.write_units() <= 3.0, "event {i}: {tally:?}");
        assert!(tally.read_units() <= 1.0, "event {i}: {tally:?}");
    }
    // the wire prices an UpdateItem by the values it sets; the item it leaves (its full
    // window included) is what DynamoDB bills, and it is within one 1 KB unit
    let item = moto
        .store()
        .client()
        .get_item()
        .table_name(moto.store().tables().executions())
        .key("id", aws_sdk_dynamodb::types::AttributeValue::S("u".into()))
        .send()
        .await
        .expect("get")
        .item()
        .cloned()
        .expect("stored");
    let size = harel_dynamodb::codec::item_size(&item);
    let slots = harel_dynamodb::marks::slot_attrs()
        .filter(|s| item.contains_key(s))
        .count() as u64;
    assert_eq!(slots, harel_dynamodb::marks::MARK_SLOTS, "a full window");
    assert!(size <= 1024, "{size} bytes");
    eprintln!(
        "lean: {} requests, {} RU, {} WU per event; the item {size} bytes",
        tallies[0].requests(),
        tallies[0].read_units(),
        tallies[0].write_units()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_compat_state_only_event_writes_the_processed_item_in_a_transaction() {
    let (tallies, _) = ticks("compat").await;
    for (i, tally) in tallies.iter().enumerate() {
        assert_eq!(
            tally.operations(),
            [
                "PutItem",
                "BatchGetItem",
                "TransactWriteItems",
                "UpdateItem"
            ],
            "event {i}"
        );
        // the Execution and its processed mark, doubled in a transaction, and the layer's 2;
        // the execution and the mark read strongly
        assert_eq!(tally.write_units(), 6.0, "event {i}: {tally:?}");
        assert_eq!(tally.read_units(), 2.0, "event {i}: {tally:?}");
    }
}
