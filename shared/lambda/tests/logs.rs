//! The logs of a worker, relay and sweeper run: flat JSON lines with the fields Lambda's
//! logging controls and CloudWatch queries need, and no payload at the default level. Alone
//! in its test binary: tracing caches which callsites are enabled process-wide, so a test
//! logging through a thread's subscriber must not share the process with others.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::harness;
use harel_lambda::logging::{invocation_span, subscriber, LogSettings};
use harel_lambda::{fire_due, relay, SweepReport};
use harel_model::{Event, Object, Status};
use harel_queue::create_body;
use serde_json::{json, Value};
use tracing::Instrument;
use tracing_subscriber::fmt::MakeWriter;

/// A distinctive string put in an event's data, a context and a refused message.
const SECRET: &str = "s3cr3t-Pa55w0rd-9f1c";

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'w> MakeWriter<'w> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'w self) -> Self::Writer {
        self.clone()
    }
}

impl Buffer {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("lock").clone()).expect("utf-8")
    }
}

fn object(v: Value) -> Object {
    v.as_object().cloned().expect("an object")
}

/// A Flow run through all three handlers, each invocation in its span, logged at `level`:
/// a create whose context holds the secret, a timer, a fork and a join, an event whose data
/// holds it, and a create the schema refuses because of it (dead-lettered).
async fn pump(h: &common::Harness, request: &mut usize) {
    *request += 1;
    h.pump(10)
        .instrument(invocation_span("worker", &format!("req-{request}")))
        .await;
}

async fn logged_run(level: &str) -> String {
    let buffer = Buffer::default();
    let settings =
        LogSettings::from_lookup(|name| (name == "HAREL_LOG_LEVEL").then(|| level.into()));
    let _guard = tracing::subscriber::set_default(subscriber(&settings, buffer.clone()));

    let h = harness(false);
    let mut request = 0;
    h.send(
        "k-1",
        create_body("Flow", object(json!({"amount": 2, "note": SECRET})), None),
    )
    .await;
    h.send(
        "k-bad",
        create_body("Flow", object(json!({"amount": SECRET})), None),
    )
    .await;
    h.send_event("k-1", Event::new("Go")).await;
    pump(&h, &mut request).await;
    h.clock.advance(6.0);
    let mut report = SweepReport::default();
    fire_due(
        &h.worker.store,
        &*h.transport,
        harel_runtime::Clock::now(&h.clock),
        &mut report,
    )
    .instrument(invocation_span("sweeper", "req-sweep"))
    .await
    .expect("sweep");
    assert_eq!(report.fired, 1);
    pump(&h, &mut request).await;
    h.send_event("k-1", Event::new("DoneA")).await;
    h.send_event("k-1", Event::new("DoneB")).await;
    pump(&h, &mut request).await;
    relay(
        &h.worker.store,
        &*h.transport,
        &h.worker.driver,
        Instant::now() + Duration::from_secs(30),
    )
    .instrument(invocation_span("relay", "req-relay"))
    .await
    .expect("relay");
    pump(&h, &mut request).await;
    h.send_event(
        "k-1",
        Event::new("Ship").with_data(object(json!({"carrier": SECRET}))),
    )
    .await;
    pump(&h, &mut request).await;
    let exe = h.exe("k-1").await;
    assert_eq!(exe.status, Status::Done, "{exe:?}");
    assert_eq!(
        exe.context["note"],
        json!(SECRET),
        "the secret is in the context"
    );
    buffer.text()
}

#[tokio::test]
async fn logs_are_json_lines_with_the_fields_and_without_payloads() {
    let text = logged_run("info").await;
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(lines.len() > 10, "{text}");
    for line in &lines {
        // Powertools' keys (cold_start and function_name come from the invocation's span;
        // xray_trace_id only when Lambda passes a trace header)
        for key in [
            "timestamp",
            "level",
            "message",
            "service",
            "location",
            "cold_start",
            "function_name",
            "function_request_id",
            "function",
        ] {
            assert!(line.get(key).is_some(), "no {key}: {line}");
        }
        assert!(
            ["INFO", "WARN", "ERROR"].contains(&line["level"].as_str().expect("level")),
            "{line}"
        );
    }
    let functions: std::collections::BTreeSet<&str> = lines
        .iter()
        .filter_map(|l| l["function"].as_str())
        .collect();
    assert_eq!(
        functions.into_iter().collect::<Vec<_>>(),
        ["relay", "sweeper", "worker"]
    );
    let sweep = lines
        .iter()
        .find(|l| l["message"] == "timers fired")
        .expect("the sweeper's line");
    assert_eq!(
        (&sweep["function_request_id"], &sweep["fired"]),
        (&json!("req-sweep"), &json!(1))
    );
    // every record's lines carry the record's fields
    let steps: Vec<&Value> = lines
        .iter()
        .filter(|l| l["message"] == "step committed")
        .collect();
    assert!(steps.len() >= 5, "{text}");
    for step in &steps {
        for key in [
            "message_id",
            "execution_id",
            "event_kind",
            "machine",
            "from",
            "to",
            "status",
        ] {
            assert!(step.get(key).is_some(), "no {key}: {step}");
        }
        assert_eq!(step["machine"], "Flow");
    }
    assert!(steps
        .iter()
        .any(|s| s["event_kind"] == "Timeout" && s["to"] == "Work"));
    assert!(steps
        .iter()
        .any(|s| s["event_kind"] == "Ship" && s["status"] == "DONE" && s["outcome"] == "success"));
    let dead: Vec<&Value> = lines.iter().filter(|l| l["level"] == "ERROR").collect();
    assert_eq!(dead.len(), 1, "the refused create: {text}");
    assert_eq!(dead[0]["execution_id"], "k-bad");
    assert!(
        !text.contains(SECRET),
        "a payload reached the logs at info:\n{}",
        text.lines()
            .filter(|l| l.contains(SECRET))
            .collect::<Vec<_>>()
            .join("\n")
    );

    // at debug the dead letter's reason (which quotes the refused value) is logged: the
    // check above would have seen a leak
    let debug = logged_run("debug").await;
    assert!(
        debug.contains(SECRET),
        "the debug run should show the reason"
    );
    for line in debug.lines() {
        let v: Value = serde_json::from_str(line).expect("JSON at debug too");
        assert!(v.get("level").is_some());
    }
}
