//! `harel show` (not built yet).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ShowArgs {}

pub async fn execute(_args: ShowArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`harel show` is not implemented yet")
}
