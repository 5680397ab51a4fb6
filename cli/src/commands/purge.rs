//! `harel purge --older-than AGE [--status S]... [--archive FILE] [--dry-run] [--limit N]
//! [--include-undated] [-v] [--scan]`: harel's `harel purge` against the deployed stack's
//! tables, same arguments, output and exit codes (1 when a tree was refused or the archive
//! could not be written); candidates come from the status index, trees from the parent
//! index, neither a table Scan (`--scan` lists candidates by one, for roots harel Python
//! wrote).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use harel_control::{purge_finished, ControlError, JsonlArchive, PurgeFinished};
use harel_model::Status;

use super::clock::now;
use super::show::StoreKind;
use super::stack::StackArgs;

#[derive(clap::Args)]
pub struct PurgeArgs {
    /// Finished at least this long ago: 30d, 12h, 90m, 45s, 2w (or plain seconds)
    #[arg(long, value_name = "AGE", value_parser = age)]
    older_than: f64,
    /// Only roots in this status: done, cancelled (repeatable or comma-separated; default:
    /// both)
    #[arg(long = "status", value_name = "STATUS", value_delimiter = ',', value_parser = purgeable)]
    statuses: Vec<Status>,
    /// Append each tree to this JSONL file before deleting it (harel's JsonlArchive: either
    /// side reads the other's file)
    #[arg(long, value_name = "PATH")]
    archive: Option<PathBuf>,
    /// Report what would be purged, delete nothing
    #[arg(long)]
    dry_run: bool,
    /// Purge at most N trees
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Also purge finished roots with no finished_at (written before it was recorded)
    #[arg(long)]
    include_undated: bool,
    /// List the purged root ids
    #[arg(short, long)]
    verbose: bool,
    /// Find candidates by reading the whole executions table rather than its status index:
    /// slow, but it also finds roots last written by harel Python, which the index does not
    /// hold
    #[arg(long)]
    scan: bool,
    /// Accepted as `run` takes it: `purge` works on the stack's DynamoDB tables
    #[arg(long, value_enum, hide = true)]
    store: Option<StoreKind>,
    #[command(flatten)]
    stack: StackArgs,
}

/// harel's `_duration`: a number, optionally fractional, and an optional unit.
fn age(text: &str) -> Result<f64, String> {
    let bad = || format!("invalid age {text:?} (e.g. 30d, 12h, 90m, 45s)");
    let t = text.trim();
    let (number, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (t[..i].trim_end(), c),
        _ => (t, 's'),
    };
    let factor = match unit {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86400.0,
        'w' => 604800.0,
        _ => return Err(bad()),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let well_formed = match number.split_once('.') {
        Some((whole, frac)) => digits(whole) && digits(frac),
        None => digits(number),
    };
    if !well_formed {
        return Err(bad());
    }
    number.parse::<f64>().map(|n| n * factor).map_err(|_| bad())
}

fn purgeable(text: &str) -> Result<Status, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "done" => Ok(Status::Done),
        "cancelled" => Ok(Status::Cancelled),
        _ => Err(format!(
            "{text:?} cannot be purged: only done and cancelled executions can"
        )),
    }
}

pub async fn execute(args: PurgeArgs) -> anyhow::Result<ExitCode> {
    if args.store == Some(StoreKind::Memory) {
        bail!("the in-memory store keeps nothing between commands: purge a durable store (--store dynamodb --table-prefix P)");
    }
    let mut stack = args.stack.connect().await?;
    if args.scan {
        stack.report_scan_progress();
    }
    let statuses = if args.statuses.is_empty() {
        vec![Status::Done, Status::Cancelled]
    } else {
        args.statuses.clone()
    };
    let options = PurgeFinished {
        older_than: args.older_than,
        statuses,
        include_undated: args.include_undated,
        limit: args.limit,
        dry_run: args.dry_run,
        now: now(),
        scan: args.scan,
    };
    let mut archive = args.archive.as_ref().map(JsonlArchive::new);
    let result = purge_finished(
        &stack.store,
        &options,
        archive
            .as_mut()
            .map(|a| a as &mut (dyn harel_control::Archive + Send + 'static)),
    )
    .await;
    let report = match result {
        Ok(report) => report,
        // the archive cannot be written: nothing of that tree (or after it) was deleted
        Err(e @ ControlError::Archive { .. }) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(1));
        }
        Err(ControlError::Store(e)) => {
            return Err(stack.explain(&format!("purging from {}", stack.executions_table()), e))
        }
        Err(e) => return Err(e.into()),
    };
    let verb = if args.dry_run {
        "would purge"
    } else {
        "purged"
    };
    println!("{verb}: {}", report.purged.len());
    if args.verbose {
        for root_id in &report.purged {
            println!("  {root_id}");
        }
    }
    if report.skipped_undated > 0 {
        println!(
            "skipped (no finished_at; see --include-undated): {}",
            report.skipped_undated
        );
    }
    for (root_id, reason) in &report.refused {
        eprintln!("refused {root_id}: {reason}");
    }
    Ok(if report.refused.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_as_harel_reads_them() {
        for (text, secs) in [
            ("30d", 30.0 * 86400.0),
            ("12h", 43200.0),
            (" 90m ", 5400.0),
            ("45", 45.0),
            ("1.5w", 1.5 * 604800.0),
            ("2 d", 172800.0),
        ] {
            assert_eq!(age(text), Ok(secs), "{text}");
        }
        for bad in ["", "d", "-1d", "1y", "1.d", ".5d", "1e3", "3dd"] {
            assert!(age(bad).is_err(), "{bad:?}");
        }
    }
}
