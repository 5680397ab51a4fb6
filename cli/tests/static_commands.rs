//! The static commands (`validate`, `render`, `list`, `new`) run as a user runs them: the
//! binary on files, asserting stdout, stderr and the exit code.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn harel(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harel"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run harel")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("utf-8")
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("harel-cli-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write");
}

const REGIONS: &str = "event Go {}
machine Regions {
  initial Par
  orthogonal Par {
    state R1 { initial a  state a {}  state b {}  from a to b on Go }
    state R2 { initial c  state c {}  final d ok  from c to d on Go }
  }
  final End done
  from Par join any to End else to End
}
";

#[test]
fn validate_prints_ok_or_the_issues() {
    let dir = scratch();
    write(
        &dir,
        "good.stm",
        "event Go {}\nmachine Good { initial A  state A {}  final B ok  from A to B on Go }\n",
    );
    let out = harel(&["validate", "good.stm"], &dir);
    assert_eq!(stdout(&out), "Good: ok\n");
    assert_eq!(out.status.code(), Some(0));

    write(&dir, "regions.stm", REGIONS);
    let out = harel(&["validate", "regions.stm"], &dir);
    assert_eq!(
        stdout(&out),
        "[error] terminal_missing_outcome at Par.R1.b: terminal of the machine/region must declare an \
         `outcome` (e.g. success / failed) — the verdict the model routes on\n"
    );
    assert_eq!(out.status.code(), Some(1));

    // warnings alone do not fail
    write(&dir, "warn.stm", "event Go {}\nmachine W { initial A  state A {}  final B ok  state C {}  from A to B on Go }\n");
    let out = harel(&["validate", "warn.stm", "W"], &dir);
    assert_eq!(
        stdout(&out),
        "[warning] unreachable at C: state is not reachable from the root\n\
         [error] terminal_missing_outcome at C: terminal of the machine/region must declare an `outcome` \
         (e.g. success / failed) — the verdict the model routes on\n"
    );
    assert_eq!(out.status.code(), Some(1));
    write(&dir, "warn2.stm", "event Go {}\nmachine W { initial A  state A { timeout 5 }  final B ok  from A to B on Go }\n");
    let out = harel(&["validate", "warn2.stm"], &dir);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).starts_with("[warning] timeout_unhandled at A:"));
}

#[test]
fn a_broken_file_is_a_located_error_on_stderr() {
    let dir = scratch();
    write(
        &dir,
        "bad.stm",
        "machine M {\n  initial A\n  state A {}\n  from A -> A on Go\n}\n",
    );
    for cmd in ["validate", "render"] {
        let out = harel(&[cmd, "bad.stm"], &dir);
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(stdout(&out), "");
        assert_eq!(
            stderr(&out),
            "error: bad.stm:4:10: unexpected `->`\n      from A -> A on Go\n             ^\n\
             expected `to`, `choose`, `select` or `join`\n\
             hint: transitions read `from A to B` — there is no `->` arrow\n"
        );
    }
    let out = harel(&["validate", "missing.stm"], &dir);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("error: missing.stm: cannot read the file:"),
        "{}",
        stderr(&out)
    );

    write(
        &dir,
        "two.stm",
        "machine A { initial X  state X {} }\nmachine B { initial X  state X {} }\n",
    );
    let out = harel(&["render", "two.stm"], &dir);
    assert_eq!(
        stderr(&out),
        "error: two.stm: multiple machines (A, B); pass name=\n"
    );
}

#[test]
fn render_draws_plantuml_or_mermaid() {
    let dir = scratch();
    write(
        &dir,
        "m.stm",
        "event Go { n: int }\nmachine M { initial A  state A { on enter pkg.hello }  final B ok  from A to B on Go where n > 1 }\n",
    );
    let out = harel(&["render", "m.stm"], &dir);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        "state A: <b>on_enter</b>: <i>hello</i>\n[*] --> A\nA --> B: Go\\n[n > 1]\nB --> [*]\n"
    );
    let out = harel(&["render", "m.stm", "M", "--mermaid"], &dir);
    assert_eq!(
        stdout(&out),
        "stateDiagram-v2\n[*] --> A\nA : on enter#58; hello\nB : outcome#58; ok\nA --> B : Go<br/>[n > 1]\nB --> [*]\n"
    );
}

#[test]
fn list_names_what_the_file_declares() {
    let dir = scratch();
    write(&dir, "l.stm", "event A {}\nevent B {}\nmachine One { initial X  state X {} }\nmachine Two { initial X  state X {} }\n");
    let out = harel(&["list", "l.stm"], &dir);
    assert_eq!(
        stdout(&out),
        "machines:  One, Two\nfragments: —\nevents:    A, B\n"
    );
    write(&dir, "e.stm", "bind { a = b.c }\n");
    let out = harel(&["list", "e.stm"], &dir);
    assert_eq!(stdout(&out), "machines:  —\nfragments: —\nevents:    —\n");
}

#[test]
fn new_scaffolds_a_machine_that_validates() {
    let dir = scratch();
    let out = harel(&["new", "2nd-flow.stm"], &dir);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        "created 2nd-flow.stm  (machine m_2nd_flow)\nnext:\n  harel validate 2nd-flow.stm\n  \
         harel run      2nd-flow.stm -e Submit -e Approve\n"
    );
    let text = std::fs::read_to_string(dir.join("2nd-flow.stm")).expect("created");
    assert!(text
        .starts_with("# A starter harel machine. Next steps:\n#   harel validate 2nd-flow.stm\n"));
    assert!(text.contains("\nmachine m_2nd_flow {\n  initial Draft\n"));
    assert!(text.contains("event Submit {}\n"));
    let out = harel(&["validate", "2nd-flow.stm"], &dir);
    assert_eq!(stdout(&out), "m_2nd_flow: ok\n");

    let out = harel(&["new", "2nd-flow.stm", "Other"], &dir);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: 2nd-flow.stm already exists (use --force to overwrite)\n"
    );
    assert!(std::fs::read_to_string(dir.join("2nd-flow.stm"))
        .expect("kept")
        .contains("machine m_2nd_flow {"));

    let out = harel(&["new", "2nd-flow.stm", "Other", "--force"], &dir);
    assert_eq!(out.status.code(), Some(0));
    assert!(std::fs::read_to_string(dir.join("2nd-flow.stm"))
        .expect("rewritten")
        .contains("machine Other {"));
}

#[test]
fn completions_are_printed_for_each_shell() {
    let dir = scratch();
    let bash = harel(&["completions", "bash"], &dir);
    assert!(bash.status.success(), "{}", stderr(&bash));
    let script = stdout(&bash);
    assert!(script.contains("_harel()"), "{script}");
    for sub in ["create", "send", "monitor", "purge", "completions"] {
        assert!(script.contains(sub), "bash completion lacks {sub}");
    }
    assert!(script.contains("--stack"), "options are completed too");
    // the script is valid bash
    let path = dir.join("harel.bash");
    std::fs::write(&path, &script).expect("write");
    let check = Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .expect("bash");
    assert!(check.status.success(), "{}", stderr(&check));
    let zsh = harel(&["completions", "zsh"], &dir);
    assert!(
        stdout(&zsh).starts_with("#compdef harel"),
        "{}",
        stdout(&zsh)
    );
    let fish = harel(&["completions", "fish"], &dir);
    assert!(
        stdout(&fish).contains("complete -c harel"),
        "{}",
        stdout(&fish)
    );
    let bad = harel(&["completions", "tcsh"], &dir);
    assert_eq!(bad.status.code(), Some(2), "usage");
    assert!(stderr(&bad).contains("possible values"), "{}", stderr(&bad));
}

#[test]
fn help_documents_the_exit_codes_and_harel_stack() {
    let out = harel(&["--help"], &scratch());
    let help = stdout(&out);
    for said in [
        "2 usage",
        "3 not found",
        "4 refused",
        "5 AWS error",
        "HAREL_STACK",
    ] {
        assert!(help.contains(said), "{said:?} not in:\n{help}");
    }
    let out = harel(&["show", "--help"], &scratch());
    assert!(
        stdout(&out).contains("[env: HAREL_STACK="),
        "{}",
        stdout(&out)
    );
}
