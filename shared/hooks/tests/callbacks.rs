//! Callback tokens: made by `harel.lib.callback_token` in a running machine, then completed,
//! failed, reused, expired and forged.

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use harel_hooks::callback::{self, Claims};
use harel_hooks::{CallbackKey, Refusal, Secret};
use harel_model::{Object, Status};
use harel_runtime::{ActionRegistry, DurableRunner, ManualClock};
use harel_store::MemoryStore;
use serde_json::{json, Value};

const T0: f64 = 1_765_000_000.0;

const MACHINE: &str = r#"
event Confirmed { reference: string }
event CallbackFailed { error: string }

machine approval {
  initial Waiting

  state Waiting {
    on enter harel.lib.callback_token(event: "Confirmed", into: "token", ttl: 3600)
    timeout 7200
  }

  final Approved success
  final Rejected failed
  final Expired abandoned

  from Waiting to Approved on Confirmed
  from Waiting to Rejected on CallbackFailed
  from Waiting to Expired on Timeout
}
"#;

fn key(secret: &str) -> CallbackKey {
    CallbackKey::new(Secret::new(secret, "test")).unwrap()
}

fn runner(key: CallbackKey, clock: &ManualClock) -> DurableRunner<MemoryStore> {
    let definition = harel_lang::load_str(MACHINE, Some("approval"), "approval.stm").unwrap();
    let mut registry = ActionRegistry::with_stdlib();
    callback::register(&mut registry, key, Arc::new(clock.clone()));
    DurableRunner::new(MemoryStore::new(), [definition])
        .with_registry(registry)
        .with_clock(Arc::new(clock.clone()))
}

fn data(v: Value) -> Object {
    v.as_object().unwrap().clone()
}

const SECRET: &str = "0123456789abcdef0123456789abcdef-stack";

#[tokio::test]
async fn a_token_completes_the_wait_once() {
    let clock = ManualClock::new(T0);
    let runner = runner(key(SECRET), &clock);
    let exe = runner.create("approval", None, Some("ap-1")).await.unwrap();
    let token = exe.context["token"].as_str().unwrap().to_string();
    assert!(!token.contains("ap-1"), "the token is opaque: {token}");
    assert!(token
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)));

    let done = callback::complete(
        &key(SECRET),
        &token,
        data(json!({"reference": "R-9"})),
        T0 as i64 + 60,
    )
    .unwrap();
    assert_eq!(done.execution, "ap-1");
    assert_eq!(done.event.kind, "Confirmed");
    let exe = runner.process(&done.execution, &done.event).await.unwrap();
    assert_eq!(exe.status, Status::Done);
    assert_eq!(exe.active_path.as_deref(), Some("Approved"));

    // a second completion, or a failure after it, makes the same event id: answered the
    // same way, and absorbed as a repeat
    let again = callback::complete(
        &key(SECRET),
        &token,
        data(json!({"reference": "other"})),
        T0 as i64 + 61,
    )
    .unwrap();
    let failed = callback::fail(&key(SECRET), &token, "late", T0 as i64 + 62).unwrap();
    assert_eq!(again.event.id, done.event.id);
    assert_eq!(failed.event.id, done.event.id);
}

#[tokio::test]
async fn a_token_fails_the_wait_with_its_fail_event() {
    let clock = ManualClock::new(T0);
    let runner = runner(key(SECRET), &clock);
    let exe = runner.create("approval", None, Some("ap-2")).await.unwrap();
    let token = exe.context["token"].as_str().unwrap();
    let failed = callback::fail(&key(SECRET), token, "card declined", T0 as i64).unwrap();
    assert_eq!(failed.event.kind, "CallbackFailed");
    assert_eq!(json!(failed.event.data), json!({"error": "card declined"}));
    let exe = runner
        .process(&failed.execution, &failed.event)
        .await
        .unwrap();
    assert_eq!(exe.active_path.as_deref(), Some("Rejected"));
}

#[tokio::test]
async fn expiry_forgery_and_another_stack() {
    let clock = ManualClock::new(T0);
    let runner = runner(key(SECRET), &clock);
    let exe = runner.create("approval", None, Some("ap-3")).await.unwrap();
    let token = exe.context["token"].as_str().unwrap().to_string();
    let k = key(SECRET);

    // the ttl: valid at its last second, 410 after
    assert!(callback::open(&k, &token, T0 as i64 + 3600).is_ok());
    let e = callback::complete(&k, &token, Object::new(), T0 as i64 + 3601).unwrap_err();
    assert_eq!(e, Refusal::ExpiredToken(1));
    assert_eq!(e.status(), 410);

    // another stack's secret (a redeploy keeps the secret, so keeps the tokens)
    let e = callback::open(
        &key("another-stack-secret-0123456789abcdef"),
        &token,
        T0 as i64,
    )
    .unwrap_err();
    assert_eq!(e.status(), 401);
    assert!(callback::open(&key(SECRET), &token, T0 as i64).is_ok());

    // pointed at another execution: the claims are signed
    let (payload, sig) = token.split_once('.').unwrap();
    let mut claims: Claims =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    assert_eq!(claims.execution, "ap-3");
    claims.execution = "someone-elses".into();
    let moved = format!(
        "{}.{sig}",
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap())
    );
    assert_eq!(
        callback::open(&k, &moved, T0 as i64).unwrap_err().code(),
        "bad_token"
    );
    // a later expiry, same signature
    let mut later = claims.clone();
    later.execution = "ap-3".into();
    later.exp += 86_400;
    let extended = format!(
        "{}.{sig}",
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&later).unwrap())
    );
    assert_eq!(
        callback::open(&k, &extended, T0 as i64 + 4000)
            .unwrap_err()
            .code(),
        "bad_token"
    );
    // garbage and truncations
    for bad in [
        "",
        "x",
        "a.b",
        &token[..token.len() - 2],
        &format!("{token}x"),
        &token.replace('.', ""),
    ] {
        let e = callback::open(&k, bad, T0 as i64).unwrap_err();
        assert_eq!(e.status(), 401, "{bad:?}");
    }
    // a token made by this stack's key for claims the action never made is still honoured:
    // the key is the authority, so it must stay secret
    let minted = callback::issue(&k, &claims);
    assert_eq!(
        callback::open(&k, &minted, T0 as i64).unwrap().execution,
        "someone-elses"
    );
}

#[tokio::test]
async fn the_action_checks_its_inputs_and_a_retried_step_makes_the_same_event_id() {
    let clock = ManualClock::new(T0);
    let k = key(SECRET);
    let mut registry = ActionRegistry::new();
    callback::register(&mut registry, k.clone(), Arc::new(clock.clone()));
    let action = registry.get(callback::CALLBACK_TOKEN).unwrap();
    let call = |inputs: Value, idem: &'static str| {
        let action = action.clone();
        async move {
            let mut context = Object::new();
            let mut published = Vec::new();
            let out = action
                .call(
                    harel_runtime::ActionContext {
                        context: &mut context,
                        idempotency_key: idem,
                        execution_id: "e-1",
                        published: &mut published,
                        deadline: None,
                    },
                    None,
                    inputs.as_object().unwrap(),
                )
                .await;
            (out, context)
        }
    };
    let inputs = json!({"event": "Done", "into": "t", "ttl": 60, "fail_event": "Broken"});
    let (first, ctx) = call(inputs.clone(), "e-1:start:0:harel.lib.callback_token").await;
    let first = first.unwrap();
    assert_eq!(ctx["t"], first);
    let claims = callback::open(&k, first.as_str().unwrap(), T0 as i64).unwrap();
    assert_eq!(
        (
            claims.event.as_str(),
            claims.fail_event.as_str(),
            claims.exp
        ),
        ("Done", "Broken", T0 as i64 + 60)
    );
    let (retry, _) = call(inputs.clone(), "e-1:start:0:harel.lib.callback_token").await;
    let retried = callback::open(&k, retry.unwrap().as_str().unwrap(), T0 as i64).unwrap();
    assert_eq!(retried.event_id(), claims.event_id());
    let (other, _) = call(inputs, "e-1:evt-2:0:harel.lib.callback_token").await;
    let other = callback::open(&k, other.unwrap().as_str().unwrap(), T0 as i64).unwrap();
    assert_ne!(other.event_id(), claims.event_id());

    for (bad, message) in [
        (
            json!({"into": "t", "ttl": 5}),
            "harel.lib.callback_token needs the input \"event\"",
        ),
        (
            json!({"event": "E", "ttl": 5}),
            "harel.lib.callback_token needs the input \"into\"",
        ),
        (
            json!({"event": "E", "into": "t"}),
            "ttl must be a number of seconds above 0",
        ),
        (
            json!({"event": "E", "into": "t", "ttl": -1}),
            "ttl must be a number of seconds above 0",
        ),
        (
            json!({"event": 3, "into": "t", "ttl": 5}),
            "event must be a non-empty str, got int",
        ),
    ] {
        let (out, ctx) = call(bad, "k").await;
        assert_eq!(out.unwrap_err().message, message);
        assert!(ctx.is_empty());
    }
}

#[tokio::test]
async fn the_key_comes_from_configuration_and_is_long_enough() {
    assert!(CallbackKey::new(Secret::new("short", "t")).is_err());
    std::env::set_var("HAREL_CALLBACK_TEST_KEY", SECRET);
    std::env::set_var(callback::SECRET_VAR, "env:HAREL_CALLBACK_TEST_KEY");
    let k = CallbackKey::from_env(None).await.unwrap().unwrap();
    let shown = format!("{k:?}");
    assert!(
        !shown.contains(SECRET) && shown.contains("env:HAREL_CALLBACK_TEST_KEY"),
        "{shown}"
    );
    // the same secret makes the same key: a token survives a new process (a redeploy)
    let claims = Claims {
        execution: "e".into(),
        event: "E".into(),
        fail_event: "F".into(),
        exp: T0 as i64,
        nonce: "n".into(),
    };
    let token = callback::issue(&k, &claims);
    assert_eq!(callback::open(&key(SECRET), &token, 0).unwrap(), claims);
    std::env::set_var(callback::SECRET_VAR, "too-short");
    let e = CallbackKey::from_env(None).await.unwrap_err().to_string();
    assert!(
        e.starts_with(
            "secret HAREL_CALLBACK_SECRET: the callback secret must be at least 32 bytes"
        ),
        "{e}"
    );
    std::env::remove_var(callback::SECRET_VAR);
    assert!(CallbackKey::from_env(None).await.unwrap().is_none());
}
