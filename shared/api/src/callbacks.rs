//! `POST /callbacks/{token}` (`{"data"?}`) and `POST /callbacks/{token}/fail`
//! (`{"error"?}`): an external system completes or fails the wait a
//! `harel.lib.callback_token` began. The token is opened with the stack's callback key
//! (`harel_hooks::callback`), then its event goes to its execution like any sent event.
//!
//! Single use, answered idempotently (docs/src/callbacks.md): whichever way and however often a
//! token is used, its event has the id `cb:{nonce}`. While the execution runs, a repeat is
//! enqueued and absorbed by the queue's dedupe and the worker's processed mark (`202
//! accepted`); once it is closed, a repeat of a delivered event is `202 duplicate` with the
//! same event id, and a token whose event never arrived is `409 execution_closed`.
//! Refusals: `401 bad_token` (forged, altered, another stack's), `410 token_expired`,
//! `404 unknown_execution`.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use harel_hooks::{callback, CallbackKey, Completion};
use harel_model::Object;
use harel_queue::Transport;
use harel_store::ExecutionStore;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::backend::Shared;
use crate::body;
use crate::deliver::{self, Delivered};
use crate::error::ApiError;

type Answer = Result<(StatusCode, Json<Value>), ApiError>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompleteBody {
    /// The event's data (checked against its declared fields).
    #[serde(default, deserialize_with = "body::not_null")]
    data: Option<Object>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FailBody {
    /// Why it failed: the fail event's `error`.
    #[serde(default, deserialize_with = "body::not_null")]
    error: Option<String>,
}

/// What a failure says when the caller gives no reason (as `harel callback fail`).
const DEFAULT_ERROR: &str = "failed";

fn key<S, T>(api: &Shared<S, T>) -> Result<&CallbackKey, ApiError> {
    api.ingress.callback_key.as_ref().ok_or_else(|| {
        ApiError::not_found(
            "callbacks_not_configured",
            "this API has no callback secret (HAREL_CALLBACK_SECRET, harel serve --callback-secret)",
        )
    })
}

fn now<S, T>(api: &Shared<S, T>) -> i64 {
    api.driver.now().floor() as i64
}

pub(crate) async fn complete<S, T>(
    State(api): State<Shared<S, T>>,
    Path(token): Path<String>,
    raw: Body,
) -> Answer
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    let key = key(&api)?;
    // the token first: a forged or expired one is refused whatever its body
    callback::open(key, &token, now(&api)).map_err(deliver::refused)?;
    let request: CompleteBody = body::object_or_empty(&body::read(raw).await?)?;
    let completion = callback::complete(key, &token, request.data.unwrap_or_default(), now(&api))
        .map_err(deliver::refused)?;
    deliver_completion(&api, completion).await
}

pub(crate) async fn fail<S, T>(
    State(api): State<Shared<S, T>>,
    Path(token): Path<String>,
    raw: Body,
) -> Answer
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    let key = key(&api)?;
    callback::open(key, &token, now(&api)).map_err(deliver::refused)?;
    let request: FailBody = body::object_or_empty(&body::read(raw).await?)?;
    let error = request.error.unwrap_or_else(|| DEFAULT_ERROR.to_string());
    let completion = callback::fail(key, &token, &error, now(&api)).map_err(deliver::refused)?;
    deliver_completion(&api, completion).await
}

async fn deliver_completion<S, T>(api: &Shared<S, T>, completion: Completion) -> Answer
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    let Completion { execution, event } = completion;
    let exe = api.execution(&execution).await?;
    let (id, kind) = (event.id.clone(), event.kind.clone());
    let status = match deliver::to_execution(api, &exe, event).await? {
        Delivered::Sent => "accepted",
        Delivered::Duplicate => "duplicate",
        Delivered::Closed(why) => {
            return Err(ApiError::conflict(
                "execution_closed",
                format!("{}: the token's event never arrived", why.message),
            ))
        }
    };
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"status": status, "execution": exe.id, "event": {"id": id, "kind": kind}})),
    ))
}
