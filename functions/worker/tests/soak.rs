//! The soak's short run (docs/src/soak.md; the long one is scripts/soak.sh): this worker binary,
//! one warm process behind the soak's Lambda Runtime API emulator (scripts/soak/soak.py),
//! handles 2,000 events on moto (idempotency layer on, executions created by the worker
//! and read back at the end), and its resident memory stays under 64 MB and does not grow
//! between the second sample and the last. Run under scripts/with-moto.sh.
//!
//! This is the test profile's build (debug), not the deployed release: the property held here
//! is that nothing accumulates per event; scripts/soak.sh measures the release binary.

use std::path::PathBuf;
use std::process::Command;

use harel_testkit::MotoStack;

/// Sized for CI: the debug worker spends about 10 ms of CPU per event and moto about 13 ms, so
/// about 40 s on a quiet two-core machine.
const EVENTS: u64 = 2_000;
const INTERVAL: u64 = 250;
const LIMIT_MB: f64 = 64.0;
/// Allocator noise between two samples of a process that keeps nothing per event.
const TOLERANCE_MB: f64 = 2.0;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn memory_stays_flat_over_2000_events() {
    let endpoint = harel_testkit::endpoint();
    let python = std::env::var("HAREL_PYTHON")
        .expect("HAREL_PYTHON is not set: run these tests under scripts/with-moto.sh");
    let stack = MotoStack::new("soak").await;
    stack
        .create_idempotency_table(&aws_sdk_dynamodb::Client::new(&stack.sdk))
        .await;
    let dir = std::env::temp_dir();
    let log = dir.join(format!("{}-worker.log", stack.prefix));
    let summary = dir.join(format!("{}-summary.json", stack.prefix));
    let out = Command::new(python)
        .arg(root().join("scripts/soak/soak.py"))
        .arg("--worker")
        .arg(env!("CARGO_BIN_EXE_worker"))
        .arg("--machines")
        .arg(root().join("scripts/soak"))
        .args(["--events", &EVENTS.to_string()])
        .args(["--interval", &INTERVAL.to_string()])
        // the first two intervals are the warm-up: memory is compared with the second sample
        .args(["--warmup", &(2 * INTERVAL).to_string()])
        .args(["--executions", "20"])
        .args(["--limit-mb", &LIMIT_MB.to_string()])
        .args(["--tolerance-mb", &TOLERANCE_MB.to_string()])
        .arg("--log")
        .arg(&log)
        .arg("--summary")
        .arg(&summary)
        .envs(stack.settings(&[("AWS_ENDPOINT_URL", &endpoint)]))
        .output()
        .expect("the soak runs");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the soak failed:\n{printed}");
    let _ = std::fs::remove_file(&log);
    let text = std::fs::read_to_string(&summary).expect("the soak's summary");
    let _ = std::fs::remove_file(&summary);
    let summary: serde_json::Value = serde_json::from_str(&text).expect("JSON");

    // the script's verdict, checked again from its figures
    assert_eq!(
        summary["read_back_problems"],
        serde_json::json!([]),
        "{printed}"
    );
    assert_eq!(summary["flips_sent"], EVENTS, "{printed}");
    let mb = |kb: &serde_json::Value| kb.as_f64().expect("kB") / 1024.0;
    let rss: Vec<f64> = summary["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| mb(&s["rss_kb"]))
        .collect();
    assert_eq!(rss.len() as u64, EVENTS / INTERVAL, "{printed}");
    assert!(
        mb(&summary["peak_kb"]) < LIMIT_MB,
        "peak RSS {} MB:\n{printed}",
        mb(&summary["peak_kb"])
    );
    for later in &rss[2..] {
        assert!(
            later - rss[1] <= TOLERANCE_MB,
            "RSS grew from {} MB to {later} MB:\n{printed}",
            rss[1]
        );
    }
    eprintln!("{printed}");
}
