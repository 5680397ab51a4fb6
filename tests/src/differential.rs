//! The differential test against harel Python: the corpus format, how a case becomes a
//! command line for both sides, how the two final Executions are normalized before they are
//! compared, and the verdict per case.
//!
//! Both sides take the same arguments: our `harel run --json FILE [NAME] -e ... --seed ...
//! --selector ...` and `tests/differential/run_harel.py` with the same list, which drives
//! harel 0.9.0's `DurableRunner` over a `DictStore` with a controllable clock.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::textdiff::line_diff;

/// A failure to run the comparison itself (not a difference between the two sides).
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A corpus file (`cases.json`, `random.json`) could not be read.
    #[error("cannot read the corpus {path}: {source}")]
    Corpus {
        /// The file, as the test named it.
        path: PathBuf,
        /// Why reading it failed.
        source: std::io::Error,
    },
    /// A corpus file is not the JSON list of cases (or plans) it should be.
    #[error("the corpus {path} is not a valid case list: {source}")]
    CorpusFormat {
        /// The file, as the test named it.
        path: PathBuf,
        /// Where and why serde refused it.
        source: serde_json::Error,
    },
    /// A process or a file operation of the harness failed at the OS level: a side could not
    /// be started or written to, a scratch file could not be written.
    #[error("cannot start {what}: {source}")]
    Spawn {
        /// The command line or the file operation (`mkdir DIR`, `write FILE`).
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A tool ran but did not do its job: `scripts/python-env.sh` or `cargo build` failed,
    /// `run_harel.py` exited non-zero, died, or printed something unreadable.
    #[error("{what} failed: {detail}")]
    Tool {
        /// The tool's command line.
        what: String,
        /// Its stderr, or what was wrong with its output.
        detail: String,
    },
}

/// One step of a case's script, as written in `cases.json`: `"Kind"`, `"+30s"`, or
/// `["Kind", {data}]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Step {
    /// An event kind without data (`"Pay"`) or a clock advance (`"+30s"`), passed as is.
    Plain(String),
    /// An event kind and its data object (`["Pay", {"amount": 3}]`), passed as
    /// `Kind:{json}`.
    WithData(String, Map<String, Value>),
}

impl Step {
    /// The `-e` argument both CLIs take.
    pub fn arg(&self) -> String {
        match self {
            Step::Plain(text) => text.clone(),
            Step::WithData(kind, data) => {
                format!("{kind}:{}", Value::Object(data.clone()))
            }
        }
    }
}

/// One case of the corpus.
#[derive(Debug, Clone, Deserialize)]
pub struct Case {
    /// How the test's report names the case (a kept generated case: `gen_<seed>`).
    pub name: String,
    /// The `.stm` file, relative to `tests/differential/machines/`.
    pub machine: String,
    /// Which machine of the file to run, when it declares several (the CLIs' `[NAME]`).
    #[serde(default)]
    pub machine_name: Option<String>,
    /// The initial context, passed as `--seed JSON` (`None`: the machine's defaults).
    #[serde(default)]
    pub seed: Option<Value>,
    /// The script, in order: each step is one `-e` argument.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// `NAME=VALUE` answers for selectors, in call order.
    #[serde(default)]
    pub selectors: Vec<String>,
    /// Actions that raise on the Python side (`run_harel.py --fail`).
    #[serde(default)]
    pub fail: Vec<String>,
    /// Both sides must refuse the input (a context or an event that breaks its schema).
    #[serde(default)]
    pub rejected: bool,
    /// The case needs an action that fails on purpose, which `harel run` can't provide: only
    /// harel Python runs it.
    #[serde(default)]
    pub needs_failing_action: bool,
    /// harel Python sweeps due timers earliest first (as its DynamoDBStore does) instead of
    /// in its DictStore's order.
    #[serde(default)]
    pub timers_by_fire_at: bool,
    /// A difference we know of and keep, with why: the case must still differ (else the
    /// mark is stale), and does not fail the test.
    #[serde(default)]
    pub known_difference: Option<String>,
}

impl Case {
    /// The arguments after `harel run` / `run_harel.py` (without `--json` / `--fail`).
    pub fn args(&self, machines_dir: &Path) -> Vec<String> {
        let mut args = vec![machines_dir.join(&self.machine).display().to_string()];
        args.extend(self.machine_name.iter().cloned());
        for step in &self.steps {
            args.push("-e".into());
            args.push(step.arg());
        }
        if let Some(seed) = &self.seed {
            args.push("--seed".into());
            args.push(seed.to_string());
        }
        for answer in &self.selectors {
            args.push("--selector".into());
            args.push(answer.clone());
        }
        args
    }

    /// The Python side's arguments: ours plus the actions told to fail.
    pub fn python_args(&self, machines_dir: &Path) -> Vec<String> {
        let mut args = self.args(machines_dir);
        for name in &self.fail {
            args.push("--fail".into());
            args.push(name.clone());
        }
        if self.timers_by_fire_at {
            args.push("--timers-by-fire-at".into());
        }
        args
    }
}

/// A pool to draw random scripts from (`random.json`): a machine, its seed, the steps a
/// script may take, and the selector answers both sides get.
#[derive(Debug, Clone, Deserialize)]
pub struct RandomPlan {
    /// The `.stm` file, relative to `tests/differential/machines/` (as [`Case::machine`]).
    pub machine: String,
    /// Which machine of the file, when it declares several.
    #[serde(default)]
    pub machine_name: Option<String>,
    /// The initial context every drawn case starts from.
    #[serde(default)]
    pub seed: Option<Value>,
    /// The steps a script is drawn from, with repetition (must not be empty).
    pub pool: Vec<Step>,
    /// `NAME=VALUE` selector answers, the same for every drawn case.
    #[serde(default)]
    pub selectors: Vec<String>,
}

/// SplitMix64: a reproducible stream from one seed, so a failing script can be replayed.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// `per_plan` random scripts of 1..=`max_len` steps for each plan, drawn from `seed`.
/// Timers are swept earliest first on the Python side too (as harel's DynamoDBStore does):
/// the DictStore's own order is pinned by a case of its own.
pub fn random_cases(plans: &[RandomPlan], seed: u64, per_plan: usize, max_len: usize) -> Vec<Case> {
    let mut rng = SplitMix(seed);
    let mut cases = Vec::new();
    for plan in plans {
        let stem = Path::new(&plan.machine)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for i in 0..per_plan {
            let len = 1 + rng.below(max_len.max(1));
            let steps = (0..len)
                .map(|_| plan.pool[rng.below(plan.pool.len())].clone())
                .collect();
            cases.push(Case {
                name: format!(
                    "random_{stem}_{}_{i}",
                    plan.machine_name.as_deref().unwrap_or("")
                ),
                machine: plan.machine.clone(),
                machine_name: plan.machine_name.clone(),
                seed: plan.seed.clone(),
                steps,
                selectors: plan.selectors.clone(),
                fail: Vec::new(),
                rejected: false,
                needs_failing_action: false,
                timers_by_fire_at: true,
                known_difference: None,
            });
        }
    }
    cases
}

/// A case as a `cases.json` line, to keep a random script that found a difference.
pub fn case_json(case: &Case) -> String {
    let steps: Vec<Value> = case
        .steps
        .iter()
        .map(|s| match s {
            Step::Plain(text) => Value::String(text.clone()),
            Step::WithData(kind, data) => Value::Array(vec![
                Value::String(kind.clone()),
                Value::Object(data.clone()),
            ]),
        })
        .collect();
    let mut obj = Map::new();
    obj.insert("name".into(), Value::String(case.name.clone()));
    obj.insert("machine".into(), Value::String(case.machine.clone()));
    if let Some(name) = &case.machine_name {
        obj.insert("machine_name".into(), Value::String(name.clone()));
    }
    if let Some(seed) = &case.seed {
        obj.insert("seed".into(), seed.clone());
    }
    obj.insert("steps".into(), Value::Array(steps));
    if !case.selectors.is_empty() {
        let answers = case.selectors.iter().cloned().map(Value::String).collect();
        obj.insert("selectors".into(), Value::Array(answers));
    }
    if case.timers_by_fire_at {
        obj.insert("timers_by_fire_at".into(), Value::Bool(true));
    }
    Value::Object(obj).to_string()
}

/// Reads `random.json`.
pub fn load_plans(path: &Path) -> Result<Vec<RandomPlan>, HarnessError> {
    let text = std::fs::read_to_string(path).map_err(|source| HarnessError::Corpus {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| HarnessError::CorpusFormat {
        path: path.to_owned(),
        source,
    })
}

/// Reads `cases.json`.
pub fn load_cases(path: &Path) -> Result<Vec<Case>, HarnessError> {
    let text = std::fs::read_to_string(path).map_err(|source| HarnessError::Corpus {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| HarnessError::CorpusFormat {
        path: path.to_owned(),
        source,
    })
}

/// What one side printed for one case.
#[derive(Debug, Clone, Deserialize)]
pub struct RunOutput {
    /// The exit status: 0 ran, 1 refused the input; -1 killed by a signal, -2 (generated
    /// cases) cut off as hung; `run_harel.py` uses 3 for a harel crash and 4 for a hang.
    pub code: i32,
    /// The final Execution as JSON (a list of root and children with `--children`).
    pub stdout: String,
    /// The side's diagnostics: on a refusal, harel's `error: ...` line.
    pub stderr: String,
}

/// Fields that read the wall clock (or a clock each side starts where it likes): dropped.
const WALL_CLOCK: [&str; 3] = ["created_at", "updated_at", "finished_at"];

/// The Execution document with everything that legitimately differs between two runs made
/// uniform: the execution id becomes `<exe>` wherever it appears (child ids, keys), event
/// ids become `<event-N>` in order of appearance, the wall-clock fields go, and
/// `expires_at` becomes its distance from `created_at` (both sides count it on their own
/// clock, so only the distance can agree).
pub fn normalize(doc: &Value) -> Value {
    let mut doc = doc.clone();
    let exe_id = doc.get("id").and_then(Value::as_str).map(str::to_owned);
    if let Some(obj) = doc.as_object_mut() {
        let created = obj.get("created_at").and_then(Value::as_f64);
        if let (Some(created), Some(expires)) =
            (created, obj.get("expires_at").and_then(Value::as_f64))
        {
            // rounded: the two clocks' floats need not cancel to the same last bit
            let offset = ((expires - created) * 1000.0).round() / 1000.0;
            obj.insert("expires_at".into(), Value::String(format!("+{offset}s")));
        }
        for field in WALL_CLOCK {
            obj.remove(field);
        }
    }
    let mut events = 0usize;
    rename(&mut doc, exe_id.as_deref(), &mut events);
    doc
}

fn rename(value: &mut Value, exe_id: Option<&str>, events: &mut usize) {
    match value {
        Value::String(text) => {
            if let Some(id) = exe_id.filter(|id| !id.is_empty()) {
                if text.contains(id) {
                    *text = text.replace(id, "<exe>");
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rename(item, exe_id, events);
            }
        }
        Value::Object(map) => {
            let is_event = map.contains_key("kind") && map.contains_key("data");
            let old = std::mem::take(map);
            for (key, mut item) in old {
                let key = match exe_id.filter(|id| !id.is_empty()) {
                    Some(id) if key.contains(id) => key.replace(id, "<exe>"),
                    _ => key,
                };
                if is_event && key == "id" && item.is_string() {
                    item = Value::String(format!("<event-{}>", *events));
                    *events += 1;
                } else {
                    rename(&mut item, exe_id, events);
                }
                map.insert(key, item);
            }
        }
        _ => {}
    }
}

/// How one case came out.
#[derive(Debug)]
pub enum Verdict {
    /// Both sides agree: the same normalized Execution, or the same refusal and message.
    Same,
    /// Only harel Python can run it (see `Case::needs_failing_action`); it did.
    PythonOnly,
    /// They disagree (or harel Python did not do what the case expects); the text says how,
    /// with a line diff of the two Executions when both ran.
    Differ(String),
}

/// Compares the two sides' outputs for `case`.
pub fn compare(case: &Case, python: &RunOutput, rust: &RunOutput) -> Verdict {
    let describe = |side: &str, out: &RunOutput| {
        format!(
            "{side} exited {}\n--- stdout\n{}\n--- stderr\n{}",
            out.code,
            out.stdout.trim_end(),
            out.stderr.trim_end()
        )
    };
    if !matches!(python.code, 0 | 1) || (python.code == 1) != case.rejected {
        return Verdict::Differ(format!(
            "harel Python did not do what the case expects (rejected: {}): the case is wrong\n{}",
            case.rejected,
            describe("harel Python", python)
        ));
    }
    if case.rejected {
        // both refuse; ours must say what harel says
        let message = python
            .stderr
            .lines()
            .find_map(|line| line.strip_prefix("error: "))
            .unwrap_or("")
            .trim();
        if rust.code == 0 {
            return Verdict::Differ(format!(
                "harel Python refused the input ({message}), ours accepted it\n{}",
                describe("harel run", rust)
            ));
        }
        if !rust.stderr.contains(message) {
            return Verdict::Differ(format!(
                "both refused, but ours does not give harel's message\n  harel: {message}\n{}",
                describe("harel run", rust)
            ));
        }
        return Verdict::Same;
    }
    if rust.code != 0 {
        return Verdict::Differ(describe("harel run", rust));
    }
    let parse = |side: &str, out: &RunOutput| {
        serde_json::from_str::<Value>(&out.stdout).map_err(|e| {
            format!(
                "{side} did not print one JSON document ({e})\n{}",
                out.stdout
            )
        })
    };
    let (theirs, ours) = match (parse("harel Python", python), parse("harel run", rust)) {
        (Ok(theirs), Ok(ours)) => (normalize(&theirs), normalize(&ours)),
        (Err(e), _) | (_, Err(e)) => return Verdict::Differ(e),
    };
    let pretty = |v: &Value| serde_json::to_string_pretty(v).expect("a JSON value always prints");
    let (theirs, ours) = (pretty(&theirs), pretty(&ours));
    if theirs == ours {
        Verdict::Same
    } else {
        Verdict::Differ(format!(
            "final Execution differs (- harel Python, + ours):\n{}",
            line_diff(&theirs, &ours, 3)
        ))
    }
}

/// The workspace root (this crate lives in `tests/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits inside the workspace")
        .to_owned()
}

/// The venv's python: `$HAREL_PYTHON`, else the one `scripts/python-env.sh` creates.
pub fn harel_python() -> Result<PathBuf, HarnessError> {
    if let Some(python) = std::env::var_os("HAREL_PYTHON") {
        return Ok(PathBuf::from(python));
    }
    let script = workspace_root().join("scripts/python-env.sh");
    let out = Command::new(&script)
        .output()
        .map_err(|source| HarnessError::Spawn {
            what: script.display().to_string(),
            source,
        })?;
    if !out.status.success() {
        return Err(HarnessError::Tool {
            what: script.display().to_string(),
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    let venv = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    Ok(Path::new(&venv).join("bin/python"))
}

/// Our `harel` binary: `$HAREL_BIN`, else built now with cargo (the binary belongs to
/// another package of the workspace, so cargo does not hand this test its path).
pub fn harel_binary() -> Result<PathBuf, HarnessError> {
    if let Some(bin) = std::env::var_os("HAREL_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "build",
            "-q",
            "-p",
            "harel-cli",
            "--bin",
            "harel",
            "--message-format=json",
        ])
        .output()
        .map_err(|source| HarnessError::Spawn {
            what: "cargo build -p harel-cli".into(),
            source,
        })?;
    if !out.status.success() {
        return Err(HarnessError::Tool {
            what: "cargo build -p harel-cli".into(),
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|msg| msg["reason"] == "compiler-artifact" && msg["target"]["name"] == "harel")
        .find_map(|msg| msg["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| HarnessError::Tool {
            what: "cargo build -p harel-cli".into(),
            detail: "no `harel` executable in its output".into(),
        })
}

/// Runs every case through harel Python in one process (`run_harel.py --batch`).
pub fn run_python(
    python: &Path,
    runner: &Path,
    cases: &[Case],
    machines_dir: &Path,
) -> Result<Vec<RunOutput>, HarnessError> {
    use std::io::Write;

    let batch: Vec<Vec<String>> = cases.iter().map(|c| c.python_args(machines_dir)).collect();
    let what = format!("{} {} --batch", python.display(), runner.display());
    let mut child = Command::new(python)
        .arg(runner)
        .arg("--batch")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|source| HarnessError::Spawn {
            what: what.clone(),
            source,
        })?;
    let input = serde_json::to_vec(&batch).expect("argument lists always serialize");
    child
        .stdin
        .take()
        .expect("stdin was piped")
        .write_all(&input)
        .map_err(|source| HarnessError::Spawn {
            what: what.clone(),
            source,
        })?;
    let out = child
        .wait_with_output()
        .map_err(|source| HarnessError::Spawn {
            what: what.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(HarnessError::Tool {
            what,
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    let results: Vec<RunOutput> =
        serde_json::from_slice(&out.stdout).map_err(|e| HarnessError::Tool {
            what: what.clone(),
            detail: format!("unreadable batch output: {e}"),
        })?;
    if results.len() != cases.len() {
        return Err(HarnessError::Tool {
            what,
            detail: format!("{} results for {} cases", results.len(), cases.len()),
        });
    }
    Ok(results)
}

/// Runs one case through our `harel run --json`.
pub fn run_rust(harel: &Path, case: &Case, machines_dir: &Path) -> Result<RunOutput, HarnessError> {
    let out = Command::new(harel)
        .arg("run")
        .arg("--json")
        .args(case.args(machines_dir))
        .output()
        .map_err(|source| HarnessError::Spawn {
            what: harel.display().to_string(),
            source,
        })?;
    Ok(RunOutput {
        // a signal has no code: count it as a crash, distinct from any exit status
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalize_maps_the_id_everywhere_and_numbers_events() {
        let doc = json!({
            "id": "abc123",
            "context": {"region_results": {"Fork.A": {"outcome": "success"}}},
            "deferred": [{"id": "e1", "kind": "Pay", "data": {"id": "kept"}},
                         {"id": "e2", "kind": "Ship", "data": {}}],
            "children": {"abc123:Fork.A:0": {"root_path": "Fork.A"}},
            "created_at": 100.0, "updated_at": 150.0, "finished_at": null,
            "expires_at": 160.0
        });
        let norm = normalize(&doc);
        assert_eq!(norm["id"], "<exe>");
        assert!(norm["children"].get("<exe>:Fork.A:0").is_some());
        assert_eq!(norm["deferred"][0]["id"], "<event-0>");
        assert_eq!(norm["deferred"][0]["data"]["id"], "kept");
        assert_eq!(norm["deferred"][1]["id"], "<event-1>");
        assert_eq!(norm["expires_at"], "+60s");
        assert!(norm.get("created_at").is_none() && norm.get("updated_at").is_none());
    }

    #[test]
    fn compare_reports_a_difference_with_the_changed_line() {
        let case = Case {
            name: "c".into(),
            machine: "m.stm".into(),
            machine_name: None,
            seed: None,
            steps: vec![],
            selectors: vec![],
            fail: vec![],
            rejected: false,
            needs_failing_action: false,
            timers_by_fire_at: false,
            known_difference: None,
        };
        let out = |doc: Value| RunOutput {
            code: 0,
            stdout: doc.to_string(),
            stderr: String::new(),
        };
        let same = compare(
            &case,
            &out(json!({"id": "a", "version": 2})),
            &out(json!({"id": "b", "version": 2})),
        );
        assert!(matches!(same, Verdict::Same));
        match compare(
            &case,
            &out(json!({"id": "a", "version": 2})),
            &out(json!({"id": "b", "version": 3})),
        ) {
            Verdict::Differ(text) => {
                assert!(text.contains("-   \"version\": 2"), "{text}");
                assert!(text.contains("+   \"version\": 3"), "{text}");
            }
            other => panic!("expected a difference, got {other:?}"),
        }
    }

    #[test]
    fn random_scripts_are_reproducible_from_their_seed() {
        let plans: Vec<RandomPlan> = serde_json::from_value(json!([
            {"machine": "m.stm", "pool": ["A", "B", ["C", {"x": 1}], "+5s"]}
        ]))
        .expect("a plan");
        let first = random_cases(&plans, 7, 5, 6);
        let again = random_cases(&plans, 7, 5, 6);
        let other = random_cases(&plans, 8, 5, 6);
        let text = |cs: &[Case]| cs.iter().map(case_json).collect::<Vec<_>>().join("\n");
        assert_eq!(text(&first), text(&again));
        assert_ne!(text(&first), text(&other));
        assert_eq!(first.len(), 5);
        assert!(first.iter().all(|c| (1..=6).contains(&c.steps.len())));
    }

    #[test]
    fn a_step_with_data_becomes_kind_colon_json() {
        let step: Step = serde_json::from_value(json!(["Pay", {"n": 1}])).expect("a step");
        assert_eq!(step.arg(), r#"Pay:{"n":1}"#);
        let step: Step = serde_json::from_value(json!("+30s")).expect("a step");
        assert_eq!(step.arg(), "+30s");
    }
}
