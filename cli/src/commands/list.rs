//! `harel list FILE`: the machines, fragments and events a file declares (parsed only,
//! nothing is built, so a file whose machines do not build yet still lists).
//!
//! `harel list [--status S]... [--machine M] [--roots] [--limit N] [--cursor C] [--scan]`:
//! the deployed stack's executions, newest first, a page at a time. `--version V` keeps the
//! executions of a page pinned to machine version V (read one by one: the listing indexes
//! do not hold the version).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::bail;
use harel_model::{ExecutionSummary, Status};
use harel_store::prelude::*;
use harel_store::ListQuery;
use serde_json::json;

use super::clock::utc;
use super::stack::StackArgs;

#[derive(clap::Args)]
pub struct ListArgs {
    /// A .stm file: list what it declares (without one: the stack's executions)
    file: Option<PathBuf>,
    /// Only executions in this status (repeatable: any of them)
    #[arg(long = "status", value_name = "STATUS")]
    statuses: Vec<Status>,
    /// Only executions of this machine
    #[arg(long, value_name = "MACHINE")]
    machine: Option<String>,
    /// Only root executions (no regions)
    #[arg(long)]
    roots: bool,
    /// Only executions pinned to this machine version (`harel show` prints it; `none`: those
    /// without one). Filters each page after reading its executions, one request each
    #[arg(long = "version", value_name = "VERSION")]
    version: Option<String>,
    /// At most this many executions per page
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1000))]
    limit: u32,
    /// Continue a listing: the cursor the previous page printed
    #[arg(long, value_name = "CURSOR")]
    cursor: Option<String>,
    /// Read the whole executions table instead of its status indexes. Slow and priced by
    /// the table's size, but it also lists executions last written by harel Python, which
    /// the indexes do not hold (its writes drop the index attributes). Progress on stderr
    #[arg(long)]
    scan: bool,
    /// Answer in JSON
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    stack: StackArgs,
}

fn names<'a>(keys: impl Iterator<Item = &'a String>) -> String {
    let joined = keys.map(String::as_str).collect::<Vec<_>>().join(", ");
    if joined.is_empty() {
        "—".into()
    } else {
        joined
    }
}

fn declarations(file: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let program = harel_lang::parse_file(file)?;
    if json {
        let keys = |m: Vec<&String>| m.into_iter().cloned().collect::<Vec<_>>();
        let out = json!({
            "machines": keys(program.machines.keys().collect()),
            "fragments": keys(program.fragments.keys().collect()),
            "events": keys(program.events.keys().collect()),
        });
        println!("{out}");
    } else {
        println!("machines:  {}", names(program.machines.keys()));
        println!("fragments: {}", names(program.fragments.keys()));
        println!("events:    {}", names(program.events.keys()));
    }
    Ok(ExitCode::SUCCESS)
}

fn table(items: &[ExecutionSummary]) {
    let rows: Vec<[String; 6]> = items
        .iter()
        .map(|s| {
            [
                s.id.clone(),
                s.definition_id.clone(),
                s.status.to_string(),
                s.active_path.clone().unwrap_or_else(|| "-".into()),
                s.outcome.clone().unwrap_or_else(|| "-".into()),
                s.finished_at.map(utc).unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let header = ["ID", "MACHINE", "STATUS", "ACTIVE", "OUTCOME", "FINISHED"];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let print = |cells: [&str; 6]| {
        let line: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", line.join("  ").trim_end());
    };
    print(header);
    for row in &rows {
        print(row.each_ref().map(String::as_str));
    }
}

pub async fn execute(args: ListArgs) -> anyhow::Result<ExitCode> {
    if let Some(file) = &args.file {
        if !args.statuses.is_empty()
            || args.machine.is_some()
            || args.roots
            || args.cursor.is_some()
            || args.scan
            || args.version.is_some()
        {
            bail!("`harel list FILE` lists what the file declares; --status, --machine, --roots, --cursor and --scan list the stack's executions: drop the FILE or the filters");
        }
        return declarations(file, args.json);
    }
    let mut stack = args.stack.connect().await?;
    if args.scan {
        stack.report_scan_progress();
    }
    let query = ListQuery {
        status: (!args.statuses.is_empty()).then(|| args.statuses.clone()),
        definition_id: args.machine.clone(),
        roots_only: args.roots,
        limit: args.limit as usize,
        cursor: args.cursor.clone(),
        scan: args.scan,
    };
    let mut page = stack.store.list_executions(&query).await.map_err(|e| {
        stack.explain(
            &format!("listing the executions of {}", stack.executions_table()),
            e,
        )
    })?;
    if let Some(wanted) = &args.version {
        let mut kept = Vec::new();
        for summary in std::mem::take(&mut page.items) {
            let exe = stack
                .store
                .load(&summary.id)
                .await
                .map_err(|e| stack.explain(&format!("reading {:?}", summary.id), e))?;
            let version = exe.as_ref().and_then(|e| e.pinned_version());
            if version.unwrap_or("none") == wanted {
                kept.push(summary);
            }
        }
        page.items = kept;
    }
    if args.json {
        println!(
            "{}",
            json!({"items": page.items, "next_cursor": page.next_cursor})
        );
        return Ok(ExitCode::SUCCESS);
    }
    if page.items.is_empty() {
        println!("no executions match");
    } else {
        table(&page.items);
    }
    if let Some(cursor) = &page.next_cursor {
        println!();
        println!("more: repeat with --cursor {cursor}");
    }
    Ok(ExitCode::SUCCESS)
}
