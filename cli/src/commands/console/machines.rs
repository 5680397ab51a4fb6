//! `/machines`: the machines given with `--machines` (what is deployed, each with the version
//! a deploy of it runs) and the versions the store keeps, each drawn on `/machines/{id}`
//! (`?version=V` for a kept one); `/deploy-check`: `harel deploy-check`'s report, for the
//! machines given or for another directory (`?dir=PATH`).

use std::path::PathBuf;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use harel_model::Definition;
use harel_store::prelude::*;

use super::execution::given_version;
use super::html::{esc, failure, first, not_found, notice, ok, pairs, url};
use super::Shared;
use crate::commands::clock::utc;
use crate::commands::versions::{deploy_check, load_machines};

pub async fn list(State(c): Shared) -> Response {
    let mut body = String::from("<h1>Machines</h1><h2>Given with --machines</h2>");
    let given: Vec<&Definition> = c.machines.all().collect();
    if given.is_empty() {
        body.push_str("<p>none (start the console with <code>--machines DIR</code> to draw the deployed ones)</p>");
    } else {
        body.push_str("<table><tr><th>machine</th><th>version a deploy runs</th></tr>");
        for d in given {
            body.push_str(&format!(
                r#"<tr><td><a href="/machines/{}">{}</a></td><td><code>{}</code></td></tr>"#,
                url(&d.id),
                esc(&d.id),
                esc(&given_version(d).unwrap_or_else(|| "-".into()))
            ));
        }
        body.push_str("</table>");
    }
    body.push_str("<h2>Versions kept in the store</h2>");
    match c.backend.list_definitions().await {
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
    body.push_str(r#"<h2>Before a deploy</h2><form class="filters" method="get" action="/deploy-check"><label>machines directory (empty: those given with --machines)<input name="dir" size="40" placeholder="functions/app/machines"></label><button type="submit">deploy check</button></form><p class="live">What becomes of the live executions if these machines are deployed: <code>harel deploy-check</code>'s report. It reads every live execution (the listing index; the table with --scan).</p>"#);
    ok("Machines", body)
}

pub async fn one(State(c): Shared, Path(id): Path<String>, RawQuery(q): RawQuery) -> Response {
    let q = pairs(q.unwrap_or_default().as_bytes());
    let (defn, which): (Definition, String) = match first(&q, "version") {
        Some(version) => {
            let kept = match c.backend.get_definition(version).await {
                Ok(Some(kept)) => kept,
                Ok(None) => return not_found(&format!("No version {version:?} is kept.")),
                Err(e) => return super::html::aws_error(e),
            };
            let bundle = match harel_runtime::versions::rebuild(version, &kept.document) {
                Ok(b) => b,
                Err(e) => {
                    return failure(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "Unreadable version",
                        &format!("version {version}: {e}"),
                    )
                }
            };
            match bundle.get(&id) {
                Some(d) => (d.as_ref().clone(), format!("version {version}, kept")),
                None => {
                    return not_found(&format!("Version {version} has no machine {id:?}."));
                }
            }
        }
        None => match c.machines.find(&id) {
            Some(d) => (
                d.clone(),
                format!(
                    "version {}, given with --machines",
                    given_version(d).unwrap_or_else(|| "-".into())
                ),
            ),
            None => {
                return not_found(&format!(
                    "No machine {id:?} among those given with --machines."
                ))
            }
        },
    };
    let svg = harel_lang::render::svg::render(&defn, &[])
        .unwrap_or_else(|e| notice("error", &e.to_string()));
    ok(
        &id,
        format!(
            r#"<h1>Machine {}</h1><p class="live">{}</p><p><a href="/?machine={}">its executions</a></p><div class="chart">{svg}</div>"#,
            esc(&id),
            esc(&which),
            url(&id)
        ),
    )
}

pub async fn check(State(c): Shared, RawQuery(q): RawQuery) -> Response {
    let q = pairs(q.unwrap_or_default().as_bytes());
    let (machines, what) = match first(&q, "dir") {
        Some(dir) => match load_machines(&PathBuf::from(dir)) {
            Ok(m) => (m, dir.to_string()),
            Err(e) => {
                return failure(
                    StatusCode::BAD_REQUEST,
                    "Cannot read the machines",
                    &format!("{dir}: {e:#}"),
                )
            }
        },
        None => (
            c.machines.all().cloned().collect(),
            "the machines given with --machines".to_string(),
        ),
    };
    if machines.is_empty() {
        return failure(
            StatusCode::BAD_REQUEST,
            "No machines",
            &format!("{what}: no machine to check (give a directory of .stm files)"),
        );
    }
    let report = match deploy_check(&c.backend, machines, c.scan, |doing, e| {
        anyhow::anyhow!("{doing}: {e}")
    })
    .await
    {
        Ok(r) => r,
        Err(e) => return super::html::aws_error(e),
    };
    let mut body = format!(
        "<h1>Deploy check</h1><p>Deploying {}:</p><table><tr><th>machine</th><th>version</th><th></th></tr>",
        esc(&what)
    );
    for (m, (v, _)) in &report.new {
        body.push_str(&format!(
            "<tr><td><a href=\"/machines/{}\">{}</a></td><td><code>{}</code></td><td>{}</td></tr>",
            url(m),
            esc(m),
            esc(v),
            if report.kept.contains_key(v) {
                "kept already"
            } else {
                "new"
            }
        ));
    }
    body.push_str("</table><h2>The live executions</h2>");
    if report.groups.is_empty() {
        body.push_str("<p>no live executions</p>");
    } else {
        body.push_str("<table id=\"groups\"><tr><th>machine</th><th>what they run</th><th>live</th><th>could move without a map</th><th>need a map</th></tr>");
        for ((machine, version), g) in &report.groups {
            let paths: String = g
                .needs_map
                .iter()
                .map(|(p, n)| format!("<br><code>{}</code> ({n})", esc(p)))
                .collect();
            body.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}{paths}</td></tr>",
                esc(machine),
                esc(&report.describe(machine, version, g)),
                g.live,
                g.migratable,
                g.executions_needing_map
            ));
        }
        body.push_str("</table>");
    }
    if report.blocking.is_empty() {
        body.push_str(&notice("ok", "Nothing blocks this deploy."));
    } else {
        for b in &report.blocking {
            body.push_str(&notice("error", b));
        }
    }
    ok("Deploy check", body)
}
