//! `harel new` (not built yet).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct NewArgs {}

pub async fn execute(_args: NewArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`harel new` is not implemented yet")
}
