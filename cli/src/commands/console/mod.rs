//! `harel console`: a local web console over the deployed stack. Server-rendered HTML pages
//! (the statechart as SVG drawn by `harel_lang::render::svg`), one small script for the live
//! refresh, every asset compiled into the binary. Actions go through the control plane
//! (`harel_control`), dead letters through `harel_runtime::dead_letters`, as the commands do.
//!
//! Each page reads what it shows: `/` one page of the listing index, `/executions/{id}` the
//! execution, its children, their timers, its trace and its pinned version.

mod html;
mod pages;

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;

use super::machines::{MachineArgs, Machines};
use super::stack::{Stack, StackArgs};

#[derive(clap::Args)]
pub struct ConsoleArgs {
    /// The port to listen on (0: any free one, printed)
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The address to listen on (the console has no login: keep it on loopback)
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    #[command(flatten)]
    pub stack: StackArgs,
    /// Machines to draw executions without a kept version, and for cancel and redrive
    #[command(flatten)]
    pub machines: MachineArgs,
}

/// What every request handler shares.
pub struct Console {
    pub stack: Stack,
    pub machines: Machines,
}

pub fn router(console: Arc<Console>) -> Router {
    Router::new()
        .route("/", get(pages::executions))
        .route("/executions/{id}", get(pages::execution))
        .route("/executions/{id}/live", get(pages::execution_live))
        .route("/executions/{id}/action", post(pages::action))
        .route("/bulk", post(pages::bulk))
        .route("/machines", get(pages::machines))
        .route("/machines/{id}", get(pages::machine))
        .route("/dead-letters", get(pages::dead_letters))
        .route("/dead-letters/redrive", post(pages::dead_letters_redrive))
        .route("/dead-letters/delete", post(pages::dead_letters_delete))
        .route("/dead-letters/{id}", get(pages::dead_letter))
        .route("/assets/console.css", get(pages::css))
        .route("/assets/console.js", get(pages::js))
        .fallback(pages::not_found)
        .with_state(console)
}

pub async fn execute(args: ConsoleArgs) -> anyhow::Result<ExitCode> {
    let stack = args.stack.connect().await?;
    let machines = args.machines.load()?;
    let console = Arc::new(Console { stack, machines });
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.bind, args.port))
        .await
        .map_err(|e| {
            super::exit::usage(format_args!(
                "cannot listen on {}:{}: {e}",
                args.bind, args.port
            ))
        })?;
    let addr = listener.local_addr()?;
    // the first line is the address (a script or test reads it to know the port)
    println!("harel console on http://{addr}/");
    axum::serve(listener, router(console)).await?;
    Ok(ExitCode::SUCCESS)
}
