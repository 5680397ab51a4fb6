//! `POST /executions`, `POST /executions/{id}/events`, `GET /executions/{id}`,
//! `GET /executions`: create, send, show and list, each checked as the worker would check it
//! before anything is enqueued.

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use harel_model::schema::{check_event, is_reserved_event};
use harel_model::{Definition, Event, Object, Status};
use harel_queue::{Transport, TransportError};
use harel_runtime::admission::{create_context, gate, Gate};
use harel_runtime::sender::{check_execution_id, id_from_key};
use harel_store::listing::Cursor;
use harel_store::{ExecutionStore, ListQuery};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::backend::Shared;
use crate::body;
use crate::error::ApiError;

/// The header that makes a create or a send safe to repeat.
pub(crate) const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// Events per request: what one request may enqueue.
pub(crate) const MAX_EVENTS: usize = 100;
/// The listing's page size when none is asked, and its ceiling.
pub(crate) const DEFAULT_LIMIT: usize = 50;
pub(crate) const MAX_LIMIT: usize = 1000;

type Answer = Result<(StatusCode, Json<Value>), ApiError>;

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    match headers.get(IDEMPOTENCY_KEY) {
        None => Ok(None),
        Some(v) => match v.to_str() {
            Ok(k) if !k.is_empty() && k.len() <= 255 && k.bytes().all(|b| b.is_ascii_graphic()) => {
                Ok(Some(k.to_string()))
            }
            _ => Err(ApiError::bad_request(
                "invalid_idempotency_key",
                "Idempotency-Key must be 1 to 255 visible ASCII characters",
            )),
        },
    }
}

pub(crate) fn sent(e: TransportError) -> ApiError {
    match e {
        TransportError::InvalidGroup(_) => ApiError::bad_request("invalid_id", e.to_string()),
        e => {
            tracing::error!(error = %e, "the queue refused the messages");
            ApiError::unavailable(format!("the queue failed: {e}"))
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    machine: String,
    #[serde(default, deserialize_with = "body::not_null")]
    id: Option<String>,
    #[serde(default, deserialize_with = "body::not_null")]
    context: Option<Object>,
}

/// `POST /executions`: `{"machine", "id"?, "context"?}` -> `202 {"id", "machine", "version"}`.
///
/// With an `Idempotency-Key` and no `id`, the id is derived from the key, so a repeat names
/// the same execution: once it exists the repeat is answered from the store and nothing is
/// enqueued; before the worker has created it, the repeat's create message carries the same
/// deduplication id and SQS drops it.
pub(crate) async fn create<S, T>(
    State(api): State<Shared<S, T>>,
    headers: HeaderMap,
    raw: Body,
) -> Answer
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    let key = idempotency_key(&headers)?;
    let bytes = body::read(raw).await?;
    let request: CreateBody = body::object(&bytes)?;
    let machine = request.machine.as_str();
    let defn = api.driver.definition(machine).ok_or_else(|| {
        ApiError::not_found(
            "unknown_machine",
            format!("no machine {machine:?} is deployed"),
        )
    })?;
    let context = request.context.unwrap_or_default();
    // what the worker checks when it creates it: refused here, it never reaches the queue
    create_context(defn, &context)
        .map_err(|e| ApiError::bad_request("invalid_context", format!("machine {machine}: {e}")))?;
    let id = match (&request.id, &key) {
        (Some(id), _) => id.clone(),
        (None, Some(key)) => id_from_key("create", key),
        (None, None) => harel_engine::ids::new_event_id().to_string(),
    };
    check_execution_id(&id).map_err(|e| ApiError::bad_request("invalid_id", e.to_string()))?;
    let version = api.driver.current_version(machine).map(str::to_string);
    if let Some(existing) = api.store.load(&id).await? {
        // a repeat of the same keyed request: answered, nothing enqueued
        if key.is_some() && existing.definition_id == machine {
            let version = existing.pinned_version().map(str::to_string).or(version);
            return Ok((
                StatusCode::ACCEPTED,
                Json(json!({"id": id, "machine": machine, "version": version})),
            ));
        }
        return Err(ApiError::conflict(
            "execution_exists",
            format!(
                "execution {id:?} already exists ({} machine {}): choose another id",
                existing.status, existing.definition_id
            ),
        ));
    }
    api.sender
        .create(machine, context, &id)
        .await
        .map_err(sent)?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"id": id, "machine": machine, "version": version})),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventBody {
    kind: String,
    #[serde(default, deserialize_with = "body::not_null")]
    data: Option<Object>,
    /// The event's id: the queue deduplicates on it (default: a fresh one, or one derived
    /// from the Idempotency-Key).
    #[serde(default, deserialize_with = "body::not_null")]
    id: Option<String>,
}

/// Whether `defn` takes events of `kind`: a machine that declares its events takes those and
/// the engine's own; one that declares none takes any (harel leaves them unchecked).
pub(crate) fn check_kind(defn: &Definition, kind: &str) -> Result<(), ApiError> {
    if kind.is_empty() || kind.contains(':') {
        return Err(ApiError::bad_request(
            "invalid_event",
            format!("event kind {kind:?}: a name without ':' is required"),
        ));
    }
    if defn.events.is_empty() || defn.events.contains_key(kind) || is_reserved_event(kind) {
        return Ok(());
    }
    let declared: Vec<&str> = defn.events.keys().map(String::as_str).collect();
    Err(ApiError::bad_request(
        "undeclared_event",
        format!(
            "machine {} does not declare event {kind:?} (it declares {})",
            defn.id,
            declared.join(", ")
        ),
    ))
}

/// `POST /executions/{id}/events`: one `{"kind", "data"?, "id"?}` or a list of them, sent in
/// order -> `202 {"id", "events": [{"id", "kind"}]}`.
pub(crate) async fn send<S, T>(
    State(api): State<Shared<S, T>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    raw: Body,
) -> Answer
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    let key = idempotency_key(&headers)?;
    let bytes = body::read(raw).await?;
    let items = match body::json::<Value>(&bytes)? {
        v @ Value::Object(_) => vec![v],
        Value::Array(items) => items,
        _ => {
            return Err(ApiError::bad_request(
                "invalid_body",
                "the body must be an event {\"kind\", \"data\"?} or a list of them",
            ))
        }
    };
    let items = items
        .into_iter()
        .map(|item| match item {
            // serde would read an event from an array too
            v @ Value::Object(_) => serde_json::from_value::<EventBody>(v)
                .map_err(|e| ApiError::bad_request("invalid_body", format!("an event: {e}"))),
            _ => Err(ApiError::bad_request(
                "invalid_body",
                "an event must be a JSON object",
            )),
        })
        .collect::<Result<Vec<EventBody>, _>>()?;
    if items.is_empty() || items.len() > MAX_EVENTS {
        return Err(ApiError::bad_request(
            "invalid_body",
            format!("send 1 to {MAX_EVENTS} events per request"),
        ));
    }
    let exe = api.execution(&id).await?;
    refuse_closed(&exe.id, exe.status, items.iter().map(|e| e.kind.as_str()))?;
    let defn = api.definition_of(&exe).await?;
    let mut events = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        check_kind(&defn, &item.kind)?;
        let data = item.data.unwrap_or_default();
        check_event(&defn.events, &item.kind, &data)
            .map_err(|e| ApiError::bad_request("invalid_event_data", e.to_string()))?;
        let mut event = Event::new(item.kind.as_str()).with_data(data);
        event.id = match (item.id, &key) {
            (Some(given), _) => given.into(),
            (None, Some(key)) => id_from_key(&format!("event:{}:{i}", exe.id), key).into(),
            (None, None) => harel_engine::ids::new_event_id(),
        };
        events.push(event);
    }
    api.sender.send(&exe.id, &events).await.map_err(sent)?;
    let listed: Vec<Value> = events
        .iter()
        .map(|e| json!({"id": e.id, "kind": e.kind}))
        .collect();
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"id": exe.id, "events": listed})),
    ))
}

/// Events the worker would drop (or a DONE/FAILED execution's engine would ignore) are
/// refused `409` with the reason, rather than accepted and lost.
pub(crate) fn refused_by_status<'a>(
    id: &str,
    status: Status,
    mut kinds: impl Iterator<Item = &'a str>,
) -> Option<ApiError> {
    let why = match status {
        Status::Done => Some("execution is DONE".to_string()),
        Status::Failed => Some("execution is FAILED (redrive it first)".to_string()),
        _ => kinds.find_map(|kind| match gate(status, kind) {
            Gate::Skip(reason) => Some(reason.to_string()),
            Gate::Run | Gate::Park => None,
        }),
    }?;
    Some(ApiError::conflict(
        "execution_closed",
        format!("{id}: {why}: the worker would drop the events"),
    ))
}

fn refuse_closed<'a>(
    id: &str,
    status: Status,
    kinds: impl Iterator<Item = &'a str>,
) -> Result<(), ApiError> {
    refused_by_status(id, status, kinds).map_or(Ok(()), Err)
}

/// `GET /executions/{id}`: `{"execution": <harel's JSON>, "version", "timers": [...]}`.
pub(crate) async fn show<S, T>(State(api): State<Shared<S, T>>, Path(id): Path<String>) -> Answer
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    let exe = api.execution(&id).await?;
    let timers: Vec<Value> = api
        .store
        .armed_timers(&id)
        .await?
        .into_iter()
        .map(|t| json!({"execution_id": t.execution_id, "path": t.path, "fire_at": t.fire_at}))
        .collect();
    let document: Value = serde_json::from_str(&exe.to_json())
        .map_err(|e| ApiError::unavailable(format!("execution {id:?} does not serialize: {e}")))?;
    Ok((
        StatusCode::OK,
        Json(json!({"execution": document, "version": exe.pinned_version(), "timers": timers})),
    ))
}

/// `GET /executions?status=&machine=&limit=&cursor=`: one page through the listing index
/// (newest first): `{"items": [...], "next_cursor"}`. `status` takes a comma-separated list.
pub(crate) async fn list<S, T>(State(api): State<Shared<S, T>>, RawQuery(raw): RawQuery) -> Answer
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    let query = list_query(raw.as_deref().unwrap_or(""))?;
    let page = api.store.list_executions(&query).await?;
    Ok((
        StatusCode::OK,
        Json(json!({"items": page.items, "next_cursor": page.next_cursor})),
    ))
}

fn list_query(raw: &str) -> Result<ListQuery, ApiError> {
    let mut query = ListQuery {
        limit: DEFAULT_LIMIT,
        ..ListQuery::default()
    };
    let bad = |m: String| ApiError::bad_request("invalid_query", m);
    for (name, value) in form_urlencoded::parse(raw.as_bytes()) {
        match name.as_ref() {
            "status" => {
                let mut statuses = query.status.take().unwrap_or_default();
                for s in value.split(',').filter(|s| !s.is_empty()) {
                    statuses.push(s.parse::<Status>().map_err(|_| {
                        bad(format!("status {s:?}: one of PENDING, RUNNING, SUSPENDED, CANCELLING, DONE, FAILED, CANCELLED"))
                    })?);
                }
                query.status = Some(statuses);
            }
            "machine" => query.definition_id = Some(value.into_owned()),
            "limit" => {
                query.limit = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| bad(format!("limit {value:?}: 1 to {MAX_LIMIT}")))?
            }
            "cursor" => {
                Cursor::after(Some(&value), false)
                    .map_err(|e| ApiError::bad_request("invalid_cursor", e.to_string()))?;
                query.cursor = Some(value.into_owned());
            }
            other => {
                return Err(bad(format!(
                    "unknown parameter {other:?}: status, machine, limit and cursor are known"
                )))
            }
        }
    }
    if query.status.as_ref().is_some_and(Vec::is_empty) {
        query.status = None;
    }
    Ok(query)
}
