//! The two sides of a generated case, kept warm: one long-lived harel Python
//! (`run_harel.py --serve`, each machine parsed once) and our `harel run --json --children`
//! run per case with a time limit. Both print the root execution then its children by id.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::differential::{normalize, Case, HarnessError, RunOutput};
use crate::textdiff::line_diff;

/// How long one run of our binary may take before it counts as hung (wall time, generous:
/// on a loaded machine a run may wait long for a core).
const RUST_LIMIT: Duration = Duration::from_secs(120);

/// harel Python answering one case a line.
pub(crate) struct PythonSide {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl PythonSide {
    /// Starts `runner` (`run_harel.py`) with `--serve` under `python`, its stderr passed
    /// through to the test's.
    pub(crate) fn start(python: &Path, runner: &Path) -> Result<PythonSide, HarnessError> {
        let mut child = Command::new(python)
            .arg(runner)
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|source| HarnessError::Spawn {
                what: format!("{} {} --serve", python.display(), runner.display()),
                source,
            })?;
        let stdin = child.stdin.take().expect("stdin was piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout was piped"));
        Ok(PythonSide {
            child,
            stdin,
            stdout,
        })
    }

    /// Sends one case; its answer is read by `receive` (so our side can run meanwhile).
    pub(crate) fn send(&mut self, case: &Case, machines: &Path) -> Result<(), HarnessError> {
        let mut args = case.python_args(machines);
        args.push("--children".into());
        let line = serde_json::to_string(&args).expect("arguments serialize");
        writeln!(self.stdin, "{line}")
            .and_then(|_| self.stdin.flush())
            .map_err(|e| self.died(e.to_string()))
    }

    /// The answer to the case last sent: one line of JSON, read as the side's output. A
    /// [`HarnessError::Tool`] when the process closed its output or printed something else.
    pub(crate) fn receive(&mut self) -> Result<RunOutput, HarnessError> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Err(self.died("it closed its output".into())),
            Ok(_) => serde_json::from_str(&line)
                .map_err(|e| self.died(format!("unreadable answer: {e}"))),
            Err(e) => Err(self.died(e.to_string())),
        }
    }

    fn died(&self, detail: String) -> HarnessError {
        HarnessError::Tool {
            what: "run_harel.py --serve".into(),
            detail,
        }
    }
}

impl Drop for PythonSide {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Our `harel run --json --children`, cut off after `RUST_LIMIT` (code -2).
pub fn run_ours(harel: &Path, case: &Case, machines: &Path) -> Result<RunOutput, HarnessError> {
    let spawn_err = |source| HarnessError::Spawn {
        what: harel.display().to_string(),
        source,
    };
    let dir = std::env::temp_dir();
    // the case's name and machine file: unique among the runs in flight
    let stem = format!(
        "harel-gen-{}-{}-{}",
        std::process::id(),
        case.name,
        case.machine.replace(['/', '.'], "_")
    );
    let (out_path, err_path) = (
        dir.join(format!("{stem}.out")),
        dir.join(format!("{stem}.err")),
    );
    // files rather than pipes: a child that prints a lot never blocks while we poll it
    let mut child = Command::new(harel)
        .args(["run", "--json", "--children"])
        .args(case.args(machines))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).map_err(spawn_err)?)
        .stderr(std::fs::File::create(&err_path).map_err(spawn_err)?)
        .spawn()
        .map_err(spawn_err)?;
    let started = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().map_err(spawn_err)? {
            break status.code().unwrap_or(-1);
        }
        if started.elapsed() > RUST_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break -2;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let out = RunOutput {
        code,
        stdout: read(&out_path),
        stderr: read(&err_path),
    };
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    Ok(out)
}

/// The root and its children, ids and clocks normalized, as pretty JSON.
pub fn normalized_family(out: &RunOutput) -> Result<String, String> {
    let docs: Vec<Value> = serde_json::from_str(&out.stdout)
        .map_err(|e| format!("not a JSON list ({e}):\n{}", out.stdout))?;
    let root_id = docs
        .first()
        .and_then(|d| d.get("id"))
        .and_then(Value::as_str)
        .ok_or("no root execution")?
        .to_string();
    let text = serde_json::to_string(&docs)
        .expect("a JSON value prints")
        .replace(&root_id, "<exe>");
    let docs: Vec<Value> = serde_json::from_str(&text).expect("it was JSON a moment ago");
    let docs: Vec<Value> = docs.iter().map(normalize).collect();
    Ok(serde_json::to_string_pretty(&docs).expect("a JSON value prints"))
}

/// How a generated case came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Both ran, and their root and children are the same once normalized.
    Same,
    /// Both sides refused the machine or its input (the generator strayed outside what
    /// harel accepts): counted, not a divergence.
    BothRefused,
    /// harel Python crashed (code 3) or hung (code 4): a harel bug the generator must learn
    /// to avoid.
    HarelBroke(i32),
    /// A divergence: one side ran and the other refused, both ran to different executions,
    /// or ours crashed or hung.
    Differ(Signature),
}

/// What kind of divergence it is; a shrunk case must keep it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// harel Python's exit code.
    pub(crate) python_code: i32,
    /// Our `harel run`'s exit code (-2: cut off as hung).
    pub(crate) rust_code: i32,
}

/// The outcome of one case from both sides' outputs, with a text that shows it (empty when
/// they agree).
pub(crate) fn judge(python: &RunOutput, rust: &RunOutput) -> (Outcome, String) {
    let sig = Signature {
        python_code: python.code,
        rust_code: rust.code,
    };
    let show = |side: &str, out: &RunOutput| {
        format!(
            "{side} exited {}\n--- stdout\n{}\n--- stderr\n{}",
            out.code,
            out.stdout.trim_end(),
            out.stderr.trim_end()
        )
    };
    match python.code {
        3 | 4 => (
            Outcome::HarelBroke(python.code),
            show("harel Python", python),
        ),
        0 if rust.code == 0 => match (normalized_family(python), normalized_family(rust)) {
            (Ok(a), Ok(b)) if a == b => (Outcome::Same, String::new()),
            (Ok(a), Ok(b)) => (
                Outcome::Differ(sig),
                format!(
                    "executions differ (- harel Python, + ours):\n{}",
                    line_diff(&a, &b, 3)
                ),
            ),
            (Err(e), _) => (Outcome::Differ(sig), format!("harel Python: {e}")),
            (_, Err(e)) => (Outcome::Differ(sig), format!("ours: {e}")),
        },
        0 => (Outcome::Differ(sig), show("harel run", rust)),
        _ if rust.code != 0 && rust.code > 0 => (
            Outcome::BothRefused,
            format!(
                "{}\n{}",
                show("harel Python", python),
                show("harel run", rust)
            ),
        ),
        _ => (
            Outcome::Differ(sig),
            format!(
                "{}\n{}",
                show("harel Python", python),
                show("harel run", rust)
            ),
        ),
    }
}
