//! Machines and actions that come with the deployment, not compiled in: a machine from
//! `HAREL_DEFINITIONS_DIR` (with its import) whose actions are remote functions served by
//! harel Python's own `handler(fn)` (harel-testkit's loopback server), bound by the
//! `actions.json` in that folder, driven to its end through the functions' own wiring
//! (`boot_with`: the DynamoDB store, SQS FIFO and the idempotency table, on moto:
//! `scripts/with-moto.sh cargo test -p harel-app --test deployed`). And what stops a
//! function at cold start: an action bound nowhere, a file that does not parse.

use std::path::{Path, PathBuf};

use harel_app::aws::{boot_with, driver_with, BootError};
use harel_lambda::Role;
use harel_model::{Event, Status};
use harel_sqs::create_body;
use harel_store::prelude::*;
use harel_testkit::{pump, send, ActionServer, MotoStack};
use serde_json::{json, Value};

/// A fresh copy of `tests/deployed` (invoice.stm, lib/events.stm) plus `files`.
fn machines_dir(tag: &str, files: &[(&str, String)]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/deployed");
    let dir = std::env::temp_dir().join(format!(
        "harel-deployed-{tag}-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(dir.join("lib")).expect("dir");
    for f in ["invoice.stm", "lib/events.stm"] {
        std::fs::copy(src.join(f), dir.join(f)).expect("copy");
    }
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("write");
    }
    dir
}

fn actions_json(server: &ActionServer) -> String {
    json!({
        "billing": {
            "route": server.http("route"),
            "charge": {"target": server.http("charge"), "timeout": 5},
        }
    })
    .to_string()
}

/// [`driver_with`] without AWS, from a test that has no runtime of its own.
fn driver_now(
    dir: Option<&Path>,
    file: Option<&Path>,
) -> Result<(harel_app::aws::AppDriver, Option<harel_remote::Clients>), BootError> {
    tokio::runtime::Runtime::new()
        .expect("a runtime")
        .block_on(driver_with(dir, file, None, true))
}

/// Why the functions would not start with `dir`'s machines and map.
fn boot_error(dir: Option<&PathBuf>) -> BootError {
    match driver_now(dir.map(PathBuf::as_path), None) {
        Ok(_) => panic!("the functions booted"),
        Err(e) => e,
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
async fn a_machine_from_the_definitions_dir_runs_to_its_end_with_remote_actions() {
    let server = ActionServer::start();
    let dir = machines_dir("run", &[("actions.json", actions_json(&server))]);
    let moto = MotoStack::new("dep").await;
    moto.create_idempotency_table(&aws_sdk_dynamodb::Client::new(&moto.sdk))
        .await;
    let dir_text = dir.display().to_string();
    let config = moto.config(&[("HAREL_DEFINITIONS_DIR", dir_text.as_str())]);
    let booted = boot_with(Role::Worker, config, &moto.sdk)
        .await
        .expect("the functions boot with the folder's machine and actions");
    let remote = booted.remote.clone().expect("the action map was read");
    let worker = booted.into_worker();
    let source = moto.source();

    let (paid, rejected) = ("inv-1", "inv-2");
    for id in [paid, rejected] {
        send(
            &source,
            id,
            create_body("Invoice", Default::default(), Some(id)),
        )
        .await;
    }
    let pay = |amount: i64| {
        let mut ev = Event::new("Pay").with_data(
            json!({"amount": amount})
                .as_object()
                .cloned()
                .expect("object"),
        );
        ev.id = format!("pay-{amount}").into();
        ev
    };
    send(&source, paid, pay(40).to_json()).await;
    send(&source, rejected, pay(400).to_json()).await;
    pump(&source, &worker).await;

    let store = moto.store();
    let charging = store.load(paid).await.expect("load").expect("exists");
    assert_eq!(charging.active_path.as_deref(), Some("Charging"));
    // the remote function's context: the charge, its inputs, the step's idempotency key
    assert_eq!(charging.context["charged"], json!(40));
    assert_eq!(charging.context["currency"], json!("SEK"));
    assert_eq!(
        charging.context["charge_key"],
        json!(format!("{paid}:pay-40:1:billing.charge"))
    );
    let no = store.load(rejected).await.expect("load").expect("exists");
    assert_eq!(no.status, Status::Done);
    assert_eq!(no.outcome.as_deref(), Some("rejected"));
    assert_eq!(no.context["charged"], json!(0), "nothing charged");

    send(&source, paid, Event::new("Settle").to_json()).await;
    pump(&source, &worker).await;
    let done = store.load(paid).await.expect("load").expect("exists");
    assert_eq!(done.status, Status::Done);
    assert_eq!(done.outcome.as_deref(), Some("success"));
    assert_eq!(done.active_path.as_deref(), Some("Paid"));

    // the calls were counted per action: two routes, one charge, no errors
    let stats = remote.take_stats();
    assert_eq!(stats["billing.route"].calls, 2);
    assert_eq!(stats["billing.charge"].calls, 1);
    assert_eq!(stats["billing.charge"].errors, 0);
    // and the compiled-in machines still run beside it
    send(
        &source,
        "order-1",
        create_body("Order", Default::default(), Some("order-1")),
    )
    .await;
    pump(&source, &worker).await;
    let order = store.load("order-1").await.expect("load").expect("exists");
    assert_eq!(order.active_path.as_deref(), Some("Cart"));
    std::fs::remove_dir_all(&dir).ok();
}

/// An action the folder's machine names that the map does not bind stops the function at
/// cold start, naming the machine and the action.
#[test]
fn an_action_bound_nowhere_stops_the_cold_start() {
    let only_route = json!({"billing.route": "http://127.0.0.1:9/route"}).to_string();
    let dir = machines_dir("unbound", &[("actions.json", only_route)]);
    let err = boot_error(Some(&dir));
    assert!(matches!(err, BootError::Unbound(_)), "{err}");
    assert_eq!(
        err.to_string(),
        "actions named by the machines but bound nowhere (no Rust action, no entry in the action map): Invoice: billing.charge"
    );
    // no map at all: both
    let bare = machines_dir("bare", &[]);
    let err = boot_error(Some(&bare));
    assert!(
        err.to_string()
            .ends_with("Invoice: billing.charge, Invoice: billing.route"),
        "{err}"
    );
    // HAREL_ACTIONS_FILE wins over the folder's map
    let full: Value =
        json!({"billing.route": "http://127.0.0.1:9/r", "billing.charge": "http://127.0.0.1:9/c"});
    let file = bare.join("elsewhere.json");
    std::fs::write(&file, full.to_string()).expect("write");
    let (driver, remote) = driver_now(Some(&dir), Some(&file)).expect("boots");
    assert!(remote.is_some());
    assert!(driver.machine_ids().any(|m| m == "Invoice"));
    assert!(
        driver.machine_ids().any(|m| m == "ShopOrder"),
        "compiled in"
    );
    for d in [dir, bare] {
        std::fs::remove_dir_all(d).ok();
    }
}

/// (tag, the folder's extra files as (name, text), what the error must say)
type Case = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
);

/// A folder machine that does not parse, or breaks harel's rules, stops the cold start with
/// the located error; so does a map that names no valid target, two maps, or a machine that
/// has a compiled-in machine's name.
#[test]
fn a_broken_machine_or_map_stops_the_cold_start() {
    let cases: [Case; 5] = [
        (
            "broken",
            &[("bad.stm", "machine Bad {\n  initial A\n  state A {\n}\n")],
            &["bad.stm:", ":4:"],
        ),
        (
            "invalid",
            &[(
                "bad.stm",
                "event Go {}\nmachine Bad {\n  initial A\n  state A {}\n  state B {}\n  from A to C on Go\n}\n",
            )],
            &["bad.stm"],
        ),
        (
            "map",
            &[("actions.yaml", "billing.route: ftp://x\n")],
            &["actions.yaml: action \"billing.route\": \"ftp://x\": expected lambda:NAME-or-ARN"],
        ),
        (
            "twice",
            &[("actions.yaml", "a: http://h/a\n"), ("actions.json", "{}")],
            &["more than one action map"],
        ),
        (
            "dup",
            &[("order.stm", "machine Order {\n  initial A\n  final A ok\n}\n")],
            &["machine Order of"],
        ),
    ];
    for (tag, files, expected) in cases {
        let files: Vec<(&str, String)> = files.iter().map(|(n, t)| (*n, t.to_string())).collect();
        let dir = machines_dir(tag, &files);
        let shown = boot_error(Some(&dir)).to_string();
        for part in expected {
            assert!(shown.contains(part), "{tag}: {part:?} not in {shown}");
        }
        std::fs::remove_dir_all(dir).ok();
    }
}

/// A header value from SSM that cannot be read stops the worker's and relay's cold start,
/// naming the action and the reference; the sweeper (which runs no action and has no grant
/// to read it) boots without reading it. On moto.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn an_unreadable_header_parameter_stops_the_cold_start_but_not_the_sweepers() {
    let sdk = harel_testkit::sdk_config().await;
    let missing = format!("/{}/token", harel_testkit::unique_prefix("deployed"));
    let map = json!({
        "billing.route": "http://127.0.0.1:9/r",
        "billing.charge": {"target": "http://127.0.0.1:9/c",
                           "headers": {"Authorization": format!("ssm:{missing}")}},
    });
    let dir = machines_dir("ssm", &[("actions.json", map.to_string())]);
    let err = match driver_with(Some(&dir), None, Some(&sdk), true).await {
        Ok(_) => panic!("the worker booted without its header value"),
        Err(e) => e.to_string(),
    };
    assert_eq!(
        err,
        format!("remote actions: action \"billing.charge\": header \"Authorization\": cannot read ssm:{missing}: no such parameter")
    );
    let (driver, _) = driver_with(Some(&dir), None, Some(&sdk), false)
        .await
        .expect("the sweeper boots");
    assert!(driver.machine_ids().any(|m| m == "Invoice"));
    std::fs::remove_dir_all(dir).ok();
}
