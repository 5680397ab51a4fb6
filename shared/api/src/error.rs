//! The API's error: `{"error": {"code": "...", "message": "..."}}` with a fitting status. Every
//! route answers its refusals with it, and routes added by other crates (webhooks, callbacks)
//! can too.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use harel_store::StoreError;
use serde_json::json;

/// A refusal or a failure, as the client sees it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ApiError {
    /// The HTTP status the response carries.
    pub status: StatusCode,
    /// A stable, machine-readable word (`unknown_machine`, `malformed_json`, ...).
    pub code: &'static str,
    /// What is wrong, for people.
    pub message: String,
}

impl ApiError {
    /// An error answered with `status`, the stable `code` and the human `message`.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    /// `400`: the request itself is wrong (malformed JSON, an invalid name or payload).
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// `404`: what the request names does not exist (an execution, a machine, a hook).
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }

    /// `409`: the request is well-formed but the target's state refuses it now (e.g. a closed
    /// execution, or a machine this deployment cannot load).
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    /// A backend (the store, the queue) failed: nothing the client can change; retry.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "backend_unavailable",
            message,
        )
    }

    /// `404 unknown_execution`: no execution `id` in the store.
    pub fn unknown_execution(id: &str) -> Self {
        Self::not_found("unknown_execution", format!("no execution {id:?}"))
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        tracing::error!(error = %e, "store request failed");
        ApiError::unavailable(format!("the execution store failed: {e}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        (self.status, Json(body)).into_response()
    }
}
