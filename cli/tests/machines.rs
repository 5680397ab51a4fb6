//! Where the operator commands read the machines the functions run: `--machines` files and
//! directories, else `HAREL_MACHINES`, never compiled in. Each case fails on the machine
//! before any stack is reached, so no emulator is needed (operate.rs has the ones that send).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The sample shop's machines, a directory as the functions' `HAREL_DEFINITIONS_DIR` is.
const APP_MACHINES: &str = "../functions/app/machines";
const ALL_APP: &str = "Approval, Fulfilment, Order, ShopOrder";

/// `harel ARGS` with `HAREL_MACHINES` as given (and none from the caller), against a table
/// prefix and queue that are never reached.
fn harel(args: &[&str], env: Option<&std::ffi::OsStr>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harel"));
    cmd.args(args)
        .args([
            "--table-prefix",
            "never",
            "--queue-url",
            "http://127.0.0.1:9/q",
        ])
        .env_remove("HAREL_MACHINES")
        .env_remove("HAREL_STACK");
    if let Some(list) = env {
        cmd.env("HAREL_MACHINES", list);
    }
    cmd.output().expect("harel runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("harel-cli-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

#[test]
fn a_directory_given_to_machines_loads_all_its_machines() {
    let out = harel(&["create", "Nope", "--machines", APP_MACHINES], None);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains(&format!(
            "unknown machine \"Nope\": the functions run {ALL_APP} (per --machines)"
        )),
        "{said}"
    );

    // repeated: a file after the directory adds its machines (a subdirectory is not read)
    let dir = scratch();
    std::fs::create_dir_all(dir.join("lib")).expect("subdir");
    write(
        &dir.join("lib"),
        "deep.stm",
        "machine Deep { initial A  final A done }\n",
    );
    let extra = write(
        &dir,
        "extra.stm",
        "machine Extra { initial A  final A done }\n",
    );
    let out = harel(
        &[
            "create",
            "Nope",
            "--machines",
            APP_MACHINES,
            "--machines",
            extra.to_str().expect("utf-8"),
            "--machines",
            dir.to_str().expect("utf-8"),
        ],
        None,
    );
    let said = stderr(&out);
    assert!(
        said.contains("the functions run Approval, Extra, Fulfilment, Order, ShopOrder (per"),
        "{said}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn harel_machines_is_read_when_no_machines_option_is_given() {
    let dir = scratch();
    let extra = write(
        &dir,
        "extra.stm",
        "machine Extra { initial A  final A done }\n",
    );
    let list = std::env::join_paths([Path::new(APP_MACHINES), &extra]).expect("a path list");
    let out = harel(&["create", "Nope"], Some(&list));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains(
            "the functions run Approval, Extra, Fulfilment, Order, ShopOrder (per HAREL_MACHINES)"
        ),
        "{said}"
    );
    // --machines, when given, is all there is
    let out = harel(
        &[
            "create",
            "Nope",
            "--machines",
            extra.to_str().expect("utf-8"),
        ],
        Some(&list),
    );
    assert!(
        stderr(&out).contains("the functions run Extra (per --machines)"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_broken_machine_file_says_where_and_a_missing_path_is_a_usage_error() {
    let dir = scratch();
    write(
        &dir,
        "a_good.stm",
        "machine Good { initial A  final A done }\n",
    );
    let bad = write(
        &dir,
        "b_bad.stm",
        "machine Bad {\n  initial A\n  state A {} }\n  from A to A on\n}\n",
    );
    let out = harel(
        &["create", "Good", "--machines", dir.to_str().expect("utf-8")],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stderr(&out);
    let at = format!("error: {}:", bad.display());
    assert!(said.starts_with(&at), "file:line:col first: {said}");
    let line_col = said[at.len()..].split(':').take(2).collect::<Vec<_>>();
    assert!(
        line_col.len() == 2 && line_col.iter().all(|n| n.parse::<u32>().is_ok()),
        "{said}"
    );
    assert!(
        said.lines().any(|l| l.trim() == "^"),
        "a caret line: {said}"
    );

    let gone = dir.join("gone");
    let out = harel(
        &[
            "create",
            "Good",
            "--machines",
            gone.to_str().expect("utf-8"),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("--machines {}:", gone.display())),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_help_says_where_machines_come_from() {
    let out = Command::new(env!("CARGO_BIN_EXE_harel"))
        .args(["create", "--help"])
        .output()
        .expect("harel runs");
    let help = String::from_utf8_lossy(&out.stdout);
    for said in [
        "--machines <PATH>",
        "directory",
        "HAREL_MACHINES",
        "replaces",
    ] {
        assert!(help.contains(said), "{said:?} not in:\n{help}");
    }
}
