//! Events from a machine to the bus, in memory: `harel.lib.publish` commits its domain event
//! with the step (a failed step publishes nothing of its own), and `publish_events` puts in
//! batches of 10, retries a passing refusal, counts a run's failure, and dead-letters what
//! cannot be put, each exactly once.

use std::time::{Duration, Instant};

use harel_model::{Event, Execution};
use harel_runtime::delivery::events::{EntryFailure, MAX_ATTEMPTS};
use harel_runtime::{publish_events, ActionRegistry, Driver, MemoryBus};
use harel_store::prelude::*;
use harel_store::{EventsConfig, MemoryStore};

const MACHINE: &str = r#"
event Go {}
event Bad {}
machine Flow {
  context { order_id: string = "o-1" }
  initial Waiting
  state Waiting {}
  state Shipping {
    on enter harel.lib.publish(detail_type: "OrderShipped", keys: ["order_id"])
  }
  state Broken {
    on enter harel.lib.publish(detail_type: "Nope", keys: ["missing"])
  }
  from Waiting to Shipping on Go
  from Waiting to Broken on Bad
}
"#;

fn driver() -> Driver {
    let defn = harel_lang::load_str(MACHINE, Some("Flow"), "flow.stm").expect("loads");
    Driver::new(vec![defn], ActionRegistry::with_stdlib()).with_pinning(false)
}

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

fn failure(code: &str) -> Option<EntryFailure> {
    Some(EntryFailure {
        code: code.into(),
        message: "refused".into(),
    })
}

#[tokio::test]
async fn a_published_domain_event_is_committed_with_its_step_and_a_failed_one_is_not() {
    let store = MemoryStore::new().with_events(EventsConfig::default());
    let driver = driver();
    let mut ok = Execution::new("Flow").with_id("ok");
    ok.context.insert("order_id".into(), "o-1".into());
    driver.step(&store, &mut ok, None).await.unwrap();
    driver
        .step(&store, &mut ok, Some(&Event::new("Go")))
        .await
        .unwrap();
    let mut bad = Execution::new("Flow").with_id("bad");
    driver.step(&store, &mut bad, None).await.unwrap();
    // the action fails (no such key): the execution FAILS, its event is not published
    driver
        .step(&store, &mut bad, Some(&Event::new("Bad")))
        .await
        .unwrap();
    let kinds: Vec<(String, String)> = store
        .pending_published()
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            (
                e.execution_id,
                e.detail
                    .get("status")
                    .and_then(|s| s.as_str())
                    .unwrap_or(&e.detail_type)
                    .to_string(),
            )
        })
        .collect();
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        kinds,
        vec![
            pair("ok", "RUNNING"),
            // Shipping has no way out: the step that enters it ends the execution, and its
            // status change comes before the domain event it published
            pair("ok", "DONE"),
            pair("ok", "OrderShipped"),
            pair("bad", "RUNNING"),
            pair("bad", "FAILED"),
        ]
    );
}

#[tokio::test]
async fn events_go_in_tens_passing_refusals_are_retried_and_the_rest_dead_lettered() {
    let store = MemoryStore::new().with_events(EventsConfig::default());
    let driver = driver();
    for i in 0..12 {
        let mut exe = Execution::new("Flow").with_id(format!("e{i}"));
        driver.step(&store, &mut exe, None).await.unwrap();
    }
    let bus = MemoryBus::new();
    // e0 throttled once (retried in the run), e1 refused for good, e2 throttled for the whole run
    let mut first = vec![
        failure("ThrottlingException"),
        failure("ValidationException"),
        failure("ThrottlingException"),
    ];
    first.extend(std::iter::repeat_n(None, 7));
    bus.answer_next(first);
    bus.answer_next(vec![None, failure("ThrottlingException")]);
    bus.answer_next(vec![failure("ThrottlingException")]);
    bus.answer_next(vec![failure("ThrottlingException")]);
    let report = publish_events(&store, &bus, deadline()).await.unwrap();
    assert_eq!(report.put, 10, "{report:?}");
    assert_eq!(report.dead_lettered, 1);
    assert_eq!(report.deferred, 1);
    assert_eq!(
        report.requests, 5,
        "the first ten, three retries, the last two"
    );
    let dead = bus.dead_letters();
    assert_eq!(dead[0].0.execution_id, "e1");
    assert!(
        dead[0].1.starts_with("ValidationException"),
        "{}",
        dead[0].1
    );
    let left = store.pending_published().await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!((left[0].execution_id.as_str(), left[0].attempts), ("e2", 1));

    // throttled run after run: dead-lettered once past MAX_ATTEMPTS
    for _ in 1..MAX_ATTEMPTS {
        bus.answer_next(vec![failure("ThrottlingException"); 4]);
        publish_events(&store, &bus, deadline()).await.unwrap();
    }
    assert!(store.pending_published().await.unwrap().is_empty());
    assert_eq!(bus.dead_letters().len(), 2);
    assert_eq!(bus.events().len(), 10);
}
