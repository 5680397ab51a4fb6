//! `harel dlq list|show|redrive|delete`: the dead-letter queue, read and moved through
//! `harel_runtime::dead_letters` (which says what a look costs: SQS has no peek, so each
//! look is a receive that is released at once and adds one to each receive count).

use std::process::ExitCode;

use harel_runtime::dead_letters::{self, Done, Selection, Verdict, NOT_SEEN};
use harel_sqs::DeadLetter;
use serde_json::{json, Value};

use super::clock::{now, span, utc};
use super::stack::{StackArgs, AWS_HINT};

#[derive(clap::Subcommand)]
pub enum DlqCommand {
    /// The dead letters: execution, event kind, reason, when dead-lettered, receive count
    List(ListArgs),
    /// One dead letter in full, its body included
    Show(IdArgs),
    /// Send dead letters back to the main queue (same execution, fresh deduplication id,
    /// the reason dropped); one whose execution is gone or finished stays, saying why
    Redrive(RedriveArgs),
    /// Delete dead letters for good
    Delete(DeleteArgs),
}

#[derive(clap::Args)]
pub struct ListArgs {
    /// Answer in JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub stack: StackArgs,
}

#[derive(clap::Args)]
pub struct IdArgs {
    /// The dead letter's message id (as `harel dlq list` prints it)
    pub id: String,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub stack: StackArgs,
}

#[derive(clap::Args)]
pub struct RedriveArgs {
    /// Message ids (as `harel dlq list` prints them)
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub ids: Vec<String>,
    /// Every dead letter the look can see
    #[arg(long)]
    pub all: bool,
    /// Say what would be redriven and what would stay; move nothing
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub stack: StackArgs,
}

#[derive(clap::Args)]
pub struct DeleteArgs {
    /// Message ids (as `harel dlq list` prints them)
    #[arg(required = true)]
    pub ids: Vec<String>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub stack: StackArgs,
}

/// A dead letter as `--json` prints it.
pub fn letter_json(l: &DeadLetter) -> Value {
    json!({
        "message_id": l.message_id,
        "execution_id": l.execution_id(),
        "group_id": l.group_id,
        "event_kind": l.event_kind(),
        "reason": l.reason,
        "source_message_id": l.source_message_id,
        "dead_lettered_at": l.dead_lettered_at_ms.map(|ms| utc(ms as f64 / 1000.0)),
        "receive_count": l.receive_count,
        "body": l.body,
    })
}

fn age(l: &DeadLetter) -> String {
    match l.dead_lettered_at_ms {
        Some(ms) => format!(
            "{} ({} ago)",
            utc(ms as f64 / 1000.0),
            span(now() - ms as f64 / 1000.0)
        ),
        None => "-".into(),
    }
}

fn reason(l: &DeadLetter) -> String {
    l.reason
        .clone()
        .unwrap_or_else(|| "(none: SQS moved it after its receives ran out)".into())
}

fn queue_failed(e: dead_letters::DeadLetterError) -> anyhow::Error {
    match e {
        dead_letters::DeadLetterError::Store(e) => {
            super::exit::aws(format_args!("reading an execution: {e} ({AWS_HINT})"))
        }
        e => super::exit::aws(format_args!("the dead-letter queue: {e} ({AWS_HINT})")),
    }
}

pub async fn execute(command: DlqCommand) -> anyhow::Result<ExitCode> {
    match command {
        DlqCommand::List(a) => {
            let stack = a.stack.connect().await?;
            let letters = dead_letters::look(&stack.dead_letters()?)
                .await
                .map_err(queue_failed)?;
            if a.json {
                let all: Vec<Value> = letters.iter().map(letter_json).collect();
                println!("{}", Value::Array(all));
                return Ok(ExitCode::SUCCESS);
            }
            if letters.is_empty() {
                println!("no dead letters");
            }
            for l in &letters {
                println!(
                    "{}  {}  {}  receives {}  {}\n    reason: {}",
                    l.message_id,
                    l.execution_id().unwrap_or("(no execution)"),
                    l.event_kind().unwrap_or_else(|| "(unreadable)".into()),
                    l.receive_count,
                    age(l),
                    reason(l),
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        DlqCommand::Show(a) => {
            let stack = a.stack.connect().await?;
            let letters = dead_letters::look(&stack.dead_letters()?)
                .await
                .map_err(queue_failed)?;
            let Some(l) = letters.iter().find(|l| l.message_id == a.id) else {
                return Err(super::exit::not_found(format_args!(
                    "dead letter {:?}: {NOT_SEEN}",
                    a.id
                )));
            };
            if a.json {
                println!("{}", letter_json(l));
                return Ok(ExitCode::SUCCESS);
            }
            println!("message:     {}", l.message_id);
            println!(
                "execution:   {}",
                l.execution_id().unwrap_or("(no execution)")
            );
            println!(
                "event:       {}",
                l.event_kind().unwrap_or_else(|| "(unreadable)".into())
            );
            println!("reason:      {}", reason(l));
            println!("dead-lettered: {}", age(l));
            println!("receives:    {} (each look counts one)", l.receive_count);
            if let Some(src) = &l.source_message_id {
                println!("source:      {src} (its id on the main queue)");
            }
            let body = serde_json::from_str::<Value>(&l.body)
                .ok()
                .and_then(|v| serde_json::to_string_pretty(&v).ok())
                .unwrap_or_else(|| l.body.clone());
            println!("body:\n{body}");
            Ok(ExitCode::SUCCESS)
        }
        DlqCommand::Redrive(a) => {
            let stack = a.stack.connect().await?;
            let dlq = stack.dead_letters()?;
            let main = stack.transport("redriving dead letters to it")?;
            let selection = if a.all {
                Selection::All
            } else {
                Selection::Ids(a.ids.clone())
            };
            let done = dead_letters::redrive(&stack.store, &dlq, &main, &selection, a.dry_run)
                .await
                .map_err(queue_failed)?;
            report(&done, a.json, a.dry_run)
        }
        DlqCommand::Delete(a) => {
            let stack = a.stack.connect().await?;
            let done = dead_letters::delete(&stack.dead_letters()?, &a.ids)
                .await
                .map_err(queue_failed)?;
            report(&done, a.json, false)
        }
    }
}

/// Print what happened to each; exit 4 (refused) when any stayed, 3 when one was not found.
fn report(done: &[Done], json: bool, dry_run: bool) -> anyhow::Result<ExitCode> {
    let verdict = |d: &Done| -> (&str, String) {
        match &d.verdict {
            Verdict::Redriven => ("redriven", String::new()),
            Verdict::WouldRedrive => ("would_redrive", String::new()),
            Verdict::Left(why) => ("left", why.clone()),
            Verdict::Deleted => ("deleted", String::new()),
            Verdict::NotFound => ("not_found", NOT_SEEN.to_string()),
        }
    };
    if json {
        let all: Vec<Value> = done
            .iter()
            .map(|d| {
                let (v, why) = verdict(d);
                json!({
                    "message_id": d.message_id,
                    "execution_id": d.letter.as_ref().and_then(|l| l.execution_id()),
                    "verdict": v,
                    "why": (!why.is_empty()).then_some(why),
                })
            })
            .collect();
        println!("{}", json!({"dry_run": dry_run, "results": all}));
    } else {
        if done.is_empty() {
            println!("no dead letters: nothing to do");
        }
        for d in done {
            let (v, why) = verdict(d);
            let exe = d
                .letter
                .as_ref()
                .and_then(|l| l.execution_id())
                .unwrap_or("-");
            let v = v.replace('_', " ");
            if why.is_empty() {
                println!("{}  {exe}: {v}", d.message_id);
            } else {
                println!("{}  {exe}: {v}: {why}", d.message_id);
            }
        }
    }
    if done.iter().any(|d| d.verdict == Verdict::NotFound) {
        return Ok(ExitCode::from(super::exit::NOT_FOUND));
    }
    if done.iter().any(|d| matches!(d.verdict, Verdict::Left(_))) {
        return Ok(ExitCode::from(super::exit::REFUSED));
    }
    Ok(ExitCode::SUCCESS)
}
