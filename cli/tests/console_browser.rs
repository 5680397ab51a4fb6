//! `harel console` in a real browser: headless Chromium driven over WebDriver
//! (chromedriver; `scripts/browser.sh` installs both with apt-get when missing) against the
//! console on a moto stack whose executions the in-process worker runs
//! (`scripts/with-moto.sh cargo test -p harel-cli --test console_browser`).
//!
//! Screenshots land in `$CARGO_TARGET_TMPDIR/console-screenshots` (the test prints the path).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine;
use harel_model::{Object, Status};
use harel_runtime::Driver;
use harel_store::prelude::*;
use harel_testkit::{pump, send, MotoStack};
use serde_json::{json, Value};

/// Kills a child process when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port()
}

/// A WebDriver session on headless Chromium.
struct Browser {
    http: reqwest::Client,
    session: String,
    base: String,
    shots: PathBuf,
}

/// The W3C WebDriver web element reference key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut req = self.http.request(method, &url);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let answer: Value = req
            .send()
            .await
            .expect("chromedriver answers")
            .json()
            .await
            .expect("JSON");
        if answer["value"].get("error").is_some() {
            panic!("WebDriver {path}: {answer}");
        }
        answer["value"].clone()
    }

    async fn go(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
    }

    async fn run(&self, script: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    async fn click(&self, css: &str) {
        let el = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        let id = el[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {el}"))
            .to_string();
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            Some(json!({})),
        )
        .await;
    }

    async fn text(&self) -> String {
        self.run("return document.body.innerText")
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The page's text once it holds `needle` (a click's navigation may still be under way
    /// when WebDriver answers); panics with what the page says after 10 s.
    async fn wait_text(&self, needle: &str) -> String {
        let mut text = String::new();
        for _ in 0..100 {
            text = self.text().await;
            if text.contains(needle) {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{needle:?} never shown; the page says:\n{text}");
    }

    /// The active states once they are `want` (the page refreshes itself), or panics after
    /// 10 s with what it draws.
    async fn wait_active(&self, want: &[&str]) {
        let mut now = Vec::new();
        for _ in 0..100 {
            now = self.active().await;
            if now == want {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("active {now:?}, expected {want:?}");
    }

    /// The `data-path` of every state drawn active.
    async fn active(&self) -> Vec<String> {
        let v = self
            .run("return [...document.querySelectorAll('svg g.state.active')].map(g => g.getAttribute('data-path'))")
            .await;
        let mut paths: Vec<String> = v
            .as_array()
            .expect("an array")
            .iter()
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect();
        paths.sort();
        paths
    }

    async fn screenshot(&self, name: &str) {
        let png = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().expect("base64"))
            .expect("a PNG");
        std::fs::write(self.shots.join(name), bytes).expect("screenshot written");
    }
}

/// Headless Chromium started here (not by chromedriver, which would leave it running if the
/// test panicked), in a fresh profile: killed, and its profile removed, however the test
/// ends.
struct Chromium {
    browser: Child,
    profile: PathBuf,
    /// Its DevTools address, for chromedriver to attach to.
    debugger: String,
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = self.browser.kill();
        let _ = self.browser.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

async fn start_chromium(http: &reqwest::Client) -> Chromium {
    let profile = std::env::temp_dir().join(format!("harel-console-{}", uuid::Uuid::new_v4()));
    let port = free_port();
    let browser = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1440,1000",
            "--remote-debugging-address=127.0.0.1",
        ])
        .arg(format!("--remote-debugging-port={port}"))
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let chromium = Chromium {
        browser,
        profile,
        debugger: format!("127.0.0.1:{port}"),
    };
    for _ in 0..100 {
        let up = http
            .get(format!("http://{}/json/version", chromium.debugger))
            .send()
            .await;
        if up.is_ok_and(|r| r.status().is_success()) {
            return chromium;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chromium did not open its DevTools port");
}

async fn open_browser(driver_port: u16, chromium: &Chromium) -> Browser {
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{driver_port}");
    let mut answer = Value::Null;
    for _ in 0..50 {
        match http
            .post(format!("{base}/session"))
            .json(&json!({"capabilities": {"alwaysMatch": {"goog:chromeOptions": {"debuggerAddress": chromium.debugger}}}}))
            .send()
            .await
        {
            Ok(r) => {
                answer = r.json().await.expect("JSON");
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    let session = answer["value"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no WebDriver session: {answer}"))
        .to_string();
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots");
    std::fs::create_dir_all(&shots).expect("the screenshots folder");
    println!("screenshots: {}", shots.display());
    Browser {
        http,
        session,
        base,
        shots,
    }
}

fn harel_args(moto: &MotoStack) -> Vec<String> {
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

fn harel(moto: &MotoStack, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_harel"))
        .args(args)
        .args(harel_args(moto))
        .env_remove("HAREL_STACK")
        .output()
        .expect("harel runs");
    assert!(
        out.status.success(),
        "harel {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
#[ignore = "needs SAM, cargo lambda, Docker or Chromium: scripts/test.sh runs it"]
async fn the_console_in_chromium_shows_highlights_acts_and_redrives() {
    let chromedriver = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/browser.sh"
    ))
    .output()
    .expect("scripts/browser.sh runs");
    assert!(
        chromedriver.status.success(),
        "installing chromium: {}",
        String::from_utf8_lossy(&chromedriver.stderr)
    );
    let chromedriver = String::from_utf8_lossy(&chromedriver.stdout)
        .trim()
        .to_string();

    let moto = MotoStack::new("con").await;
    let machines = harel_app::machines::definitions().expect("app machines");
    let worker = moto.worker(
        Driver::new(machines, harel_app::actions::actions()),
        &[("HAREL_SUSPEND_RECHECK_SECONDS", "0")],
    );
    let source = moto.source();
    for (id, machine) in [
        ("ord-1", "Order"),
        ("ord-2", "Order"),
        ("ful-1", "Fulfilment"),
    ] {
        harel(&moto, &["create", machine, "--id", id]);
    }
    pump(&source, &worker).await;

    let port = free_port();
    let mut console = Command::new(env!("CARGO_BIN_EXE_harel"))
        .args([
            "console",
            "--port",
            &port.to_string(),
            "--machines",
            "../functions/app/machines",
        ])
        .args(harel_args(&moto))
        .env_remove("HAREL_STACK")
        .stdout(Stdio::piped())
        .spawn()
        .expect("harel console starts");
    let mut first_line = String::new();
    BufReader::new(console.stdout.take().expect("its stdout"))
        .read_line(&mut first_line)
        .expect("its address");
    let _console = Running(console);
    let home = format!("http://127.0.0.1:{port}");
    assert!(first_line.contains(&home), "{first_line}");

    let driver_port = free_port();
    let _driver = Running(
        Command::new(&chromedriver)
            .arg(format!("--port={driver_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts"),
    );
    let chromium = start_chromium(&reqwest::Client::new()).await;
    let b = open_browser(driver_port, &chromium).await;

    // the list shows them
    b.go(&format!("{home}/")).await;
    let text = b.text().await;
    for id in ["ord-1", "ord-2", "ful-1"] {
        assert!(text.contains(id), "{id} not listed:\n{text}");
    }
    b.screenshot("01-executions.png").await;

    // an execution's drawing highlights its active leaf; regions' states too
    b.go(&format!("{home}/executions/ord-1")).await;
    assert_eq!(b.active().await, ["Cart"]);
    b.go(&format!("{home}/executions/ful-1")).await;
    assert_eq!(
        b.active().await,
        [
            "Preparing",
            "Preparing.Payment",
            "Preparing.Payment.Capturing",
            "Preparing.Warehouse",
            "Preparing.Warehouse.Picking"
        ]
    );
    b.screenshot("02-regions.png").await;

    // after a send the highlight moves, on reload and by the page's own refresh
    b.go(&format!("{home}/executions/ord-1")).await;
    harel(&moto, &["send", "ord-1", "-e", "PlaceOrder"]);
    pump(&source, &worker).await;
    // no reload: the page's script fetches the live part every 2 s
    b.wait_active(&["Checkout", "Checkout.AwaitingPayment"])
        .await;
    assert!(b.text().await.contains("refreshed "), "the refresh stamped");
    b.go(&format!("{home}/executions/ord-1")).await;
    assert_eq!(b.active().await, ["Checkout", "Checkout.AwaitingPayment"]);
    b.screenshot("03-after-send.png").await;

    // an unknown execution is a 404 page
    b.go(&format!("{home}/executions/no-such-one")).await;
    b.wait_text("No execution \"no-such-one\"").await;

    // bulk suspend on a selection: the dry run lists what it would touch, then it is done
    b.go(&format!("{home}/?machine=Order")).await;
    b.click("input[name=ids][value='ord-1']").await;
    b.click("input[name=ids][value='ord-2']").await;
    b.click("button[name=scope][value=selection]").await;
    let dry = b.wait_text("Dry run: suspend 2 executions").await;
    assert!(dry.contains("ord-1") && dry.contains("ord-2"), "{dry}");
    b.screenshot("04-bulk-dry-run.png").await;
    let store = moto.store();
    for id in ["ord-1", "ord-2"] {
        let exe = store.load(id).await.expect("load").expect("there");
        assert_eq!(exe.status, Status::Running, "a dry run changes nothing");
    }
    b.click("#confirm").await;
    let done = b.wait_text("Bulk suspend: done").await;
    for id in ["ord-1", "ord-2"] {
        assert!(
            done.contains(&format!("suspend {id}: RUNNING → SUSPENDED")),
            "{done}"
        );
    }
    for id in ["ord-1", "ord-2"] {
        let exe = store.load(id).await.expect("load").expect("there");
        assert_eq!(exe.status, Status::Suspended);
    }
    // a bulk action on a filter that matches nothing does nothing and says so
    b.go(&format!("{home}/?machine=NoSuchMachine")).await;
    b.click("button[name=scope][value=filter]").await;
    b.wait_text(
        "No execution matches the filter: machine NoSuchMachine: nothing to do, nothing done.",
    )
    .await;

    // a dead letter (a create an older worker without the machine could not run) redriven
    // from the console and processed by the worker
    let old = moto.worker(Driver::new(Vec::new(), harel_app::actions::actions()), &[]);
    send(
        &source,
        "ord-9",
        harel_sqs::create_body("Order", Object::new(), None),
    )
    .await;
    pump(&source, &old).await;
    b.go(&format!("{home}/dead-letters")).await;
    let text = b.wait_text("ord-9").await;
    assert!(text.contains("unknown machine"), "{text}");
    b.screenshot("05-dead-letters.png").await;
    b.click("input[name=ids]").await;
    b.click("button[name=dry_run]").await;
    b.wait_text("(ord-9): would be redriven").await;
    b.click("#confirm").await;
    b.wait_text("(ord-9): redriven").await;
    pump(&source, &worker).await;
    let exe = store.load("ord-9").await.expect("load").expect("created");
    assert_eq!(exe.status, Status::Running);
    b.go(&format!("{home}/executions/ord-9")).await;
    assert_eq!(b.active().await, ["Cart"]);
    b.go(&format!("{home}/dead-letters")).await;
    let text = b.wait_text("Dead letters").await;
    assert!(!text.contains("ord-9"), "redriven, so gone: {text}");
    b.go(&format!("{home}/machines/Fulfilment")).await;
    b.screenshot("06-machine.png").await;
}
