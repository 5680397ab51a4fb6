//! `harel_lang::fmt` over every `.stm` of the repository: idempotent, the program kept,
//! a messy layout brought back to the canonical one, comments where their author put
//! them, and (with harel's Python) the same text as harel's own formatter.

use std::path::{Path, PathBuf};

use harel_lang::fmt::{format, format_text, without_positions};

mod common;
use common::{json_lines, run_harel_script};

/// Every `.stm` under the workspace root, outside build output and virtualenvs.
fn repository_stm_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("dir entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    walk(&path, out);
                }
            } else if name.ends_with(".stm") {
                out.push(path);
            }
        }
    }
    let root = common::manifest_dir().join("../..");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    assert!(
        files.len() > 50,
        "expected the repository's .stm files, found {}",
        files.len()
    );
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The same file laid out badly: indentation gone or tabbed, trailing blanks, each
/// blank line tripled, blank lines at both ends. The formatter must undo all of it.
fn mangle(text: &str) -> String {
    let mut out = String::from("\n\n");
    for (i, line) in text.lines().enumerate() {
        let body = line.trim_start();
        if body.is_empty() {
            out.push_str("   \n\t\n\n");
            continue;
        }
        let indent = if i % 2 == 0 { "" } else { "\t    " };
        out.push_str(&format!("{indent}{body} \t\n"));
    }
    out.push_str("\n\n");
    out
}

#[test]
fn every_repository_file_round_trips() {
    for file in repository_stm_files() {
        let text = read(&file);
        let origin = file.display().to_string();
        let Ok(before) = harel_lang::parse(&text, &origin) else {
            // the error fixtures that do not parse are refused, not rewritten
            assert!(
                format(&text, &origin).is_err(),
                "{origin}: formatted a file that does not parse"
            );
            continue;
        };
        let once = format(&text, &origin).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(format_text(&once), once, "{origin}: not idempotent");
        let after = harel_lang::parse(&once, &origin).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            without_positions(before.clone()),
            without_positions(after),
            "{origin}: formatting changed the program"
        );

        let messy = mangle(&text);
        let from_messy = format(&messy, &origin).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            from_messy, once,
            "{origin}: a messy layout does not come back"
        );
    }
}

#[test]
fn the_repository_is_formatted() {
    // the project's own files are the canonical layout (CI can run `harel fmt --check`)
    let unformatted: Vec<String> = repository_stm_files()
        .into_iter()
        .filter(|f| {
            let text = read(f);
            format_text(&text) != text
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        unformatted.is_empty(),
        "not in the canonical layout: {unformatted:?}"
    );
}

#[test]
fn comments_stay_where_they_were_written() {
    let src = "\
# order workflow
  # second header line
machine Order {   # trailing on an opener
initial Idle
    # before a state, at its depth
state Idle {
on enter log  // a slash comment
# last line of a block
}
        # between states
state Done {}   # trailing after a one-line block
# before the closing brace
}
# after everything
";
    let want = "\
# order workflow
# second header line
machine Order {   # trailing on an opener
  initial Idle
  # before a state, at its depth
  state Idle {
    on enter log  // a slash comment
    # last line of a block
  }
  # between states
  state Done {}   # trailing after a one-line block
  # before the closing brace
}
# after everything
";
    let out = format(src, "comments.stm").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out, want);
    assert_eq!(format_text(&out), out);
}

#[test]
fn a_file_that_does_not_parse_is_refused_with_a_located_error() {
    let err =
        format("machine M {\n  initial A\n  state A {\n}\n", "broken.stm").expect_err("refused");
    let shown = err.to_string();
    assert!(shown.starts_with("broken.stm:"), "{shown}");
    assert!(shown.contains('^'), "no caret: {shown}");
}

/// Each repository file as it is and mangled, in a scratch directory, for harel's script.
fn scratch_inputs() -> Vec<(PathBuf, String)> {
    let dir = std::env::temp_dir().join(format!("harel-fmt-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let mut inputs = Vec::new();
    for (i, file) in repository_stm_files().into_iter().enumerate() {
        let text = read(&file);
        for (kind, body) in [("as_is", text.clone()), ("mangled", mangle(&text))] {
            let path = dir.join(format!("{i:03}_{kind}.stm"));
            std::fs::write(&path, &body).expect("write scratch file");
            inputs.push((path, body));
        }
    }
    inputs
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn same_output_as_harels_formatter() {
    let inputs = scratch_inputs();
    let args: Vec<&std::ffi::OsStr> = inputs.iter().map(|(p, _)| p.as_os_str()).collect();
    let theirs = json_lines(&run_harel_script("fmt_dump.py", &args));
    assert_eq!(theirs.len(), inputs.len());
    for ((path, body), harel) in inputs.iter().zip(theirs) {
        let harel = harel.as_str().expect("harel prints a string");
        assert_eq!(
            format_text(body),
            harel,
            "{}: ours differs from harel's",
            path.display()
        );
    }
    if let Some((first, _)) = inputs.first() {
        let _ = std::fs::remove_dir_all(first.parent().expect("scratch dir"));
    }
}
