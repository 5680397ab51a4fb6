//! The generative differential test: random machines inside the `.stm` language with random
//! walks, on harel 0.9.0 (Python) and on ours, root and children compared once normalized
//! (see `harel_tests::generate`). A divergence is shrunk and kept in
//! `tests/differential/generated.json`, which the second test (and the corpus test) then
//! run for ever after.
//!
//! The seed rotates daily (the UTC date, e.g. 20261206, printed); `HAREL_GEN_SEED` and
//! `HAREL_GEN_CASES` (300) override, `HAREL_GEN_ONE=<case seed>` replays one case.
//! `scripts/differential.sh --generate N --seed S` runs it alone.

use std::time::{SystemTime, UNIX_EPOCH};

use harel_tests::differential::{load_cases, workspace_root};
use harel_tests::generate::sides::Outcome;
use harel_tests::generate::{corpus_file, gen::generate, run_many, Harness};

/// Today's UTC date as a number, e.g. 20261206 (days since the epoch to a civil date).
fn utc_date_seed() -> u64 {
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is past 1970")
        .as_secs() as i64
        / 86_400;
    // Howard Hinnant's days_from_civil, inverted
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year * 10_000 + month * 100 + day) as u64
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|text| {
        text.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, got {text:?}"))
    })
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn generated_machines_end_the_same_on_harel_python_and_ours() {
    if let Some(one) = env_number("HAREL_GEN_ONE") {
        let g = generate(one);
        let mut harness = Harness::start().expect("both sides start");
        let (outcome, detail) = harness.run(&g).expect("the case runs");
        eprintln!(
            "{}\nsteps: {:?}\nselectors: {:?}\n{outcome:?}\n{detail}",
            g.program.to_stm(),
            g.steps,
            g.selectors
        );
        assert_eq!(outcome, Outcome::Same);
        return;
    }
    let seed = env_number("HAREL_GEN_SEED").unwrap_or_else(utc_date_seed);
    let count = env_number("HAREL_GEN_CASES").unwrap_or(300) as usize;
    eprintln!("generated cases: seed {seed} (HAREL_GEN_SEED to replay), {count} cases");
    let report = run_many(seed, count, true, |line| eprintln!("{line}")).expect("both sides run");
    eprintln!(
        "seed {seed}: {} cases in {:.1} s: {} same, {} refused by both, {} broke harel, {} differ",
        report.cases,
        report.seconds,
        report.same,
        report.both_refused.len(),
        report.harel_broke.len(),
        report.divergences.len()
    );
    assert!(
        report.divergences.is_empty(),
        "seed {seed}: {} generated cases differ from harel Python (kept, shrunk, in {}): {:?}",
        report.divergences.len(),
        corpus_file().display(),
        report
            .divergences
            .iter()
            .map(|d| &d.kept_as)
            .collect::<Vec<_>>()
    );
    assert!(
        report.harel_broke.is_empty(),
        "seed {seed}: the generator made machines harel 0.9.0 crashes or hangs on (it must avoid them): {:?}",
        report.harel_broke.iter().map(|(s, _)| s).collect::<Vec<_>>()
    );
    assert!(
        report.both_refused.len() * 20 <= report.cases,
        "seed {seed}: more than 5% of the generated machines are refused by both sides: the generator strays"
    );
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn kept_generated_cases_still_end_the_same() {
    let path = corpus_file();
    if !path.exists() {
        return; // no divergence was ever kept
    }
    let cases = load_cases(&path).expect("generated.json loads");
    let machines = workspace_root().join("tests/differential/machines");
    let mut harness = Harness::start().expect("both sides start");
    let mut differ = Vec::new();
    for case in &cases {
        let (outcome, detail) = harness.run_case(case, &machines).expect("the case runs");
        match (&outcome, &case.known_difference) {
            (Outcome::Same, None) => eprintln!("same    {}", case.name),
            (Outcome::Same, Some(why)) => {
                eprintln!("STALE   {} ({why}): the same now, drop the mark", case.name);
                differ.push(case.name.clone());
            }
            (_, Some(why)) => eprintln!("KNOWN   {} ({why})", case.name),
            (_, None) => {
                eprintln!("DIFFER  {} ({outcome:?})\n{detail}", case.name);
                differ.push(case.name.clone());
            }
        }
    }
    assert!(differ.is_empty(), "kept generated cases differ: {differ:?}");
}
