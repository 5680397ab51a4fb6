//! What an execution page can do: the control commands (suspend, resume, cancel, terminate,
//! redrive to a state), a migration to another version with a path map, and sending an
//! event. Each change is confirmed on a page of its own first (a form posted without
//! `confirm=yes` answers with what it would do: a migration's answer is its dry run), so no
//! browser dialog is needed. The control plane (`harel_control`) writes as the commands do;
//! a cooperative cancel's `Cancel` goes to the queue (on the demo, is run at once).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use harel_control::{migrate, MigrationReport, PathMap};
use harel_model::schema::check_event;
use harel_model::{Definition, Execution, Status};
use harel_store::prelude::*;
use harel_store::DefinitionDoc;

use super::backend::Backend;
use super::execution::{definition_of, given_version};
use super::html::{esc, failure, first, hidden, not_found, ok, pairs, url};
use super::{Console, Shared};

/// The actions' forms on an execution page.
pub fn forms(c: &Console, exe: &Execution, defn: Option<&Definition>) -> String {
    let uid = url(&exe.id);
    let mut out = String::from(r#"<div class="actions">"#);
    for action in ["suspend", "resume", "cancel", "terminate"] {
        let class = if matches!(action, "cancel" | "terminate") {
            " class=\"danger\""
        } else {
            ""
        };
        out.push_str(&format!(
            r#"<form method="post" action="/executions/{uid}/action"><input type="hidden" name="action" value="{action}"><button{class} type="submit">{action}…</button></form>"#
        ));
    }
    out.push_str(&format!(
        r#"<form method="post" action="/executions/{uid}/action"><input type="hidden" name="action" value="redrive"><input name="to" placeholder="leaf state, e.g. A.B" size="16"><button type="submit" class="secondary">redrive to…</button></form></div>"#
    ));
    let events: String = defn
        .map(|d| {
            d.events
                .keys()
                .map(|k| format!("<option value=\"{}\">", esc(k)))
                .collect()
        })
        .unwrap_or_default();
    out.push_str(&format!(
        r#"<div class="actions"><form method="post" action="/executions/{uid}/send"><input name="event" list="events" placeholder="KIND or KIND:{{&quot;k&quot;: 1}}" size="28"><datalist id="events">{events}</datalist><button type="submit" class="secondary">send event</button></form>"#
    ));
    // the machine given with --machines is the version a deploy would run: offered first
    let offered = c
        .machines
        .find(&exe.definition_id)
        .and_then(given_version)
        .filter(|v| Some(v.as_str()) != exe.pinned_version())
        .unwrap_or_default();
    out.push_str(&format!(
        r#"<details class="inline"><summary>migrate…</summary><form method="post" action="/executions/{uid}/migrate" class="migrate"><label>to version <input name="to" value="{}" size="20" required></label><label>path map, one OLD=NEW a line<textarea name="map" rows="3" cols="30" placeholder="Checkout.Paying=Checkout.Payment"></textarea></label><button type="submit" class="secondary">dry run…</button></form></details></div>"#,
        esc(&offered)
    ));
    out
}

/// One control command on one execution; its result as a line.
pub async fn control(
    c: &Console,
    action: &str,
    id: &str,
    to: Option<&str>,
) -> Result<String, String> {
    let store = &c.backend;
    let at = c.now();
    let defn = || async {
        let exe = match store.load(id).await {
            Ok(Some(exe)) => exe,
            Ok(None) => return Err(format!("no execution {id:?}")),
            Err(e) => return Err(e.to_string()),
        };
        definition_of(c, &exe).await
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
    let published = match &c.backend {
        Backend::Stack(stack) => crate::commands::control::publish(stack, &out)
            .await
            .map_err(|e| format!("{e:#}"))?,
        Backend::Demo(demo) => {
            if !out.enqueued.is_empty() {
                demo.settle().await.map_err(|e| e.to_string())?;
            }
            false
        }
    };
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

async fn exists(c: &Console, id: &str) -> Result<Execution, Response> {
    match c.backend.load(id).await {
        Ok(Some(exe)) => Ok(exe),
        Ok(None) => Err(not_found(&format!(
            "No execution {id:?} in {}.",
            c.backend.where_()
        ))),
        Err(e) => Err(super::html::aws_error(e)),
    }
}

fn done(id: &str, line: &str) -> Response {
    Redirect::to(&format!("/executions/{}?done={}", url(id), url(line))).into_response()
}

pub async fn action(State(c): Shared, Path(id): Path<String>, body: Bytes) -> Response {
    let form = pairs(&body);
    let Some(action) = first(&form, "action") else {
        return failure(StatusCode::BAD_REQUEST, "Bad request", "no action");
    };
    if !["suspend", "resume", "cancel", "terminate", "redrive"].contains(&action) {
        return failure(
            StatusCode::BAD_REQUEST,
            "Bad request",
            &format!("unknown action {action:?}"),
        );
    }
    let to = first(&form, "to");
    if action == "redrive" && to.is_none() {
        return failure(
            StatusCode::BAD_REQUEST,
            "Bad request",
            "redrive needs the leaf state to resume at",
        );
    }
    if let Err(r) = exists(&c, &id).await {
        return r;
    }
    if first(&form, "confirm") != Some("yes") {
        let what = match to {
            Some(to) => format!("{action} {id} to {to}"),
            None => format!("{action} {id}"),
        };
        let body = format!(
            r#"<h1>Confirm</h1><p>{}?</p><form method="post">{}<button type="submit" name="confirm" value="yes" class="danger" id="confirm">yes, {}</button> <a href="/executions/{}">no, back</a></form>"#,
            esc(&what),
            hidden(&[("action", action), ("to", to.unwrap_or(""))]),
            esc(action),
            url(&id)
        );
        return ok("Confirm", body);
    }
    match control(&c, action, &id, to).await {
        Ok(line) => done(&id, &line),
        Err(why) => failure(StatusCode::CONFLICT, "Not done", &why),
    }
}

/// The machine of version `version`: one given with `--machines` when it has that version
/// (then to be kept in the store before the execution points at it), else one the store
/// keeps (`harel migrate --to`'s lookup).
async fn target(
    c: &Console,
    machine: &str,
    version: &str,
) -> Result<(Definition, Option<DefinitionDoc>), String> {
    if let Some(defn) = c.machines.find(machine) {
        if given_version(defn).as_deref() == Some(version) {
            let document =
                harel_runtime::versions::bundle_document(defn).map_err(|e| e.to_string())?;
            let doc = DefinitionDoc {
                version: version.to_string(),
                machine: machine.to_string(),
                created_at: c.now(),
                document,
            };
            return Ok((defn.clone(), Some(doc)));
        }
    }
    let kept = c
        .backend
        .get_definition(version)
        .await
        .map_err(|e| format!("reading version {version}: {e}"))?
        .ok_or_else(|| format!("version {version} of {machine} is neither kept in the store nor among the machines given with --machines"))?;
    let bundle =
        harel_runtime::versions::rebuild(version, &kept.document).map_err(|e| e.to_string())?;
    let defn = bundle.get(machine).ok_or_else(|| {
        format!(
            "version {version} is not a version of {machine} (it is {})",
            kept.machine
        )
    })?;
    Ok((defn.as_ref().clone(), None))
}

/// A migration's report as a list.
fn report_html(r: &MigrationReport, dry_run: bool) -> String {
    if r.unchanged {
        return format!(
            "<p>{} is on version {} already: nothing to do.</p>",
            esc(&r.execution_id),
            esc(&r.to_version)
        );
    }
    let mut out = String::from("<ul id=\"report\">");
    if !r.refused.is_empty() {
        for why in &r.refused {
            out.push_str(&format!("<li>refused: {}</li>", esc(why)));
        }
        out.push_str("</ul>");
        return out;
    }
    let verb = if dry_run { "would move" } else { "moved" };
    for m in &r.members {
        let active = m
            .active_path
            .as_ref()
            .map(|a| match a.from == a.to {
                true => a.to.clone(),
                false => format!("{} → {}", a.from, a.to),
            })
            .unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "<li><code>{}</code>: {verb} from {} to {} (active <code>{}</code>)",
            esc(&m.execution_id),
            esc(m.from_version.as_deref().unwrap_or("no version")),
            esc(&r.to_version),
            esc(&active)
        ));
        for (t, _) in m.timers.iter().filter(|(t, _)| t.from != t.to) {
            out.push_str(&format!(
                "<br>timer <code>{}</code> → <code>{}</code>",
                esc(&t.from),
                esc(&t.to)
            ));
        }
        for h in m.history.iter().filter(|h| h.from != h.to) {
            out.push_str(&format!(
                "<br>history <code>{}</code> → <code>{}</code>",
                esc(&h.from),
                esc(&h.to)
            ));
        }
        out.push_str("</li>");
    }
    out.push_str("</ul>");
    out
}

/// `to` and `map` (OLD=NEW lines): the dry run without `confirm=yes`, the migration with it.
pub async fn migrate_one(State(c): Shared, Path(id): Path<String>, body: Bytes) -> Response {
    let form = pairs(&body);
    let exe = match exists(&c, &id).await {
        Ok(exe) => exe,
        Err(r) => return r,
    };
    let Some(to) = first(&form, "to") else {
        return failure(
            StatusCode::BAD_REQUEST,
            "Bad request",
            "migrate needs the version to move to",
        );
    };
    let raw_map = first(&form, "map").unwrap_or("");
    let lines: Vec<&str> = raw_map
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let map = match PathMap::parse(&lines) {
        Ok(m) => m,
        Err(e) => return failure(StatusCode::BAD_REQUEST, "Bad path map", &e.to_string()),
    };
    let (defn, doc) = match target(&c, &exe.definition_id, to).await {
        Ok(t) => t,
        Err(why) => return failure(StatusCode::NOT_FOUND, "No such version", &why),
    };
    let at = c.now();
    let check = match migrate(&c.backend, &defn, to, &id, &map, at, true).await {
        Ok(r) => r,
        Err(e) => return failure(StatusCode::CONFLICT, "Not done", &e.to_string()),
    };
    let movable = check.refused.is_empty() && !check.unchanged;
    if first(&form, "confirm") != Some("yes") || !movable {
        let mut body = format!(
            "<h1>Dry run: migrate <code>{}</code> to version <code>{}</code></h1>{}",
            esc(&id),
            esc(to),
            report_html(&check, true)
        );
        if movable {
            body.push_str(&format!(
                r#"<form method="post">{}<button type="submit" name="confirm" value="yes" class="danger" id="confirm">yes, migrate</button> <a href="/executions/{}">no, back</a></form>"#,
                hidden(&[("to", to), ("map", raw_map)]),
                url(&id)
            ));
        } else {
            body.push_str(&format!(
                r#"<p>Nothing was changed. <a href="/executions/{}">back</a></p>"#,
                url(&id)
            ));
        }
        return ok("Migrate", body);
    }
    // kept before the execution points at it: a worker must be able to rebuild it
    if let Some(doc) = &doc {
        if let Err(e) = c.backend.put_definition(doc).await {
            return super::html::aws_error(e);
        }
    }
    match migrate(&c.backend, &defn, to, &id, &map, at, false).await {
        Ok(r) if r.refused.is_empty() => done(
            &id,
            &format!(
                "migrate {id}: moved to version {to} ({} member{})",
                r.migrated.len(),
                if r.migrated.len() == 1 { "" } else { "s" }
            ),
        ),
        Ok(r) => ok(
            "Migrate",
            format!(
                "<h1>Migrate refused</h1>{}<p><a href=\"/executions/{}\">back</a></p>",
                report_html(&r, false),
                url(&id)
            ),
        ),
        Err(e) => failure(StatusCode::CONFLICT, "Not done", &e.to_string()),
    }
}

/// Send one event, as `harel send` does (the stack's queue) or the worker would run it (the
/// demo). Not confirmed: it is what any client of the machine may do, and the machine's
/// declaration is checked first when the console has it.
pub async fn send(State(c): Shared, Path(id): Path<String>, body: Bytes) -> Response {
    let form = pairs(&body);
    let exe = match exists(&c, &id).await {
        Ok(exe) => exe,
        Err(r) => return r,
    };
    let Some(spec) = first(&form, "event") else {
        return failure(StatusCode::BAD_REQUEST, "Bad request", "no event given");
    };
    let event = match crate::commands::send::parse_event(spec.trim()) {
        Ok(ev) => ev,
        Err(e) => return failure(StatusCode::BAD_REQUEST, "Bad event", &format!("{e:#}")),
    };
    if exe.status.is_finished() || exe.status == Status::Failed {
        return failure(
            StatusCode::CONFLICT,
            "Not sent",
            &format!(
                "{id} is {}: the worker would drop the event{}",
                exe.status,
                if exe.status == Status::Failed {
                    " (redrive it first)"
                } else {
                    ""
                }
            ),
        );
    }
    if let Ok(defn) = definition_of(&c, &exe).await {
        if let Err(e) = check_event(&defn.events, &event.kind, &event.data) {
            return failure(
                StatusCode::BAD_REQUEST,
                "Not sent",
                &format!("{}: machine {}: {e}", event.kind, defn.id),
            );
        }
    }
    let line = match &c.backend {
        Backend::Stack(stack) => {
            let transport = match stack.transport("events go through the queue") {
                Ok(t) => t,
                Err(e) => {
                    return failure(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "No queue",
                        &format!("{e:#}"),
                    )
                }
            };
            let sender = harel_runtime::Sender::new(transport);
            if let Err(e) = sender.send(&id, std::slice::from_ref(&event)).await {
                return super::html::aws_error(e);
            }
            format!(
                "sent {} to {id} (the worker runs it from the queue)",
                event.kind
            )
        }
        Backend::Demo(demo) => match demo.send(&id, &event).await {
            Ok(after) => format!(
                "{}: {id} is {} at {}",
                event.kind,
                after.status,
                after.active_path.as_deref().unwrap_or("-")
            ),
            Err(e) => return failure(StatusCode::CONFLICT, "Not run", &e.to_string()),
        },
    };
    done(&id, &line)
}
