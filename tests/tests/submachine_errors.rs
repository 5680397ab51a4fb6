//! Submachine errors through the `harel` binary, next to what harel Python does with the same
//! file: an `invoke` of a machine nobody has (harel raises `ResolveError` at the spawn; we
//! stop with the FQN named), and harel's static `_check_invoke` rules with their codes.

use std::path::PathBuf;
use std::process::Command;

use harel_tests::differential::{harel_binary, harel_python, workspace_root};

fn scratch(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("harel-submachine-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the machine");
    path
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn an_unknown_submachine_stops_the_run_with_its_name() {
    let file = scratch(
        "unknown.stm",
        "machine U {\n  initial A\n  state A { invoke pkg.Missing }\n  final B success\n  from A to B on Returned\n}\n",
    );
    let ours = Command::new(harel_binary().expect("our harel binary"))
        .args(["run", "--json"])
        .arg(&file)
        .output()
        .expect("harel run starts");
    assert_eq!(ours.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&ours.stderr);
    assert!(
        stderr.contains("error: invoke \"pkg.Missing\": no machine is registered for that FQN"),
        "{stderr}"
    );
    assert!(ours.stdout.is_empty(), "no execution printed");

    // harel Python fails on the same spawn (a crash: its message names the FQN too)
    let theirs = Command::new(harel_python().expect("the harel Python venv"))
        .arg(workspace_root().join("tests/differential/run_harel.py"))
        .arg(&file)
        .output()
        .expect("run_harel.py starts");
    assert!(!theirs.status.success());
    let stderr = String::from_utf8_lossy(&theirs.stderr);
    assert!(
        stderr.contains("ResolveError") && stderr.contains("pkg.Missing"),
        "{stderr}"
    );
}

#[test]
fn the_invoke_rules_report_harels_codes() {
    let file = workspace_root().join("shared/lang/tests/validate/invoke.stm");
    let out = Command::new(harel_binary().expect("our harel binary"))
        .arg("validate")
        .arg(&file)
        .output()
        .expect("harel validate starts");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_ne!(
        out.status.code(),
        Some(0),
        "errors fail the command: {text}"
    );
    for line in [
        "[error] invoke_on_composite at A: an `invoke` state must be a leaf",
        "[error] invoke_automatic_exit at B: a single `invoke` state must not have an automatic outgoing transition",
        "[warning] with_without_children at C:",
        "[error] unknown_context_field at D: the context declares no field 'nolist'",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    // a fan-out's automatic join and an inline body are fine
    assert!(
        !text.contains(" at F:") && !text.contains(" at G:"),
        "{text}"
    );
}
