//! The README's crate table is the workspace's dependency graph: each crate with the harel
//! crates it depends on (normal dependencies, as `cargo tree -e normal --workspace --depth 1`
//! shows them). A dependency added or removed without the README saying so fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Each workspace package with its normal dependencies on other harel crates.
fn cargo_graph() -> Graph {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let mut graph = Graph::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("name").to_string();
        let deps = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].is_null())
            .filter_map(|d| d["name"].as_str())
            .filter(|d| d.starts_with("harel-"))
            .map(str::to_string)
            .collect();
        graph.insert(name, deps);
    }
    graph
}

/// The README's table between its `crates:begin` and `crates:end` markers:
/// `| crate | depends on |`, the dependencies comma-separated (`-` for none).
fn readme_graph() -> Graph {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let start = readme
        .find("<!-- crates:begin -->")
        .expect("crates:begin marker");
    let end = readme
        .find("<!-- crates:end -->")
        .expect("crates:end marker");
    let mut graph = Graph::new();
    for line in readme[start..end].lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 || !cells[1].starts_with('`') {
            continue;
        }
        let name = cells[1].trim_matches('`').to_string();
        let deps = cells[2]
            .split(',')
            .map(|d| d.trim().trim_matches('`'))
            .filter(|d| !d.is_empty() && *d != "-")
            .map(|d| format!("harel-{d}"))
            .collect();
        graph.insert(name, deps);
    }
    graph
}

#[test]
fn the_readme_crate_table_is_the_dependency_graph() {
    let cargo = cargo_graph();
    let readme = readme_graph();
    for (name, deps) in &cargo {
        let documented = readme
            .get(name)
            .unwrap_or_else(|| panic!("README's crate table lacks {name}"));
        assert_eq!(
            documented, deps,
            "{name}'s dependencies: README vs Cargo.toml"
        );
    }
    let extra: Vec<_> = readme.keys().filter(|k| !cargo.contains_key(*k)).collect();
    assert!(
        extra.is_empty(),
        "README lists crates the workspace lacks: {extra:?}"
    );
}

#[test]
fn the_lambda_adapter_and_the_cli_do_not_depend_on_each_other() {
    let graph = cargo_graph();
    let cli = &graph["harel-cli"];
    assert!(
        !cli.contains("harel-lambda"),
        "the CLI links the Lambda adapter"
    );
    assert!(
        !cli.contains("harel-app"),
        "the CLI compiles in the sample application"
    );
    // the engine stays pure: no IO crate below it
    assert!(graph["harel-engine"].iter().all(|d| d == "harel-model"));
}
