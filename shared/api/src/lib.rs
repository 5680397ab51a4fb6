//! The HTTP API (issue #25): create executions, send them events, read and list them, and
//! control them, as JSON over HTTP. One [`axum::Router`] over a [`Backend`] (a store, a
//! sender, the deployed machines): the `api` Lambda function serves it through `lambda_http`,
//! `harel serve` through hyper, so both answer the same routes from the same code.
//!
//! Everything a request asks is checked here, synchronously, with the worker's own rules
//! (`harel_runtime::admission`, `harel_model::schema`), before anything is enqueued: a
//! refusal enqueues nothing. Errors are `{"error": {"code", "message"}}` ([`ApiError`]).
//!
//! The outside world's routes are here too: `POST /hooks/{name}` (verified webhooks) and
//! `POST /callbacks/{token}[/fail]` (callback tokens), over `harel-hooks` and the
//! [`Ingress`] a backend is given (without one they answer 404).
//!
//! To add routes, build on [`routes`] and finish with `.with_state(backend)`, as [`router`]
//! does.

pub mod backend;
pub mod body;
mod callbacks;
mod control;
mod deliver;
pub mod error;
mod executions;
mod hooks;
pub mod ingress;
pub mod spec;

use std::sync::Arc;

use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use harel_queue::Transport;
use harel_store::ExecutionStore;

/// The axum this router is built with: routes added by other crates use the same one.
pub use axum;
pub use backend::{Backend, Shared};
pub use body::MAX_BODY_BYTES;
pub use error::ApiError;
pub use ingress::{HookCounts, HookMetrics, HookOutcome, Ingress, UNKNOWN_HOOK};

/// The API's routes, still wanting their state: add more, then `.with_state(backend)`.
pub fn routes<S, T>() -> Router<Shared<S, T>>
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    Router::new()
        .route(
            "/executions",
            post(executions::create::<S, T>).get(executions::list::<S, T>),
        )
        .route("/executions/{id}", get(executions::show::<S, T>))
        .route("/executions/{id}/events", post(executions::send::<S, T>))
        .route("/executions/{id}/cancel", post(control::cancel::<S, T>))
        .route(
            "/executions/{id}/terminate",
            post(control::terminate::<S, T>),
        )
        .route("/executions/{id}/suspend", post(control::suspend::<S, T>))
        .route("/executions/{id}/resume", post(control::resume::<S, T>))
        .route("/executions/{id}/redrive", post(control::redrive::<S, T>))
        .route("/hooks/{name}", post(hooks::deliver::<S, T>))
        .route("/callbacks/{token}", post(callbacks::complete::<S, T>))
        .route("/callbacks/{token}/fail", post(callbacks::fail::<S, T>))
        .route("/openapi.yaml", get(spec::yaml))
        .route("/openapi.json", get(spec::json))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
}

/// The API over `backend`, ready to serve.
pub fn router<S, T>(backend: Arc<Backend<S, T>>) -> Router
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
{
    routes().with_state(backend)
}

async fn not_found() -> ApiError {
    ApiError::not_found("no_route", "no such route (see /openapi.yaml)")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method (see /openapi.yaml)",
    )
}
