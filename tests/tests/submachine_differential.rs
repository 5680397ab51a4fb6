//! The submachine cases of the differential corpus (`submachine_*` in `cases.json`), compared
//! with every execution they create: the root and each child (invoke children, fan-out
//! instances, the children of those), as harel Python's `run_harel.py --children` and our
//! `harel run --json --children` print them. The main differential test compares the roots
//! of the same cases; this one proves the children, their ids, contexts, definition FQNs and
//! verdicts are harel's too.
//!
//! Needs the project venv, like `differential.rs` (`$HAREL_PYTHON`, else
//! `scripts/python-env.sh` creates it).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use harel_tests::differential::{
    harel_binary, harel_python, load_cases, normalize, workspace_root, Case, RunOutput,
};
use harel_tests::textdiff::line_diff;
use serde_json::Value;

fn corpus_dir() -> PathBuf {
    workspace_root().join("tests/differential")
}

fn submachine_cases() -> Vec<Case> {
    let cases = load_cases(&corpus_dir().join("cases.json")).expect("the corpus loads");
    cases
        .into_iter()
        .filter(|c| c.name.starts_with("submachine_"))
        .collect()
}

/// Every case through harel Python in one batch, each with `--children`.
fn run_python_children(cases: &[Case]) -> Vec<RunOutput> {
    let dir = corpus_dir();
    let machines = dir.join("machines");
    let batch: Vec<Vec<String>> = cases
        .iter()
        .map(|c| {
            let mut args = c.python_args(&machines);
            args.push("--children".into());
            args
        })
        .collect();
    let python = harel_python().expect("the harel Python venv");
    let mut child = Command::new(python)
        .arg(dir.join("run_harel.py"))
        .arg("--batch")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run_harel.py starts");
    child
        .stdin
        .take()
        .expect("stdin was piped")
        .write_all(&serde_json::to_vec(&batch).expect("argument lists serialize"))
        .expect("the batch is written");
    let out = child.wait_with_output().expect("run_harel.py runs");
    assert!(
        out.status.success(),
        "run_harel.py --batch failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the batch prints its results")
}

fn run_ours_children(case: &Case) -> RunOutput {
    let harel = harel_binary().expect("our harel binary");
    let out = Command::new(harel)
        .args(["run", "--json", "--children"])
        .args(case.args(&corpus_dir().join("machines")))
        .output()
        .expect("harel run starts");
    RunOutput {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The list of executions, each normalized as the main test does, with the root's id
/// (which every child id starts with) made `<exe>` everywhere first.
fn normalized(side: &str, out: &RunOutput) -> Result<String, String> {
    if out.code != 0 {
        return Err(format!(
            "{side} exited {}:\n{}\n{}",
            out.code, out.stdout, out.stderr
        ));
    }
    let docs: Vec<Value> = serde_json::from_str(&out.stdout)
        .map_err(|e| format!("{side} did not print a JSON list ({e}):\n{}", out.stdout))?;
    let root_id = docs
        .first()
        .and_then(|d| d.get("id"))
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{side} printed no root execution"))?
        .to_string();
    let text = serde_json::to_string(&docs)
        .expect("a JSON value prints")
        .replace(&root_id, "<exe>");
    let docs: Vec<Value> = serde_json::from_str(&text).expect("it was JSON a moment ago");
    let docs: Vec<Value> = docs.iter().map(normalize).collect();
    Ok(serde_json::to_string_pretty(&docs).expect("a JSON value prints"))
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn submachine_cases_end_with_the_same_executions_children_included() {
    let cases = submachine_cases();
    assert!(
        cases.len() >= 20,
        "the submachine corpus shrank to {} cases",
        cases.len()
    );
    let theirs = run_python_children(&cases);
    assert_eq!(theirs.len(), cases.len());
    let mut differ = Vec::new();
    let mut children_seen = 0usize;
    for (case, python) in cases.iter().zip(&theirs) {
        let ours = run_ours_children(case);
        match (
            normalized("harel Python", python),
            normalized("harel run", &ours),
        ) {
            (Ok(a), Ok(b)) if a == b => {
                let n: Vec<Value> = serde_json::from_str(&a).expect("normalized JSON");
                children_seen += n.len() - 1;
                eprintln!("same    {} ({} executions)", case.name, n.len());
            }
            (Ok(a), Ok(b)) => {
                eprintln!(
                    "DIFFER  {}\n(- harel Python, + ours)\n{}\n",
                    case.name,
                    line_diff(&a, &b, 3)
                );
                differ.push(case.name.clone());
            }
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("DIFFER  {}\n{e}\n", case.name);
                differ.push(case.name.clone());
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} submachine cases differ: {}",
        differ.len(),
        cases.len(),
        differ.join(", ")
    );
    // the corpus really spawns children: a broken spawn would compare two empty lists
    assert!(children_seen >= 40, "only {children_seen} child executions");
}
