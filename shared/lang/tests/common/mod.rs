//! Test helpers shared by the test binaries: harel's Python and its support scripts, and
//! the .stm files and snippets to compare.
// each test binary uses a different subset of these helpers
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// harel's Python: `HAREL_PYTHON`, else the workspace's `.venv` (scripts/python-env.sh).
pub(crate) fn python() -> PathBuf {
    if let Ok(p) = std::env::var("HAREL_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    assert!(
        venv.exists(),
        "harel's Python is needed: run scripts/python-env.sh or set HAREL_PYTHON"
    );
    venv
}

/// The `.stm` files under `tests/<dir>` (sorted).
pub(crate) fn stm_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "stm"))
        .collect();
    files.sort();
    files
}

pub(crate) fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `.stm` files of each directory (relative to the crate), directory by directory.
pub(crate) fn stm_files_in(dirs: &[&str]) -> Vec<PathBuf> {
    dirs.iter()
        .flat_map(|dir| stm_files(&manifest_dir().join(dir)))
        .collect()
}

/// Every machine of the `.stm` files of `dirs`, loaded as harel's `definition_from_dsl`
/// would: `f(file, machine name, definition)`.
pub(crate) fn for_each_machine(
    dirs: &[&str],
    mut f: impl FnMut(&Path, &str, harel_model::Definition),
) {
    for file in stm_files_in(dirs) {
        let program = harel_lang::parse_file(&file).unwrap_or_else(|e| panic!("{e}"));
        for name in program.machines.keys() {
            let defn = harel_lang::loader::load_file_with(&file, Some(name), &Default::default())
                .unwrap_or_else(|e| panic!("{e}"))
                .definition;
            f(&file, name, defn);
        }
    }
}

/// Runs `tests/support/<script>` with harel's Python; its stdout. A failing script fails
/// the test with its stderr, since harel's traceback is the diagnosis.
pub(crate) fn run_harel_script(script: &str, args: &[&OsStr]) -> String {
    let out = Command::new(python())
        .arg(manifest_dir().join("tests/support").join(script))
        .args(args)
        .output()
        .expect("run harel's python");
    assert!(
        out.status.success(),
        "harel's {script} failed on {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The support scripts print one JSON value a line.
pub(crate) fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("harel's JSON"))
        .collect()
}

/// The snippet file: `HAREL_SNIPPETS` (e.g. mutated ones from `support/mutate_snippets.py`
/// or random ones from `support/random_machines.py`), else `tests/snippets.txt`. One snippet
/// a line, `⏎` for a newline.
pub(crate) fn snippets_file() -> PathBuf {
    std::env::var_os("HAREL_SNIPPETS")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("tests/snippets.txt"))
}

/// Each snippet line (still `⏎`-encoded) with harel's verdict on it, as `script` prints one
/// JSON line per snippet.
pub(crate) fn harel_on_snippets(script: &str) -> Vec<(String, Value)> {
    let snippets = snippets_file();
    let theirs = json_lines(&run_harel_script(script, &[snippets.as_os_str()]));
    let text = std::fs::read_to_string(&snippets).expect("snippets");
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert_eq!(lines.len(), theirs.len());
    lines.into_iter().zip(theirs).collect()
}

/// Lark's earley lexer matches a keyword glued to the name that follows it (`stateA {}`
/// is `state A {}`); our keywords end at a word boundary, so such a file is refused with a
/// located error instead of read in a way its author likely did not mean.
pub(crate) const KNOWN_DEVIATIONS: [&str; 2] = [
    "machine M { initial A stateA {} }",
    "machine M { initial A state A {} fromA to A }",
];
