//! The queue's inbound message parser on bodies nobody wrote by hand: `inbound::parse`
//! never panics and never hangs (each case under `harel_fuzzing`'s deadline), and what it
//! accepts is what it says (a create's execution id is its group). Inputs: random bytes,
//! JSON token soup, real bodies (events, creates) mutated. The worker's whole path on such
//! bodies is fuzzed in shared/lambda/tests/fuzz_inbound.rs.

use harel_fuzzing::strategies::{mutated, random_bytes, token_soup, Bytes};
use harel_fuzzing::{check, within, CASE_DEADLINE};
use harel_model::{Event, Object};
use harel_queue::create_body;
use harel_queue::inbound::{parse, Inbound};
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
    "\"context\"",
    "\"execution_id\"",
    "\"g\"",
    "\"Order\"",
    "\"Pay\"",
    "\"created_time\"",
    "\"received_time\"",
    "\"2026-01-01T00:00:00Z\"",
    "null",
    "true",
    "1",
    "-0",
    "1e400",
    "1.5",
    "\"\\u0000\"",
    "\"\\ud800\"",
    "\"é\"",
    "{}",
    "[]",
];

fn seeds() -> Vec<Vec<u8>> {
    let mut context = Object::new();
    context.insert("amount".into(), json!(12.5));
    context.insert("items".into(), json!([{"sku": "a", "n": 2}]));
    let mut data = Object::new();
    data.insert("amount".into(), json!(7));
    vec![
        create_body("Order", context.clone(), None),
        create_body("Order", context, Some("g")),
        Event::new("Pay").with_data(data).to_json(),
        Event::new("Cancel").to_json(),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect()
}

/// What the worker relies on from an accepted message.
fn parse_as_the_worker(group: Option<&str>, body: &str) -> Result<(), String> {
    match parse(group, body) {
        Err(malformed) if malformed.0.is_empty() => Err("a refusal without a reason".into()),
        Err(_) => Ok(()),
        Ok((g, _)) if Some(g.as_str()) != group => Err(format!("group {g:?}, not {group:?}")),
        Ok((g, Inbound::Create(c))) if c.execution_id != g || c.definition_id.is_empty() => {
            Err(format!("a create accepted as {c:?} in group {g:?}"))
        }
        Ok(_) => Ok(()),
    }
}

#[test]
fn random_bytes_are_refused_with_a_reason() {
    check(
        "inbound random bytes",
        300,
        random_bytes(200),
        |b: Bytes| parse_as_the_worker(Some("g"), &b.text()),
    );
}

#[test]
fn json_soup_is_refused_or_accepted() {
    check("inbound JSON soup", 300, token_soup(TOKENS, 40), |body| {
        parse_as_the_worker(Some("g"), &body)
    });
}

#[test]
fn mutated_messages_are_refused_or_accepted() {
    check(
        "inbound mutated messages",
        300,
        mutated(seeds(), TOKENS, 6, 16),
        |b: Bytes| {
            parse_as_the_worker(Some("g"), &b.text())?;
            parse_as_the_worker(None, &b.text())
        },
    );
}

#[test]
fn a_deeply_nested_body_is_refused_at_once() {
    let n = 1_000_000;
    let body = format!(
        "{{\"kind\": \"Pay\", \"data\": {{\"x\": {}1{}}}}}",
        "[".repeat(n),
        "]".repeat(n)
    );
    let refused = within(CASE_DEADLINE, move || parse(Some("g"), &body).map(|_| ()))
        .unwrap_or_else(|f| panic!("{f}"))
        .expect_err("refused");
    assert!(refused.0.contains("recursion limit exceeded"), "{refused}");
}
