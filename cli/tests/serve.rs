//! `harel serve`: the real binary on port 0, called over HTTP. It prints where it listens
//! first; the in-memory queue is drained by the embedded runner, so what is sent is run.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harel_hooks::callback::{self, Claims};
use harel_hooks::signature::{sign, Algorithm, Encoding};
use harel_hooks::{CallbackKey, Secret};
use serde_json::{json, Value};

/// The server, stopped when the test ends however it ends.
struct Server {
    child: Child,
    addr: String,
    /// What it wrote to stderr so far (passed on to the test's stderr too).
    stderr: Arc<Mutex<String>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str]) -> Server {
    serve_with(args, &[])
}

/// The server with `env` set (its secrets), or a test's failure saying why it did not start.
fn serve_with(args: &[&str], env: &[(&str, &str)]) -> Server {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut child = Command::new(env!("CARGO_BIN_EXE_harel"))
        .arg("serve")
        .args(["--port", "0"])
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("harel serve starts");
    let stderr = Arc::new(Mutex::new(String::new()));
    let lines = BufReader::new(child.stderr.take().expect("stderr"));
    let seen = Arc::clone(&stderr);
    std::thread::spawn(move || {
        for line in lines.lines().map_while(Result::ok) {
            eprintln!("{line}");
            seen.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("a first line");
    let addr = first
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("the first line says where it listens: {first:?}"))
        .to_string();
    Server {
        child,
        addr,
        stderr,
    }
}

impl Server {
    /// One request over HTTP/1.1: (status, JSON body).
    fn call(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        self.call_with(method, path, body, &[])
    }

    /// [`Server::call`] with more headers.
    fn call_with(
        &self,
        method: &str,
        path: &str,
        body: &str,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        let mut stream = TcpStream::connect(&self.addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let extra: String = headers
            .iter()
            .map(|(k, v)| format!("{k}: {v}\r\n"))
            .collect();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
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

const STRIPE_SECRET: &str = "whsec_serve_test";
const GITHUB_SECRET: &str = "github-serve-test";
const IDENTITY_SECRET: &str = "identity-serve-test";
const CALLBACK_SECRET: &str = "0123456789abcdef0123456789abcdef-serve";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// examples/webhook_payment's hooks.yaml with the fixtures' github and identity hooks after
/// it, in a file of its own.
fn hooks_file(tag: &str) -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let text = std::fs::read_to_string(format!("{root}/examples/webhook_payment/hooks.yaml"))
        .unwrap()
        + &std::fs::read_to_string(format!("{root}/tests/fixtures/ingress/hooks.yaml")).unwrap();
    let path = std::env::temp_dir().join(format!(
        "harel-serve-hooks-{tag}-{}.yaml",
        std::process::id()
    ));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn ingress_server(tag: &str) -> Server {
    let hooks = hooks_file(tag);
    serve_with(
        &[
            "--machines",
            "examples/webhook_payment",
            "--machines",
            "tests/fixtures/ingress",
            "--hooks",
            &hooks,
        ],
        &[
            ("STRIPE_WEBHOOK_SECRET", STRIPE_SECRET),
            ("GITHUB_WEBHOOK_SECRET", GITHUB_SECRET),
            ("IDENTITY_WEBHOOK_SECRET", IDENTITY_SECRET),
            ("HAREL_CALLBACK_SECRET", CALLBACK_SECRET),
        ],
    )
}

impl Server {
    fn stripe(&self, payload: &Value, secret: &str, t: i64) -> (u16, Value) {
        let body = payload.to_string();
        let signature = sign::stripe(secret.as_bytes(), t, body.as_bytes());
        self.call_with(
            "POST",
            "/hooks/stripe",
            &body,
            &[("Stripe-Signature", &signature)],
        )
    }
}

fn stripe_event(id: &str, kind: &str, order: &str, object: Value) -> Value {
    let mut pi = json!({"id": format!("pi_{id}"), "metadata": {"harel_order_id": order}});
    pi.as_object_mut()
        .unwrap()
        .extend(object.as_object().unwrap().clone());
    json!({"id": id, "type": kind, "data": {"object": pi}})
}

/// examples/webhook_payment through `harel serve --hooks`: Stripe deliveries signed here
/// (happy path, declined, the same delivery twice, an unrouted type, forged and stale), then
/// GitHub's and a generic HMAC provider's. The walkthrough's timeout (15 s) is in the api
/// function's test, where the sweeper's clock can be moved.
#[test]
fn serve_takes_verified_webhooks() {
    let server = ingress_server("hooks");
    let create = |machine: &str, id: &str| {
        let (status, created) = server.call(
            "POST",
            "/executions",
            &json!({"machine": machine, "id": id}).to_string(),
        );
        assert_eq!(status, 202, "{created}");
        server.until(id, |e| e["status"] == "RUNNING");
    };

    create("payment", "order-1");
    let paid = stripe_event(
        "evt_1",
        "payment_intent.succeeded",
        "order-1",
        json!({"amount_received": 4999}),
    );
    let (status, answer) = server.stripe(&paid, STRIPE_SECRET, now());
    assert_eq!(status, 202, "{answer}");
    assert_eq!(
        answer["event"],
        json!({"id": "evt_1", "kind": "PaymentSucceeded"})
    );
    let done = server.until("order-1", |e| e["status"] == "DONE");
    assert_eq!(done["execution"]["outcome"], "success");
    // Stripe retries the same event: acknowledged as a duplicate, nothing run twice
    let (status, again) = server.stripe(&paid, STRIPE_SECRET, now() + 1);
    assert_eq!((status, again["status"].as_str()), (202, Some("duplicate")));
    std::thread::sleep(Duration::from_millis(100));
    let (_, after) = server.call("GET", "/executions/order-1", "");
    assert_eq!(
        after["execution"]["processed_events"],
        done["execution"]["processed_events"]
    );

    create("payment", "order-2");
    let declined = stripe_event(
        "evt_2",
        "payment_intent.payment_failed",
        "order-2",
        json!({"last_payment_error": {"message": "Your card was declined."}}),
    );
    assert_eq!(server.stripe(&declined, STRIPE_SECRET, now()).0, 202);
    let failed = server.until("order-2", |e| e["status"] == "DONE");
    assert_eq!(failed["execution"]["active_path"], "Failed");

    // unrouted: 200 with the reason, counted
    create("payment", "order-3");
    let refund = stripe_event("evt_3", "charge.refunded", "order-3", json!({}));
    let (status, answer) = server.stripe(&refund, STRIPE_SECRET, now());
    assert_eq!(
        (status, answer["status"].as_str()),
        (200, Some("ignored")),
        "{answer}"
    );
    // forged and stale: 401, the order still waits
    let pay3 = stripe_event(
        "evt_4",
        "payment_intent.succeeded",
        "order-3",
        json!({"amount_received": 1}),
    );
    for (secret, t, code) in [
        ("whsec_attacker", now(), "bad_signature"),
        (STRIPE_SECRET, now() - 301, "stale_signature"),
    ] {
        let (status, answer) = server.stripe(&pay3, secret, t);
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (401, Some(code))
        );
    }
    std::thread::sleep(Duration::from_millis(100));
    let (_, waiting) = server.call("GET", "/executions/order-3", "");
    assert_eq!(waiting["execution"]["active_path"], "AwaitingPayment");
    let log = server.stderr.lock().unwrap().clone();
    assert!(
        log.contains("serve: hook stripe: ignored (count 1)"),
        "the ignored delivery is counted: {log}"
    );
    assert!(
        log.contains("serve: hook stripe: refused (count 2)"),
        "{log}"
    );

    // GitHub: the first delivery creates pr-7, the merge ends it
    let pr = |action: &str, merged: bool| {
        json!({"action": action, "number": 7, "pull_request": {"number": 7, "merged": merged}})
            .to_string()
    };
    let github = |body: &str, delivery: &str, secret: &str| {
        server.call_with(
            "POST",
            "/hooks/github",
            body,
            &[
                ("X-GitHub-Event", "pull_request"),
                ("X-GitHub-Delivery", delivery),
                (
                    "X-Hub-Signature-256",
                    &sign::github(secret.as_bytes(), body.as_bytes()),
                ),
            ],
        )
    };
    let (status, answer) = github(&pr("opened", false), "d-1", GITHUB_SECRET);
    assert_eq!(
        (status, &answer["created"]),
        (202, &json!(true)),
        "{answer}"
    );
    server.until("pr-7", |e| e["status"] == "RUNNING");
    assert_eq!(github(&pr("closed", true), "d-2", "forged").0, 401);
    assert_eq!(github(&pr("closed", true), "d-2", GITHUB_SECRET).0, 202);
    let merged = server.until("pr-7", |e| e["status"] == "DONE");
    assert_eq!(merged["execution"]["active_path"], "Merged");

    // the generic hmac scheme: base64 HMAC-SHA256 of "{timestamp}.{body}"
    create("signup", "su-1");
    let verified = json!({"event_id": "ev-1", "type": "user.verified",
                          "user": {"signup_id": "su-1", "email": "ada@example.com"}})
    .to_string();
    let t = now();
    let signature = sign::hmac(
        Algorithm::Sha256,
        Encoding::Base64,
        IDENTITY_SECRET.as_bytes(),
        format!("{t}.{verified}").as_bytes(),
    );
    let (status, answer) = server.call_with(
        "POST",
        "/hooks/identity",
        &verified,
        &[("X-Signature", &signature), ("X-Timestamp", &t.to_string())],
    );
    assert_eq!(status, 202, "{answer}");
    let active = server.until("su-1", |e| e["status"] == "DONE");
    assert_eq!(active["execution"]["active_path"], "Active");
}

/// Callback tokens through `harel serve`: its runner makes them (`harel.lib.callback_token`
/// with the callback secret), its API opens them: completed, reused, failed, expired, forged,
/// for an unknown execution.
#[test]
fn serve_completes_callback_tokens() {
    let server = ingress_server("callbacks");
    let waiting = |id: &str| {
        server.call(
            "POST",
            "/executions",
            &json!({"machine": "transfer", "id": id}).to_string(),
        );
        let shown = server.until(id, |e| e["active_path"] == "Waiting");
        shown["execution"]["context"]["token"]
            .as_str()
            .expect("the token in the context")
            .to_string()
    };
    let token = waiting("t-1");
    let (status, done) = server.call(
        "POST",
        &format!("/callbacks/{token}"),
        r#"{"data": {"reference": "R-1"}}"#,
    );
    assert_eq!(status, 202, "{done}");
    assert_eq!(done["event"]["kind"], "Confirmed");
    let approved = server.until("t-1", |e| e["status"] == "DONE");
    assert_eq!(approved["execution"]["active_path"], "Approved");
    // reused: the same event id, answered as the duplicate it is
    let (status, again) = server.call("POST", &format!("/callbacks/{token}/fail"), "");
    assert_eq!((status, again["status"].as_str()), (202, Some("duplicate")));
    assert_eq!(again["event"]["id"], done["event"]["id"]);

    let token2 = waiting("t-2");
    let (status, _) = server.call(
        "POST",
        &format!("/callbacks/{token2}/fail"),
        r#"{"error": "insufficient funds"}"#,
    );
    assert_eq!(status, 202);
    let rejected = server.until("t-2", |e| e["status"] == "DONE");
    assert_eq!(rejected["execution"]["active_path"], "Rejected");

    waiting("t-3");
    let key = CallbackKey::new(Secret::new(CALLBACK_SECRET, "test")).unwrap();
    let other = CallbackKey::new(Secret::new("another-stack-secret-another-stack!!", "x")).unwrap();
    let claims = |execution: &str, exp: i64| Claims {
        execution: execution.into(),
        event: "Confirmed".into(),
        fail_event: "CallbackFailed".into(),
        exp,
        nonce: "00112233445566778899aabbccddeeff".into(),
    };
    for (token, status, code) in [
        (
            callback::issue(&key, &claims("t-3", now() - 5)),
            410,
            "token_expired",
        ),
        (
            callback::issue(&other, &claims("t-3", now() + 60)),
            401,
            "bad_token",
        ),
        (
            callback::issue(&key, &claims("ghost", now() + 60)),
            404,
            "unknown_execution",
        ),
    ] {
        let (got, answer) = server.call(
            "POST",
            &format!("/callbacks/{token}"),
            r#"{"data": {"reference": "R-3"}}"#,
        );
        assert_eq!(
            (got, answer["error"]["code"].as_str()),
            (status, Some(code)),
            "{answer}"
        );
    }
    std::thread::sleep(Duration::from_millis(100));
    let (_, still) = server.call("GET", "/executions/t-3", "");
    assert_eq!(still["execution"]["active_path"], "Waiting");
}

/// The checks the run skips, and why:
/// - `positive_data_acceptance`: a body the schema allows may still be refused by what the
///   schema cannot say (a machine that is not deployed is a 404, a context that breaks the
///   machine's own declarations a 400, an execution id that does not exist a 404): the spec
///   allows any machine name, the deployment decides.
const EXCLUDED_CHECKS: &str = "positive_data_acceptance";

/// schemathesis (from the Python index, its own venv: scripts/schemathesis.sh) fuzzes every
/// route of `harel serve --machines examples` (with examples/webhook_payment's hooks and a
/// callback secret) from openapi.yaml: no 5xx, every answer in the
/// spec (status, content type, schema), malformed input refused.
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
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
    // the webhook and callback routes configured, so they are fuzzed past "not configured"
    let server = serve_with(
        &[
            "--machines",
            "examples",
            "--machines",
            "examples/webhook_payment",
            "--hooks",
            "examples/webhook_payment/hooks.yaml",
        ],
        &[
            ("STRIPE_WEBHOOK_SECRET", STRIPE_SECRET),
            ("HAREL_CALLBACK_SECRET", CALLBACK_SECRET),
        ],
    );
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
