//! Machine versions from the operator's side, on the moto server
//! (`scripts/with-moto.sh cargo test -p harel-cli --test versions`): `harel show` prints an
//! execution's version, `harel list --version` filters by it, `harel deploy-check` reports
//! what a deploy does to the live executions, `harel migrate` moves them (refused without a
//! needed map, nothing changed).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use harel_model::{Event, Execution, Object};
use harel_runtime::versions::version_of_definition;
use harel_runtime::{ActionRegistry, Driver};
use harel_sqs::create_body;
use harel_store::prelude::*;
use harel_testkit::Deployed;

const V1: &str = r#"
event Go {}
event Hold {}
event Finish {}
machine M {
  initial A
  state A {}
  state B {}
  state Park { timeout 60 }
  final Done success
  from A to B on Go
  from A to Park on Hold
  from B to Done on Finish
  from Park to Done on Timeout
}
"#;

const V2: &str = r#"
event Go {}
event Hold {}
event Finish {}
machine M {
  initial A
  state A {}
  state Review {}
  state Parked { timeout 60 }
  final Done success
  from A to Review on Go
  from A to Parked on Hold
  from Review to Done on Finish
  from Parked to Done on Timeout
}
"#;

fn dir_with(tag: &str, prefix: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("harel-cli-versions-{prefix}-{tag}"));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    std::fs::write(dir.join("m.stm"), text).expect("the machine");
    dir
}

fn version(dir: &Path) -> String {
    let defn = harel_lang::load_file(&dir.join("m.stm"), Some("M")).expect("M");
    version_of_definition(&defn).expect("a version")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The stack (the one fixture) with a worker on v1, and the operator's side of it: the built
/// `harel` binary against its tables.
async fn deploy(v1: &Path) -> Deployed {
    let defn = harel_lang::load_file(&v1.join("m.stm"), Some("M")).expect("M");
    Deployed::start(
        "cv",
        Driver::new(vec![defn], ActionRegistry::with_stdlib()),
        &[],
    )
    .await
}

trait Operator {
    async fn start(&self, id: &str, kind: &str);
    fn harel(&self, args: &[&str]) -> Output;
    fn ok(&self, args: &[&str]) -> String;
}

impl Operator for Deployed {
    /// Create `id` and send it `kind`, then let the worker run.
    async fn start(&self, id: &str, kind: &str) {
        self.send(id, create_body("M", Object::new(), Some(id)))
            .await;
        self.send(id, Event::new(kind).to_json()).await;
        self.pump().await;
    }

    fn harel(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_harel"))
            .args(args)
            .args(["--table-prefix", self.prefix()])
            .env_remove("HAREL_TABLE_PREFIX")
            .env_remove("HAREL_QUEUE_URL")
            .env_remove("HAREL_STACK")
            .env_remove("HAREL_DEFINITIONS_DIR")
            .output()
            .expect("harel runs")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.harel(args);
        assert!(
            out.status.success(),
            "harel {args:?} failed: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }
}

fn has(haystack: &str, needle: &str) {
    assert!(haystack.contains(needle), "{needle:?} not in:\n{haystack}");
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn show_list_deploy_check_and_migrate() {
    let tag = harel_testkit::unique_prefix("cv");
    let v1_dir = dir_with("v1", &tag, V1);
    let v2_dir = dir_with("v2", &tag, V2);
    let (v1, v2) = (version(&v1_dir), version(&v2_dir));
    let v2_dir_s = v2_dir.display().to_string();
    let stack = deploy(&v1_dir).await;
    stack.start("a", "Go").await;
    stack.start("p", "Hold").await;

    has(
        &stack.ok(&["show", "a"]),
        &format!("definition version {v1}"),
    );
    let listed = stack.ok(&["list", "--version", &v1]);
    has(&listed, "a ");
    has(&listed, "p ");
    has(
        &stack.ok(&["list", "--version", &v2]),
        "no executions match",
    );

    // v1 is kept in the store: the deploy of v2 strands nothing; both need a map to move
    let check = stack.ok(&["deploy-check", &v2_dir_s]);
    has(
        &check,
        &format!("M                        version {v2} (new)"),
    );
    has(
        &check,
        &format!("M version {v1}: stays pinned (kept in the store)"),
    );
    has(
        &check,
        "live 2; without a map could move to the new version: 0; need a map: 2",
    );
    has(
        &check,
        "active state \"B\" has no counterpart in the target version (1)",
    );
    has(
        &check,
        "timer \"Park\" has no counterpart in the target version (1)",
    );

    // without the map: refused, nothing changed
    let before = stack.load("p").await;
    let out = stack.harel(&["migrate", "p", "--to", &v2, "--machines", &v2_dir_s]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    has(&text(&out.stdout), "p: refused, nothing changed:");
    has(&text(&out.stdout), "active state \"Park\"");
    assert_eq!(stack.load("p").await.to_json(), before.to_json());

    let dry = stack.ok(&[
        "migrate",
        "p",
        "--to",
        &v2,
        "--machines",
        &v2_dir_s,
        "--map",
        "Park=Parked",
        "--dry-run",
    ]);
    has(
        &dry,
        &format!("p: would move from {v1} to {v2} (active Park -> Parked)"),
    );
    assert_eq!(stack.load("p").await.to_json(), before.to_json());

    let moved = stack.ok(&[
        "migrate",
        "--machine",
        "M",
        "--to",
        &v2,
        "--machines",
        &v2_dir_s,
        "--map",
        "Park=Parked",
        "--map",
        "B=Review",
    ]);
    has(&moved, "timer Park -> Parked");
    has(&moved, "(active B -> Review)");
    for id in ["a", "p"] {
        assert_eq!(stack.load(id).await.pinned_version(), Some(v2.as_str()));
    }
    assert!(stack
        .reader
        .get_definition(&v2)
        .await
        .expect("read")
        .is_some());
    has(
        &stack.ok(&["show", "p"]),
        &format!("definition version {v2}"),
    );

    // executions on two versions: a worker still shipping v1 starts one more on v1
    stack.start("c", "Go").await;
    assert_eq!(stack.load("c").await.pinned_version(), Some(v1.as_str()));
    let check = stack.ok(&["deploy-check", &v2_dir_s]);
    println!("harel deploy-check with executions on two versions:\n{check}");
    has(
        &check,
        &format!("M version {v1}: stays pinned (kept in the store)\n  live 1; without a map could move to the new version: 0; need a map: 1"),
    );
    has(
        &check,
        &format!("M version {v2}: the one DIR ships\n  live 2;"),
    );
    has(
        &check,
        "active state \"B\" has no counterpart in the target version (1)",
    );

    // an execution pinned to a version nobody keeps: the deploy would strand it
    let mut lost = Execution::new("M").with_id("lost");
    lost.pin_version("00000000deadbeef");
    lost.active_path = Some("A".into());
    lost.status = harel_model::Status::Running;
    stack.reader.save(&mut lost).await.expect("saved");
    let out = stack.harel(&["deploy-check", &v2_dir_s]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stdout));
    has(&text(&out.stderr), "removes its last copy");
}
