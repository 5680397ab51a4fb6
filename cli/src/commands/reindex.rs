//! `harel reindex [--dry-run]`: after upgrading from a release whose listing indexes were not
//! sharded, rewrite the listing keys of the executions no commit has touched since (a live
//! execution's next step rewrites its own). One Scan of the executions table and one
//! conditional UpdateItem per stale item; safe beside running workers, and a second run
//! finds nothing to do.

use std::process::ExitCode;

use super::stack::StackArgs;

#[derive(clap::Args)]
pub struct ReindexArgs {
    /// Count the executions whose keys would be rewritten, write nothing
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    stack: StackArgs,
}

pub async fn execute(args: ReindexArgs) -> anyhow::Result<ExitCode> {
    let stack = args.stack.connect().await?;
    let done = stack
        .store
        .reindex_listing(args.dry_run)
        .await
        .map_err(|e| stack.explain(&format!("reindexing {}", stack.executions_table()), e))?;
    let verb = if args.dry_run {
        "would rewrite"
    } else {
        "rewrote"
    };
    println!(
        "read {} executions with listing keys; {verb} {}",
        done.read, done.rewritten
    );
    if done.changed_meanwhile > 0 {
        println!(
            "{} changed while this ran: their own commit wrote their keys",
            done.changed_meanwhile
        );
    }
    Ok(ExitCode::SUCCESS)
}
