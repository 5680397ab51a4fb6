//! `harel show ID`: a stored execution for people (its status, active configuration,
//! context, its children and the timers armed for it and them), or with `--json` for scripts
//! (`{"execution": ..., "children": [...], "timers": [...]}`, the documents as harel writes
//! them).

use std::process::ExitCode;

use anyhow::bail;
use harel_model::Execution;
use harel_store::prelude::*;
use serde::Serialize;
use serde_json::json;

use super::clock::{now, span, utc};
use super::stack::{Stack, StackArgs};

/// Where executions live: the choice `run` makes (and `show` accepts, for compatibility).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StoreKind {
    /// In this process only: nothing outlives the command.
    Memory,
    /// harel's DynamoDB tables (endpoint and region from the SDK's standard configuration,
    /// including AWS_ENDPOINT_URL).
    Dynamodb,
}

#[derive(Clone, Debug, clap::Args)]
pub struct StoreArgs {
    /// The execution store
    #[arg(long, value_enum, default_value = "memory")]
    pub store: StoreKind,
    /// The prefix of the DynamoDB tables ({prefix}_executions, ...), as harel's `prefix`;
    /// read from HAREL_TABLE_PREFIX, like the functions, when not given
    #[arg(long, env = "HAREL_TABLE_PREFIX", default_value = "harel")]
    pub table_prefix: String,
}

#[derive(clap::Args)]
pub struct ShowArgs {
    /// The execution id
    pub id: String,
    /// Answer in JSON
    #[arg(long)]
    pub json: bool,
    /// Accepted for compatibility: `show` reads the stack's DynamoDB tables
    #[arg(long, value_enum, hide = true)]
    pub store: Option<StoreKind>,
    #[command(flatten)]
    pub stack: StackArgs,
}

/// An armed timer: when `execution_id`'s state `path` times out.
#[derive(Clone, Debug, Serialize)]
pub struct Timer {
    pub execution_id: String,
    pub path: String,
    pub fire_at: f64,
}

/// The timers armed for one execution (one Query on the timers table, keyed by it).
pub async fn timers_of(stack: &Stack, execution_id: &str) -> anyhow::Result<Vec<Timer>> {
    let timers = stack.store.armed_timers(execution_id).await.map_err(|e| {
        let table = stack.store.tables().timers();
        stack.explain(
            &format!("reading the timers of {execution_id:?} from {table}"),
            e,
        )
    })?;
    Ok(timers
        .into_iter()
        .map(|t| Timer {
            execution_id: t.execution_id,
            path: t.path,
            fire_at: t.fire_at,
        })
        .collect())
}

/// The execution's children as stored, in the order the execution lists them (a child it
/// lists but the store no longer has is left out).
pub async fn children_of(stack: &Stack, exe: &Execution) -> anyhow::Result<Vec<Execution>> {
    let mut children = Vec::new();
    for cid in exe.children.keys() {
        match stack.store.load(cid).await {
            Ok(Some(child)) => children.push(child),
            Ok(None) => {}
            Err(e) => return Err(stack.explain(&format!("reading child {cid:?}"), e)),
        }
    }
    Ok(children)
}

/// `Checkout > AwaitingPayment`: the active states, outermost first, of this execution's own
/// branch.
pub fn configuration(exe: &Execution) -> String {
    match exe.active_path.as_deref() {
        None | Some("") => "-".into(),
        Some(path) => path.split('.').collect::<Vec<_>>().join(" > "),
    }
}

fn line(label: &str, value: impl std::fmt::Display) {
    println!("{label:<10} {value}");
}

fn print_text(exe: &Execution, children: &[Execution], timers: &[Timer]) {
    let now = now();
    line("execution", &exe.id);
    line("machine", &exe.definition_id);
    // an execution runs on the version it started on; without one (created before versions,
    // or last written by harel Python), on whatever is deployed
    line(
        "definition",
        match exe.pinned_version() {
            Some(v) => format!("version {v}"),
            None => "the deployed one (no version recorded)".into(),
        },
    );
    let status = match &exe.outcome {
        Some(o) => format!("{} (outcome {o})", exe.status),
        None => exe.status.to_string(),
    };
    line("status", status);
    if let Some(error) = &exe.error {
        line("error", error);
    }
    line("active", configuration(exe));
    if !exe.root_path.is_empty() {
        line("region", &exe.root_path);
    }
    if let Some(parent) = &exe.parent_id {
        line("parent", parent);
    }
    line(
        "context",
        serde_json::to_string(&exe.context).unwrap_or_default(),
    );
    line("events", exe.processed_events);
    line("version", exe.version);
    if let Some(t) = exe.created_at {
        line("created", utc(t));
    }
    if let Some(t) = exe.updated_at {
        line("updated", format!("{} ({} ago)", utc(t), span(now - t)));
    }
    if let Some(t) = exe.finished_at {
        line("finished", utc(t));
    }
    if let Some(t) = exe.expires_at {
        line("expires", format!("{} (ttl)", utc(t)));
    }
    println!();
    if children.is_empty() {
        println!("children   none");
    } else {
        println!("children ({})", children.len());
        let width = children.iter().map(|c| c.id.len()).max().unwrap_or(0);
        for child in children {
            let outcome = child
                .outcome
                .as_deref()
                .map(|o| format!("  outcome {o}"))
                .unwrap_or_default();
            println!(
                "  {:<width$}  {:<10}  {}{outcome}",
                child.id,
                child.status.as_str(),
                configuration(child),
            );
        }
    }
    println!();
    if timers.is_empty() {
        println!("timers     none armed");
    } else {
        println!("timers ({})", timers.len());
        for t in timers {
            let when = if t.fire_at >= now {
                format!("in {}", span(t.fire_at - now))
            } else {
                format!("due {} ago", span(now - t.fire_at))
            };
            let whose = if t.execution_id == exe.id {
                String::new()
            } else {
                format!("  ({})", t.execution_id)
            };
            println!("  {:<24}  {}  {when}{whose}", t.path, utc(t.fire_at));
        }
    }
}

pub async fn execute(args: ShowArgs) -> anyhow::Result<ExitCode> {
    if args.store == Some(StoreKind::Memory) {
        bail!("the in-memory store keeps nothing between commands: show an execution from a durable store (--store dynamodb --table-prefix P)");
    }
    let stack = args.stack.connect().await?;
    let exe = stack.execution(&args.id).await?;
    let children = children_of(&stack, &exe).await?;
    let mut timers = timers_of(&stack, &exe.id).await?;
    for child in &children {
        timers.extend(timers_of(&stack, &child.id).await?);
    }
    if args.json {
        let out = json!({"execution": exe, "children": children, "timers": timers});
        println!("{out}");
    } else {
        print_text(&exe, &children, &timers);
    }
    Ok(ExitCode::SUCCESS)
}
