//! `/`: one page of the executions through the listing index (the whole table only with
//! `--scan`), filtered by status, machine and version, and `/bulk`: an action on the selected
//! executions or on everything the filter matches, whose answer without `confirm=yes` is the
//! dry run (how many, which), and whose confirm button posts exactly those ids.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use harel_model::{ExecutionSummary, Status};
use harel_store::prelude::*;
use harel_store::ListQuery;

use super::actions::control;
use super::html::{aws_error, badge, esc, failure, first, hidden, notice, ok, pairs, url};
use super::{Console, Shared};
use crate::commands::clock::utc;

const PAGE_SIZE: usize = 50;

/// What the bulk form offers: the control commands that need nothing but the execution.
pub const BULK_ACTIONS: [&str; 4] = ["suspend", "resume", "cancel", "terminate"];

/// The filter of the executions page (and of a bulk action on it).
#[derive(Default)]
struct Filter {
    status: Option<Status>,
    machine: Option<String>,
    version: Option<String>,
}

impl Filter {
    /// From `status`, `machine`, `version` (with `prefix`: the bulk form's `filter_*`).
    fn read(pairs: &[(String, String)], prefix: &str) -> Result<Filter, String> {
        let status = match first(pairs, &format!("{prefix}status")) {
            None => None,
            Some(s) => Some(
                s.parse::<Status>()
                    .map_err(|_| format!("{s:?} is not a status"))?,
            ),
        };
        Ok(Filter {
            status,
            machine: first(pairs, &format!("{prefix}machine")).map(str::to_string),
            version: first(pairs, &format!("{prefix}version")).map(str::to_string),
        })
    }

    fn query(
        &self,
        c: &Console,
        roots_only: bool,
        limit: usize,
        cursor: Option<String>,
    ) -> ListQuery {
        ListQuery {
            status: self.status.map(|s| vec![s]),
            definition_id: self.machine.clone(),
            roots_only,
            limit,
            cursor,
            scan: c.scan,
        }
    }

    /// The index does not hold the version: with a version filter each listed execution is
    /// read (one GetItem each, for the page's executions only).
    async fn keep_version(
        &self,
        c: &Console,
        items: Vec<ExecutionSummary>,
    ) -> Result<Vec<ExecutionSummary>, Response> {
        let Some(wanted) = &self.version else {
            return Ok(items);
        };
        let mut kept = Vec::new();
        for s in items {
            match c.backend.load(&s.id).await {
                Ok(Some(exe)) if exe.pinned_version().unwrap_or("none") == wanted => kept.push(s),
                Ok(_) => {}
                Err(e) => return Err(aws_error(e)),
            }
        }
        Ok(kept)
    }

    fn hidden_fields(&self) -> String {
        hidden(&[
            (
                "filter_status",
                self.status.map(Status::as_str).unwrap_or(""),
            ),
            ("filter_machine", self.machine.as_deref().unwrap_or("")),
            ("filter_version", self.version.as_deref().unwrap_or("")),
        ])
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = self.status {
            parts.push(format!("status {s}"));
        }
        if let Some(m) = &self.machine {
            parts.push(format!("machine {m}"));
        }
        if let Some(v) = &self.version {
            parts.push(format!("version {v}"));
        }
        match parts.is_empty() {
            true => "no filter (every root execution)".to_string(),
            false => parts.join(", "),
        }
    }
}

pub async fn page(State(c): Shared, RawQuery(q): RawQuery) -> Response {
    let q = pairs(q.unwrap_or_default().as_bytes());
    let filter = match Filter::read(&q, "") {
        Ok(f) => f,
        Err(why) => return failure(StatusCode::BAD_REQUEST, "Bad filter", &why),
    };
    let cursor = first(&q, "cursor").map(str::to_string);
    let mut listed = match c
        .backend
        .list_executions(&filter.query(&c, false, PAGE_SIZE, cursor))
        .await
    {
        Ok(p) => p,
        Err(e) => return aws_error(e),
    };
    listed.items = match filter
        .keep_version(&c, std::mem::take(&mut listed.items))
        .await
    {
        Ok(items) => items,
        Err(r) => return r,
    };
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for s in &listed.items {
        *counts.entry(s.status.to_string()).or_default() += 1;
    }
    let mut body = String::from("<h1>Executions</h1>");
    if c.backend.demo().is_some() {
        body.push_str(&notice(
            "note",
            "The embedded demo: an in-memory store this console drives (--store memory); nothing here touches AWS.",
        ));
    }
    let option = |value: &str, selected: bool| {
        format!(
            "<option value=\"{0}\"{1}>{0}</option>",
            esc(value),
            if selected { " selected" } else { "" }
        )
    };
    let mut statuses = String::from("<option value=\"\">any</option>");
    for s in Status::ALL {
        statuses.push_str(&option(s.as_str(), filter.status == Some(s)));
    }
    body.push_str(&format!(
        r#"<form class="filters" method="get" action="/"><label>status<select name="status">{statuses}</select></label><label>machine<input name="machine" value="{}" placeholder="any"></label><label>version<input name="version" value="{}" placeholder="any"></label><button type="submit">filter</button></form>"#,
        esc(filter.machine.as_deref().unwrap_or("")),
        esc(filter.version.as_deref().unwrap_or("")),
    ));
    body.push_str("<div class=\"counts\">");
    if counts.is_empty() {
        body.push_str("<span>no executions match</span>");
    }
    for (s, n) in &counts {
        body.push_str(&format!("<span>{} {n}</span>", badge(s)));
    }
    body.push_str(&format!(
        "<span class=\"live\">on this page{}</span></div>",
        if c.scan { " (read by a scan)" } else { "" }
    ));
    // the selection and the filter both post to /bulk; its answer is the dry run
    body.push_str(&format!(
        r#"<form method="post" action="/bulk" id="bulk">{}<div class="actions"><select name="action">{}</select><button type="submit" name="scope" value="selection">on the selection…</button><button type="submit" name="scope" value="filter" class="secondary">on everything the filter matches…</button></div>"#,
        filter.hidden_fields(),
        BULK_ACTIONS
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
            ("status", filter.status.map(Status::as_str)),
            ("machine", filter.machine.as_deref()),
            ("version", filter.version.as_deref()),
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

/// A bulk action: the selection or the filter's executions; without `confirm=yes`, the dry
/// run (which and how many), whose confirm button posts exactly those ids.
pub async fn bulk(State(c): Shared, body: Bytes) -> Response {
    let form = pairs(&body);
    let action = first(&form, "action").unwrap_or("").to_string();
    if !BULK_ACTIONS.contains(&action.as_str()) {
        return failure(
            StatusCode::BAD_REQUEST,
            "Bad request",
            &format!("the action is one of {}", BULK_ACTIONS.join(", ")),
        );
    }
    let by_filter = first(&form, "scope") == Some("filter");
    let mut ids: Vec<String> = super::html::all(&form, "ids")
        .into_iter()
        .map(str::to_string)
        .collect();
    let mut scope = "the selection".to_string();
    if by_filter {
        let filter = match Filter::read(&form, "filter_") {
            Ok(f) => f,
            Err(why) => return failure(StatusCode::BAD_REQUEST, "Bad filter", &why),
        };
        scope = format!("the filter: {}", filter.describe());
        ids.clear();
        let mut cursor = None;
        loop {
            let listed = match c
                .backend
                .list_executions(&filter.query(&c, true, 100, cursor))
                .await
            {
                Ok(p) => p,
                Err(e) => return aws_error(e),
            };
            match filter.keep_version(&c, listed.items).await {
                Ok(items) => ids.extend(items.into_iter().map(|s| s.id)),
                Err(r) => return r,
            }
            match listed.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    if ids.is_empty() {
        let why = if by_filter {
            format!("No execution matches {scope}: nothing to do, nothing done.")
        } else {
            "No execution is selected: nothing to do, nothing done.".to_string()
        };
        let body = format!(
            "<h1>Bulk {}</h1>{}<p><a href=\"/\">back</a></p>",
            esc(&action),
            notice("note", &why)
        );
        return ok("Bulk", body);
    }
    if first(&form, "confirm") != Some("yes") {
        let mut body = format!(
            "<h1>Dry run: {} {} execution{}</h1><p>Chosen by {}. Nothing is changed until you confirm. It would touch:</p><ul id=\"dry-run\">",
            esc(&action),
            ids.len(),
            if ids.len() == 1 { "" } else { "s" },
            esc(&scope)
        );
        for id in &ids {
            body.push_str(&format!(
                "<li><a href=\"/executions/{}\"><code>{}</code></a></li>",
                url(id),
                esc(id)
            ));
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
