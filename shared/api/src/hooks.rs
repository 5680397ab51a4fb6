//! `POST /hooks/{name}`: a provider's webhook delivery, verified and mapped by the hooks file
//! (`harel_hooks::Hooks::handle`), then enqueued to its execution. The signature comes first:
//! nothing is read from a body that does not verify, and a refused delivery enqueues nothing.
//!
//! | what | answer |
//! | --- | --- |
//! | enqueued (a create too, when the hook creates and the execution does not exist) | 202 `accepted` |
//! | the execution is closed and processed this event id already (a retry) | 202 `duplicate` |
//! | the file does not route the event, or its execution is closed | 200 `ignored` + reason |
//! | no such hook, no hooks file | 404 `unknown_hook` |
//! | missing, wrong or stale signature | 401 |
//! | a body the hook cannot map, an event the machine refuses | 400 |
//! | no such execution (and no `create`) | 404 `unknown_execution` (the provider retries) |
//!
//! Every delivery is counted by outcome ([`crate::ingress::HookMetrics`]).

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use harel_hooks::{Create, Delivery, Outcome};
use harel_queue::Transport;
use harel_runtime::admission::create_context;
use harel_runtime::sender::{check_execution_id, create_message, event_messages};
use harel_store::ExecutionStore;
use serde_json::{json, Value};

use crate::backend::Shared;
use crate::body;
use crate::deliver::{self, Delivered};
use crate::error::ApiError;
use crate::executions::sent;
use crate::ingress::{HookOutcome, UNKNOWN_HOOK};

type Answer = Result<(StatusCode, Json<Value>), ApiError>;

pub(crate) async fn deliver<S, T>(
    State(api): State<Shared<S, T>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    raw: Body,
) -> Answer
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    let answer = handle(&api, &name, &headers, raw).await;
    let (outcome, reason) = match &answer {
        Ok((_, Json(doc))) if doc["status"] == "ignored" => (
            HookOutcome::Ignored,
            doc["reason"].as_str().map(str::to_string),
        ),
        Ok(_) => (HookOutcome::Delivered, None),
        Err(e) => (
            HookOutcome::Refused,
            Some(format!("{}: {}", e.code, e.message)),
        ),
    };
    match outcome {
        HookOutcome::Delivered => tracing::info!(hook = %name, "webhook delivered"),
        // the reason names the provider's event type or the header that failed, never a
        // secret or a signature
        _ => {
            tracing::warn!(hook = %name, outcome = outcome.as_str(), reason = reason.as_deref().unwrap_or(""), "webhook not delivered")
        }
    }
    // the name is the caller's: one that names no hook is counted under one name, so random
    // paths cannot mint metric dimensions
    let known = api
        .ingress
        .hooks
        .as_ref()
        .is_some_and(|h| h.names().any(|n| n == name));
    let counted = if known { name.as_str() } else { UNKNOWN_HOOK };
    api.ingress
        .metrics
        .record(counted, outcome, reason.as_deref());
    answer
}

async fn handle<S, T>(api: &Shared<S, T>, name: &str, headers: &HeaderMap, raw: Body) -> Answer
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    let hooks = api.ingress.hooks.as_ref().ok_or_else(|| {
        ApiError::not_found(
            "unknown_hook",
            format!("no hook named {name:?}: no hooks file is configured (HAREL_HOOKS_FILE, harel serve --hooks)"),
        )
    })?;
    let bytes = body::read(raw).await?;
    let now = api.driver.now().floor() as i64;
    let (create, delivery) = match hooks
        .handle(name, headers, &bytes, now)
        .map_err(deliver::refused)?
    {
        Outcome::Ignored {
            provider_kind,
            reason,
            ..
        } => return Ok(ignored(name, provider_kind.as_deref(), None, &reason)),
        Outcome::Deliver(d) => (None, d),
        Outcome::CreateAndDeliver(c, d) => (Some(c), d),
    };
    check_execution_id(&delivery.execution).map_err(|e| {
        ApiError::bad_request(
            "invalid_id",
            format!("hook {name}: the execution id in the payload: {e}"),
        )
    })?;
    match api.store.load(&delivery.execution).await? {
        Some(exe) => {
            let Delivery {
                event,
                provider_kind,
                ..
            } = delivery;
            let kind = event.kind.clone();
            let id = event.id.clone();
            match deliver::to_execution(api, &exe, event).await? {
                Delivered::Sent => Ok(accepted(name, &exe.id, &id, &kind, false, "accepted")),
                Delivered::Duplicate => {
                    Ok(accepted(name, &exe.id, &id, &kind, false, "duplicate"))
                }
                // acknowledged: the provider retrying would change nothing
                Delivered::Closed(why) => Ok(ignored(
                    name,
                    Some(&provider_kind),
                    Some(&exe.id),
                    &why.message,
                )),
            }
        }
        None => match create {
            Some(create) => create_and_deliver(api, name, create, delivery).await,
            None => Err(ApiError::not_found(
                "unknown_execution",
                format!(
                    "no execution {:?} (hook {name} does not create one): a provider retries, so one being created is delivered to later",
                    delivery.execution
                ),
            )),
        },
    }
}

/// The hook's `create` for an execution that does not exist yet, checked as `POST
/// /executions` checks one, then its first event: one batch, in order, on its group.
async fn create_and_deliver<S, T>(
    api: &Shared<S, T>,
    name: &str,
    create: Create,
    delivery: Delivery,
) -> Answer
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    let machine = create.machine.as_str();
    let defn = api.driver.definition(machine).ok_or_else(|| {
        ApiError::not_found(
            "unknown_machine",
            format!("hook {name} creates machine {machine:?}, which is not deployed"),
        )
    })?;
    create_context(defn, &create.context)
        .map_err(|e| ApiError::bad_request("invalid_context", format!("machine {machine}: {e}")))?;
    deliver::check(defn, &delivery.event)?;
    let mut messages =
        vec![create_message(machine, create.context, &create.execution).map_err(sent)?];
    messages.extend(
        event_messages(&create.execution, std::slice::from_ref(&delivery.event)).map_err(sent)?,
    );
    api.sender
        .transport()
        .publish_batch(&messages)
        .await
        .map_err(sent)?;
    Ok(accepted(
        name,
        &create.execution,
        &delivery.event.id,
        &delivery.event.kind,
        true,
        "accepted",
    ))
}

fn accepted(
    hook: &str,
    execution: &str,
    event_id: &str,
    kind: &str,
    created: bool,
    status: &str,
) -> (StatusCode, Json<Value>) {
    (
        StatusCode::ACCEPTED,
        Json(json!({
            "status": status,
            "hook": hook,
            "execution": execution,
            "event": {"id": event_id, "kind": kind},
            "created": created,
        })),
    )
}

fn ignored(
    hook: &str,
    provider_kind: Option<&str>,
    execution: Option<&str>,
    reason: &str,
) -> (StatusCode, Json<Value>) {
    (
        StatusCode::OK,
        Json(json!({
            "status": "ignored",
            "hook": hook,
            "provider_kind": provider_kind,
            "execution": execution,
            "reason": reason,
        })),
    )
}
