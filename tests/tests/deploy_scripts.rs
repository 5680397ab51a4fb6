//! The build and the deploy agree on the architecture (scripts/sam-arch.py, used by
//! scripts/sam-build.sh and scripts/deploy.sh): samconfig's environments each name one, a
//! build whose Rust target is missing is refused instead of falling back to the other
//! architecture, a binary for the other architecture is refused before it is deployed, and an
//! `--parameter-overrides` cannot switch the deployed architecture. Nothing is compiled or
//! deployed: the checks run before (or, for the binaries, on files written here).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("harel-deploy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn arch(args: &[&str]) -> Output {
    Command::new("python3")
        .arg(root().join("scripts/sam-arch.py"))
        .args(args)
        .output()
        .expect("python3 runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn samconfig_environments_build_and_deploy_one_architecture() {
    let default = arch(&["config"]);
    assert!(default.status.success(), "{}", text(&default));
    assert_eq!(String::from_utf8_lossy(&default.stdout).trim(), "arm64");
    let x86 = arch(&["config", "--config-env", "x86"]);
    assert!(x86.status.success(), "{}", text(&x86));
    assert_eq!(String::from_utf8_lossy(&x86.stdout).trim(), "x86_64");
    let unknown = arch(&["config", "--config-env", "nope"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        text(&unknown).contains("no [nope] environment"),
        "{}",
        text(&unknown)
    );
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn a_samconfig_whose_build_and_deploy_disagree_is_refused() {
    let dir = scratch("mismatch");
    let samconfig = dir.join("samconfig.toml");
    std::fs::write(
        &samconfig,
        r#"version = 0.1
[default.build.parameters]
parameter_overrides = "Architecture=\"x86_64\""
[default.deploy.parameters]
parameter_overrides = "TablePrefix=\"t\" Architecture=\"arm64\""
[quiet.deploy.parameters]
parameter_overrides = "LogLevel=\"info\""
"#,
    )
    .expect("write");
    let path = samconfig.to_str().expect("utf-8");
    let out = arch(&["config", "--samconfig", path]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("builds for x86_64 but deploys Architecture=arm64"),
        "{}",
        text(&out)
    );
    // neither says: the template's default, arm64, for both
    let quiet = arch(&["config", "--samconfig", path, "--config-env", "quiet"]);
    assert!(quiet.status.success(), "{}", text(&quiet));
    assert_eq!(String::from_utf8_lossy(&quiet.stdout).trim(), "arm64");
    let _ = std::fs::remove_dir_all(dir);
}

/// A minimal ELF header for `machine` (62 x86-64, 183 aarch64).
fn elf(machine: u16) -> Vec<u8> {
    let mut head = vec![0u8; 64];
    head[..4].copy_from_slice(b"\x7fELF");
    head[4] = 2; // 64-bit
    head[5] = 1; // little-endian
    head[18..20].copy_from_slice(&machine.to_le_bytes());
    head
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn binaries_for_the_other_architecture_are_refused() {
    let dir = scratch("elf");
    for function in ["Worker", "Relay"] {
        std::fs::create_dir_all(dir.join(function)).expect("mkdir");
        std::fs::write(dir.join(function).join("bootstrap"), elf(62)).expect("write");
    }
    let d = dir.to_str().expect("utf-8");
    let ok = arch(&["binaries", "x86_64", d]);
    assert!(ok.status.success(), "{}", text(&ok));
    let wrong = arch(&["binaries", "arm64", d]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        text(&wrong).contains("is built for x86_64, the stack deploys arm64"),
        "{}",
        text(&wrong)
    );
    std::fs::write(dir.join("Relay/bootstrap"), elf(183)).expect("write");
    let mixed = arch(&["binaries", "x86_64", d]);
    assert!(
        text(&mixed).contains("Relay/bootstrap is built for arm64"),
        "{}",
        text(&mixed)
    );
    std::fs::write(dir.join("Relay/bootstrap"), b"#!/bin/sh\n").expect("write");
    assert!(text(&arch(&["binaries", "x86_64", d])).contains("not an ELF"));
    let empty = scratch("elf-empty");
    let none = arch(&["binaries", "x86_64", empty.to_str().expect("utf-8")]);
    assert!(text(&none).contains("nothing was built"), "{}", text(&none));
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_dir_all(empty);
}

/// sam-build.sh with a `rustup` that has only the x86_64 target and cannot download another:
/// for the default environment (arm64) it tries to add the aarch64 target, then refuses with
/// what to do, before any tool is installed or anything compiled.
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn the_build_installs_a_missing_target_and_refuses_when_it_cannot() {
    let dir = scratch("rustup");
    let rustup = dir.join("rustup");
    let log = dir.join("rustup.log");
    std::fs::write(
        &rustup,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\ncase \"$1 $2\" in\n  'target list') echo x86_64-unknown-linux-gnu ;;\n  'target add') echo \"error: could not download rust-std for $3\" >&2; exit 1 ;;\nesac\n",
            log.display()
        ),
    )
    .expect("write");
    Command::new("chmod")
        .arg("+x")
        .arg(&rustup)
        .status()
        .expect("chmod");
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg(root().join("scripts/sam-build.sh"))
        .env("PATH", &path)
        .output()
        .expect("bash runs");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("installing the Rust target aarch64-unknown-linux-gnu"),
        "{said}"
    );
    assert!(
        said.contains("could not download rust-std for aarch64-unknown-linux-gnu"),
        "rustup's own reason is shown: {said}"
    );
    assert!(
        said.contains(
            "deploys arm64, but the Rust target aarch64-unknown-linux-gnu cannot be installed"
        ),
        "{said}"
    );
    let calls = std::fs::read_to_string(&log).expect("rustup was called");
    assert!(
        calls.contains("target add aarch64-unknown-linux-gnu"),
        "{calls}"
    );
    assert!(
        said.contains("rustup target add aarch64-unknown-linux-gnu"),
        "{said}"
    );
    assert!(said.contains("--config-env x86"), "{said}");
    assert!(!said.contains("building for"), "{said}");
    let _ = std::fs::remove_dir_all(dir);
}

fn deploy_dry_run(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(root().join("scripts/deploy.sh"))
        .args(args)
        .env("DEPLOY_DRY_RUN", "1")
        .output()
        .expect("bash runs")
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn deploy_keeps_the_built_architecture_in_parameter_overrides() {
    let out = deploy_dry_run(&[
        "--config-env",
        "x86",
        "--stack-name",
        "harel-dev",
        "--parameter-overrides",
        "AlarmTopicArn=arn:aws:sns:eu-west-1:123456789012:ops",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("sam-build.sh --config-env x86"), "{said}");
    assert!(
        said.contains("sam deploy --config-env x86 --stack-name harel-dev --parameter-overrides AlarmTopicArn=arn:aws:sns:eu-west-1:123456789012:ops Architecture=x86_64"),
        "{said}"
    );
    let refused = deploy_dry_run(&["--parameter-overrides=Architecture=x86_64"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("asks Architecture=x86_64, samconfig's [default] builds arm64"),
        "{}",
        text(&refused)
    );
    let same = deploy_dry_run(&["--parameter-overrides", "Architecture=arm64 LogLevel=debug"]);
    assert!(same.status.success(), "{}", text(&same));
}
