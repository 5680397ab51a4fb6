//! Request bodies: read up to the limit (413 past it) and parsed as JSON (400 with the line
//! and column where it breaks).

use axum::body::{to_bytes, Body, Bytes};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// SQS's message size limit: no body larger than one message could ever be enqueued.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// The body's bytes, refused `413` past [`MAX_BODY_BYTES`].
pub async fn read(body: Body) -> Result<Bytes, ApiError> {
    to_bytes(body, MAX_BODY_BYTES).await.map_err(|_| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the body is over {MAX_BODY_BYTES} bytes (SQS's message limit)"),
        )
    })
}

/// `bytes` as `T`: a syntax error is `malformed_json` with its position, a well-formed body
/// of the wrong shape `invalid_body` with what is wrong.
pub fn json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| {
        let (line, column) = (e.line(), e.column());
        match e.classify() {
            serde_json::error::Category::Data => {
                ApiError::bad_request("invalid_body", e.to_string())
            }
            _ => ApiError::bad_request(
                "malformed_json",
                format!("malformed JSON at line {line} column {column}: {e}"),
            ),
        }
    })
}

/// A JSON object read as `T`: anything but an object (serde would read a struct from an
/// array too) is `invalid_body`.
pub fn object<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    match json::<serde_json::Value>(bytes)? {
        v @ serde_json::Value::Object(_) => serde_json::from_value(v)
            .map_err(|e| ApiError::bad_request("invalid_body", e.to_string())),
        _ => Err(ApiError::bad_request(
            "invalid_body",
            "the body must be a JSON object",
        )),
    }
}

/// [`object`], with an empty body read as `{}` (the control routes take an optional one).
/// Only no bytes at all is "no body": whitespace alone is not JSON, and is refused as any
/// other body that does not parse (schemathesis sent `\n` and found it accepted).
pub fn object_or_empty<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.is_empty() {
        object(b"{}")
    } else {
        object(bytes)
    }
}

/// For an optional field: absent is `None` (with `#[serde(default)]`), but an explicit
/// `null` is refused like any other value of the wrong type.
pub fn not_null<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}
