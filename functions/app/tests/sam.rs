//! `sam validate --lint` on template.yaml. The SAM CLI comes from the Python index through
//! scripts/install-lambda-tools.sh (a venv of its own); when it cannot be installed the test
//! says so and skips.

use std::path::PathBuf;
use std::process::Command;

mod tools;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
#[ignore = "needs SAM, cargo lambda, Docker or Chromium: scripts/test.sh runs it"]
fn template_passes_sam_validate_lint() {
    let Some((_, sam_bin)) = tools::lambda_tools() else {
        return;
    };
    let out = Command::new(sam_bin.join("sam"))
        .args(["validate", "--lint", "--template", "template.yaml"])
        .current_dir(root())
        .env("SAM_CLI_TELEMETRY", "0")
        .env(
            "AWS_REGION",
            std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".into()),
        )
        .output()
        .expect("sam runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "sam validate --lint failed:\n{text}");
    assert!(text.contains("is a valid SAM Template"), "{text}");
}

/// cfn-lint with its informational checks too (`--include-checks I`: retain policies on
/// stateful resources, explicit retention periods, ...): no finding at all.
#[test]
#[ignore = "needs SAM, cargo lambda, Docker or Chromium: scripts/test.sh runs it"]
fn template_passes_cfn_lint_with_informational_checks() {
    let Some((_, sam_bin)) = tools::lambda_tools() else {
        return;
    };
    let out = Command::new(sam_bin.join("cfn-lint"))
        .args([
            "--include-checks",
            "I",
            "--regions",
            "us-east-1",
            "--",
            "template.yaml",
        ])
        .current_dir(root())
        .output()
        .expect("cfn-lint runs (the SAM CLI's venv has it)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "cfn-lint --include-checks I:\n{text}");
    assert!(text.trim().is_empty(), "{text}");
}
