//! The worker on message bodies nobody wrote by hand: `Worker::handle` (parse, route,
//! schema checks on the event's data and the create's context, the engine's step) never
//! panics, never hangs (each case under `harel_fuzzing`'s deadline), and never asks for a
//! retry of a message that can never succeed: a malformed one is dead-lettered. In process
//! (MemoryStore, MemoryTransport), on the `Flow` machine, with one live execution (`f-1`)
//! the events reach. The parser alone is fuzzed in shared/queue/tests/fuzz.rs.

mod common;

use std::sync::{Arc, OnceLock};

use common::*;
use harel_fuzzing::check;
use harel_fuzzing::strategies::{mutated, token_soup, Bytes};
use harel_lambda::{Record, RecordOutcome};
use harel_model::{Event, Object};
use harel_queue::create_body;
use serde_json::json;

const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\"",
    "\"kind\"",
    "\"harel:create\"",
    "\"data\"",
    "\"id\"",
    "\"definition_id\"",
    "\"Flow\"",
    "\"context\"",
    "\"amount\"",
    "\"execution_id\"",
    "\"f-1\"",
    "\"Go\"",
    "\"DoneA\"",
    "\"DoneB\"",
    "\"Cancel\"",
    "\"Timeout\"",
    "\"Returned\"",
    "\"Finished\"",
    "null",
    "true",
    "1",
    "-1",
    "1e308",
    "1.5",
    "\"x\"",
    "{}",
    "[]",
];

fn seeds() -> Vec<Vec<u8>> {
    let mut context = Object::new();
    context.insert("amount".into(), json!(3));
    let mut data = Object::new();
    data.insert("amount".into(), json!(7));
    vec![
        create_body("Flow", context.clone(), None),
        create_body("Flow", context, Some("f-2")),
        Event::new("Go").to_json(),
        Event::new("DoneA").with_data(data).to_json(),
        Event::new("Cancel").to_json(),
        Event::new("Timeout").to_json(),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect()
}

/// One worker for every case, with `f-1` created.
fn harness_with_a_live_execution() -> Arc<Harness> {
    static HARNESS: OnceLock<Arc<Harness>> = OnceLock::new();
    HARNESS
        .get_or_init(|| {
            let h = Arc::new(harness(false));
            let record = Record::new(
                "m-0",
                "rh",
                Some("f-1".into()),
                create_body("Flow", Object::new(), None),
            );
            let handled = block_on(h.worker.handle(&record)).expect("f-1 created");
            assert!(
                matches!(handled, RecordOutcome::Created { .. }),
                "{handled:?}"
            );
            h
        })
        .clone()
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(future)
}

/// `body` to the worker in one of three groups: the live execution, an unknown one, none.
fn handle(body: String) -> Result<(), String> {
    let h = harness_with_a_live_execution();
    let group = match body.len() % 3 {
        0 => Some("f-1".to_string()),
        1 => Some("f-9".to_string()),
        _ => None,
    };
    let id = format!("m-{}", uuid::Uuid::new_v4());
    let record = Record::new(id, "rh", group, body);
    match block_on(h.worker.handle(&record)) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("a retry asked for: {e}")),
    }
}

#[test]
fn fuzzed_bodies_are_handled_or_dead_lettered() {
    check(
        "worker mutated messages",
        300,
        mutated(seeds(), TOKENS, 6, 16),
        |b: Bytes| handle(b.text()),
    );
}

#[test]
fn json_soup_is_handled_or_dead_lettered() {
    check("worker JSON soup", 300, token_soup(TOKENS, 40), handle);
}
