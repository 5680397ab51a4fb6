//! `harel serve [--port P] [--bind ADDR] --machines DIR [--actions MAP] [--store memory|dynamodb]`:
//! the HTTP API of the deployed `api` function (harel-api's router, the same code) on this
//! machine. With `--store memory` (the default) nothing outlives the process: a background
//! task drains the in-memory queue through the embedded runner, with the worker's status
//! gate, and fires due timers. With `--store dynamodb` it serves a stack's tables and queue
//! (`--stack`, `--table-prefix`, `--queue-url`), whose worker runs what it enqueues.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use harel_api::Backend;
use harel_model::Definition;
use harel_runtime::admission::{gate, Gate};
use harel_runtime::{ActionRegistry, Driver, DurableRunner, RuntimeError};
use harel_sqs::inbound::{parse, Inbound};
use harel_sqs::{MemoryTransport, Received};
use harel_store::{ExecutionStore, MemoryStore};
use std::io::Write;

use super::machines::MachineArgs;
use super::show::StoreKind;
use super::stack::StackArgs;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// The port (0: any free one; the line `listening on http://ADDR` says which)
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The address to listen on (loopback: only this machine can call it)
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    #[command(flatten)]
    pub machines: MachineArgs,
    /// An action map (.json, .toml, .yaml): the actions it binds call their remote function;
    /// others are no-ops returning null, as in `harel run` (memory store only)
    #[arg(long, value_name = "MAP")]
    pub actions: Option<std::path::PathBuf>,
    /// Where executions live: in this process, or a stack's DynamoDB tables and SQS queue
    #[arg(long, value_enum, default_value = "memory")]
    pub store: StoreKind,
    #[command(flatten)]
    pub stack: StackArgs,
}

/// How often the memory runner looks at its queue and its timers when idle.
const TICK: Duration = Duration::from_millis(20);

pub async fn execute(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let machines = args.machines.load()?;
    if machines.is_empty() {
        return Err(super::exit::usage(
            "no machines: give --machines DIR (the .stm files to serve)",
        ));
    }
    let definitions: Vec<Definition> = machines.all().cloned().collect();
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.bind, args.port))
        .await
        .with_context(|| format!("binding {}:{}", args.bind, args.port))?;
    let router = match args.store {
        StoreKind::Memory => {
            let store = Arc::new(MemoryStore::new());
            let queue = Arc::new(MemoryTransport::new());
            let mut registry = ActionRegistry::with_stdlib();
            if let Some(path) = &args.actions {
                let remote = super::run::Remote::load(path).await?;
                harel_remote::bind(
                    &mut registry,
                    &remote.map,
                    &remote.clients,
                    |name| std::env::var(name).ok(),
                    &remote.secrets,
                )?;
            }
            registry.set_fallback(Arc::new(super::run::NoOp));
            let runner = DurableRunner::with_driver(
                Arc::clone(&store),
                Driver::new(definitions.clone(), registry),
            );
            tokio::spawn(drain(runner, Arc::clone(&queue)));
            let backend = Backend::new(
                store,
                queue,
                Driver::new(definitions, ActionRegistry::with_stdlib()),
            );
            harel_api::router(Arc::new(backend))
        }
        StoreKind::Dynamodb => {
            let stack = args.stack.connect().await?;
            let transport = stack.transport("the API enqueues creates and events")?;
            let backend = Backend::new(
                stack.store,
                transport,
                Driver::new(definitions, ActionRegistry::with_stdlib()),
            );
            harel_api::router(Arc::new(backend))
        }
    };
    let addr = listener.local_addr()?;
    println!("listening on http://{addr}");
    std::io::stdout().flush()?;
    axum::serve(listener, router)
        .await
        .context("serving the API")?;
    Ok(ExitCode::SUCCESS)
}

/// The memory store's worker: each queued message through the embedded runner, gated by
/// the execution's status as the queue worker gates it; a SUSPENDED execution's messages
/// held until it is resumed; due timers fired.
async fn drain(runner: DurableRunner<Arc<MemoryStore>>, queue: Arc<MemoryTransport>) {
    let mut held: Vec<Received> = Vec::new();
    loop {
        let mut batch = std::mem::take(&mut held);
        batch.extend(queue.take(10));
        let idle = batch.is_empty();
        for message in batch {
            if let Some(again) = deliver(&runner, message).await {
                held.push(again);
            }
        }
        if let Err(e) = runner.fire_due_timers().await {
            eprintln!("serve: firing due timers: {e}");
        }
        if idle || !held.is_empty() {
            tokio::time::sleep(TICK).await;
        }
    }
}

/// One message; the message back when it must wait (its execution is SUSPENDED).
async fn deliver(runner: &DurableRunner<Arc<MemoryStore>>, message: Received) -> Option<Received> {
    let (group, inbound) = match parse(Some(&message.group_id), &message.body) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("serve: dropping a malformed message: {e}");
            return None;
        }
    };
    let result = match inbound {
        Inbound::Create(c) => runner
            .create(&c.definition_id, Some(c.context), Some(&c.execution_id))
            .await
            .map(|_| ()),
        Inbound::Event(event) => {
            let exe = match runner.store().load(&group).await {
                Ok(Some(exe)) => exe,
                Ok(None) => return None,
                Err(e) => {
                    eprintln!("serve: reading {group}: {e}");
                    return None;
                }
            };
            match gate(exe.status, &event.kind) {
                Gate::Skip(_) => return None,
                Gate::Park => return Some(message),
                Gate::Run => runner.process(&group, &event).await.map(|_| ()),
            }
        }
    };
    match result {
        Ok(()) | Err(RuntimeError::AlreadyExists(_)) => {}
        Err(RuntimeError::Store(e)) if e.is_already_processed() => {}
        Err(e) => eprintln!("serve: {group}: {e}"),
    }
    None
}
