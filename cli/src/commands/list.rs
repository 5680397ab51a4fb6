//! `harel list` (not built yet).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ListArgs {}

pub async fn execute(_args: ListArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`harel list` is not implemented yet")
}
