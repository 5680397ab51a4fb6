//! `harel`: run, validate and render `.stm` machines, and operate executions.
//!
//! Each subcommand lives in its own module under `commands/`; this file only dispatches.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod commands;

#[derive(Parser)]
#[command(
    name = "harel",
    version,
    about = "Durable, hierarchical statecharts: the command-line tool",
    after_help = "Exit codes: 0 done, 1 failed, 2 usage (a wrong or missing argument or setting), \
3 not found (execution, machine, table, stack), 4 refused (understood, not done), \
5 AWS error (unreachable, credentials, throttling). HAREL_STACK is --stack's default."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Drive a machine with events (in memory by default, or against DynamoDB)
    Run(commands::run::RunArgs),
    /// Serve the HTTP API (the deployed api function's routes) on this machine
    Serve(commands::serve::ServeArgs),
    /// Parse and validate a .stm file
    Validate(commands::validate::ValidateArgs),
    /// Rewrite .stm files in the canonical layout (--check for CI, --diff to review)
    Fmt(commands::fmt::FmtArgs),
    /// Serve the .stm language to an editor over stdio (diagnostics, hover, definitions, completion)
    Lsp(commands::lsp::LspArgs),
    /// Render a machine as PlantUML (default) or Mermaid
    Render(commands::render::RenderArgs),
    /// List a file's declarations, or (without a file) the stack's executions
    List(commands::list::ListArgs),
    /// Scaffold a starter .stm machine that validates and runs out of the box
    New(commands::new::NewArgs),
    /// Show a stored execution: status, active states, children, armed timers
    Show(commands::show::ShowArgs),
    /// Start an execution on the deployed stack (prints its id)
    Create(commands::create::CreateArgs),
    /// Send events to an execution on the deployed stack
    Send(commands::send::SendArgs),
    /// Complete or fail a callback token (harel.lib.callback_token) on the deployed stack
    #[command(subcommand)]
    Callback(commands::callback::CallbackCommand),
    /// An execution's recorded steps as a timeline
    Trace(commands::trace::TraceArgs),
    /// Cancel an execution: cooperative when its machine models Cancel, forceful otherwise
    Cancel(commands::control::CancelArgs),
    /// Cancel an execution at once: no hooks run
    Terminate(commands::control::ControlArgs),
    /// Pause an execution (and its regions): its events wait on the queue
    Suspend(commands::control::ControlArgs),
    /// Continue a suspended execution where it stopped
    Resume(commands::control::ControlArgs),
    /// Bring a FAILED execution back at a leaf state, once its bug is fixed
    Redrive(commands::control::RedriveArgs),
    /// Move in-flight executions to another version of their machine (--map for renamed states)
    Migrate(commands::versions::MigrateArgs),
    /// Before a deploy: what becomes of the live executions of each machine and version
    DeployCheck(commands::versions::DeployCheckArgs),
    /// Watch the stack's executions in a terminal UI; suspend, resume, cancel, terminate
    Monitor(commands::monitor::MonitorArgs),
    /// Delete finished execution trees older than an age for good, optionally archived
    Purge(commands::purge::PurgeArgs),
    /// After an upgrade: shard the listing keys an earlier release wrote (safe while running)
    Reindex(commands::reindex::ReindexArgs),
    /// A local web console: executions, live statecharts, actions, machines, dead letters
    Console(commands::console::ConsoleArgs),
    /// Read, redrive and delete dead letters (messages the worker could not process)
    #[command(subcommand)]
    Dlq(commands::dlq::DlqCommand),
    /// Inspect idempotency keys and records (why was this message skipped?)
    #[command(subcommand)]
    Idempotency(commands::idempotency::IdempotencyCommand),
    /// A schedules file's next fire times, or start one of its entries now
    #[command(subcommand)]
    Schedules(commands::schedules::SchedulesCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout
    Completions { shell: clap_complete::Shell },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Run(args) => commands::run::execute(args).await,
        Command::Serve(args) => commands::serve::execute(args).await,
        Command::Validate(args) => commands::validate::execute(args).await,
        Command::Fmt(args) => commands::fmt::execute(args).await,
        Command::Lsp(args) => commands::lsp::execute(args).await,
        Command::Render(args) => commands::render::execute(args).await,
        Command::List(args) => commands::list::execute(args).await,
        Command::New(args) => commands::new::execute(args).await,
        Command::Show(args) => commands::show::execute(args).await,
        Command::Create(args) => commands::create::execute(args).await,
        Command::Send(args) => commands::send::execute(args).await,
        Command::Callback(command) => commands::callback::execute(command).await,
        Command::Trace(args) => commands::trace::execute(args).await,
        Command::Cancel(args) => {
            commands::control::execute(commands::control::Request::Cancel(args)).await
        }
        Command::Terminate(args) => {
            commands::control::execute(commands::control::Request::Terminate(args)).await
        }
        Command::Suspend(args) => {
            commands::control::execute(commands::control::Request::Suspend(args)).await
        }
        Command::Resume(args) => {
            commands::control::execute(commands::control::Request::Resume(args)).await
        }
        Command::Redrive(args) => {
            commands::control::execute(commands::control::Request::Redrive(args)).await
        }
        Command::Migrate(args) => commands::versions::execute_migrate(args).await,
        Command::DeployCheck(args) => commands::versions::execute_deploy_check(args).await,
        Command::Monitor(args) => commands::monitor::execute(args).await,
        Command::Purge(args) => commands::purge::execute(args).await,
        Command::Reindex(args) => commands::reindex::execute(args).await,
        Command::Console(args) => commands::console::execute(args).await,
        Command::Dlq(cmd) => commands::dlq::execute(cmd).await,
        Command::Idempotency(cmd) => commands::idempotency::execute(cmd).await,
        Command::Schedules(cmd) => commands::schedules::execute(cmd).await,
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "harel", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
    };
    match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            commands::exit::code_of(&err)
        }
    }
}
