//! The console's HTML: one layout, escaping, the answers every page gives (a page, an error
//! page) and the few pieces several pages share (a JSON tree, a status badge).
//! Server-rendered strings: no template engine to learn or ship.

use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use serde_json::Value;

pub const CSS: &str = include_str!("console.css");
pub const JS: &str = include_str!("console.js");

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// A URL query value or path segment, percent-encoded.
pub fn url(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A whole page.
pub fn page(title: &str, body: &str) -> String {
    format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{} · harel console</title><link rel="stylesheet" href="/assets/console.css"><script src="/assets/console.js" defer></script></head><body><nav><a href="/" class="brand">harel</a><a href="/">executions</a><a href="/machines">machines</a><a href="/dead-letters">dead letters</a></nav><main>{body}</main></body></html>"#,
        esc(title)
    )
}

/// A page with `body` under the layout.
pub fn ok(title: &str, body: String) -> Response {
    Html(page(title, &body)).into_response()
}

/// An error page: what went wrong, with the status that says so.
pub fn failure(status: StatusCode, title: &str, text: &str) -> Response {
    let body = format!(
        "<h1>{}</h1>{}<p><a href=\"/\">back to the executions</a></p>",
        esc(title),
        notice("error", text)
    );
    (status, Html(page(title, &body))).into_response()
}

pub fn not_found(text: &str) -> Response {
    failure(StatusCode::NOT_FOUND, "Not found", text)
}

/// A store or queue request that failed.
pub fn aws_error(e: impl std::fmt::Display) -> Response {
    failure(
        StatusCode::BAD_GATEWAY,
        "AWS error",
        &format!("{e:#} ({})", crate::commands::stack::AWS_HINT),
    )
}

pub async fn no_such_page() -> Response {
    not_found("No such page.")
}

pub async fn css() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], CSS).into_response()
}

pub async fn js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        JS,
    )
        .into_response()
}

pub fn badge(status: &str) -> String {
    format!(
        r#"<span class="badge {}">{}</span>"#,
        esc(&status.to_lowercase()),
        esc(status)
    )
}

/// A message box (`kind`: ok, error, note).
pub fn notice(kind: &str, text: &str) -> String {
    format!(r#"<p class="notice {kind}">{}</p>"#, esc(text))
}

/// JSON as nested `<details>`: objects and arrays fold, the top level open.
pub fn json_tree(value: &Value) -> String {
    let mut out = String::new();
    tree(value, None, true, &mut out);
    out
}

fn tree(value: &Value, key: Option<&str>, open: bool, out: &mut String) {
    let key_html = key
        .map(|k| format!(r#"<span class="key">{}</span>: "#, esc(k)))
        .unwrap_or_default();
    let children: Vec<(String, &Value)> = match value {
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect(),
        scalar => {
            out.push_str(&format!(
                r#"<div class="leaf">{key_html}<span class="val">{}</span></div>"#,
                esc(&scalar.to_string())
            ));
            return;
        }
    };
    let (open_b, close_b) = if value.is_object() {
        ("{", "}")
    } else {
        ("[", "]")
    };
    out.push_str(&format!(
        r#"<details class="json"{}><summary>{key_html}{open_b}{} {}{close_b}</summary>"#,
        if open { " open" } else { "" },
        children.len(),
        if value.is_object() { "keys" } else { "items" },
    ));
    for (k, v) in &children {
        tree(v, Some(k), false, out);
    }
    out.push_str("</details>");
}

/// `key=value` pairs of a form body or query, repeated keys kept.
pub fn pairs(raw: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(raw).into_owned().collect()
}

pub fn first<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, v)| k == key && !v.is_empty())
        .map(|(_, v)| v.as_str())
}

pub fn all<'a>(pairs: &'a [(String, String)], key: &str) -> Vec<&'a str> {
    pairs
        .iter()
        .filter(|(k, v)| k == key && !v.is_empty())
        .map(|(_, v)| v.as_str())
        .collect()
}

/// Hidden inputs carrying `pairs` (a confirmation form re-posts what was asked).
pub fn hidden(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| {
            format!(
                r#"<input type="hidden" name="{}" value="{}">"#,
                esc(k),
                esc(v)
            )
        })
        .collect()
}
