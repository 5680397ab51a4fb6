//! `harel validate` (not built yet).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ValidateArgs {}

pub async fn execute(_args: ValidateArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`harel validate` is not implemented yet")
}
