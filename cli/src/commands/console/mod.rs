//! `harel console`: a local web console over the deployed stack, or over the embedded demo
//! (`--store memory`). Server-rendered HTML pages (the statechart as SVG drawn by
//! `harel_lang::render::svg`), one small script for the live refresh, every asset compiled
//! into the binary. Actions go through the control plane (`harel_control`), dead letters
//! through `harel_runtime::dead_letters`, as the commands do.
//!
//! Each page reads what it shows: `/` one page of the listing index, `/executions/{id}` the
//! execution, its children, their timers, its trace and its pinned version. Only `--scan`
//! reads whole tables (to find the rows harel Python wrote last, which the index leaves out).

mod actions;
mod backend;
mod dead_letters;
mod demo;
mod execution;
mod executions;
mod html;
mod machines;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::{get, post};
use axum::Router;

use super::machines::{MachineArgs, Machines};
use super::show::StoreKind;
use super::stack::StackArgs;
use backend::Backend;
use harel_runtime::versions::Bundle;

#[derive(clap::Args)]
pub struct ConsoleArgs {
    /// The port to listen on (0: any free one, printed)
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The address to listen on (the console has no login: keep it on loopback)
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// What to look at: the deployed stack's tables (dynamodb), or the embedded demo
    /// (memory: the --machines run in this process, seeded by --seed and --run)
    #[arg(long, value_enum, default_value = "dynamodb")]
    pub store: StoreKind,
    /// With --store memory: a file of seed lines, one execution each:
    /// `MACHINE [--id ID] [--context JSON] [-e KIND[:JSON] | -e +30s]...` (# comments)
    #[arg(long, value_name = "FILE")]
    pub seed: Option<PathBuf>,
    /// With --store memory: one seed line (repeatable, after --seed's)
    #[arg(long = "run", value_name = "LINE")]
    pub runs: Vec<String>,
    /// Read whole tables where a page lists (the executions, a bulk action's filter, the
    /// deploy check) to also find the rows harel Python wrote last, which the listing index
    /// leaves out
    #[arg(long)]
    pub scan: bool,
    #[command(flatten)]
    pub stack: StackArgs,
    /// Machines to draw executions without a kept version, and for cancel, redrive, migrate
    /// and the deploy check; with --store memory, the machines the demo runs
    #[command(flatten)]
    pub machines: MachineArgs,
}

/// What every request handler shares.
pub struct Console {
    pub backend: Backend,
    pub machines: Machines,
    pub scan: bool,
    /// The kept versions read so far, rebuilt (a version is its content: never stale).
    pub versions: Mutex<HashMap<String, Arc<Bundle>>>,
}

impl Console {
    /// Now, by the clock the executions run on (the demo's runs ahead of the wall clock by
    /// what its seed advanced).
    pub fn now(&self) -> f64 {
        match self.backend.demo() {
            Some(d) => d.now(),
            None => super::clock::now(),
        }
    }
}

type Shared = State<Arc<Console>>;

pub fn router(console: Arc<Console>) -> Router {
    Router::new()
        .route("/", get(executions::page))
        .route("/bulk", post(executions::bulk))
        .route("/executions/{id}", get(execution::page))
        .route("/executions/{id}/live", get(execution::live))
        .route("/executions/{id}/action", post(actions::action))
        .route("/executions/{id}/migrate", post(actions::migrate_one))
        .route("/executions/{id}/send", post(actions::send))
        .route("/machines", get(machines::list))
        .route("/machines/{id}", get(machines::one))
        .route("/deploy-check", get(machines::check))
        .route("/dead-letters", get(dead_letters::dead_letters))
        .route(
            "/dead-letters/redrive",
            post(dead_letters::dead_letters_redrive),
        )
        .route(
            "/dead-letters/delete",
            post(dead_letters::dead_letters_delete),
        )
        .route("/dead-letters/{id}", get(dead_letters::dead_letter))
        .route("/assets/console.css", get(html::css))
        .route("/assets/console.js", get(html::js))
        .fallback(html::no_such_page)
        .with_state(console)
}

pub async fn execute(args: ConsoleArgs) -> anyhow::Result<ExitCode> {
    if args.store != StoreKind::Memory && (args.seed.is_some() || !args.runs.is_empty()) {
        return Err(super::exit::usage(
            "--seed and --run seed the embedded demo: give --store memory too",
        ));
    }
    let machines = args.machines.load()?;
    let backend = match args.store {
        StoreKind::Dynamodb => Backend::Stack(Box::new(args.stack.connect().await?)),
        StoreKind::Memory => {
            let mut lines = match &args.seed {
                Some(path) => demo::read_seed(path)?,
                None => Vec::new(),
            };
            lines.extend(args.runs.iter().enumerate().map(|(i, l)| demo::Line {
                origin: format!("--run #{}", i + 1),
                text: l.clone(),
            }));
            let seeded = demo::Demo::seeded(machines.all().cloned().collect(), &lines).await?;
            Backend::Demo(seeded)
        }
    };
    let console = Arc::new(Console {
        backend,
        machines,
        scan: args.scan,
        versions: Mutex::default(),
    });
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.bind, args.port))
        .await
        .map_err(|e| {
            super::exit::usage(format_args!(
                "cannot listen on {}:{}: {e}",
                args.bind, args.port
            ))
        })?;
    let addr = listener.local_addr()?;
    if console.backend.demo().is_some() {
        demo::spawn_ticker(Arc::clone(&console));
    }
    // the first line is the address (a script or test reads it to know the port)
    println!("harel console on http://{addr}/");
    axum::serve(listener, router(console)).await?;
    Ok(ExitCode::SUCCESS)
}
