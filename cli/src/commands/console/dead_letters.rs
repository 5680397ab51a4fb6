//! `/dead-letters`: the dead-letter queue's messages (a look that leaves them there), one
//! message's body, reason, age and receive count, and redrive (a dry run first) and delete
//! (confirmed), through `harel_runtime::dead_letters` as `harel dlq` does. The demo has no
//! queue, so none.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use harel_runtime::dead_letters::{self, Selection, Verdict, NOT_SEEN};
use serde_json::Value;

use super::html::{
    all, aws_error, esc, failure, first, hidden, json_tree, not_found, notice, ok, pairs, url,
};
use super::{Console, Shared};
use crate::commands::clock::{now, span, utc};
use crate::commands::stack::Stack;

/// The dead-letter queue, or the page that says there is none (boxed: a `Response` is large).
fn dlq_or_error(c: &Console) -> Result<harel_sqs::SqsDeadLetters, Box<Response>> {
    stack_dlq(c).map(|(_, dlq)| dlq)
}

/// The stack and its dead-letter queue.
fn stack_dlq(c: &Console) -> Result<(&Stack, harel_sqs::SqsDeadLetters), Box<Response>> {
    let Some(stack) = c.backend.stack() else {
        return Err(Box::new(failure(
            StatusCode::SERVICE_UNAVAILABLE,
            "No dead-letter queue",
            "The embedded demo runs every event in this process: it has no queue, so no dead letters.",
        )));
    };
    let dlq = stack.dead_letters().map_err(|e| {
        Box::new(failure(
            StatusCode::SERVICE_UNAVAILABLE,
            "No dead-letter queue",
            &format!("{e:#}"),
        ))
    })?;
    Ok((stack, dlq))
}

/// The dead-letter queue and the main queue a redrive sends to.
fn queues(
    c: &Console,
) -> Result<(harel_sqs::SqsDeadLetters, harel_sqs::SqsTransport), Box<Response>> {
    let (stack, dlq) = stack_dlq(c)?;
    let main = stack
        .transport("redriving dead letters to it")
        .map_err(|e| {
            Box::new(failure(
                StatusCode::SERVICE_UNAVAILABLE,
                "No queue",
                &format!("{e:#}"),
            ))
        })?;
    Ok((dlq, main))
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
        return not_found(&format!("Dead letter {id:?}: {NOT_SEEN}."));
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
    let (dlq, main) = match queues(&c) {
        Ok(q) => q,
        Err(r) => return *r,
    };
    let dry_run = first(&form, "dry_run") == Some("yes");
    let done = match dead_letters::redrive(
        &c.backend,
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
