//! `harel`: run, validate and render `.stm` machines, and operate executions.
//!
//! Each subcommand lives in its own module under `commands/`; this file only dispatches.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod commands;

#[derive(Parser)]
#[command(
    name = "harel",
    version,
    about = "Durable, hierarchical statecharts: the command-line tool"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Drive a machine with events (in memory by default, or against DynamoDB)
    Run(commands::run::RunArgs),
    /// Parse and validate a .stm file
    Validate(commands::validate::ValidateArgs),
    /// Render a machine as PlantUML (default) or Mermaid
    Render(commands::render::RenderArgs),
    /// List the machines, fragments and events a file declares
    List(commands::list::ListArgs),
    /// Scaffold a starter .stm machine that validates and runs out of the box
    New(commands::new::NewArgs),
    /// Print a stored execution
    Show(commands::show::ShowArgs),
    /// Inspect idempotency keys and records (why was this message skipped?)
    #[command(subcommand)]
    Idempotency(commands::idempotency::IdempotencyCommand),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Run(args) => commands::run::execute(args).await,
        Command::Validate(args) => commands::validate::execute(args).await,
        Command::Render(args) => commands::render::execute(args).await,
        Command::List(args) => commands::list::execute(args).await,
        Command::New(args) => commands::new::execute(args).await,
        Command::Show(args) => commands::show::execute(args).await,
        Command::Idempotency(cmd) => commands::idempotency::execute(cmd).await,
    };
    match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
