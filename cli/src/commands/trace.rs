//! `harel trace ID`: an execution's recorded steps as a timeline (`--json`: the trace entries
//! as stored). The trace is opt-in (harel's `trace=True`, `DurableRunner::with_trace`, the
//! functions' `HAREL_TRACE=true`), and control commands add no step (as in harel).

use std::process::ExitCode;

use harel_model::Object;
use harel_store::prelude::*;
use serde_json::{json, Value};

use super::clock::{span, utc};
use super::stack::StackArgs;

#[derive(clap::Args)]
pub struct TraceArgs {
    /// The execution id
    pub id: String,
    /// Answer in JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub stack: StackArgs,
}

fn text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "-".into(),
        Some(Value::String(s)) if s.is_empty() => "(root)".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn non_empty(step: &Object, key: &str) -> Option<String> {
    match step.get(key)? {
        Value::Object(o) if o.is_empty() => None,
        Value::Array(a) if a.is_empty() => None,
        Value::Array(a) => Some(
            a.iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// One line per step (`#index  time (+since the previous)  event  from -> to`), the event's
/// data, the actions run and the `set` assignments beneath it.
pub fn timeline(steps: &[Object]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut previous: Option<f64> = None;
    let width = steps
        .iter()
        .map(|s| text(s.get("event_kind")).len())
        .max()
        .unwrap_or(0);
    for (i, step) in steps.iter().enumerate() {
        let index = step
            .get("index")
            .map_or_else(|| i.to_string(), |v| v.to_string());
        let at = step.get("timestamp").and_then(Value::as_f64);
        let when = match (at, previous) {
            (Some(t), Some(p)) => format!("{}  (+{})", utc(t), span(t - p)),
            (Some(t), None) => utc(t),
            (None, _) => "-".into(),
        };
        previous = at.or(previous);
        lines.push(format!(
            "#{index:<3} {when:<36} {:<width$}  {} -> {}",
            text(step.get("event_kind")),
            text(step.get("from_path")),
            text(step.get("to_path")),
        ));
        for (label, key) in [
            ("data", "event_data"),
            ("actions", "actions"),
            ("set", "assigned"),
        ] {
            if let Some(detail) = non_empty(step, key) {
                lines.push(format!("     {label:<8} {detail}"));
            }
        }
    }
    lines
}

pub async fn execute(args: TraceArgs) -> anyhow::Result<ExitCode> {
    let stack = args.stack.connect().await?;
    let exe = stack.execution(&args.id).await?;
    let steps = stack
        .store
        .read_trace(&exe.id)
        .await
        .map_err(|e| stack.explain(&format!("reading the trace of {:?}", exe.id), e))?;
    if args.json {
        println!("{}", json!({"execution_id": exe.id, "steps": steps}));
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} ({}, {}): {} step{}",
        exe.id,
        exe.definition_id,
        exe.status,
        steps.len(),
        if steps.len() == 1 { "" } else { "s" }
    );
    if steps.is_empty() {
        println!("no trace recorded: the trace is opt-in (deploy with TraceEnabled=true, i.e. HAREL_TRACE=true for the functions, or a runner with the trace on)");
    }
    for line in timeline(&steps) {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
