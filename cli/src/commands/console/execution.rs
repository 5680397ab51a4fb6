//! `/executions/{id}`: one execution, read by its keys only (the execution, its children,
//! their timers, its trace, its pinned version): the statechart with the active states
//! highlighted, refreshed every 2 s from `/executions/{id}/live`; status and facts; timers
//! with time left; children; the context as a JSON tree; the trace as a timeline; the forms
//! of the actions (`super::actions`).

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::response::{Html, IntoResponse, Response};
use harel_model::{Definition, Execution};
use harel_runtime::versions::{bundle_document, rebuild, version_of};
use harel_store::prelude::*;
use harel_store::DueTimer;
use serde_json::Value;

use super::html::{aws_error, badge, esc, first, json_tree, not_found, notice, ok, pairs, url};
use super::{Console, Shared};
use crate::commands::clock::{span, utc};

/// The execution's active states, its live regions' included (`harel render --active`).
pub fn active_paths(exe: &Execution, children: &[Execution]) -> Vec<String> {
    let mut out = Vec::new();
    let mut chain = |e: &Execution| {
        if let Some(path) = e.active_path.as_deref().filter(|p| !p.is_empty()) {
            let mut prefix = String::new();
            for part in path.split('.') {
                if !prefix.is_empty() {
                    prefix.push('.');
                }
                prefix.push_str(part);
                if !out.contains(&prefix) {
                    out.push(prefix.clone());
                }
            }
        }
    };
    chain(exe);
    for child in children {
        if child.definition_id == exe.definition_id && !child.status.is_finished() {
            chain(child);
        }
    }
    out
}

/// The definition an execution runs: its pinned version as the store keeps it (read once
/// per console: a version's content never changes), else the machine given with
/// `--machines`. `Err`: why it cannot be drawn or decided against.
pub async fn definition_of(c: &Console, exe: &Execution) -> Result<Definition, String> {
    let Some(version) = exe.pinned_version() else {
        return c
            .machines
            .get(
                &exe.definition_id,
                "the console draws it and decides with it",
            )
            .cloned()
            .map_err(|e| format!("{e:#}"));
    };
    let cached = c.versions.lock().ok().and_then(|v| v.get(version).cloned());
    let bundle = match cached {
        Some(bundle) => bundle,
        None => {
            let kept = c
                .backend
                .get_definition(version)
                .await
                .map_err(|e| format!("reading version {version}: {e}"))?
                .ok_or_else(|| {
                    format!(
                        "{} runs version {version} of {}, which the store does not keep",
                        exe.id, exe.definition_id
                    )
                })?;
            let bundle = Arc::new(rebuild(version, &kept.document).map_err(|e| e.to_string())?);
            if let Ok(mut v) = c.versions.lock() {
                v.insert(version.to_string(), Arc::clone(&bundle));
            }
            bundle
        }
    };
    bundle
        .machine_for(exe)
        .map(|d| d.as_ref().clone())
        .ok_or_else(|| format!("version {version} has no machine {}", exe.definition_id))
}

/// The version of a machine given with `--machines` (what a deploy of it would run).
pub fn given_version(defn: &Definition) -> Option<String> {
    bundle_document(defn).ok().map(|d| version_of(&d))
}

/// What an execution page shows, read once.
pub struct Loaded {
    pub exe: Execution,
    children: Vec<Execution>,
    timers: Vec<DueTimer>,
    defn: Result<Definition, String>,
}

/// The execution and what its page shows; a 404 page when there is none.
pub async fn load(c: &Console, id: &str) -> Result<Loaded, Response> {
    let exe = match c.backend.load(id).await {
        Ok(Some(exe)) => exe,
        Ok(None) => {
            return Err(not_found(&format!(
                "No execution {id:?} in {}.",
                c.backend.where_()
            )))
        }
        Err(e) => return Err(aws_error(e)),
    };
    let mut children = Vec::new();
    for cid in exe.children.keys() {
        match c.backend.load(cid).await {
            Ok(Some(child)) => children.push(child),
            // a child it lists but the store no longer has is left out
            Ok(None) => {}
            Err(e) => return Err(aws_error(e)),
        }
    }
    let mut timers = c.backend.armed_timers(&exe.id).await.map_err(aws_error)?;
    for child in &children {
        timers.extend(c.backend.armed_timers(&child.id).await.map_err(aws_error)?);
    }
    let defn = definition_of(c, &exe).await;
    Ok(Loaded {
        exe,
        children,
        timers,
        defn,
    })
}

/// The parts of an execution page that change: the chart, status, timers, children.
fn live_part(c: &Console, l: &Loaded) -> String {
    let exe = &l.exe;
    let mut out = String::new();
    let chart = match &l.defn {
        Ok(defn) => harel_lang::render::svg::render(defn, &active_paths(exe, &l.children))
            .unwrap_or_else(|e| notice("error", &e.to_string())),
        Err(why) => notice("error", &format!("cannot draw the machine: {why}")),
    };
    out.push_str(&format!(
        r#"<div class="grid"><div class="chart">{chart}</div><div>"#
    ));
    let status = match &exe.outcome {
        Some(o) => format!("{} outcome <b>{}</b>", badge(exe.status.as_str()), esc(o)),
        None => badge(exe.status.as_str()),
    };
    out.push_str(&format!(
        r#"<div class="panel"><dl class="facts"><dt>status</dt><dd id="status">{status}</dd><dt>machine</dt><dd><a href="/machines/{}">{}</a></dd><dt>version</dt><dd class="mono">{}</dd><dt>active</dt><dd class="mono" id="active">{}</dd><dt>events</dt><dd>{}</dd>"#,
        url(&exe.definition_id),
        esc(&exe.definition_id),
        esc(exe
            .pinned_version()
            .unwrap_or("none recorded (the deployed one)")),
        esc(exe.active_path.as_deref().unwrap_or("-")),
        exe.processed_events,
    ));
    if let Some(error) = &exe.error {
        out.push_str(&format!("<dt>error</dt><dd>{}</dd>", esc(error)));
    }
    if let Some(parent) = &exe.parent_id {
        out.push_str(&format!(
            r#"<dt>parent</dt><dd><a href="/executions/{}">{}</a></dd>"#,
            url(parent),
            esc(parent)
        ));
    }
    for (label, t) in [
        ("created", exe.created_at),
        ("updated", exe.updated_at),
        ("finished", exe.finished_at),
    ] {
        if let Some(t) = t {
            out.push_str(&format!("<dt>{label}</dt><dd>{}</dd>", utc(t)));
        }
    }
    out.push_str("</dl></div>");
    out.push_str("<div class=\"panel\"><h2>Timers</h2>");
    if l.timers.is_empty() {
        out.push_str("none armed");
    }
    let now = c.now();
    // the page's script counts down from the offset to this clock (the demo's runs ahead
    // of the wall clock by what its seed advanced)
    let skew = now - crate::commands::clock::now();
    for t in &l.timers {
        let left = if t.fire_at >= now {
            format!("in {}", span(t.fire_at - now))
        } else {
            format!("due {} ago", span(now - t.fire_at))
        };
        out.push_str(&format!(
            r#"<div><code>{}</code> {} <span data-fire-at="{}">{left}</span>{}</div>"#,
            esc(&t.path),
            utc(t.fire_at),
            t.fire_at - skew,
            if t.execution_id == exe.id {
                String::new()
            } else {
                format!(" ({})", esc(&t.execution_id))
            }
        ));
    }
    out.push_str("</div><div class=\"panel\"><h2>Children</h2>");
    if l.children.is_empty() {
        out.push_str("none");
    } else {
        out.push_str("<ul class=\"tree\">");
        for child in &l.children {
            out.push_str(&format!(
                r#"<li><a href="/executions/{}"><code>{}</code></a> {} <code>{}</code></li>"#,
                url(&child.id),
                esc(&child.id),
                badge(child.status.as_str()),
                esc(child.active_path.as_deref().unwrap_or("-"))
            ));
        }
        out.push_str("</ul>");
    }
    out.push_str("</div></div></div>");
    out
}

pub async fn live(State(c): Shared, Path(id): Path<String>) -> Response {
    match load(&c, &id).await {
        Ok(l) => Html(live_part(&c, &l)).into_response(),
        Err(r) => r,
    }
}

pub async fn page(State(c): Shared, Path(id): Path<String>, RawQuery(q): RawQuery) -> Response {
    let l = match load(&c, &id).await {
        Ok(l) => l,
        Err(r) => return r,
    };
    let q = pairs(q.unwrap_or_default().as_bytes());
    let exe = &l.exe;
    let mut body = format!(r#"<h1>Execution <code>{}</code></h1>"#, esc(&exe.id));
    if let Some(done) = first(&q, "done") {
        body.push_str(&notice("ok", done));
    }
    body.push_str(&super::actions::forms(&c, exe, l.defn.as_ref().ok()));
    body.push_str(&format!(
        r#"<p class="live">live: <span id="refreshed">refreshed every 2 s</span></p><div data-live="/executions/{}/live">{}</div>"#,
        url(&exe.id),
        live_part(&c, &l)
    ));
    let context = Value::Object(exe.context.clone());
    body.push_str(&format!(
        r#"<div class="panel"><h2>Context</h2>{}</div>"#,
        json_tree(&context)
    ));
    match c.backend.read_trace(&exe.id).await {
        Ok(steps) if !steps.is_empty() => {
            body.push_str("<div class=\"panel\"><h2>Trace</h2><div class=\"timeline\">");
            for step in &steps {
                // the trace's own names (harel's `event_kind`, `from_path`, `to_path`)
                let field = |k: &str| {
                    step.get(k)
                        .filter(|v| !v.is_null())
                        .map(|v| {
                            v.as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| v.to_string())
                        })
                        .unwrap_or_else(|| "-".into())
                };
                let at = step.get("timestamp").and_then(Value::as_f64);
                body.push_str(&format!(
                    "<div><b>{}</b> <code>{}</code> → <code>{}</code> <span class=\"live\">{}</span></div>",
                    esc(&field("event_kind")),
                    esc(&field("from_path")),
                    esc(&field("to_path")),
                    at.map(utc).unwrap_or_default()
                ));
            }
            body.push_str("</div></div>");
        }
        Ok(_) => body.push_str("<div class=\"panel\"><h2>Trace</h2>off for this execution (HAREL_TRACE=true records one)</div>"),
        Err(e) => body.push_str(&notice("error", &format!("the trace: {e}"))),
    }
    ok(&exe.id, body)
}
