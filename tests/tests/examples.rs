//! The example machines (`examples/*.stm`) are valid for both implementations: they load
//! and validate with no error in harel-lang and in harel 0.9.0's `harel validate`, and every
//! machine of the differential corpus loads in harel-lang.

use std::path::{Path, PathBuf};
use std::process::Command;

use harel_lang::{load_file, parse_file, validate, Severity};
use harel_tests::differential::{harel_python, workspace_root};

fn stm_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "stm"))
        .collect();
    files.sort();
    files
}

#[test]
fn examples_validate_without_errors_in_harel_lang() {
    let examples = stm_files(&workspace_root().join("examples"));
    assert!(
        examples.len() >= 3,
        "the examples are missing: {examples:?}"
    );
    for file in examples {
        let defn = load_file(&file, None).unwrap_or_else(|e| panic!("{e}"));
        let errors: Vec<String> = validate(&defn)
            .into_iter()
            .filter(|i| i.severity == Severity::Error)
            .map(|i| i.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", file.display());
    }
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn examples_validate_without_errors_in_harel_python() {
    let python = harel_python().expect("the harel Python venv");
    for file in stm_files(&workspace_root().join("examples")) {
        let out = Command::new(&python)
            .args(["-m", "harel.cli", "validate"])
            .arg(&file)
            .output()
            .expect("harel validate starts");
        assert!(
            out.status.success(),
            "harel validate {}:\n{}{}",
            file.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn every_differential_machine_loads_in_harel_lang() {
    let dir = workspace_root().join("tests/differential/machines");
    for file in stm_files(&dir) {
        let program = parse_file(&file).unwrap_or_else(|e| panic!("{e}"));
        for name in program.machines.keys() {
            if let Err(e) = load_file(&file, Some(name)) {
                panic!("{} machine {name}: {e}", file.display());
            }
        }
    }
}

/// The README's main job, and the commands the other examples document in their headers,
/// print step by step exactly what `harel run` prints in harel Python.
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn example_runs_print_the_same_steps_as_harel_python() {
    let root = workspace_root();
    let runs: [(&str, &[&str]); 5] = [
        (
            "examples/order.stm",
            &["PlaceOrder", "PaymentAuthorized", "Delivered"],
        ),
        (
            "examples/approval.stm",
            &[r#"Submit:{"amount": 250}"#, r#"Approve:{"by": "ann"}"#],
        ),
        (
            "examples/approval.stm",
            &[
                r#"Submit:{"amount": 5000}"#,
                r#"Approve:{"by": "bob"}"#,
                r#"Approve:{"by": "cho"}"#,
            ],
        ),
        (
            "examples/fulfilment.stm",
            &[
                "Picked",
                "PaymentCaptured",
                r#"Packed:{"parcel": "P-17"}"#,
                "Delivered",
            ],
        ),
        ("examples/fulfilment.stm", &["Picked", "PaymentFailed"]),
    ];
    let python = harel_python().expect("the harel Python venv");
    let harel = harel_tests::differential::harel_binary().expect("our harel binary");
    for (file, events) in runs {
        let mut args = vec!["run".to_owned(), file.to_owned()];
        for event in events {
            args.push("-e".into());
            args.push((*event).into());
        }
        let theirs = Command::new(&python)
            .current_dir(&root)
            .args(["-m", "harel.cli"])
            .args(&args)
            .output()
            .expect("harel Python starts");
        assert!(
            theirs.status.success(),
            "{}",
            String::from_utf8_lossy(&theirs.stderr)
        );
        let ours = Command::new(&harel)
            .current_dir(&root)
            .args(&args)
            .output()
            .expect("harel run starts");
        assert!(
            ours.status.success(),
            "{}",
            String::from_utf8_lossy(&ours.stderr)
        );
        let (theirs, ours) = (
            String::from_utf8_lossy(&theirs.stdout),
            String::from_utf8_lossy(&ours.stdout),
        );
        assert!(theirs.contains("\nstatus: DONE"), "harel Python: {theirs}");
        assert_eq!(
            ours,
            theirs,
            "harel {} differs from harel Python:\n{}",
            args.join(" "),
            harel_tests::textdiff::line_diff(&theirs, &ours, 2)
        );
    }
}
