//! The one binary as Lambda runs it on arm64 (the template's default architecture), here on
//! x86_64: built for aarch64 by cargo lambda (zig as the cross linker) and run under qemu-user
//! as the worker against the moto server, by `scripts/arm64-smoke.sh`. The script installs
//! what it needs (the aarch64 Rust target, qemu-user-static and Debian's aarch64 C library,
//! cargo lambda and zig), serves the binary one SQS event through a Runtime API of its own and
//! reads the execution back from DynamoDB; it fails, saying why, on any step.

use std::path::PathBuf;
use std::process::Command;

#[test]
#[ignore = "needs a moto server, qemu-user and the aarch64 Rust target (installed on first use): scripts/test.sh runs it"]
fn the_arm64_binary_answers_an_invocation_as_the_worker_under_qemu() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("bash")
        .arg(root.join("scripts/arm64-smoke.sh"))
        .current_dir(&root)
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "scripts/arm64-smoke.sh failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // what `file` says of the binary it ran
    assert!(
        stdout.contains("ELF 64-bit LSB pie executable, ARM aarch64"),
        "not an aarch64 binary:\n{stdout}"
    );
    assert!(
        stdout.contains(r#"/response {"batchItemFailures":[]}"#),
        "the worker did not answer the batch as done:\n{stdout}"
    );
    assert!(
        stdout.contains("order-1 stored by the arm64 worker: status RUNNING, active Cart"),
        "the execution was not stored as the event left it:\n{stdout}"
    );
}
