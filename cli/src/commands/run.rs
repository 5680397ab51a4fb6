//! `harel run` (not built yet).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct RunArgs {}

pub async fn execute(_args: RunArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`harel run` is not implemented yet")
}
