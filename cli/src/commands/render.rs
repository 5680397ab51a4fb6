//! `harel render` (not built yet).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct RenderArgs {}

pub async fn execute(_args: RenderArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`harel render` is not implemented yet")
}
