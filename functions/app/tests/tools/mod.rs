//! Installs the lambda tools for the tests that need them.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The tools' bin directories, or None (with the reason printed) when they cannot be installed.
pub(crate) fn lambda_tools() -> Option<(PathBuf, PathBuf)> {
    let out = Command::new("bash")
        .arg(root().join("scripts/install-lambda-tools.sh"))
        .output()
        .expect("bash runs");
    if !out.status.success() {
        eprintln!(
            "SKIPPED: the lambda tools could not be installed from the Python index: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut lines = text.lines().map(PathBuf::from);
    Some((
        lines.next().expect("lambda bin"),
        lines.next().expect("sam bin"),
    ))
}
