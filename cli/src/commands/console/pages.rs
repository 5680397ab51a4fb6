//! The console's pages and actions. A mutating request is confirmed on a page of its own
//! first (a form posted without `confirm=yes` answers with what it would do), so no
//! browser dialog is needed and a bulk action's confirmation is its dry run.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use harel_model::{Definition, Execution, Status};
use harel_runtime::dead_letters::{self, Selection, Verdict, NOT_SEEN};
use harel_store::{ExecutionStore, ListQuery};
use serde_json::Value;

use super::html::{self, all, badge, esc, first, hidden, json_tree, notice, page, pairs, url};
use super::Console;
use crate::commands::clock::{now, span, utc};
use crate::commands::show::{children_of, timers_of, Timer};

type Shared = State<Arc<Console>>;

const PAGE_SIZE: usize = 50;

fn ok(title: &str, body: String) -> Response {
    Html(page(title, &body)).into_response()
}

fn failure(status: StatusCode, title: &str, text: &str) -> Response {
    let body = format!(
        "<h1>{}</h1>{}<p><a href=\"/\">back to the executions</a></p>",
        esc(title),
        notice("error", text)
    );
    (status, Html(page(title, &body))).into_response()
}

pub async fn not_found() -> Response {
    failure(StatusCode::NOT_FOUND, "Not found", "No such page.")
}

pub async fn css() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        html::CSS,
    )
        .into_response()
}

pub async fn js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        html::JS,
    )
        .into_response()
}

fn aws_error(e: impl std::fmt::Display) -> Response {
    failure(
        StatusCode::BAD_GATEWAY,
        "AWS error",
        &format!("{e:#} ({})", crate::commands::stack::AWS_HINT),
    )
}

// ---------------------------------------------------------------- executions

pub async fn executions(State(c): Shared, RawQuery(q): RawQuery) -> Response {
    let q = pairs(q.unwrap_or_default().as_bytes());
    let status = first(&q, "status").and_then(|s| s.parse::<Status>().ok());
    let machine = first(&q, "machine").map(str::to_string);
    let version = first(&q, "version").map(str::to_string);
    let cursor = first(&q, "cursor").map(str::to_string);
    let query = ListQuery {
        status: status.map(|s| vec![s]),
        definition_id: machine.clone(),
        roots_only: false,
        limit: PAGE_SIZE,
        cursor,
        scan: false,
    };
    let mut listed = match c.stack.store.list_executions(&query).await {
        Ok(p) => p,
        Err(e) => return aws_error(e),
    };
    if let Some(wanted) = &version {
        // the index does not hold the version: each execution of the page is read
        let mut kept = Vec::new();
        for s in std::mem::take(&mut listed.items) {
            match c.stack.store.load(&s.id).await {
                Ok(Some(exe)) if exe.pinned_version().unwrap_or("none") == wanted => kept.push(s),
                Ok(_) => {}
                Err(e) => return aws_error(e),
            }
        }
        listed.items = kept;
    }
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for s in &listed.items {
        *counts.entry(s.status.to_string()).or_default() += 1;
    }
    let mut body = String::from("<h1>Executions</h1>");
    let option = |value: &str, selected: bool| {
        format!(
            "<option value=\"{0}\"{1}>{0}</option>",
            esc(value),
            if selected { " selected" } else { "" }
        )
    };
    let mut statuses = String::from("<option value=\"\">any</option>");
    for s in Status::ALL {
        statuses.push_str(&option(s.as_str(), status == Some(s)));
    }
    body.push_str(&format!(
        r#"<form class="filters" method="get" action="/"><label>status<select name="status">{statuses}</select></label><label>machine<input name="machine" value="{}" placeholder="any"></label><label>version<input name="version" value="{}" placeholder="any"></label><button type="submit">filter</button></form>"#,
        esc(machine.as_deref().unwrap_or("")),
        esc(version.as_deref().unwrap_or("")),
    ));
    body.push_str("<div class=\"counts\">");
    if counts.is_empty() {
        body.push_str("<span>no executions match</span>");
    }
    for (s, n) in &counts {
        body.push_str(&format!("<span>{} {n}</span>", badge(s)));
    }
    body.push_str("<span class=\"live\">counts of this page</span></div>");
    // the selection and the filter both post to /bulk; its answer is the dry run
    let filter_fields = hidden(&[
        ("filter_status", status.map(Status::as_str).unwrap_or("")),
        ("filter_machine", machine.as_deref().unwrap_or("")),
    ]);
    body.push_str(&format!(
        r#"<form method="post" action="/bulk" id="bulk">{filter_fields}<div class="actions"><select name="action">{}</select><button type="submit" name="scope" value="selection">on the selection…</button><button type="submit" name="scope" value="filter" class="secondary">on everything the filter matches…</button></div>"#,
        ["suspend", "resume", "cancel", "terminate"]
            .iter()
            .map(|a| format!("<option>{a}</option>"))
            .collect::<String>()
    ));
    body.push_str("<table><tr><th><input type=\"checkbox\" id=\"select-all\" title=\"select all\"></th><th>execution</th><th>machine</th><th>status</th><th>active</th><th>outcome</th><th>finished</th></tr>");
    for s in &listed.items {
        body.push_str(&format!(
            r#"<tr><td><input type="checkbox" name="ids" value="{id}"></td><td><a href="/executions/{uid}"><code>{id}</code></a></td><td><a href="/machines/{um}">{m}</a></td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>"#,
            badge(s.status.as_str()),
            esc(s.active_path.as_deref().unwrap_or("-")),
            esc(s.outcome.as_deref().unwrap_or("-")),
            s.finished_at.map(utc).unwrap_or_else(|| "-".into()),
            id = esc(&s.id),
            uid = url(&s.id),
            m = esc(&s.definition_id),
            um = url(&s.definition_id),
        ));
    }
    body.push_str("</table></form>");
    if let Some(next) = &listed.next_cursor {
        let mut link = format!("/?cursor={}", url(next));
        for (k, v) in [
            ("status", status.map(Status::as_str)),
            ("machine", machine.as_deref()),
            ("version", version.as_deref()),
        ] {
            if let Some(v) = v {
                link.push_str(&format!("&{k}={}", url(v)));
            }
        }
        body.push_str(&format!(
            r#"<p><a href="{}">next page →</a></p>"#,
            esc(&link)
        ));
    }
    ok("Executions", body)
}

/// The execution's active states, its live regions' included (`harel render --active`).
fn active_paths(exe: &Execution, children: &[Execution]) -> Vec<String> {
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

/// What an execution page shows, read once.
struct Loaded {
    exe: Execution,
    children: Vec<Execution>,
    timers: Vec<Timer>,
    defn: Result<Definition, String>,
}

async fn load(c: &Console, id: &str) -> Result<Loaded, Response> {
    let exe = match c.stack.store.load(id).await {
        Ok(Some(exe)) => exe,
        Ok(None) => {
            return Err(failure(
                StatusCode::NOT_FOUND,
                "Not found",
                &format!("No execution {id:?} in {}.", c.stack.executions_table()),
            ))
        }
        Err(e) => return Err(aws_error(e)),
    };
    let children = children_of(&c.stack, &exe).await.map_err(aws_error)?;
    let mut timers = timers_of(&c.stack, &exe.id).await.map_err(aws_error)?;
    for child in &children {
        timers.extend(timers_of(&c.stack, &child.id).await.map_err(aws_error)?);
    }
    let defn = crate::commands::versions::definition_of(&c.stack, &exe, || {
        c.machines.get(&exe.definition_id, "the console draws it")
    })
    .await
    .map(std::borrow::Cow::into_owned)
    .map_err(|e| format!("{e:#}"));
    Ok(Loaded {
        exe,
        children,
        timers,
        defn,
    })
}

/// The parts of an execution page that change: the chart, status, timers, children.
fn live_part(l: &Loaded) -> String {
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
        r#"<div class="panel"><dl class="facts"><dt>status</dt><dd id="status">{status}</dd><dt>machine</dt><dd><a href="/machines/{}">{}</a></dd><dt>version</dt><dd class="mono">{}</dd><dt>active</dt><dd class="mono">{}</dd><dt>events</dt><dd>{}</dd>"#,
        url(&exe.definition_id),
        esc(&exe.definition_id),
        esc(exe.pinned_version().unwrap_or("none recorded (the deployed one)")),
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
    let now = now();
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
            t.fire_at,
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

pub async fn execution_live(State(c): Shared, Path(id): Path<String>) -> Response {
    match load(&c, &id).await {
        Ok(l) => Html(live_part(&l)).into_response(),
        Err(r) => r,
    }
}

pub async fn execution(
    State(c): Shared,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
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
    let uid = url(&exe.id);
    body.push_str(r#"<div class="actions">"#);
    for action in ["suspend", "resume", "cancel", "terminate"] {
        let class = if matches!(action, "cancel" | "terminate") {
            " class=\"danger\""
        } else {
            ""
        };
        body.push_str(&format!(
            r#"<form method="post" action="/executions/{uid}/action"><input type="hidden" name="action" value="{action}"><button{class} type="submit">{action}…</button></form>"#
        ));
    }
    body.push_str(&format!(
        r#"<form method="post" action="/executions/{uid}/action"><input type="hidden" name="action" value="redrive"><input name="to" placeholder="leaf state, e.g. A.B" size="16"><button type="submit" class="secondary">redrive to…</button></form></div>"#
    ));
    body.push_str(&format!(
        r#"<p class="live">live: <span id="refreshed">refreshed every 2 s</span></p><div data-live="/executions/{uid}/live">{}</div>"#,
        live_part(&l)
    ));
    let context = Value::Object(exe.context.clone());
    body.push_str(&format!(
        r#"<div class="panel"><h2>Context</h2>{}</div>"#,
        json_tree(&context)
    ));
    match c.stack.store.read_trace(&exe.id).await {
        Ok(steps) if !steps.is_empty() => {
            body.push_str("<div class=\"panel\"><h2>Trace</h2><div class=\"timeline\">");
            for step in &steps {
                let field = |k: &str| {
                    step.get(k)
                        .map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
                        .unwrap_or_else(|| "-".into())
                };
                let at = step.get("timestamp").or_else(|| step.get("at")).and_then(Value::as_f64);
                body.push_str(&format!(
                    "<div><b>{}</b> <code>{}</code> → <code>{}</code> <span class=\"live\">{}</span></div>",
                    esc(&field("event")),
                    esc(&field("from")),
                    esc(&field("to")),
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

// ---------------------------------------------------------------- actions

/// One control command on one execution; its result as a line.
async fn control(c: &Console, action: &str, id: &str, to: Option<&str>) -> Result<String, String> {
    let store = &c.stack.store;
    let at = now();
    let defn = || async {
        let exe = c.stack.execution(id).await.map_err(|e| format!("{e:#}"))?;
        crate::commands::versions::definition_of(&c.stack, &exe, || {
            c.machines.get(
                &exe.definition_id,
                "it decides how to cancel or where to redrive",
            )
        })
        .await
        .map(std::borrow::Cow::into_owned)
        .map_err(|e| format!("{e:#}"))
    };
    let result = match action {
        "suspend" => harel_control::suspend(store, id, at).await,
        "resume" => harel_control::resume(store, id, at).await,
        "terminate" => harel_control::terminate(store, id, at).await,
        "cancel" => harel_control::cancel(store, &defn().await?, id, at).await,
        "redrive" => {
            let to = to.ok_or("redrive needs the leaf state to resume at")?;
            harel_control::redrive(store, &defn().await?, id, to, at).await
        }
        other => return Err(format!("unknown action {other:?}")),
    };
    let out = result.map_err(|e| e.to_string())?;
    let published = crate::commands::control::publish(&c.stack, &out)
        .await
        .map_err(|e| format!("{e:#}"))?;
    Ok(match out.own_step() {
        None => format!("{action} {id}: nothing to do"),
        Some(step) => format!(
            "{action} {id}: {} → {}{}",
            step.from_status,
            step.to_status,
            if published {
                " (the Cancel is on the queue)"
            } else {
                ""
            }
        ),
    })
}

pub async fn action(State(c): Shared, Path(id): Path<String>, body: Bytes) -> Response {
    let form = pairs(&body);
    let Some(action) = first(&form, "action") else {
        return failure(StatusCode::BAD_REQUEST, "Bad request", "no action");
    };
    let to = first(&form, "to");
    if let Err(r) = load_exists(&c, &id).await {
        return r;
    }
    if first(&form, "confirm") != Some("yes") {
        let what = match to {
            Some(to) => format!("{action} {id} to {to}"),
            None => format!("{action} {id}"),
        };
        let body = format!(
            r#"<h1>Confirm</h1><p>{}?</p><form method="post">{}<button type="submit" name="confirm" value="yes" class="danger">yes, {}</button> <a href="/executions/{}">no, back</a></form>"#,
            esc(&what),
            hidden(&[("action", action), ("to", to.unwrap_or(""))]),
            esc(action),
            url(&id)
        );
        return ok("Confirm", body);
    }
    match control(&c, action, &id, to).await {
        Ok(line) => {
            Redirect::to(&format!("/executions/{}?done={}", url(&id), url(&line))).into_response()
        }
        Err(why) => failure(StatusCode::CONFLICT, "Not done", &why),
    }
}

async fn load_exists(c: &Console, id: &str) -> Result<(), Response> {
    match c.stack.store.load(id).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(failure(
            StatusCode::NOT_FOUND,
            "Not found",
            &format!("No execution {id:?}."),
        )),
        Err(e) => Err(aws_error(e)),
    }
}

/// A bulk action: the selection or the filter's executions; without `confirm=yes`, the dry
/// run (which and how many), whose confirm button posts exactly those ids.
pub async fn bulk(State(c): Shared, body: Bytes) -> Response {
    let form = pairs(&body);
    let action = first(&form, "action").unwrap_or("").to_string();
    if !["suspend", "resume", "cancel", "terminate"].contains(&action.as_str()) {
        return failure(
            StatusCode::BAD_REQUEST,
            "Bad request",
            "the action is one of suspend, resume, cancel, terminate",
        );
    }
    let mut ids: Vec<String> = all(&form, "ids").into_iter().map(str::to_string).collect();
    if first(&form, "scope") == Some("filter") {
        ids.clear();
        let status = first(&form, "filter_status").and_then(|s| s.parse::<Status>().ok());
        let mut cursor = None;
        loop {
            let query = ListQuery {
                status: status.map(|s| vec![s]),
                definition_id: first(&form, "filter_machine").map(str::to_string),
                roots_only: true,
                limit: 100,
                cursor,
                scan: false,
            };
            let listed = match c.stack.store.list_executions(&query).await {
                Ok(p) => p,
                Err(e) => return aws_error(e),
            };
            ids.extend(listed.items.into_iter().map(|s| s.id));
            match listed.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    if ids.is_empty() {
        let body = format!(
            "<h1>Bulk {}</h1>{}<p><a href=\"/\">back</a></p>",
            esc(&action),
            notice(
                "note",
                "No execution is selected or matches the filter: nothing to do, nothing done."
            )
        );
        return ok("Bulk", body);
    }
    if first(&form, "confirm") != Some("yes") {
        let mut body = format!(
            "<h1>Dry run: {} {} execution{}</h1><p>Nothing is changed until you confirm. It would touch:</p><ul id=\"dry-run\">",
            esc(&action),
            ids.len(),
            if ids.len() == 1 { "" } else { "s" }
        );
        for id in &ids {
            body.push_str(&format!("<li><code>{}</code></li>", esc(id)));
        }
        body.push_str("</ul><form method=\"post\" action=\"/bulk\">");
        let mut fields: Vec<(&str, &str)> = vec![("action", &action)];
        fields.extend(ids.iter().map(|id| ("ids", id.as_str())));
        body.push_str(&hidden(&fields));
        body.push_str(&format!(
            r#"<button type="submit" name="confirm" value="yes" class="danger" id="confirm">yes, {} these {}</button> <a href="/">no, back</a></form>"#,
            esc(&action),
            ids.len()
        ));
        return ok("Dry run", body);
    }
    let mut body = format!("<h1>Bulk {}: done</h1><ul id=\"results\">", esc(&action));
    for id in &ids {
        let line = match control(&c, &action, id, None).await {
            Ok(line) => line,
            Err(why) => format!("{id}: not done: {why}"),
        };
        body.push_str(&format!("<li>{}</li>", esc(&line)));
    }
    body.push_str("</ul><p><a href=\"/\">back to the executions</a></p>");
    ok("Bulk", body)
}

// ---------------------------------------------------------------- machines

pub async fn machines(State(c): Shared) -> Response {
    let mut body = String::from("<h1>Machines</h1><h2>Given with --machines</h2>");
    let given: Vec<&Definition> = c.machines.all().collect();
    if given.is_empty() {
        body.push_str("<p>none (start the console with <code>--machines DIR</code> to draw the deployed ones)</p>");
    } else {
        body.push_str("<ul>");
        for d in given {
            body.push_str(&format!(
                r#"<li><a href="/machines/{}">{}</a></li>"#,
                url(&d.id),
                esc(&d.id)
            ));
        }
        body.push_str("</ul>");
    }
    body.push_str("<h2>Versions kept in the store</h2>");
    match c.stack.store.list_definitions().await {
        Ok(kept) if kept.is_empty() => body.push_str("<p>none</p>"),
        Ok(kept) => {
            body.push_str("<table><tr><th>machine</th><th>version</th><th>kept since</th></tr>");
            for k in kept {
                body.push_str(&format!(
                    r#"<tr><td><a href="/machines/{}?version={}">{}</a></td><td><code>{}</code></td><td>{}</td></tr>"#,
                    url(&k.machine),
                    url(&k.version),
                    esc(&k.machine),
                    esc(&k.version),
                    utc(k.created_at)
                ));
            }
            body.push_str("</table>");
        }
        Err(e) => body.push_str(&notice("error", &e.to_string())),
    }
    body.push_str("<p class=\"live\">Before a deploy, <code>harel deploy-check --machines DIR</code> reports what becomes of the live executions.</p>");
    ok("Machines", body)
}

pub async fn machine(State(c): Shared, Path(id): Path<String>, RawQuery(q): RawQuery) -> Response {
    let q = pairs(q.unwrap_or_default().as_bytes());
    let defn: Definition = match first(&q, "version") {
        Some(version) => {
            let kept = crate::commands::versions::kept_version(&c.stack, version, || {
                format!("no version {version} is kept")
            })
            .await;
            match kept.map(|(_, bundle)| bundle.get(&id).map(|d| d.as_ref().clone())) {
                Ok(Some(d)) => d,
                Ok(None) => {
                    return failure(
                        StatusCode::NOT_FOUND,
                        "Not found",
                        &format!("Version {version} has no machine {id:?}."),
                    )
                }
                Err(e) => return failure(StatusCode::NOT_FOUND, "Not found", &format!("{e:#}")),
            }
        }
        None => match c.machines.find(&id) {
            Some(d) => d.clone(),
            None => {
                return failure(
                    StatusCode::NOT_FOUND,
                    "Not found",
                    &format!("No machine {id:?} among those given with --machines."),
                )
            }
        },
    };
    let svg = harel_lang::render::svg::render(&defn, &[])
        .unwrap_or_else(|e| notice("error", &e.to_string()));
    ok(
        &id,
        format!(
            r#"<h1>Machine {}</h1><p><a href="/?machine={}">its executions</a></p><div class="chart">{svg}</div>"#,
            esc(&id),
            url(&id)
        ),
    )
}

// ---------------------------------------------------------------- dead letters

/// The dead-letter queue, or the page that says there is none (boxed: a `Response` is large).
fn dlq_or_error(c: &Console) -> Result<harel_sqs::SqsDeadLetters, Box<Response>> {
    c.stack.dead_letters().map_err(|e| {
        Box::new(failure(
            StatusCode::SERVICE_UNAVAILABLE,
            "No dead-letter queue",
            &format!("{e:#}"),
        ))
    })
}

pub async fn dead_letters(State(c): Shared) -> Response {
    let dlq = match dlq_or_error(&c) {
        Ok(d) => d,
        Err(r) => return *r,
    };
    let letters = match dead_letters::look(&dlq).await {
        Ok(l) => l,
        Err(e) => return aws_error(e),
    };
    let mut body = String::from("<h1>Dead letters</h1><p class=\"live\">SQS has no peek: this look received each message and released it at once (each receive count grows by one).</p>");
    if letters.is_empty() {
        body.push_str("<p>none</p>");
        return ok("Dead letters", body);
    }
    body.push_str(r#"<form method="post" action="/dead-letters/redrive"><div class="actions"><button type="submit" name="dry_run" value="yes" class="secondary">redrive the selection (dry run)…</button><button type="submit" formaction="/dead-letters/delete" class="danger">delete the selection…</button></div><table><tr><th></th><th>message</th><th>execution</th><th>event</th><th>reason</th><th>dead-lettered</th><th>receives</th></tr>"#);
    for l in &letters {
        let exe = l
            .execution_id()
            .map(|e| {
                format!(
                    r#"<a href="/executions/{}"><code>{}</code></a>"#,
                    url(e),
                    esc(e)
                )
            })
            .unwrap_or_else(|| "(none)".into());
        body.push_str(&format!(
            r#"<tr><td><input type="checkbox" name="ids" value="{id}"></td><td><a href="/dead-letters/{uid}"><code>{id}</code></a></td><td>{exe}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
            esc(&l.event_kind().unwrap_or_else(|| "(unreadable)".into())),
            esc(l.reason.as_deref().unwrap_or("(none: moved by SQS after its receives)")),
            l.dead_lettered_at_ms.map(|ms| utc(ms as f64 / 1000.0)).unwrap_or_else(|| "-".into()),
            l.receive_count,
            id = esc(&l.message_id),
            uid = url(&l.message_id),
        ));
    }
    body.push_str("</table></form>");
    ok("Dead letters", body)
}

pub async fn dead_letter(State(c): Shared, Path(id): Path<String>) -> Response {
    let dlq = match dlq_or_error(&c) {
        Ok(d) => d,
        Err(r) => return *r,
    };
    let letters = match dead_letters::look(&dlq).await {
        Ok(l) => l,
        Err(e) => return aws_error(e),
    };
    let Some(l) = letters.iter().find(|l| l.message_id == id) else {
        return failure(
            StatusCode::NOT_FOUND,
            "Not found",
            &format!("Dead letter {id:?}: {NOT_SEEN}."),
        );
    };
    let body_view = serde_json::from_str::<Value>(&l.body)
        .map(|v| json_tree(&v))
        .unwrap_or_else(|_| format!("<pre>{}</pre>", esc(&l.body)));
    let age = l
        .dead_lettered_at_ms
        .map(|ms| {
            format!(
                "{} ({} ago)",
                utc(ms as f64 / 1000.0),
                span(now() - ms as f64 / 1000.0)
            )
        })
        .unwrap_or_else(|| "-".into());
    let fields = hidden(&[("ids", &l.message_id)]);
    ok(
        &id,
        format!(
            r#"<h1>Dead letter <code>{}</code></h1><div class="panel"><dl class="facts"><dt>execution</dt><dd>{}</dd><dt>event</dt><dd><code>{}</code></dd><dt>reason</dt><dd>{}</dd><dt>dead-lettered</dt><dd>{age}</dd><dt>receives</dt><dd>{}</dd></dl></div><div class="actions"><form method="post" action="/dead-letters/redrive">{fields}<button type="submit" name="dry_run" value="yes">redrive…</button></form><form method="post" action="/dead-letters/delete">{fields}<button type="submit" class="danger">delete…</button></form></div><div class="panel"><h2>Body</h2>{body_view}</div>"#,
            esc(&l.message_id),
            esc(l.execution_id().unwrap_or("(none)")),
            esc(&l.event_kind().unwrap_or_else(|| "(unreadable)".into())),
            esc(l
                .reason
                .as_deref()
                .unwrap_or("(none: moved by SQS after its receives)")),
            l.receive_count,
        ),
    )
}

fn verdict_line(d: &dead_letters::Done) -> String {
    let exe = d
        .letter
        .as_ref()
        .and_then(|l| l.execution_id())
        .unwrap_or("-");
    let what = match &d.verdict {
        Verdict::Redriven => "redriven".to_string(),
        Verdict::WouldRedrive => "would be redriven".to_string(),
        Verdict::Left(why) => format!("stays: {why}"),
        Verdict::Deleted => "deleted".to_string(),
        Verdict::NotFound => format!("not found: {NOT_SEEN}"),
    };
    format!("{} ({exe}): {what}", d.message_id)
}

pub async fn dead_letters_redrive(State(c): Shared, body: Bytes) -> Response {
    let form = pairs(&body);
    let ids: Vec<String> = all(&form, "ids").into_iter().map(str::to_string).collect();
    if ids.is_empty() {
        return ok(
            "Redrive",
            format!(
                "<h1>Redrive</h1>{}",
                notice("note", "No dead letter selected: nothing to do.")
            ),
        );
    }
    let dlq = match dlq_or_error(&c) {
        Ok(d) => d,
        Err(r) => return *r,
    };
    let main = match c.stack.transport("redriving dead letters to it") {
        Ok(t) => t,
        Err(e) => {
            return failure(
                StatusCode::SERVICE_UNAVAILABLE,
                "No queue",
                &format!("{e:#}"),
            )
        }
    };
    let dry_run = first(&form, "dry_run") == Some("yes");
    let done = match dead_letters::redrive(
        &c.stack.store,
        &dlq,
        &main,
        &Selection::Ids(ids.clone()),
        dry_run,
    )
    .await
    {
        Ok(d) => d,
        Err(e) => return aws_error(e),
    };
    let mut body = format!(
        "<h1>Redrive{}</h1><ul id=\"results\">",
        if dry_run { ": dry run" } else { "" }
    );
    for d in &done {
        body.push_str(&format!("<li>{}</li>", esc(&verdict_line(d))));
    }
    body.push_str("</ul>");
    let movable: Vec<&str> = done
        .iter()
        .filter(|d| d.verdict == Verdict::WouldRedrive)
        .map(|d| d.message_id.as_str())
        .collect();
    if dry_run && !movable.is_empty() {
        let fields: Vec<(&str, &str)> = movable.iter().map(|id| ("ids", *id)).collect();
        body.push_str(&format!(
            r#"<form method="post" action="/dead-letters/redrive">{}<button type="submit" id="confirm">yes, redrive these {}</button></form>"#,
            hidden(&fields),
            movable.len()
        ));
    }
    body.push_str("<p><a href=\"/dead-letters\">back to the dead letters</a></p>");
    ok("Redrive", body)
}

pub async fn dead_letters_delete(State(c): Shared, body: Bytes) -> Response {
    let form = pairs(&body);
    let ids: Vec<String> = all(&form, "ids").into_iter().map(str::to_string).collect();
    if ids.is_empty() {
        return ok(
            "Delete",
            format!(
                "<h1>Delete</h1>{}",
                notice("note", "No dead letter selected: nothing to do.")
            ),
        );
    }
    if first(&form, "confirm") != Some("yes") {
        let mut fields: Vec<(&str, &str)> = ids.iter().map(|id| ("ids", id.as_str())).collect();
        fields.push(("confirm", "yes"));
        return ok(
            "Confirm",
            format!(
                r#"<h1>Delete {} dead letter{} for good?</h1><ul>{}</ul><form method="post" action="/dead-letters/delete">{}<button type="submit" class="danger" id="confirm">yes, delete</button> <a href="/dead-letters">no, back</a></form>"#,
                ids.len(),
                if ids.len() == 1 { "" } else { "s" },
                ids.iter()
                    .map(|i| format!("<li><code>{}</code></li>", esc(i)))
                    .collect::<String>(),
                hidden(&fields)
            ),
        );
    }
    let dlq = match dlq_or_error(&c) {
        Ok(d) => d,
        Err(r) => return *r,
    };
    match dead_letters::delete(&dlq, &ids).await {
        Ok(done) => {
            let mut body = String::from("<h1>Delete</h1><ul id=\"results\">");
            for d in &done {
                body.push_str(&format!("<li>{}</li>", esc(&verdict_line(d))));
            }
            body.push_str("</ul><p><a href=\"/dead-letters\">back to the dead letters</a></p>");
            ok("Delete", body)
        }
        Err(e) => aws_error(e),
    }
}
