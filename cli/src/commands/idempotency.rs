//! `harel idempotency` (not built yet).

use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum IdempotencyCommand {}

pub async fn execute(cmd: IdempotencyCommand) -> anyhow::Result<ExitCode> {
    match cmd {}
}
