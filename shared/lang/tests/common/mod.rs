//! Test helpers shared by the test binaries: harel's Python, and the .stm files to compare.
// each test binary uses a different subset of these helpers
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// harel's Python: `HAREL_PYTHON`, else the workspace's `.venv` (scripts/python-env.sh).
pub fn python() -> PathBuf {
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
pub fn stm_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "stm"))
        .collect();
    files.sort();
    files
}

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Lark's earley lexer matches a keyword glued to the name that follows it (`stateA {}`
/// is `state A {}`); our keywords end at a word boundary, so such a file is refused with a
/// located error instead of read in a way its author likely did not mean.
pub const KNOWN_DEVIATIONS: [&str; 2] = [
    "machine M { initial A stateA {} }",
    "machine M { initial A state A {} fromA to A }",
];
