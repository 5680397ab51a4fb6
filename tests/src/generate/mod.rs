//! The generative differential test: random machines inside the `.stm` language and random
//! walks over them ([`gen`]), run on harel Python and on ours ([`sides`]) and compared as the
//! corpus is (root and children, normalized); a divergence is shrunk ([`shrink`]) and kept
//! as a regression case in `tests/differential/generated.json` with its machine under
//! `tests/differential/machines/generated/`.

pub mod ast;
pub mod gen;
pub mod shrink;
pub mod sides;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use crate::differential::{
    case_json, harel_binary, harel_python, workspace_root, Case, HarnessError,
};
use gen::{generate, Generated};
use sides::{judge, run_ours, Outcome, PythonSide};

/// The seed of case `index` of a run seeded `base`: readable (`20261206000017` is case 17 of
/// the run seeded 20261206); `HAREL_GEN_ONE=<it>` replays that case alone.
pub fn case_seed(base: u64, index: usize) -> u64 {
    base.wrapping_mul(1_000_000).wrapping_add(index as u64)
}

/// Both sides, warm, and a scratch directory for the machines. Two harel Pythons: parsing a
/// machine (harel's Earley parser) is the slow part, so two cases are in flight at once.
pub struct Harness {
    pythons: [PythonSide; 2],
    harel: PathBuf,
    scratch: PathBuf,
    runs: usize,
}

impl Harness {
    /// Starts both harel Pythons (`run_harel.py --serve` in the venv of
    /// [`harel_python`]), finds or builds our `harel` binary, and makes a scratch directory
    /// of its own (removed on drop).
    pub fn start() -> Result<Harness, HarnessError> {
        let python = harel_python()?;
        let runner = workspace_root().join("tests/differential/run_harel.py");
        // one directory per harness: tests run side by side in one process
        static HARNESSES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = HARNESSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let scratch = std::env::temp_dir().join(format!("harel-gen-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&scratch).map_err(|source| HarnessError::Spawn {
            what: format!("mkdir {}", scratch.display()),
            source,
        })?;
        Ok(Harness {
            pythons: [
                PythonSide::start(&python, &runner)?,
                PythonSide::start(&python, &runner)?,
            ],
            harel: harel_binary()?,
            scratch,
            runs: 0,
        })
    }

    /// Runs one generated case on both sides.
    pub fn run(&mut self, g: &Generated) -> Result<(Outcome, String), HarnessError> {
        let mut results = self.run_pair(std::slice::from_ref(g))?;
        Ok(results.remove(0))
    }

    /// Runs one or two generated cases, each on its own harel Python, ours meanwhile.
    pub fn run_pair(
        &mut self,
        cases: &[Generated],
    ) -> Result<Vec<(Outcome, String)>, HarnessError> {
        assert!(
            cases.len() <= self.pythons.len(),
            "at most one case per harel Python"
        );
        let mut files = Vec::new();
        for (g, python) in cases.iter().zip(self.pythons.iter_mut()) {
            self.runs += 1;
            // a fresh file per run: harel Python caches a parsed machine by path
            let file = format!("gen_{}_{}.stm", g.seed, self.runs);
            let path = self.scratch.join(&file);
            std::fs::write(&path, g.program.to_stm()).map_err(|source| HarnessError::Spawn {
                what: format!("write {}", path.display()),
                source,
            })?;
            let case = as_case(g, &file);
            python.send(&case, &self.scratch)?;
            files.push((case, path));
        }
        let mut ours = Vec::new();
        for (case, _) in &files {
            ours.push(run_ours(&self.harel, case, &self.scratch)?);
        }
        let mut results = Vec::new();
        for ((_, path), (python, ours)) in files.iter().zip(self.pythons.iter_mut().zip(&ours)) {
            let theirs = python.receive()?;
            let _ = std::fs::remove_file(path);
            results.push(judge(&theirs, ours));
        }
        Ok(results)
    }

    /// Runs a case from a corpus file (the kept regression cases), machines under `machines`.
    pub fn run_case(
        &mut self,
        case: &Case,
        machines: &Path,
    ) -> Result<(Outcome, String), HarnessError> {
        self.pythons[0].send(case, machines)?;
        let ours = run_ours(&self.harel, case, machines)?;
        let theirs = self.pythons[0].receive()?;
        Ok(judge(&theirs, &ours))
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// A generated case as a corpus case (its machine in `file`).
pub fn as_case(g: &Generated, file: &str) -> Case {
    Case {
        name: format!("gen_{}", g.seed),
        machine: file.into(),
        machine_name: None,
        seed: None,
        steps: g.steps.clone(),
        selectors: g.selectors.clone(),
        fail: vec![],
        rejected: false,
        needs_failing_action: false,
        // our contract: the durable stores' order (see README "Generated cases")
        timers_by_fire_at: true,
        known_difference: None,
    }
}

/// A divergence, shrunk and kept.
#[derive(Debug)]
pub struct Divergence {
    /// The seed of the case as generated (before shrinking): `HAREL_GEN_ONE=<it>` replays it.
    pub seed: u64,
    /// The shrunk case's difference: a line diff of the executions, or both sides' outputs.
    pub detail: String,
    /// The kept case's name in `generated.json` (empty when the run does not keep).
    pub kept_as: String,
    /// Candidates the shrinker ran on both sides before it found no smaller one that differs.
    pub shrink_tries: usize,
}

/// What a run found.
#[derive(Debug, Default)]
pub struct Report {
    /// Cases generated and run.
    pub cases: usize,
    /// Cases where both sides ended with the same executions.
    pub same: usize,
    /// Cases both sides refused, by seed, with both outputs: the generator strayed outside
    /// the language (a few are tolerated, many mean the generator needs fixing).
    pub both_refused: Vec<(u64, String)>,
    /// Cases harel Python crashed or hung on, by seed, with its output: shapes the
    /// generator must learn to avoid.
    pub harel_broke: Vec<(u64, String)>,
    /// The cases where the sides differ, each shrunk.
    pub divergences: Vec<Divergence>,
    /// Wall time of the whole run, shrinking included.
    pub seconds: f64,
}

/// Runs `count` cases seeded from `base`; each divergence is shrunk and written to the
/// corpus (`generated.json`) unless `keep` is false. `log` gets one line per case.
pub fn run_many(
    base: u64,
    count: usize,
    keep: bool,
    mut log: impl FnMut(&str),
) -> Result<Report, HarnessError> {
    let started = Instant::now();
    let mut harness = Harness::start()?;
    let mut report = Report::default();
    let all: Vec<usize> = (0..count).collect();
    for pair in all.chunks(2) {
        let gens: Vec<Generated> = pair.iter().map(|i| generate(case_seed(base, *i))).collect();
        let results = harness.run_pair(&gens)?;
        for (g, (outcome, detail)) in gens.into_iter().zip(results) {
            judged(
                &mut harness,
                &mut report,
                g,
                outcome,
                detail,
                keep,
                &mut log,
            )?;
        }
        if report.cases % 100 == 0 {
            log(&format!(
                "{} cases in {:.0} s, {} differ",
                report.cases,
                started.elapsed().as_secs_f64(),
                report.divergences.len()
            ));
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Counts one case's outcome; a divergence is shrunk, and kept when `keep`.
fn judged(
    harness: &mut Harness,
    report: &mut Report,
    g: Generated,
    outcome: Outcome,
    detail: String,
    keep: bool,
    log: &mut impl FnMut(&str),
) -> Result<(), HarnessError> {
    {
        report.cases += 1;
        match outcome {
            Outcome::Same => report.same += 1,
            Outcome::BothRefused => {
                log(&format!("refused {} (both sides)\n{detail}", g.seed));
                report.both_refused.push((g.seed, detail));
            }
            Outcome::HarelBroke(code) => {
                log(&format!(
                    "HAREL   {} broke (code {code}): the generator must avoid this\n{}\n{detail}",
                    g.seed,
                    g.program.to_stm()
                ));
                report.harel_broke.push((g.seed, detail));
            }
            Outcome::Differ(sig) => {
                log(&format!("DIFFER  {}: shrinking", g.seed));
                let (small, tries) = shrink::shrink(
                    &g,
                    |candidate| matches!(harness.run(candidate), Ok((Outcome::Differ(s), _)) if s == sig),
                );
                let (_, detail) = harness.run(&small)?;
                let kept_as = if keep {
                    keep_case(&small)?
                } else {
                    String::new()
                };
                log(&format!(
                    "DIFFER  {} shrunk in {tries} tries to:\n{}steps: {}\nselectors: {:?}\n{detail}\nkept as {kept_as}",
                    g.seed,
                    small.program.to_stm(),
                    serde_json::to_string(&small.steps.iter().map(|s| s.arg()).collect::<Vec<_>>()).unwrap_or_default(),
                    small.selectors,
                ));
                report.divergences.push(Divergence {
                    seed: g.seed,
                    detail,
                    kept_as,
                    shrink_tries: tries,
                });
            }
        }
    }
    Ok(())
}

/// The kept generated cases.
pub fn corpus_file() -> PathBuf {
    workspace_root().join("tests/differential/generated.json")
}

/// Writes `g` as a regression case: its machine under `machines/generated/`, its entry
/// appended to `generated.json`. Returns the case's name.
pub fn keep_case(g: &Generated) -> Result<String, HarnessError> {
    let io = |what: String| move |source| HarnessError::Spawn { what, source };
    let machines = workspace_root().join("tests/differential/machines/generated");
    std::fs::create_dir_all(&machines).map_err(io(machines.display().to_string()))?;
    let file = format!("gen_{}.stm", g.seed);
    std::fs::write(machines.join(&file), g.program.to_stm()).map_err(io(file.clone()))?;
    let case = as_case(g, &format!("generated/{file}"));
    let mut entry: Value = serde_json::from_str(&case_json(&case)).expect("case_json prints JSON");
    entry["gen_seed"] = Value::from(g.seed);
    let path = corpus_file();
    let mut entries: Vec<Value> = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| HarnessError::Tool {
            what: path.display().to_string(),
            detail: e.to_string(),
        })?,
        Err(_) => Vec::new(),
    };
    entries.retain(|e| e["name"] != entry["name"]);
    entries.push(entry);
    let lines: Vec<String> = entries.iter().map(|e| format!("  {e}")).collect();
    std::fs::write(&path, format!("[\n{}\n]\n", lines.join(",\n")))
        .map_err(io(path.display().to_string()))?;
    Ok(case.name)
}
