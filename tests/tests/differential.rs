//! The differential test: every case of `tests/differential/cases.json`, and random scripts
//! drawn from `tests/differential/random.json`, run through harel 0.9.0 (Python) and through
//! our `harel run --json`; the final root Executions must be the same once ids and clocks
//! are normalized. Run it alone with `scripts/differential.sh`.
//!
//! Needs the project venv: `$HAREL_PYTHON` (set by `scripts/with-moto.sh`), else it is
//! created by `scripts/python-env.sh`. Knobs: `DIFFERENTIAL_ONLY=substring` (cases by name),
//! `DIFFERENTIAL_SEED=n`, `DIFFERENTIAL_RANDOM=count-per-machine` and
//! `DIFFERENTIAL_LENGTH=max-steps` (the random scripts).

use std::path::PathBuf;

use harel_tests::differential::{
    case_json, compare, harel_binary, harel_python, load_cases, load_plans, random_cases,
    run_python, run_rust, workspace_root, Case, Verdict,
};

fn corpus_dir() -> PathBuf {
    workspace_root().join("tests/differential")
}

/// Runs `cases` on both sides and prints a verdict per case; returns the names that differ.
fn run_both(cases: &[Case], show_reproducer: bool) -> Vec<String> {
    let dir = corpus_dir();
    let machines = dir.join("machines");
    let python = harel_python().expect("the harel Python venv");
    let harel = harel_binary().expect("our harel binary");
    let theirs = run_python(&python, &dir.join("run_harel.py"), cases, &machines)
        .expect("harel Python runs the corpus");

    let (mut differ, mut known, mut python_only) = (Vec::new(), 0usize, 0usize);
    for (case, python_out) in cases.iter().zip(&theirs) {
        let verdict = if case.needs_failing_action {
            // `harel run` can't make an action fail on purpose: harel Python alone runs it,
            // and must still do what the case says
            match compare(case, python_out, python_out) {
                Verdict::Same => Verdict::PythonOnly,
                other => other,
            }
        } else {
            let ours = run_rust(&harel, case, &machines).expect("harel run starts");
            compare(case, python_out, &ours)
        };
        match (verdict, &case.known_difference) {
            (Verdict::Differ(detail), Some(why)) => {
                eprintln!("KNOWN   {} ({why})\n{detail}\n", case.name);
                known += 1;
            }
            (Verdict::Same, Some(why)) => {
                eprintln!(
                    "STALE   {}: marked as a known difference ({why}) but the same now: drop the mark\n",
                    case.name
                );
                differ.push(case.name.clone());
            }
            (Verdict::Same, None) => eprintln!("same    {}", case.name),
            (Verdict::PythonOnly, _) => {
                eprintln!("python  {} (needs a failing action)", case.name);
                python_only += 1;
            }
            (Verdict::Differ(detail), None) => {
                eprintln!("DIFFER  {}\n{detail}", case.name);
                if show_reproducer {
                    eprintln!("as a cases.json entry:\n  {},", case_json(case));
                }
                eprintln!();
                differ.push(case.name.clone());
            }
        }
    }
    eprintln!(
        "{} cases: {} same, {} differ, {known} known differences, {python_only} harel-Python-only",
        cases.len(),
        cases.len() - differ.len() - known - python_only,
        differ.len(),
    );
    differ
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn harel_python_and_ours_end_every_case_in_the_same_execution() {
    let mut cases = load_cases(&corpus_dir().join("cases.json")).expect("the corpus loads");
    // the divergences the generator found, kept (tests/tests/generated_differential.rs)
    let generated = corpus_dir().join("generated.json");
    if generated.exists() {
        cases.extend(load_cases(&generated).expect("generated.json loads"));
    }
    // an optional filter, as a substring of the case names: DIFFERENTIAL_ONLY=timer_
    let only = std::env::var("DIFFERENTIAL_ONLY").unwrap_or_default();
    let cases: Vec<Case> = cases
        .into_iter()
        .filter(|c| c.name.contains(&only))
        .collect();
    if cases.is_empty() && !only.is_empty() {
        return; // the filter picked random scripts only
    }
    assert!(!cases.is_empty(), "the corpus is empty");
    let differ = run_both(&cases, false);
    assert!(
        differ.is_empty(),
        "{} of {} cases differ from harel Python: {}",
        differ.len(),
        cases.len(),
        differ.join(", ")
    );
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn random_scripts_end_in_the_same_execution() {
    let env_number = |name: &str, default: u64| match std::env::var(name) {
        Ok(text) => text
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("{name} must be a number, got {text:?}")),
        Err(_) => default,
    };
    let seed = env_number("DIFFERENTIAL_SEED", 20_261_130);
    let per_plan = env_number("DIFFERENTIAL_RANDOM", 8) as usize;
    let max_len = env_number("DIFFERENTIAL_LENGTH", 10) as usize;
    let plans = load_plans(&corpus_dir().join("random.json")).expect("the random plans load");
    let only = std::env::var("DIFFERENTIAL_ONLY").unwrap_or_default();
    let cases: Vec<Case> = random_cases(&plans, seed, per_plan, max_len)
        .into_iter()
        .filter(|c| c.name.contains(&only))
        .collect();
    if cases.is_empty() {
        return; // DIFFERENTIAL_ONLY named corpus cases only, or DIFFERENTIAL_RANDOM=0
    }
    eprintln!("random scripts from seed {seed} (DIFFERENTIAL_SEED to change it)");
    let differ = run_both(&cases, true);
    assert!(
        differ.is_empty(),
        "{} of {} random scripts (seed {seed}) differ from harel Python: {}",
        differ.len(),
        cases.len(),
        differ.join(", ")
    );
}
