//! The API's contract, `openapi.yaml` at the repository's root, served as written and as
//! JSON. A test checks it against the router (every route and method in both).

use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use std::sync::OnceLock;

/// The spec as written.
pub const OPENAPI_YAML: &str = include_str!("../../../openapi.yaml");

/// The spec as a JSON value (parsed once).
pub fn openapi() -> &'static serde_json::Value {
    static PARSED: OnceLock<serde_json::Value> = OnceLock::new();
    PARSED.get_or_init(|| {
        serde_yaml_ng::from_str(OPENAPI_YAML).expect("openapi.yaml parses (checked by a test)")
    })
}

pub(crate) async fn yaml() -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/yaml")], OPENAPI_YAML)
}

pub(crate) async fn json() -> impl IntoResponse {
    axum::Json(openapi().clone())
}
