//! `POST /executions/{id}/{cancel|terminate|suspend|resume|redrive}`: the control plane
//! (`harel-control`), a CAS write on the execution that takes effect at its next event
//! boundary; a cooperative cancel's `Cancel` is published at once (else the relay does).

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use harel_control::{ControlError, ControlOutcome};
use harel_model::Object;
use harel_queue::Transport;
use harel_store::{ExecutionStore, OutboxEntry};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::backend::Shared;
use crate::body;
use crate::error::ApiError;

type Answer = Result<(StatusCode, Json<Value>), ApiError>;

fn refused(id: &str, e: ControlError) -> ApiError {
    match e {
        ControlError::NotFound(_) => ApiError::unknown_execution(id),
        ControlError::Store(e) => e.into(),
        ControlError::InvalidArgument(m) | ControlError::RedriveRefused(m) => {
            ApiError::bad_request("refused", m)
        }
        other => ApiError::conflict("refused", other.to_string()),
    }
}

/// The outcome, after publishing what a cooperative cancel enqueued.
async fn answer<S, T>(api: &Shared<S, T>, id: &str, out: ControlOutcome) -> Answer
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    let mut published = false;
    if !out.enqueued.is_empty() {
        let entries: Vec<OutboxEntry> = out
            .enqueued
            .iter()
            .map(|e| OutboxEntry {
                seq: e.seq,
                target_id: Some(e.target_id.as_str().into()),
                event: e.event.clone(),
            })
            .collect();
        // committed already: a failure here leaves it to the relay, it is not lost
        match harel_runtime::delivery::queue::publish_outbox(
            &api.store,
            api.sender.transport(),
            &entries,
        )
        .await
        {
            Ok(_) => published = true,
            Err(e) => {
                tracing::warn!(error = %e, "the Cancel is committed; the relay will publish it")
            }
        }
    }
    if !out.contended.is_empty() {
        return Err(ApiError::conflict(
            "contended",
            format!(
                "{} kept changing under the {} ({} attempts lost to a concurrent writer): retry",
                out.contended.join(", "),
                out.command,
                harel_control::RETRIES
            ),
        ));
    }
    let status = api.execution(id).await?.status;
    let mut doc = serde_json::to_value(&out)
        .map_err(|e| ApiError::unavailable(format!("the outcome does not serialize: {e}")))?;
    if let Some(map) = doc.as_object_mut() {
        map.insert("changed".into(), json!(out.changed()));
        map.insert("status".into(), json!(status));
        map.insert("published".into(), json!(published));
    }
    Ok((StatusCode::OK, Json(doc)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CancelBody {
    /// The `Cancel` event's data (a guard such as `where reason == ...` may read it).
    #[serde(default, deserialize_with = "body::not_null")]
    reason: Option<Object>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RedriveBody {
    /// The leaf state to resume the FAILED execution at (its full path).
    to: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoBody {}

pub(crate) async fn cancel<S, T>(
    State(api): State<Shared<S, T>>,
    Path(id): Path<String>,
    raw: Body,
) -> Answer
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    let request: CancelBody = body::object_or_empty(&body::read(raw).await?)?;
    let exe = api.execution(&id).await?;
    let defn = api.definition_of(&exe).await?;
    let out = harel_control::cancel_with_reason(
        &api.store,
        &defn,
        &id,
        request.reason.unwrap_or_default(),
        api.driver.now(),
    )
    .await
    .map_err(|e| refused(&id, e))?;
    answer(&api, &id, out).await
}

pub(crate) async fn redrive<S, T>(
    State(api): State<Shared<S, T>>,
    Path(id): Path<String>,
    raw: Body,
) -> Answer
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    let request: RedriveBody = body::object(&body::read(raw).await?)?;
    let exe = api.execution(&id).await?;
    let defn = api.definition_of(&exe).await?;
    let out = harel_control::redrive(&api.store, &defn, &id, &request.to, api.driver.now())
        .await
        .map_err(|e| refused(&id, e))?;
    answer(&api, &id, out).await
}

macro_rules! plain_command {
    ($name:ident) => {
        pub(crate) async fn $name<S, T>(
            State(api): State<Shared<S, T>>,
            Path(id): Path<String>,
            raw: Body,
        ) -> Answer
        where
            S: ExecutionStore + 'static,
            T: Transport + 'static,
        {
            let _: NoBody = body::object_or_empty(&body::read(raw).await?)?;
            api.execution(&id).await?;
            let out = harel_control::$name(&api.store, &id, api.driver.now())
                .await
                .map_err(|e| refused(&id, e))?;
            answer(&api, &id, out).await
        }
    };
}

plain_command!(terminate);
plain_command!(suspend);
plain_command!(resume);
