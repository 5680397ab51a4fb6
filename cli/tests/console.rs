//! `harel console` over plain HTTP (no browser): the embedded demo (`--store memory`) drawn,
//! driven, acted on and migrated; bad input answered with a 404 page, a "nothing to do" or a
//! reason; and, on a moto stack (`scripts/with-moto.sh cargo test -p harel-cli --test
//! console`), a malformed dead letter that a redrive leaves where it is, saying why.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};

use harel_runtime::Driver;
use harel_store::prelude::*;
use harel_testkit::{pump, send, MotoStack};
use reqwest::StatusCode;

/// The console's process, killed when the test ends however it ends.
struct Console {
    child: Child,
    base: String,
    http: reqwest::Client,
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn harel() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harel"));
    cmd.env_remove("HAREL_STACK")
        .env_remove("HAREL_MACHINES")
        .env_remove("HAREL_TABLE_PREFIX")
        .env_remove("HAREL_QUEUE_URL")
        .env_remove("HAREL_DLQ_URL");
    cmd
}

/// `harel console --port 0 ARGS`, once it says where it listens.
fn start(args: &[&str]) -> Console {
    let mut child = harel()
        .args(["console", "--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("harel console starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("its stdout"))
        .read_line(&mut first)
        .expect("its first line");
    let Some(base) = first
        .trim()
        .strip_prefix("harel console on ")
        .map(|u| u.trim_end_matches('/').to_string())
    else {
        let mut err = String::new();
        let _ = child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut err);
        panic!("the console did not start: {first}{err}");
    };
    Console {
        child,
        base,
        http: reqwest::Client::new(),
    }
}

impl Console {
    async fn get(&self, path: &str) -> (StatusCode, String) {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("the console answers");
        (r.status(), r.text().await.expect("a body"))
    }

    /// A form post (redirects followed, as a browser does).
    async fn post(&self, path: &str, form: &[(&str, &str)]) -> (StatusCode, String) {
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .expect("the console answers");
        (r.status(), r.text().await.expect("a body"))
    }
}

/// The `data-path` of every state the page draws active, sorted.
fn active(html: &str) -> Vec<String> {
    let mut out: Vec<String> = html
        .split("<g class=\"")
        .skip(1)
        .filter(|g| g.split('"').next().unwrap_or("").contains("active"))
        .filter_map(|g| g.split("data-path=\"").nth(1)?.split('"').next())
        .map(str::to_string)
        .collect();
    out.sort();
    out
}

fn status_badge(html: &str) -> String {
    html.split("<dd id=\"status\"><span class=\"badge ")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_default()
        .to_string()
}

fn demo(extra: &[&str]) -> Console {
    let mut args = vec!["--store", "memory", "--machines", "../examples"];
    args.extend_from_slice(extra);
    start(&args)
}

#[tokio::test]
async fn the_demo_draws_its_seeded_executions_runs_events_and_acts() {
    let c = demo(&[
        "--run",
        "Order --id ord-1",
        "--run",
        r#"Order --id ord-2 --context '{"items": 2}' -e PlaceOrder"#,
        "--run",
        "Fulfilment --id ful-1 -e Picked",
    ]);
    let (code, home) = c.get("/").await;
    assert_eq!(code, StatusCode::OK);
    for id in ["ord-1", "ord-2", "ful-1"] {
        assert!(
            home.contains(&format!(">{id}</code>")),
            "{id} listed: {home}"
        );
    }
    assert!(home.contains("embedded demo"));

    let (_, page) = c.get("/executions/ord-1").await;
    assert_eq!(active(&page), ["Cart"]);
    // the regions' states are drawn active on the parent's chart
    let (_, page) = c.get("/executions/ful-1").await;
    assert_eq!(
        active(&page),
        [
            "Preparing",
            "Preparing.Payment",
            "Preparing.Payment.Capturing",
            "Preparing.Warehouse",
            "Preparing.Warehouse.Packing"
        ]
    );
    // the seed's events ran, and the trace (on in the demo) shows them
    let (_, page) = c.get("/executions/ord-2").await;
    assert_eq!(active(&page), ["Checkout", "Checkout.AwaitingPayment"]);
    assert!(
        page.contains(
            "<b>PlaceOrder</b> <code>Cart</code> → <code>Checkout.AwaitingPayment</code>"
        ),
        "{page}"
    );
    assert!(
        page.contains("<code>Checkout</code>"),
        "the armed timeout: {page}"
    );

    // an event sent from the page moves the highlight
    let (code, page) = c
        .post("/executions/ord-1/send", &[("event", "PlaceOrder")])
        .await;
    assert_eq!(code, StatusCode::OK, "{page}");
    assert!(
        page.contains("PlaceOrder: ord-1 is RUNNING at Checkout.AwaitingPayment"),
        "{page}"
    );
    assert_eq!(active(&page), ["Checkout", "Checkout.AwaitingPayment"]);
    let (code, page) = c
        .post(
            "/executions/ord-1/send",
            &[("event", "Shipped:{\"carrier\": 7}")],
        )
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "the declaration refuses it");
    assert!(page.contains("carrier"), "{page}");

    // an action is confirmed first: the confirmation changes nothing
    let (_, confirm) = c
        .post("/executions/ord-1/action", &[("action", "suspend")])
        .await;
    assert!(confirm.contains("suspend ord-1?"), "{confirm}");
    let (_, page) = c.get("/executions/ord-1").await;
    assert_eq!(status_badge(&page), "running");
    let (_, page) = c
        .post(
            "/executions/ord-1/action",
            &[("action", "suspend"), ("confirm", "yes")],
        )
        .await;
    assert!(
        page.contains("suspend ord-1: RUNNING → SUSPENDED"),
        "{page}"
    );
    assert_eq!(status_badge(&page), "suspended");
    // a cooperative cancel runs the machine's own way out at once in the demo
    let (_, page) = c
        .post(
            "/executions/ord-2/action",
            &[("action", "cancel"), ("confirm", "yes")],
        )
        .await;
    assert!(page.contains("cancel ord-2"), "{page}");
}

const V1: &str = r#"
event Go {}
event Finish {}
machine M {
  initial A
  state A {}
  state B {}
  final Done success
  from A to B on Go
  from B to Done on Finish
}
"#;

/// V1 with B renamed: an execution at B needs a map to move.
const V2: &str = r#"
event Go {}
event Finish {}
machine M {
  initial A
  state A {}
  state Review {}
  final Done success
  from A to Review on Go
  from Review to Done on Finish
}
"#;

fn stack_args(moto: &MotoStack) -> Vec<String> {
    [
        "--table-prefix",
        &moto.prefix,
        "--queue-url",
        &moto.queue,
        "--dlq-url",
        &moto.dlq,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_migration_is_a_dry_run_first_and_takes_a_path_map() {
    let moto = MotoStack::new("conmig").await;
    let v1 = harel_lang::load_str(V1, None, "m.stm").expect("V1");
    let v1_version = harel_runtime::versions::version_of_definition(&v1).expect("a version");
    let worker = moto.worker(
        Driver::new(vec![v1], harel_runtime::ActionRegistry::with_stdlib()),
        &[],
    );
    let source = moto.source();
    send(
        &source,
        "m-1",
        harel_sqs::create_body("M", Default::default(), Some("m-1")),
    )
    .await;
    send(&source, "m-1", harel_model::Event::new("Go").to_json()).await;
    pump(&source, &worker).await;

    // the console is given V2: what the next deploy runs
    let dir = std::env::temp_dir().join(format!("harel-console-v2-{}", moto.prefix));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    std::fs::write(dir.join("m.stm"), V2).expect("V2 written");
    let v2 = harel_lang::load_str(V2, None, "m.stm").expect("V2");
    let v2_version = harel_runtime::versions::version_of_definition(&v2).expect("a version");
    let mut args = stack_args(&moto);
    args.extend(["--machines".to_string(), dir.display().to_string()]);
    let c = start(&args.iter().map(String::as_str).collect::<Vec<_>>());

    let (_, page) = c.get("/executions/m-1").await;
    assert!(
        page.contains(&format!("<dd class=\"mono\">{v1_version}</dd>")),
        "{page}"
    );
    assert_eq!(active(&page), ["B"], "drawn from the kept V1");
    assert!(
        page.contains(&format!("<input name=\"to\" value=\"{v2_version}\"")),
        "V2 offered: {page}"
    );

    // without a map B has no counterpart: refused, saying which, nothing written
    let (code, refused) = c
        .post(
            "/executions/m-1/migrate",
            &[("to", &v2_version), ("map", "")],
        )
        .await;
    assert_eq!(code, StatusCode::OK);
    assert!(refused.contains("refused"), "{refused}");
    assert!(
        refused.contains("active state &quot;B&quot; has no counterpart"),
        "{refused}"
    );
    assert!(refused.contains("Nothing was changed"), "{refused}");
    assert!(!refused.contains("id=\"confirm\""), "nothing to confirm");

    // with the map: the dry run says what moves, and writes nothing
    let (_, dry) = c
        .post(
            "/executions/m-1/migrate",
            &[("to", &v2_version), ("map", "B=Review\n")],
        )
        .await;
    assert!(
        dry.contains(&format!(
            "would move from {v1_version} to {v2_version} (active <code>B → Review</code>)"
        )),
        "{dry}"
    );
    assert!(dry.contains("id=\"confirm\""), "{dry}");
    let store = moto.store();
    let exe = store.load("m-1").await.expect("load").expect("there");
    assert_eq!(exe.pinned_version(), Some(v1_version.as_str()));

    let (code, bad) = c
        .post(
            "/executions/m-1/migrate",
            &[("to", &v2_version), ("map", "no equals sign")],
        )
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert!(bad.contains("expected OLD=NEW"), "{bad}");
    let (code, none) = c
        .post("/executions/m-1/migrate", &[("to", "0000000000000000")])
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert!(
        none.contains("neither kept in the store nor among the machines"),
        "{none}"
    );

    // confirmed: moved, V2 kept first, the page draws it there
    let (_, done) = c
        .post(
            "/executions/m-1/migrate",
            &[("to", &v2_version), ("map", "B=Review"), ("confirm", "yes")],
        )
        .await;
    assert!(
        done.contains(&format!("migrate m-1: moved to version {v2_version}")),
        "{done}"
    );
    assert_eq!(active(&done), ["Review"]);
    let exe = store.load("m-1").await.expect("load").expect("there");
    assert_eq!(exe.pinned_version(), Some(v2_version.as_str()));
    assert_eq!(exe.active_path.as_deref(), Some("Review"));
    let (_, machines) = c.get("/machines").await;
    for v in [&v1_version, &v2_version] {
        assert!(
            machines.contains(&format!("/machines/M?version={v}")),
            "{machines}"
        );
    }
    let (code, drawn) = c.get(&format!("/machines/M?version={v1_version}")).await;
    assert_eq!(code, StatusCode::OK);
    assert!(drawn.contains("data-path=\"B\""), "V1 drawn");
    // the version filter reads each listed execution's pin: the list and a bulk action agree
    let (_, on_v2) = c.get(&format!("/?version={v2_version}")).await;
    assert!(on_v2.contains(">m-1</code>"), "{on_v2}");
    let (_, on_v1) = c.get(&format!("/?version={v1_version}")).await;
    assert!(!on_v1.contains(">m-1</code>"), "{on_v1}");
    let (_, dry) = c
        .post(
            "/bulk",
            &[
                ("action", "suspend"),
                ("scope", "filter"),
                ("filter_version", &v1_version),
            ],
        )
        .await;
    assert!(dry.contains("nothing to do, nothing done"), "{dry}");
    let (_, dry) = c
        .post(
            "/bulk",
            &[
                ("action", "suspend"),
                ("scope", "filter"),
                ("filter_version", &v2_version),
            ],
        )
        .await;
    assert!(dry.contains("Dry run: suspend 1 execution"), "{dry}");
    let (_, check) = c.get("/deploy-check").await;
    assert!(
        check.contains(&format!("version {v2_version}: the one DIR ships")),
        "{check}"
    );
    assert!(check.contains("Nothing blocks this deploy."), "{check}");

    // an event sent from the page goes through the queue; the worker runs it on V2
    let (_, sent) = c.post("/executions/m-1/send", &[("event", "Finish")]).await;
    assert!(sent.contains("sent Finish to m-1"), "{sent}");
    pump(&source, &worker).await;
    let exe = store.load("m-1").await.expect("load").expect("there");
    assert_eq!(exe.status, harel_model::Status::Done);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn bad_input_is_a_404_page_or_nothing_done_and_said() {
    let c = demo(&["--run", "Order --id ord-1"]);
    for path in [
        "/executions/no-such-one",
        "/executions/no-such-one/live",
        "/machines/NoSuchMachine",
        "/machines/Order?version=0123456789abcdef",
        "/no/such/page",
    ] {
        let (code, page) = c.get(path).await;
        assert_eq!(code, StatusCode::NOT_FOUND, "{path}: {page}");
        assert!(page.contains("<h1>Not found</h1>"), "{path}: {page}");
    }
    let (_, page) = c.get("/executions/no-such-one").await;
    assert!(
        page.contains("No execution &quot;no-such-one&quot;"),
        "{page}"
    );
    let (code, _) = c
        .post(
            "/executions/no-such-one/action",
            &[("action", "suspend"), ("confirm", "yes")],
        )
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND);

    // a bulk action on a filter that matches nothing does nothing and says so
    let (code, page) = c
        .post(
            "/bulk",
            &[
                ("action", "suspend"),
                ("scope", "filter"),
                ("filter_machine", "NoSuchMachine"),
                ("confirm", "yes"),
            ],
        )
        .await;
    assert_eq!(code, StatusCode::OK);
    assert!(
        page.contains(
            "No execution matches the filter: machine NoSuchMachine: nothing to do, nothing done."
        ),
        "{page}"
    );
    let (_, page) = c
        .post("/bulk", &[("action", "suspend"), ("scope", "selection")])
        .await;
    assert!(
        page.contains("No execution is selected: nothing to do, nothing done."),
        "{page}"
    );
    let (_, page) = c.get("/executions/ord-1").await;
    assert_eq!(status_badge(&page), "running", "nothing was suspended");
    let (code, _) = c
        .post("/bulk", &[("action", "explode"), ("ids", "ord-1")])
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    let (code, page) = c.get("/?status=SLEEPING").await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert!(page.contains("not a status"), "{page}");

    // a bulk dry run says how many and which
    let (_, dry) = c
        .post(
            "/bulk",
            &[
                ("action", "suspend"),
                ("scope", "filter"),
                ("filter_machine", "Order"),
            ],
        )
        .await;
    assert!(dry.contains("Dry run: suspend 1 execution"), "{dry}");
    assert!(dry.contains(">ord-1</code>"), "{dry}");

    // the demo has no queue: its dead-letter page says so
    let (code, page) = c.get("/dead-letters").await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
    assert!(page.contains("no queue, so no dead letters"), "{page}");
}

#[tokio::test]
async fn the_example_seed_starts_the_demo_it_documents() {
    let c = demo(&["--seed", "../examples/console.seed"]);
    let (_, home) = c.get("/").await;
    for id in [
        "ord-abandoned",
        "ord-cart",
        "ord-paying",
        "ord-retrying",
        "ord-shipped",
        "ord-delivered",
        "ord-cancelled",
        "ful-picking",
        "ful-packing",
        "approval-1",
        "approval-2",
    ] {
        assert!(
            home.contains(&format!(">{id}</code>")),
            "{id} listed: {home}"
        );
    }
    // +16m ran the abandoned order's checkout timeout, and only its
    let (_, page) = c.get("/executions/ord-abandoned").await;
    assert!(page.contains("outcome <b>abandoned</b>"), "{page}");
    let (_, page) = c.get("/executions/ord-paying").await;
    assert_eq!(active(&page), ["Checkout", "Checkout.AwaitingPayment"]);
    let (_, page) = c.get("/executions/approval-2").await;
    assert_eq!(active(&page), ["Review", "Review.Director"]);
}

#[test]
fn a_bad_seed_stops_the_start_and_names_the_line() {
    let out = harel()
        .args([
            "console",
            "--port",
            "0",
            "--store",
            "memory",
            "--machines",
            "../examples",
        ])
        .args(["--run", "Order --id a", "--run", "Nope --id b"])
        .output()
        .expect("harel runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("seed --run #2: Nope --id b"), "{err}");
    assert!(err.contains("Nope"), "{err}");

    let out = harel()
        .args([
            "console",
            "--port",
            "0",
            "--store",
            "memory",
            "--machines",
            "../examples",
        ])
        .args(["--run", "Order -e 'Pay:[1]'"])
        .output()
        .expect("harel runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("must be a JSON object"), "{err}");

    let out = harel()
        .args(["console", "--port", "0", "--run", "Order"])
        .output()
        .expect("harel runs");
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--store memory"));
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_malformed_dead_letter_stays_and_the_console_says_why() {
    let moto = MotoStack::new("conhttp").await;
    let worker = moto.worker(
        Driver::new(
            harel_app::machines::definitions().expect("app machines"),
            harel_app::actions::actions(),
        ),
        &[],
    );
    let source = moto.source();
    send(&source, "bad-1", "{oops".to_string()).await;
    pump(&source, &worker).await;

    let args = stack_args(&moto);
    let c = start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let (code, list) = c.get("/dead-letters").await;
    assert_eq!(code, StatusCode::OK, "{list}");
    let id = list
        .split("href=\"/dead-letters/")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("one dead letter listed")
        .to_string();
    assert!(list.contains("(unreadable)"), "{list}");
    let (_, one) = c.get(&format!("/dead-letters/{id}")).await;
    assert!(one.contains("<pre>{oops</pre>"), "its body as it is: {one}");
    assert!(one.contains("not JSON"), "its reason: {one}");

    for dry_run in ["yes", ""] {
        let (code, page) = c
            .post(
                "/dead-letters/redrive",
                &[("ids", &id), ("dry_run", dry_run)],
            )
            .await;
        assert_eq!(code, StatusCode::OK);
        assert!(
            page.contains(&format!("{id} (bad-1): stays: malformed: body is not JSON")),
            "{page}"
        );
        assert!(
            !page.contains("id=\"confirm\""),
            "nothing to confirm: {page}"
        );
    }
    let (_, list) = c.get("/dead-letters").await;
    assert!(list.contains(&id), "still there: {list}");
    let (code, _) = c.get("/dead-letters/no-such-message").await;
    assert_eq!(code, StatusCode::NOT_FOUND);

    // and on the stack too, an unknown execution is a 404 page and an empty filter does nothing
    let (code, _) = c.get("/executions/no-such-one").await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    let (_, page) = c
        .post(
            "/bulk",
            &[
                ("action", "terminate"),
                ("scope", "filter"),
                ("filter_status", "RUNNING"),
            ],
        )
        .await;
    assert!(page.contains("nothing to do, nothing done"), "{page}");
    let store = moto.store();
    assert!(store.load("bad-1").await.expect("load").is_none());
}
