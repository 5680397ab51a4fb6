//! `harel fmt` as a user (or CI) runs it: in place, `--check`, `--diff`, and a file that
//! does not parse.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn harel(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harel"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run harel")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("harel-fmt-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

const MESSY: &str = "machine M {\ninitial A   \n\n\n      state A {\non enter f  # why\n}\n}\n";
const TIDY: &str = "machine M {\n  initial A\n\n  state A {\n    on enter f  # why\n  }\n}\n";
const BROKEN: &str = "machine M {\n  initial A\n  state A {\n}\n";

#[test]
fn formats_in_place_and_then_has_nothing_to_do() {
    let dir = scratch();
    std::fs::write(dir.join("m.stm"), MESSY).expect("write");
    let first = harel(&["fmt", "m.stm"], &dir);
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert_eq!(text(&first.stdout), "formatted m.stm\n");
    assert_eq!(
        std::fs::read_to_string(dir.join("m.stm")).expect("read"),
        TIDY
    );

    let second = harel(&["fmt", "m.stm"], &dir);
    assert!(second.status.success());
    assert_eq!(text(&second.stdout), "");
}

#[test]
fn check_exits_2_naming_the_files_that_differ_and_writes_nothing() {
    let dir = scratch();
    std::fs::write(dir.join("messy.stm"), MESSY).expect("write");
    std::fs::write(dir.join("tidy.stm"), TIDY).expect("write");
    let out = harel(&["fmt", "--check", "tidy.stm", "messy.stm"], &dir);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr), "would reformat: messy.stm\n");
    assert_eq!(
        std::fs::read_to_string(dir.join("messy.stm")).expect("read"),
        MESSY
    );

    let ok = harel(&["fmt", "--check", "tidy.stm"], &dir);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    assert_eq!(text(&ok.stderr), "");
}

#[test]
fn diff_prints_a_unified_diff_and_writes_nothing() {
    let dir = scratch();
    std::fs::write(dir.join("m.stm"), MESSY).expect("write");
    let out = harel(&["fmt", "--diff", "m.stm"], &dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let diff = text(&out.stdout);
    assert!(
        diff.starts_with("--- m.stm (original)\n+++ m.stm (formatted)\n@@ -1,"),
        "{diff}"
    );
    for line in [
        "-initial A   ",
        "+  initial A",
        "-      state A {",
        "+  state A {",
        "-on enter f  # why",
        "+    on enter f  # why",
    ] {
        assert!(
            diff.contains(&format!("\n{line}\n")),
            "no `{line}` in:\n{diff}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("m.stm")).expect("read"),
        MESSY
    );
}

#[test]
fn a_file_that_does_not_parse_is_a_located_error_and_left_alone() {
    let dir = scratch();
    std::fs::write(dir.join("broken.stm"), BROKEN).expect("write");
    std::fs::write(dir.join("m.stm"), MESSY).expect("write");
    let out = harel(&["fmt", "broken.stm", "m.stm"], &dir);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    // the parser's located error: file:line:col, the line, a caret under the column
    assert!(
        err.starts_with("broken.stm:4:2: unexpected end of input"),
        "{err}"
    );
    assert!(err.contains("\n    }\n     ^\n"), "no caret: {err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("broken.stm")).expect("read"),
        BROKEN
    );
    // the other files are still formatted
    assert_eq!(text(&out.stdout), "formatted m.stm\n");
    assert_eq!(
        std::fs::read_to_string(dir.join("m.stm")).expect("read"),
        TIDY
    );

    let check = harel(&["fmt", "--check", "broken.stm"], &dir);
    assert_eq!(check.status.code(), Some(1));
}

#[test]
fn a_missing_file_is_named() {
    let dir = scratch();
    let out = harel(&["fmt", "nope.stm"], &dir);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("nope.stm: "),
        "{}",
        text(&out.stderr)
    );
}
