//! The README's crate table is the workspace's dependency graph: each crate with the harel
//! crates it depends on (normal dependencies, as `cargo tree -e normal --workspace --depth 1`
//! shows them). A dependency added or removed without the README saying so fails here.
//!
//! And the crates are layered: every harel dependency, normal, dev or build, points to a
//! strictly lower layer (`LAYERS`), so a crate's tests and benchmarks never build a crate
//! above it.

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

/// The workspace's layers, lowest first: a crate may depend (normally, for its tests, or for
/// its build) only on crates of a lower layer. The ranks follow what each crate is for:
/// - the vocabulary and what needs no harel crate at all (the test wire harness among them,
///   so that any crate's tests may use it);
/// - what reads or stores that vocabulary: the language, the store and queue ports, the
///   idempotency layer;
/// - the engine (its tests read machines through the language) and the adapters and
///   services on the ports (DynamoDB, SQS, the schedules);
/// - the control plane (on the engine); then the host (`harel-runtime`, which runs control
///   commands);
/// - what runs on the host: remote actions and the Lambda adapter; then the hooks (which call
///   remote actions), then the HTTP API (which serves the hooks);
/// - the stack fixture the functions' tests share (`harel-testkit`: a worker on moto);
/// - the sample application; the deployable functions and the CLI;
/// - the integration tests and the benchmarks, which may drive anything.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "vocabulary",
        &[
            "harel-model",
            "harel-fuzzing",
            "harel-stack",
            "harel-testwire",
        ],
    ),
    (
        "language and ports",
        &[
            "harel-lang",
            "harel-store",
            "harel-queue",
            "harel-idempotency",
        ],
    ),
    (
        "engine and adapters",
        &[
            "harel-engine",
            "harel-dynamodb",
            "harel-sqs",
            "harel-schedule",
        ],
    ),
    ("control plane", &["harel-control"]),
    ("host", &["harel-runtime"]),
    ("on the host", &["harel-remote", "harel-lambda"]),
    ("hooks", &["harel-hooks"]),
    ("HTTP API", &["harel-api"]),
    ("stack fixture", &["harel-testkit"]),
    ("sample application", &["harel-app"]),
    (
        "functions and CLI",
        &[
            "harel-worker",
            "harel-relay",
            "harel-sweeper",
            "harel-charge",
            "harel-api-function",
            "harel-cli",
        ],
    ),
    ("the functions' one binary", &["harel-bootstrap"]),
    (
        "integration tests and benchmarks",
        &["harel-tests", "harel-benches"],
    ),
];

/// A crate's layer: (rank, name).
fn layer_of(krate: &str) -> Option<(usize, &'static str)> {
    LAYERS
        .iter()
        .enumerate()
        .find(|(_, (_, crates))| crates.contains(&krate))
        .map(|(rank, (name, _))| (rank, *name))
}

/// One harel dependency edge: (from, to, kind: "normal", "dev" or "build").
type Edge = (String, String, String);

fn metadata() -> Value {
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
    serde_json::from_slice(&out.stdout).expect("metadata JSON")
}

/// Every harel dependency edge of every workspace package, whatever its kind.
fn cargo_edges() -> Vec<Edge> {
    let metadata = metadata();
    let mut edges = Vec::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("name");
        for d in package["dependencies"].as_array().expect("dependencies") {
            let to = d["name"].as_str().expect("dependency name");
            if !to.starts_with("harel-") {
                continue;
            }
            let kind = d["kind"].as_str().unwrap_or("normal");
            edges.push((name.to_string(), to.to_string(), kind.to_string()));
        }
    }
    edges.sort();
    edges.dedup();
    edges
}

/// The edges that do not point to a strictly lower layer, each named. A crate may name
/// itself (`harel-store` dev-depends on itself to turn on its `contract` feature).
fn upward(edges: &[Edge]) -> Vec<String> {
    edges
        .iter()
        .filter(|(from, to, _)| from != to)
        .filter_map(|(from, to, kind)| {
            let (f, fl) = layer_of(from)?;
            let (t, tl) = layer_of(to)?;
            (t >= f).then(|| {
                format!("{from} ({fl}, layer {f}) -> {to} ({tl}, layer {t}) [{kind} dependency]")
            })
        })
        .collect()
}

/// Each workspace package with its normal dependencies on other harel crates.
fn cargo_graph() -> Graph {
    let metadata = metadata();
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

/// The crates a package is built with (its normal dependencies, transitively).
fn closure(graph: &Graph, package: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![package.to_string()];
    while let Some(p) = todo.pop() {
        for d in graph.get(&p).into_iter().flatten() {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

/// Test machines, test actions and harnesses are never compiled into a deployed function:
/// the tests' machine (`Flow`) lives in `harel-testkit`, which no function links.
#[test]
fn no_test_support_is_compiled_into_a_deployed_function() {
    let graph = cargo_graph();
    let functions: Vec<&String> = graph
        .keys()
        .filter(|p| graph[*p].contains("harel-app"))
        .filter(|p| !["harel-tests", "harel-benches"].contains(&p.as_str()))
        .collect();
    assert!(
        functions.len() >= 4,
        "the worker, relay, sweeper and API link the app: {functions:?}"
    );
    for f in functions {
        let linked = closure(&graph, f);
        let test_support: Vec<&str> = ["harel-testkit", "harel-testwire", "harel-fuzzing"]
            .into_iter()
            .filter(|t| linked.contains(*t))
            .collect();
        assert!(
            test_support.is_empty(),
            "{f} is built with {test_support:?}"
        );
    }
}

#[test]
fn every_crate_has_a_layer() {
    let metadata = metadata();
    let missing: Vec<&str> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .filter(|name| layer_of(name).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "crates with no layer in LAYERS (tests/tests/architecture.rs): {missing:?}"
    );
    let listed: Vec<&str> = LAYERS.iter().flat_map(|(_, c)| c.iter().copied()).collect();
    let unknown: Vec<&&str> = listed
        .iter()
        .filter(|c| {
            !metadata["packages"]
                .as_array()
                .expect("packages")
                .iter()
                .any(|p| p["name"].as_str() == Some(**c))
        })
        .collect();
    assert!(
        unknown.is_empty(),
        "LAYERS lists crates the workspace lacks: {unknown:?}"
    );
}

#[test]
fn dependencies_point_down_only_normal_dev_and_build_alike() {
    let edges = cargo_edges();
    assert!(
        edges.iter().any(|(_, _, kind)| kind == "dev"),
        "the metadata shows dev dependencies"
    );
    let up = upward(&edges);
    assert!(
        up.is_empty(),
        "{} dependencies point up or across (a crate may depend only on a lower layer):\n  {}",
        up.len(),
        up.join("\n  ")
    );
}

#[test]
fn the_layer_rule_names_an_upward_edge() {
    let edge = |from: &str, to: &str, kind: &str| (from.into(), to.into(), kind.into());
    let up = upward(&[
        edge("harel-dynamodb", "harel-lambda", "dev"),
        edge("harel-lambda", "harel-dynamodb", "normal"),
        edge("harel-store", "harel-store", "dev"),
        edge("harel-engine", "harel-lang", "dev"),
        edge("harel-sqs", "harel-dynamodb", "build"),
    ]);
    assert_eq!(
        up,
        [
            "harel-dynamodb (engine and adapters, layer 2) -> harel-lambda (on the host, layer 5) [dev dependency]",
            "harel-sqs (engine and adapters, layer 2) -> harel-dynamodb (engine and adapters, layer 2) [build dependency]",
        ]
    );
}
