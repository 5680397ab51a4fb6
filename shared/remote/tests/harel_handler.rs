//! Our runtime calling actions served by harel Python's own `harel.faas.handler(fn)`
//! (`harel-testkit`'s `py/action_server.py` on a loopback port), over HTTP and over Lambda's
//! Invoke API (the SDK's `Invoke`, `RequestResponse`, at that endpoint): a selector routed on
//! `result`, a context change, a function error routed to `on error` (and FAILED without
//! one), a timeout, a transient failure retried with the same `idempotency_key`, a failed
//! step retried with the same key, answers too large.

use std::time::{Duration, Instant};

use harel_model::{Event, Execution, Object, Status};
use harel_remote::{bind, ActionMap, Clients, Format, Secrets};
use harel_runtime::{ActionErrorPolicy, ActionRegistry, DurableRunner, RuntimeError};
use harel_store::MemoryStore;
use harel_testwire::ActionServer;
use serde_json::{json, Value};

const MACHINE: &str = r#"
event Pay { amount: int }
event Boom {}
event Slow {}
event Big {}
event Fat {}
event Flaky {}
event Fragile {}
event Echo { note: string }

bind {
  charge = billing.charge
  route = billing.route
  boom = billing.boom
  slow = billing.slow
  big = billing.big
  fat = billing.fat
  flaky = billing.flaky
  fragile = billing.fragile
  echo = billing.echo
}

machine Billing {
  context { charged: int = 0 }
  initial Idle
  state Idle {}
  state Approved { on enter charge(currency: "EUR") }
  state Review {}
  state Broken { on enter boom }
  state Waiting { on enter slow(seconds: 3) }
  state Huge { on enter big }
  state Fatty { on enter fat }
  state Retried {}
  state Fragile { on enter fragile }
  state Recovered {}
  state Echoed {}
  from Idle select route on Pay {
    "approve" to Approved
    "review" to Review
    else to Idle
  }
  from Idle to Broken on Boom
  from Idle to Waiting on Slow
  from Idle to Huge on Big
  from Idle to Fatty on Fat
  from Idle to Fragile on Fragile
  from Idle select flaky on Flaky {
    "ok" to Retried
    else to Idle
  }
  from Idle select echo(limit: 5) on Echo {
    "seen" to Echoed
    else to Idle
  }
  # an on-enter's failure is seen from the state entered
  from Broken to Recovered on error
  from Waiting to Recovered on error
  from Huge to Recovered on error
  from Fatty to Recovered on error
  from Idle to Recovered on error
}

machine Strict {
  initial Idle
  state Idle {}
  state Broken { on enter boom }
  state Fragile { on enter fragile }
  from Idle to Broken on Boom
  from Idle to Fragile on Fragile
}
"#;

#[derive(Clone, Copy, Debug)]
enum Transport {
    Http,
    Lambda,
}

const FUNCTIONS: [&str; 9] = [
    "charge", "route", "boom", "slow", "big", "fat", "flaky", "fragile", "echo",
];

/// The action map, as a deployment would write it: `billing.X` to the function `X`.
fn map(server: &ActionServer, transport: Transport) -> ActionMap {
    let mut top = serde_json::Map::new();
    for f in FUNCTIONS {
        let target = match transport {
            Transport::Http => server.http(f),
            Transport::Lambda => format!("lambda:{f}"),
        };
        let entry = match f {
            // the slow function sleeps 3 s: two attempts of 0.5 s each
            "slow" => json!({"target": target, "timeout": 0.5, "attempts": 2}),
            _ => json!(target),
        };
        top.insert(format!("billing.{f}"), entry);
    }
    ActionMap::parse(&Value::Object(top).to_string(), Format::Json, "test.json").expect("the map")
}

async fn clients(server: &ActionServer, transport: Transport) -> Clients {
    match transport {
        Transport::Http => Clients::new(None),
        Transport::Lambda => {
            let sdk = server.lambda_sdk().await;
            Clients::new(Some(&sdk))
        }
    }
}

struct Rig {
    server: ActionServer,
    runner: DurableRunner<MemoryStore>,
}

async fn rig(transport: Transport, policy: ActionErrorPolicy) -> Rig {
    let server = ActionServer::start();
    let mut registry = ActionRegistry::with_stdlib();
    bind(
        &mut registry,
        &map(&server, transport),
        &clients(&server, transport).await,
        |_| None,
        &Secrets::none(),
    )
    .expect("bound");
    let definitions = ["Billing", "Strict"]
        .map(|m| harel_lang::load_str(MACHINE, Some(m), "billing.stm").expect("the machine"));
    let runner = DurableRunner::new(MemoryStore::new(), definitions)
        .with_registry(registry)
        .with_policy(policy);
    Rig { server, runner }
}

impl Rig {
    async fn create(&self, machine: &str) -> Execution {
        self.runner
            .create(machine, None, None)
            .await
            .expect("create")
    }

    async fn send(&self, exe: &Execution, kind: &str, data: Value) -> Execution {
        self.try_send(exe, &event(kind, data))
            .await
            .expect("process")
    }

    async fn try_send(&self, exe: &Execution, event: &Event) -> Result<Execution, RuntimeError> {
        self.runner.process(&exe.id, event).await
    }

    /// What the functions received.
    async fn calls(&self) -> Vec<Value> {
        let got: Value = reqwest::get(format!("{}/calls", self.server.base))
            .await
            .expect("GET /calls")
            .json()
            .await
            .expect("JSON");
        got.as_array().cloned().expect("a list")
    }

    async fn keys_of(&self, name: &str) -> Vec<String> {
        self.calls()
            .await
            .iter()
            .filter(|c| c["name"] == name)
            .map(|c| c["idempotency_key"].as_str().expect("a key").to_string())
            .collect()
    }
}

/// An event with a known id (`{kind}-1`): the keys of its step are known too.
fn event(kind: &str, data: Value) -> Event {
    let mut ev = Event::new(kind).with_data(object(data));
    ev.id = format!("{kind}-1").into();
    ev
}

fn object(v: Value) -> Object {
    v.as_object().cloned().expect("an object")
}

fn path(exe: &Execution) -> &str {
    exe.active_path.as_deref().unwrap_or("")
}

async fn selector_and_context(transport: Transport) {
    let rig = rig(transport, ActionErrorPolicy::Fail).await;
    let exe = rig.create("Billing").await;
    let paid = rig.send(&exe, "Pay", json!({"amount": 40})).await;
    assert_eq!(path(&paid), "Approved", "route answered \"approve\"");
    // the function's context replaced ours: charged, its inputs, the step's key
    assert_eq!(paid.context["charged"], json!(40));
    assert_eq!(paid.context["currency"], json!("EUR"));
    // harel's _ActionKeys: {execution}:{event id}:{index}:{action}; the selector is the
    // step's first call, the state's hook its second
    let key = format!("{}:Pay-1:1:billing.charge", exe.id);
    assert_eq!(paid.context["charge_key"], json!(key));
    assert_eq!(rig.keys_of("charge").await, vec![key]);
    assert_eq!(
        rig.keys_of("route").await[0],
        format!("{}:Pay-1:0:billing.route", exe.id)
    );
    let other = rig.create("Billing").await;
    let review = rig.send(&other, "Pay", json!({"amount": 400})).await;
    assert_eq!(path(&review), "Review");
    assert_eq!(review.context["charged"], json!(0), "nothing charged");
    let transports: Vec<Value> = rig
        .calls()
        .await
        .iter()
        .map(|c| c["transport"].clone())
        .collect();
    let expected = match transport {
        Transport::Http => "http",
        Transport::Lambda => "lambda",
    };
    assert!(transports.iter().all(|t| t == expected), "{transports:?}");
}

/// The payload is harel's: the event's kind and data, the inputs, the key, the context (the
/// echo function stores what it was sent in the context it answers with).
async fn payload_shape(transport: Transport) {
    let rig = rig(transport, ActionErrorPolicy::Fail).await;
    let exe = rig.create("Billing").await;
    let done = rig.send(&exe, "Echo", json!({"note": "hi"})).await;
    assert_eq!(path(&done), "Echoed");
    assert_eq!(
        done.context["seen"],
        json!({
            "event": {"kind": "Echo", "data": {"note": "hi"}},
            "inputs": {"limit": 5},
            "idempotency_key": format!("{}:Echo-1:0:billing.echo", exe.id),
            "context": {"charged": 0},
        })
    );
    assert_eq!(
        done.context["charged"],
        json!(0),
        "the rest of the context came back"
    );
}

/// A function's own failure (HTTP 500, Lambda's FunctionError) is an action error: the
/// machine's `on error` takes it, with `_error` in the context; without one, FAILED.
async fn function_error(transport: Transport) {
    let rig = rig(transport, ActionErrorPolicy::Fail).await;
    let exe = rig.create("Billing").await;
    let after = rig.send(&exe, "Boom", json!({})).await;
    assert_eq!(path(&after), "Recovered");
    assert_ne!(after.status, Status::Failed, "handled");
    let error = &after.context["_error"];
    let (kind, message) = match transport {
        Transport::Http => (
            "HTTPError",
            format!(
                "500 Server Error: Internal Server Error for url: {}",
                rig.server.http("boom")
            ),
        ),
        Transport::Lambda => (
            "RuntimeError",
            r#"Lambda boom failed: {"errorMessage": "card declined", "errorType": "ValueError"}"#
                .to_string(),
        ),
    };
    assert_eq!(error["type"], json!(kind), "{error}");
    assert_eq!(error["message"], json!(message), "{error}");
    let strict = rig.create("Strict").await;
    let failed = rig.send(&strict, "Boom", json!({})).await;
    assert_eq!(failed.status, Status::Failed);
    assert_eq!(
        failed.error.as_deref(),
        Some(format!("{kind}: {message}").as_str())
    );
}

/// A function slower than the binding's timeout: each attempt is abandoned at 0.5 s, two
/// attempts, then an action error (`TimeoutError`), long before the function's 3 s.
async fn timeout(transport: Transport) {
    let rig = rig(transport, ActionErrorPolicy::Fail).await;
    let exe = rig.create("Billing").await;
    let started = Instant::now();
    let after = rig.send(&exe, "Slow", json!({})).await;
    let took = started.elapsed();
    assert_eq!(path(&after), "Recovered");
    assert_eq!(after.context["_error"]["type"], json!("TimeoutError"));
    let message = after.context["_error"]["message"]
        .as_str()
        .expect("message");
    assert!(
        message.contains("did not answer within 0.500 s (after 2 attempts)"),
        "{message}"
    );
    assert!(after.context.get("slept").is_none());
    assert!(
        took >= Duration::from_millis(1000) && took < Duration::from_millis(2900),
        "{took:?}"
    );
    let keys = rig.keys_of("slow").await;
    assert_eq!(keys.len(), 2, "two attempts");
    assert_eq!(keys[0], keys[1], "the retry sends the same key");
}

/// The invocation's deadline, as a Lambda host scopes its work with it, reaches the action
/// through the driver: with 0.3 s left past the commit reserve, the slow function's one
/// attempt is abandoned at about 0.3 s and not retried (without a deadline: two of 0.5 s).
async fn deadline(transport: Transport) {
    let rig = rig(transport, ActionErrorPolicy::Fail).await;
    let exe = rig.create("Billing").await;
    let at = Instant::now() + harel_remote::COMMIT_RESERVE + Duration::from_millis(300);
    let started = Instant::now();
    let after =
        harel_runtime::invocation::within(Some(at), rig.send(&exe, "Slow", json!({}))).await;
    let took = started.elapsed();
    assert_eq!(path(&after), "Recovered");
    assert_eq!(after.context["_error"]["type"], json!("TimeoutError"));
    let message = after.context["_error"]["message"]
        .as_str()
        .expect("message");
    assert!(
        message.contains("did not answer within 0.") && !message.contains("attempts"),
        "one attempt, cut to the time left: {message}"
    );
    assert!(took < Duration::from_millis(900), "{took:?}");
    assert_eq!(rig.keys_of("slow").await.len(), 1, "one attempt");
}

/// A transient failure (HTTP 503, Lambda's 429 TooManyRequestsException) is retried within
/// the step with the same key, and the second answer routes the selector.
async fn transient(transport: Transport) {
    let rig = rig(transport, ActionErrorPolicy::Fail).await;
    let exe = rig.create("Billing").await;
    let after = rig.send(&exe, "Flaky", json!({})).await;
    assert_eq!(path(&after), "Retried");
    let keys = rig.keys_of("flaky").await;
    let key = format!("{}:Flaky-1:0:billing.flaky", exe.id);
    assert_eq!(keys, vec![key.clone(), key.clone()]);
    assert_eq!(after.context["flaky_key"], json!(key));
}

/// A step that failed (the `Raise` policy: nothing committed, as when a worker's message is
/// redelivered) and is retried calls the function again with the same key.
async fn retried_step(transport: Transport) {
    let rig = rig(transport, ActionErrorPolicy::Raise).await;
    let exe = rig.create("Strict").await;
    let ev = event("Fragile", json!({}));
    let first = rig.try_send(&exe, &ev).await;
    assert!(
        matches!(&first, Err(RuntimeError::ActionFailed(_))),
        "{first:?}"
    );
    let stored = rig
        .runner
        .get(&exe.id)
        .await
        .expect("load")
        .expect("exists");
    assert_eq!(
        path(&stored),
        "Idle",
        "nothing of the failed step was committed"
    );
    let again = rig.try_send(&exe, &ev).await.expect("the retry");
    assert_eq!(path(&again), "Fragile");
    let key = format!("{}:Fragile-1:0:billing.fragile", exe.id);
    assert_eq!(again.context["fragile_key"], json!(key));
    assert_eq!(rig.keys_of("fragile").await, vec![key.clone(), key]);
}

/// An answer past 6 MB is not read; a context past an execution item's 400 KB is not
/// applied: both action errors, routed to `on error`, nothing of them in the context.
async fn too_large(transport: Transport) {
    let rig = rig(transport, ActionErrorPolicy::Fail).await;
    let exe = rig.create("Billing").await;
    let big = rig.send(&exe, "Big", json!({})).await;
    assert_eq!(path(&big), "Recovered");
    assert_eq!(
        big.context["_error"]["type"],
        json!("AnswerTooLarge"),
        "{}",
        big.context["_error"]
    );
    assert!(big.context.get("blob").is_none());
    let other = rig.create("Billing").await;
    let fat = rig.send(&other, "Fat", json!({})).await;
    assert_eq!(path(&fat), "Recovered");
    assert_eq!(fat.context["_error"]["type"], json!("ContextTooLarge"));
    let message = fat.context["_error"]["message"].as_str().expect("message");
    assert!(message.contains("holds at most 409600"), "{message}");
    assert!(fat.context.get("blob").is_none());
}

/// A request past Lambda's 6 MB is not sent.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
async fn lambda_oversized_request_is_not_sent() {
    let rig = rig(Transport::Lambda, ActionErrorPolicy::Fail).await;
    let exe = rig.create("Billing").await;
    let huge = "y".repeat(6 * 1024 * 1024 + 1);
    let after = rig.send(&exe, "Echo", json!({"note": huge})).await;
    assert_eq!(path(&after), "Recovered");
    assert_eq!(after.context["_error"]["type"], json!("PayloadTooLarge"));
    assert!(rig.calls().await.is_empty(), "nothing was sent");
}

/// Headers come from the environment when the map is bound; a missing variable is an error
/// naming it, and the value never shows in an error.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
async fn http_headers_come_from_the_environment() {
    let server = ActionServer::start();
    let text = json!({
        "billing.route": server.http("route"),
        "billing.charge": {"target": server.http("charge"), "headers": {"Authorization": "env:CHARGE_TOKEN"}},
    })
    .to_string();
    let map = ActionMap::parse(&text, Format::Json, "h.json").expect("map");
    let mut registry = ActionRegistry::with_stdlib();
    let missing = bind(
        &mut registry,
        &map,
        &Clients::new(None),
        |_| None,
        &Secrets::none(),
    )
    .expect_err("unset");
    assert!(
        missing
            .to_string()
            .contains("environment variable CHARGE_TOKEN, which is not set"),
        "{missing}"
    );
    let mut registry = ActionRegistry::with_stdlib();
    bind(
        &mut registry,
        &map,
        &Clients::new(None),
        |n| (n == "CHARGE_TOKEN").then(|| "Bearer s3cret".to_string()),
        &Secrets::none(),
    )
    .expect("bound");
    let defn = harel_lang::load_str(MACHINE, Some("Billing"), "billing.stm").expect("machine");
    let runner = DurableRunner::new(MemoryStore::new(), [defn]).with_registry(registry);
    let exe = runner.create("Billing", None, None).await.expect("create");
    let paid = runner
        .process(&exe.id, &event("Pay", json!({"amount": 1})))
        .await
        .expect("process");
    assert_eq!(path(&paid), "Approved");
    let calls: Value = reqwest::get(format!("{}/calls", server.base))
        .await
        .expect("calls")
        .json()
        .await
        .expect("json");
    let auth: Vec<(&Value, &Value)> = calls
        .as_array()
        .expect("list")
        .iter()
        .map(|c| (&c["name"], &c["authorization"]))
        .collect();
    assert_eq!(
        auth,
        vec![
            (&json!("route"), &Value::Null),
            (&json!("charge"), &json!("Bearer s3cret"))
        ]
    );
    let mut registry = ActionRegistry::with_stdlib();
    let err = bind(
        &mut registry,
        &map,
        &Clients::new(None),
        |_| Some("bad\nvalue".into()),
        &Secrets::none(),
    )
    .expect_err("not a header value");
    assert!(!err.to_string().contains("bad"), "{err}");
}

/// A Rust action and a map entry for the same name: refused, naming both.
#[test]
fn a_name_bound_twice_is_refused() {
    let map = ActionMap::parse(
        r#"{"harel.lib.exponential_backoff": "lambda:f"}"#,
        Format::Json,
        "m.json",
    )
    .expect("map");
    let mut registry = ActionRegistry::with_stdlib();
    let rt = tokio::runtime::Runtime::new().expect("rt");
    let sdk = rt.block_on(
        aws_config::defaults(aws_config::BehaviorVersion::latest())
            .region(aws_sdk_lambda::config::Region::new("us-east-1"))
            .load(),
    );
    let err = bind(
        &mut registry,
        &map,
        &Clients::new(Some(&sdk)),
        |_| None,
        &Secrets::none(),
    )
    .expect_err("twice");
    assert_eq!(
        err.to_string(),
        "action \"harel.lib.exponential_backoff\" is bound twice: in the action map (m.json) and already (a Rust action or harel.lib)"
    );
    let err = bind(
        &mut ActionRegistry::new(),
        &map,
        &Clients::new(None),
        |_| None,
        &Secrets::none(),
    )
    .expect_err("no aws");
    assert!(
        err.to_string()
            .contains("needs AWS (Lambda functions: f) but no AWS configuration"),
        "{err}"
    );
}

/// Each scenario runs over both transports: `http_NAME` and `lambda_NAME`.
macro_rules! over_both {
    ($($scenario:ident => $http:ident, $lambda:ident;)*) => {$(
        #[tokio::test(flavor = "multi_thread")]
        #[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
        async fn $http() {
            $scenario(Transport::Http).await;
        }

        #[tokio::test(flavor = "multi_thread")]
        #[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
        async fn $lambda() {
            $scenario(Transport::Lambda).await;
        }
    )*};
}

over_both! {
    selector_and_context => http_selector_routes_on_result_and_the_context_is_replaced, lambda_selector_routes_on_result_and_the_context_is_replaced;
    payload_shape => http_payload_is_harels, lambda_payload_is_harels;
    function_error => http_function_error_goes_to_on_error_else_fails, lambda_function_error_goes_to_on_error_else_fails;
    timeout => http_timeout_is_retried_then_an_action_error, lambda_timeout_is_retried_then_an_action_error;
    deadline => http_the_invocation_deadline_cuts_the_attempts, lambda_the_invocation_deadline_cuts_the_attempts;
    transient => http_transient_failure_is_retried_with_the_same_key, lambda_transient_failure_is_retried_with_the_same_key;
    retried_step => http_retried_step_sends_the_same_key, lambda_retried_step_sends_the_same_key;
    too_large => http_oversized_answers_are_action_errors, lambda_oversized_answers_are_action_errors;
}
