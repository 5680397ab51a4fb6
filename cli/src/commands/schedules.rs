//! `harel schedules list [FILE]`: each entry of a schedules file (checked as the sweeper's
//! cold start checks it) with its next fire times, in its zone and in UTC, and their ids.
//! `harel schedules trigger NAME [FILE]`: start one now, through `harel create`'s path (the
//! create message on the stack's queue), with the id the entry gives the current minute.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use harel_schedule::{Schedule, Schedules};
use serde_json::json;

use super::machines::MachineArgs;
use super::stack::StackArgs;

#[derive(clap::Subcommand)]
pub enum SchedulesCommand {
    /// Print each entry's next fire times (its zone and UTC) and their execution ids
    List(ListArgs),
    /// Start one entry's machine now, with its context, on the deployed stack
    Trigger(TriggerArgs),
}

#[derive(clap::Args)]
pub struct FileArgs {
    /// The schedules file (JSON, TOML or YAML)
    #[arg(value_name = "FILE", env = harel_stack::SCHEDULES_FILE)]
    pub file: PathBuf,
    #[command(flatten)]
    pub machines: MachineArgs,
}

#[derive(clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub file: FileArgs,
    /// Fire times shown per entry
    #[arg(long, default_value_t = 3)]
    pub next: usize,
    /// Answer in JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct TriggerArgs {
    /// The entry to start
    pub name: String,
    #[command(flatten)]
    pub file: FileArgs,
    /// The execution id [default: the entry's id for the current minute]
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    #[command(flatten)]
    pub stack: StackArgs,
}

pub async fn execute(cmd: SchedulesCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        SchedulesCommand::List(args) => list(args),
        SchedulesCommand::Trigger(args) => trigger(args).await,
    }
}

/// The file, checked against the machines when some are given (else said on stderr).
fn load(args: &FileArgs) -> anyhow::Result<Schedules> {
    let machines = args.machines.load()?;
    let lookup = |name: &str| machines.find(name).cloned().map(Arc::new);
    let check: Option<harel_schedule::Machines<'_>> = (!machines.is_empty()).then_some(&lookup);
    let schedules = harel_schedule::load(&args.file, check)
        .map_err(|e| super::exit::refused(format_args!("{e}")))?;
    if machines.is_empty() {
        eprintln!(
            "note: the machines and contexts were not checked (give --machines DIR, as the sweeper's cold start checks them)"
        );
    }
    Ok(schedules)
}

fn now() -> DateTime<Utc> {
    Utc::now()
}

fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let schedules = load(&args.file)?;
    let now = now();
    let mut out = Vec::new();
    for s in &schedules.entries {
        let fires = s.when.upcoming(now, s.zone, args.next);
        if args.json {
            out.push(json!({
                "name": s.name,
                "machine": s.machine,
                "when": s.when.describe(),
                "timezone": s.zone.name(),
                "overlap": format!("{:?}", s.overlap).to_lowercase(),
                "catch_up": format!("{:?}", s.catch_up).to_lowercase(),
                "next": fires.iter().map(|f| json!({
                    "utc": f.to_rfc3339(),
                    "local": s.zone.from_utc_datetime(&f.naive_utc()).to_rfc3339(),
                    "id": s.execution_id(*f),
                })).collect::<Vec<_>>(),
            }));
            continue;
        }
        println!(
            "{}  {}  {} ({})  overlap {}, catch_up {}",
            s.name,
            s.machine,
            s.when.describe(),
            s.zone.name(),
            format!("{:?}", s.overlap).to_lowercase(),
            format!("{:?}", s.catch_up).to_lowercase()
        );
        for f in fires {
            println!("  {}", fire_line(s, f));
        }
    }
    if args.json {
        println!("{}", serde_json::Value::Array(out));
    }
    Ok(ExitCode::SUCCESS)
}

/// `2026-12-06 03:00 CET  2026-12-06 02:00 UTC  nightly-20261206T0200Z`
fn fire_line(s: &Schedule, fire: DateTime<Utc>) -> String {
    let local = s.zone.from_utc_datetime(&fire.naive_utc());
    format!(
        "{}  {}  {}",
        local.format("%Y-%m-%d %H:%M %Z"),
        fire.format("%Y-%m-%d %H:%M UTC"),
        s.execution_id(fire)
    )
}

async fn trigger(args: TriggerArgs) -> anyhow::Result<ExitCode> {
    let schedules = load(&args.file)?;
    let Some(s) = schedules.get(&args.name) else {
        return Err(super::exit::not_found(format_args!(
            "no entry {:?} in {}: it has {}",
            args.name,
            schedules.file,
            schedules.names().collect::<Vec<_>>().join(", ")
        )));
    };
    let minute = Utc
        .timestamp_opt(now().timestamp().div_euclid(60) * 60, 0)
        .single()
        .unwrap_or_default();
    let id = args.id.clone().unwrap_or_else(|| s.execution_id(minute));
    harel_sqs::check_group_id(&id)
        .map_err(|e| super::exit::usage(format_args!("--id {id:?}: {e}")))?;
    let stack = args.stack.connect().await?;
    super::create::send_create(&stack, &s.machine, s.context.clone(), &id).await?;
    println!("{id}");
    eprintln!(
        "queued: the worker creates and starts {} {id} (harel show {id})",
        s.machine
    );
    Ok(ExitCode::SUCCESS)
}
