//! The differential test: every case of `tests/differential/cases.json` runs through harel
//! 0.9.0 (Python) and through our `harel run --json`, and the final root Executions must be
//! the same once ids and clocks are normalized. Run it alone with `scripts/differential.sh`.
//!
//! Needs the project venv: `$HAREL_PYTHON` (set by `scripts/with-moto.sh`), else it is
//! created by `scripts/python-env.sh`.

use harel_tests::differential::{
    compare, harel_binary, harel_python, load_cases, run_python, run_rust, workspace_root, Verdict,
};

#[test]
fn harel_python_and_ours_end_every_case_in_the_same_execution() {
    let root = workspace_root();
    let dir = root.join("tests/differential");
    let machines = dir.join("machines");
    let cases = load_cases(&dir.join("cases.json")).expect("the corpus loads");
    // an optional filter, as a substring of the case names: DIFFERENTIAL_ONLY=timer_
    let only = std::env::var("DIFFERENTIAL_ONLY").unwrap_or_default();
    let cases: Vec<_> = cases
        .into_iter()
        .filter(|c| c.name.contains(&only))
        .collect();
    assert!(
        !cases.is_empty(),
        "no case matches DIFFERENTIAL_ONLY={only}"
    );

    let python = harel_python().expect("the harel Python venv");
    let harel = harel_binary().expect("our harel binary");
    let theirs = run_python(&python, &dir.join("run_harel.py"), &cases, &machines)
        .expect("harel Python runs the corpus");

    let mut differ = Vec::new();
    let mut python_only = Vec::new();
    let mut known = Vec::new();
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
                known.push(case.name.clone());
            }
            (Verdict::Same, Some(why)) => {
                eprintln!("STALE   {}: marked as a known difference ({why}) but the same now: drop the mark\n", case.name);
                differ.push(case.name.clone());
            }
            (Verdict::Same, None) => eprintln!("same    {}", case.name),
            (Verdict::PythonOnly, _) => {
                eprintln!("python  {} (needs a failing action)", case.name);
                python_only.push(case.name.clone());
            }
            (Verdict::Differ(detail), None) => {
                eprintln!("DIFFER  {}\n{detail}\n", case.name);
                differ.push(case.name.clone());
            }
        }
    }
    eprintln!(
        "{} cases: {} same, {} differ, {} known differences, {} harel-Python-only",
        cases.len(),
        cases.len() - differ.len() - python_only.len() - known.len(),
        differ.len(),
        known.len(),
        python_only.len()
    );
    assert!(
        differ.is_empty(),
        "{} of {} cases differ from harel Python: {}",
        differ.len(),
        cases.len(),
        differ.join(", ")
    );
}
