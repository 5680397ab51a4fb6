//! One event from outside (a webhook's, a callback's) to an execution that exists: checked
//! as `POST /executions/{id}/events` checks an event, then enqueued. An execution that is
//! closed already is told apart from a repeat: if it processed this very event id, the
//! delivery is a repeat of one that arrived (answered as done, nothing enqueued); if not, it
//! came too late.

use harel_hooks::Refusal;
use harel_model::schema::check_event;
use harel_model::{Definition, Event, Execution};
use harel_queue::Transport;
use harel_store::ExecutionStore;

use crate::backend::Shared;
use crate::error::ApiError;
use crate::executions::{check_kind, refused_by_status, sent};

/// What became of the event.
#[derive(Debug)]
pub(crate) enum Delivered {
    /// Enqueued: the worker runs it (or absorbs it, if the same id was processed).
    Sent,
    /// The execution is closed and processed this event id already: nothing enqueued.
    Duplicate,
    /// The execution is closed and never processed it: nothing enqueued, the refusal says why.
    Closed(ApiError),
}

/// The event's kind and data, checked against the machine as the send route checks them.
pub(crate) fn check(defn: &Definition, event: &Event) -> Result<(), ApiError> {
    check_kind(defn, &event.kind)?;
    check_event(&defn.events, &event.kind, &event.data)
        .map_err(|e| ApiError::bad_request("invalid_event_data", e.to_string()))
}

/// Send `event` to `exe` when it takes events; see [`Delivered`].
pub(crate) async fn to_execution<S, T>(
    api: &Shared<S, T>,
    exe: &Execution,
    event: Event,
) -> Result<Delivered, ApiError>
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    if let Some(closed) = refused_by_status(&exe.id, exe.status, std::iter::once(&*event.kind)) {
        // one read, on this path only: the common one (a running execution) enqueues and
        // lets the worker's processed mark absorb a repeat
        return Ok(match api.store.is_processed(&exe.id, &event.id).await? {
            true => Delivered::Duplicate,
            false => Delivered::Closed(closed),
        });
    }
    let defn = api.definition_of(exe).await?;
    check(&defn, &event)?;
    api.sender
        .send(&exe.id, std::slice::from_ref(&event))
        .await
        .map_err(sent)?;
    Ok(Delivered::Sent)
}

/// A webhook's or a callback's refusal as the API answers it (401, 404, 400, 410).
pub(crate) fn refused(r: Refusal) -> ApiError {
    let status =
        axum::http::StatusCode::from_u16(r.status()).unwrap_or(axum::http::StatusCode::BAD_REQUEST);
    ApiError::new(status, r.code(), r.to_string())
}
