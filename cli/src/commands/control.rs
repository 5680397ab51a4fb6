//! `harel cancel|terminate|suspend|resume ID` and `harel redrive ID --to STATE`: the control
//! plane (harel-control) against the deployed stack's tables. A cooperative cancel's `Cancel`
//! is published to the queue at once when one is configured (else the relay publishes it on
//! its next run).

use std::process::ExitCode;

use harel_control::{CancelMode, Command, ControlError, ControlOutcome};
use harel_model::Object;
use harel_store::prelude::*;
use serde_json::json;

use super::clock::now;
use super::create::json_object;
use super::machines::MachineArgs;
use super::stack::{Stack, StackArgs, AWS_HINT};

#[derive(clap::Args)]
pub struct ControlArgs {
    /// The execution id
    pub id: String,
    /// Answer in JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub stack: StackArgs,
}

#[derive(clap::Args)]
pub struct CancelArgs {
    #[command(flatten)]
    pub common: ControlArgs,
    /// The data of the `Cancel` event, a JSON object (a guard such as `where reason == ...`
    /// may read it)
    #[arg(long, value_name = "JSON")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub machines: MachineArgs,
}

#[derive(clap::Args)]
pub struct RedriveArgs {
    #[command(flatten)]
    pub common: ControlArgs,
    /// The leaf state to resume the FAILED execution at (its full path, e.g. Checkout.Paying)
    #[arg(long = "to", value_name = "STATE")]
    pub to: String,
    #[command(flatten)]
    pub machines: MachineArgs,
}

/// Which command, with what only it needs.
pub enum Request {
    Cancel(CancelArgs),
    Terminate(ControlArgs),
    Suspend(ControlArgs),
    Resume(ControlArgs),
    Redrive(RedriveArgs),
}

fn failed(stack: &Stack, id: &str, e: ControlError) -> anyhow::Error {
    match e {
        ControlError::NotFound(_) => super::exit::not_found(format_args!(
            "no execution {id:?} in table {}: check the id, --table-prefix or --stack",
            stack.executions_table()
        )),
        ControlError::Store(e) => stack.explain(&format!("writing execution {id:?}"), e),
        // a redrive target, a wrong machine: understood, not done
        other => super::exit::refused(other),
    }
}

/// Publish what a cooperative cancel enqueued, acking it; on failure the relay will.
pub async fn publish(stack: &Stack, out: &ControlOutcome) -> anyhow::Result<bool> {
    if out.enqueued.is_empty() || !stack.has_queue() {
        return Ok(false);
    }
    let transport = stack.transport("publishing the Cancel")?;
    let entries: Vec<_> = out
        .enqueued
        .iter()
        .map(|e| harel_store::OutboxEntry {
            seq: e.seq,
            target_id: Some(e.target_id.as_str().into()),
            event: e.event.clone(),
        })
        .collect();
    harel_runtime::delivery::queue::publish_outbox(&stack.store, &transport, &entries)
        .await
        .map_err(|e| super::exit::aws(format_args!("the Cancel is committed but could not be published ({e}; {AWS_HINT}): the relay will publish it")))?;
    Ok(true)
}

pub async fn execute(request: Request) -> anyhow::Result<ExitCode> {
    let common = match &request {
        Request::Cancel(a) => &a.common,
        Request::Redrive(a) => &a.common,
        Request::Terminate(a) | Request::Suspend(a) | Request::Resume(a) => a,
    };
    let stack = common.stack.connect().await?;
    let id = common.id.as_str();
    let store = &stack.store;
    let at = now();
    let result = match &request {
        Request::Cancel(a) => {
            let reason = match &a.reason {
                Some(raw) => json_object(raw, "--reason").map_err(super::exit::usage)?,
                None => Object::new(),
            };
            let machines = a.machines.load()?;
            let exe = stack.execution(id).await?;
            let defn = super::versions::definition_of(&stack, &exe, || {
                machines.get(
                    &exe.definition_id,
                    "cancel reads whether it models Cancel: cooperative if so, else forceful",
                )
            })
            .await?;
            harel_control::cancel_with_reason(store, &defn, id, reason, at).await
        }
        Request::Redrive(a) => {
            let machines = a.machines.load()?;
            let exe = stack.execution(id).await?;
            let defn = super::versions::definition_of(&stack, &exe, || {
                machines.get(&exe.definition_id, "redrive checks --to against it")
            })
            .await?;
            harel_control::redrive(store, &defn, id, &a.to, at).await
        }
        Request::Terminate(_) => harel_control::terminate(store, id, at).await,
        Request::Suspend(_) => harel_control::suspend(store, id, at).await,
        Request::Resume(_) => harel_control::resume(store, id, at).await,
    };
    let out = result.map_err(|e| failed(&stack, id, e))?;
    let published = publish(&stack, &out).await?;
    let status = match store.load(id).await {
        Ok(Some(exe)) => exe.status.to_string(),
        Ok(None) => "gone".into(),
        Err(e) => return Err(stack.explain(&format!("reading {id:?} back"), e)),
    };
    if common.json {
        let mut doc = serde_json::to_value(&out)?;
        if let Some(map) = doc.as_object_mut() {
            map.insert("changed".into(), json!(out.changed()));
            map.insert("status".into(), json!(status));
            map.insert("published".into(), json!(published));
        }
        println!("{doc}");
    } else {
        print_text(&out, &status, published, stack.has_queue());
    }
    if out.contended.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "error: {} kept changing under the {} ({} attempts each lost to a concurrent writer): run it again",
            out.contended.join(", "),
            out.command,
            harel_control::RETRIES
        );
        Ok(ExitCode::FAILURE)
    }
}

fn print_text(out: &ControlOutcome, status: &str, published: bool, has_queue: bool) {
    let Some(own) = out.own_step() else {
        println!(
            "{} {}: nothing to do (it is {status})",
            out.command, out.execution_id
        );
        return;
    };
    let how = match (out.command, out.mode) {
        (Command::Cancel, Some(CancelMode::Cooperative)) => {
            let delivery = if published {
                "the Cancel is on the queue"
            } else if has_queue {
                "the relay publishes the Cancel"
            } else {
                "no queue configured: the relay publishes the Cancel on its next run"
            };
            format!(", cooperative: {delivery}; the worker skips the backlog and the machine's Cancel transition cleans up")
        }
        (Command::Cancel, Some(CancelMode::Forceful)) => {
            ", forceful: no Cancel transition here, no hooks run".into()
        }
        _ => String::new(),
    };
    let path = |p: &Option<String>| p.clone().unwrap_or_else(|| "-".into());
    let moved = if own.from_path == own.to_path {
        String::new()
    } else {
        format!(" at {}", path(&own.to_path))
    };
    println!(
        "{} {}: {} -> {}{moved}{how}",
        out.command, out.execution_id, own.from_status, own.to_status
    );
    for step in out
        .steps
        .iter()
        .filter(|s| s.execution_id != out.execution_id)
    {
        println!(
            "  region {}: {} -> {}",
            step.execution_id, step.from_status, step.to_status
        );
    }
}
