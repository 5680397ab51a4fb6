//! `harel serve`: the real binary on port 0, called over HTTP. It prints where it listens
//! first; the in-memory queue is drained by the embedded runner, so what is sent is run.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The server, stopped when the test ends however it ends.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str]) -> Server {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut child = Command::new(env!("CARGO_BIN_EXE_harel"))
        .arg("serve")
        .args(["--port", "0"])
        .args(args)
        .current_dir(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("harel serve starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("a first line");
    let addr = first
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("the first line says where it listens: {first:?}"))
        .to_string();
    Server { child, addr }
}

impl Server {
    /// One request over HTTP/1.1: (status, JSON body).
    fn call(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let mut stream = TcpStream::connect(&self.addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut raw = String::new();
        stream.read_to_string(&mut raw).expect("a response");
        let status: u16 = raw
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("a status line: {raw:?}"));
        let (_, body) = raw.split_once("\r\n\r\n").expect("headers end");
        (
            status,
            serde_json::from_str(body).unwrap_or(Value::String(body.into())),
        )
    }

    /// Until `done` holds for the execution (the runner works in the background).
    fn until(&self, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            let (status, shown) = self.call("GET", &format!("/executions/{id}"), "");
            if status == 200 && done(&shown["execution"]) {
                return shown;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{id} never got there: {shown}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn serve_runs_what_it_is_sent() {
    let server = serve(&["--machines", "examples"]);
    let (status, created) = server.call(
        "POST",
        "/executions",
        &json!({"machine": "Order", "id": "web-1", "context": {"items": 3}}).to_string(),
    );
    assert_eq!(status, 202, "{created}");
    server.until("web-1", |e| e["status"] == "RUNNING");
    let (status, _) = server.call(
        "POST",
        "/executions/web-1/events",
        r#"[{"kind": "PlaceOrder"}, {"kind": "PaymentAuthorized"}, {"kind": "Delivered"}]"#,
    );
    assert_eq!(status, 202);
    let done = server.until("web-1", |e| e["status"] == "DONE");
    assert_eq!(done["execution"]["outcome"], "success");

    // the status gate: a suspended execution's events wait until it is resumed
    server.call(
        "POST",
        "/executions",
        r#"{"machine": "Order", "id": "web-2"}"#,
    );
    server.until("web-2", |e| e["status"] == "RUNNING");
    let (status, _) = server.call("POST", "/executions/web-2/suspend", "");
    assert_eq!(status, 200);
    server.call(
        "POST",
        "/executions/web-2/events",
        r#"{"kind": "PlaceOrder"}"#,
    );
    std::thread::sleep(Duration::from_millis(200));
    let (_, held) = server.call("GET", "/executions/web-2", "");
    assert_eq!(held["execution"]["active_path"], "Cart", "{held}");
    server.call("POST", "/executions/web-2/resume", "");
    server.until("web-2", |e| e["active_path"] == "Checkout.AwaitingPayment");

    let (status, page) = server.call("GET", "/executions?status=DONE", "");
    assert_eq!(status, 200);
    assert_eq!(page["items"][0]["id"], "web-1");
    let (status, refused) = server.call("POST", "/executions", r#"{"machine": "Nope"}"#);
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (404, Some("unknown_machine"))
    );
    let (status, spec) = server.call("GET", "/openapi.json", "");
    assert_eq!((status, spec["openapi"].as_str()), (200, Some("3.0.3")));
}

/// The checks the run skips, and why:
/// - `positive_data_acceptance`: a body the schema allows may still be refused by what the
///   schema cannot say (a machine that is not deployed is a 404, a context that breaks the
///   machine's own declarations a 400, an execution id that does not exist a 404): the spec
///   allows any machine name, the deployment decides.
const EXCLUDED_CHECKS: &str = "positive_data_acceptance";

/// schemathesis (from the Python index, its own venv: scripts/schemathesis.sh) fuzzes every
/// route of `harel serve --machines examples` from openapi.yaml: no 5xx, every answer in the
/// spec (status, content type, schema), malformed input refused.
#[test]
fn schemathesis_finds_nothing_off_the_spec() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let install = Command::new("bash")
        .arg(format!("{root}/scripts/schemathesis.sh"))
        .output()
        .expect("bash runs");
    assert!(
        install.status.success(),
        "schemathesis could not be installed from the Python index: {}",
        String::from_utf8_lossy(&install.stderr)
    );
    let bin = String::from_utf8_lossy(&install.stdout).trim().to_string();
    let server = serve(&["--machines", "examples"]);
    let out = Command::new(format!("{bin}/schemathesis"))
        .arg("run")
        .arg(format!("http://{}/openapi.json", server.addr))
        .args(["--checks", "all", "--exclude-checks", EXCLUDED_CHECKS])
        .args(["--max-examples", "40", "--seed", "7", "--no-color"])
        .env("SCHEMATHESIS_TELEMETRY", "false")
        // its cache directory (.schemathesis) stays out of the work tree
        .current_dir(std::env::temp_dir())
        .output()
        .expect("schemathesis runs");
    let report = String::from_utf8_lossy(&out.stdout);
    // the summary line, for the record (`cargo test -- --nocapture` shows it)
    let summary = report
        .lines()
        .rev()
        .find(|l| l.contains("passed") || l.contains("failed"))
        .unwrap_or("");
    eprintln!(
        "schemathesis: {}",
        summary.trim_matches(|c: char| c == '=' || c.is_whitespace())
    );
    assert!(
        out.status.success(),
        "schemathesis found problems:\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
