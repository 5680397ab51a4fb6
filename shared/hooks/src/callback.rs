//! Callback tokens: wait for an external system. `harel.lib.callback_token` puts a token
//! into the context; whoever holds it completes the wait (`POST /callbacks/{token}`, the
//! token's event with `{"data"}`) or fails it (`POST /callbacks/{token}/fail`, the token's
//! fail event with `{"error"}`).
//!
//! A token is `base64url(claims) "." base64url(HMAC-SHA256)`: the claims (execution id,
//! event kinds, expiry, nonce) are signed with the stack's callback secret
//! (`HAREL_CALLBACK_SECRET`, kept outside the deployment so tokens survive a redeploy), so it
//! cannot be forged or changed to name another execution.
//!
//! Single use, answered idempotently: the event a token delivers has the id `cb:{nonce}`,
//! the same for a completion and a failure and for every repeat, so the first one the worker
//! processes wins and every later one (a retry, a second completion, a failure after a
//! completion) is absorbed by the queue's dedupe and the execution's processed-event marks.
//! No table of spent tokens is needed; a repeat is answered 202 with the same event id.

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use harel_model::pyrepr::py_type_name;
use harel_model::{Event, Object};
use harel_remote::{AwsReader, HeaderSource};
use harel_runtime::{ActionError, ActionRegistry, Clock};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2_11::Digest;
use subtle::ConstantTimeEq;

use crate::refusal::Refusal;
use crate::secret::{Secret, SecretError, SecretSource};
use crate::signature::{mac, Algorithm};

/// The action's name.
pub const CALLBACK_TOKEN: &str = "harel.lib.callback_token";
/// The kind a failure is delivered as unless the action names another (`fail_event`).
pub const DEFAULT_FAIL_EVENT: &str = "CallbackFailed";
/// The configuration variable holding the secret (or its `env:`/`ssm:`/`secretsmanager:`
/// reference).
pub const SECRET_VAR: &str = "HAREL_CALLBACK_SECRET";
/// The shortest secret accepted, bytes.
pub const MIN_SECRET_LEN: usize = 32;
/// What the MAC covers besides the claims: a token is never valid as anything else.
const DOMAIN: &[u8] = b"harel-callback-v1.";

/// The stack's callback secret. `Debug` never shows it.
#[derive(Clone, Debug)]
pub struct CallbackKey(Secret);

impl CallbackKey {
    /// The key of `secret`; refused (the message says why) when it is shorter than
    /// [`MIN_SECRET_LEN`] bytes.
    pub fn new(secret: Secret) -> Result<CallbackKey, String> {
        if secret.bytes().len() < MIN_SECRET_LEN {
            return Err(format!(
                "the callback secret must be at least {MIN_SECRET_LEN} bytes (e.g. `openssl rand -hex 32`)"
            ));
        }
        Ok(CallbackKey(secret))
    }

    /// The key named by `HAREL_CALLBACK_SECRET` (None: not configured, or set empty as a
    /// template leaves it), read once.
    pub async fn from_env(reader: Option<&AwsReader>) -> Result<Option<CallbackKey>, SecretError> {
        match std::env::var(SECRET_VAR) {
            Ok(text) if !text.trim().is_empty() => {
                CallbackKey::read(&text, SECRET_VAR, reader).await.map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The key `text` gives: the secret itself, or its `env:`/`ssm:`/`secretsmanager:`
    /// reference, read now. `origin` names where the text came from (a variable, a flag) in
    /// errors; a literal secret is never shown.
    pub async fn read(
        text: &str,
        origin: &str,
        reader: Option<&AwsReader>,
    ) -> Result<CallbackKey, SecretError> {
        let named = |message: String| SecretError {
            reference: origin.to_string(),
            message,
        };
        let source = SecretSource::parse(text).map_err(named)?;
        let shown = match &source.0 {
            HeaderSource::Literal(_) => origin.to_string(),
            other => other.reference().unwrap_or_default(),
        };
        let secret = source.read(reader).await?;
        CallbackKey::new(Secret::new(secret.bytes().to_vec(), shown)).map_err(named)
    }

    fn sign(&self, payload: &str) -> Vec<u8> {
        mac(
            Algorithm::Sha256,
            self.0.bytes(),
            &[DOMAIN, payload.as_bytes()],
        )
    }
}

/// What a token says, signed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// The execution the events go to.
    #[serde(rename = "x")]
    pub execution: String,
    /// The kind a completion delivers.
    #[serde(rename = "e")]
    pub event: String,
    /// The kind a failure delivers.
    #[serde(rename = "f")]
    pub fail_event: String,
    /// Epoch seconds after which the token is refused (410).
    pub exp: i64,
    /// Unique per issuing step: the delivered events' id is made from it.
    #[serde(rename = "n")]
    pub nonce: String,
}

impl Claims {
    /// The id of the event this token delivers, whichever way it is completed.
    pub fn event_id(&self) -> String {
        format!("cb:{}", self.nonce)
    }
}

/// Make the token for `claims`.
pub fn issue(key: &CallbackKey, claims: &Claims) -> String {
    let json = serde_json::to_vec(claims).expect("claims always serialize");
    let payload = URL_SAFE_NO_PAD.encode(json);
    let sig = URL_SAFE_NO_PAD.encode(key.sign(&payload));
    format!("{payload}.{sig}")
}

/// The claims of a token this stack made and that has not expired at `now`.
pub fn open(key: &CallbackKey, token: &str, now: i64) -> Result<Claims, Refusal> {
    let forged = |why: &str| Refusal::BadToken(why.to_string());
    let (payload, sig) = token
        .split_once('.')
        .ok_or_else(|| forged("not a callback token"))?;
    let given = URL_SAFE_NO_PAD
        .decode(sig)
        .map_err(|_| forged("not a callback token"))?;
    let expected = key.sign(payload);
    if expected.len() != given.len() || !bool::from(expected.ct_eq(&given)) {
        return Err(forged("the signature does not match"));
    }
    let claims: Claims = URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|json| serde_json::from_slice(&json).ok())
        .ok_or_else(|| forged("unreadable claims"))?;
    if now > claims.exp {
        return Err(Refusal::ExpiredToken(now - claims.exp));
    }
    Ok(claims)
}

/// An event for an execution, from a token.
#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    /// The execution the token was made for.
    pub execution: String,
    /// The event to send it: the token's kind with the caller's data ([`complete`]), or its
    /// fail kind with `{"error": ...}` ([`fail`]); one id per token, so a repeat is absorbed.
    pub event: Event,
}

/// `POST /callbacks/{token}` `{"data": {...}}`: the token's event with `data`.
pub fn complete(
    key: &CallbackKey,
    token: &str,
    data: Object,
    now: i64,
) -> Result<Completion, Refusal> {
    let claims = open(key, token, now)?;
    Ok(Completion {
        event: Event::new(claims.event.as_str())
            .with_id(claims.event_id())
            .with_data(data),
        execution: claims.execution,
    })
}

/// `POST /callbacks/{token}/fail` `{"error": "..."}`: the token's fail event, its data
/// `{"error": error}`.
pub fn fail(key: &CallbackKey, token: &str, error: &str, now: i64) -> Result<Completion, Refusal> {
    let claims = open(key, token, now)?;
    let mut data = Object::new();
    data.insert("error".into(), Value::String(error.to_string()));
    Ok(Completion {
        event: Event::new(claims.fail_event.as_str())
            .with_id(claims.event_id())
            .with_data(data),
        execution: claims.execution,
    })
}

fn string_input(inputs: &Object, key: &str, default: Option<&str>) -> Result<String, ActionError> {
    match inputs.get(key) {
        None | Some(Value::Null) => default.map(str::to_string).ok_or_else(|| {
            ActionError::new(
                "TypeError",
                format!("{CALLBACK_TOKEN} needs the input {key:?}"),
            )
        }),
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(other) => Err(ActionError::new(
            "TypeError",
            format!("{key} must be a non-empty str, got {}", py_type_name(other)),
        )),
    }
}

/// Bind `harel.lib.callback_token` with the stack's key and the runner's clock.
///
/// Inputs: `event` (the kind a completion delivers), `into` (the context key), `ttl`
/// (seconds, > 0), `fail_event` (default `CallbackFailed`). Deterministic for a step but
/// for the expiry: the nonce is a digest of the step's idempotency key (the same on every
/// attempt of the step), so a retried step makes a token for the same event id.
pub fn register(registry: &mut ActionRegistry, key: CallbackKey, clock: Arc<dyn Clock>) {
    registry.register_fn(CALLBACK_TOKEN, move |ctx, _event, inputs| {
        let event = string_input(inputs, "event", None)?;
        let into = string_input(inputs, "into", None)?;
        let fail_event = string_input(inputs, "fail_event", Some(DEFAULT_FAIL_EVENT))?;
        let ttl = match inputs.get("ttl") {
            Some(Value::Number(n)) => n.as_f64().filter(|t| *t > 0.0 && t.is_finite()),
            _ => None,
        }
        .ok_or_else(|| ActionError::new("ValueError", "ttl must be a number of seconds above 0"))?;
        let digest = sha2_11::Sha256::digest(ctx.idempotency_key.as_bytes());
        let claims = Claims {
            execution: ctx.execution_id.to_string(),
            event,
            fail_event,
            exp: (clock.now() + ttl).ceil() as i64,
            nonce: hex::encode(&digest[..16]),
        };
        let token = issue(&key, &claims);
        ctx.context.insert(into, Value::String(token.clone()));
        Ok(Value::String(token))
    });
}
