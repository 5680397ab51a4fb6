//! `harel serve [--port P] [--bind ADDR] --machines DIR [--hooks FILE] [--callback-secret S]
//! [--actions MAP] [--store memory|dynamodb]`: the HTTP API of the deployed `api` function
//! (harel-api's router, the same code) on this machine, webhooks (`--hooks`) and callback
//! tokens (`--callback-secret`, or `HAREL_CALLBACK_SECRET`) included. With `--store memory` (the default) nothing outlives the process: a background
//! task drains the in-memory queue through the embedded runner, with the worker's status
//! gate, and fires due timers. With `--store dynamodb` it serves a stack's tables and queue
//! (`--stack`, `--table-prefix`, `--queue-url`), whose worker runs what it enqueues.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use harel_api::{Backend, HookCounts, HookMetrics, HookOutcome, Ingress};
use harel_hooks::{CallbackKey, Hooks, HooksFile, SecretSource};
use harel_model::Definition;
use harel_runtime::admission::{gate, Gate};
use harel_runtime::{ActionRegistry, Driver, DurableRunner, RuntimeError};
use harel_sqs::inbound::{parse, Inbound};
use harel_sqs::{MemoryTransport, Received};
use harel_store::prelude::*;
use harel_store::MemoryStore;
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
    /// A hooks file (.json, .toml, .yaml): `POST /hooks/{name}` verifies and routes webhooks
    /// with it (docs/src/webhooks.md); its kinds are checked against the machines
    #[arg(long, value_name = "FILE")]
    pub hooks: Option<std::path::PathBuf>,
    /// The callback secret (at least 32 bytes, or env:NAME, ssm:/path, secretsmanager:ID):
    /// `harel.lib.callback_token` makes tokens with it and `POST /callbacks/{token}` opens
    /// them (docs/src/callbacks.md). Prefer the variable: a flag's value shows in `ps`
    #[arg(long, value_name = "SECRET", env = harel_hooks::callback::SECRET_VAR, hide_env_values = true)]
    pub callback_secret: Option<String>,
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
    let stack = match args.store {
        StoreKind::Dynamodb => Some(args.stack.connect().await?),
        StoreKind::Memory => None,
    };
    let (hooks, callback_key) = ingress(&args, &definitions, stack.as_ref()).await?;
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
            if let Some(key) = &callback_key {
                harel_hooks::callback::register(
                    &mut registry,
                    key.clone(),
                    Arc::new(harel_runtime::SystemClock),
                );
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
            )
            .with_ingress(ingress_of(hooks, callback_key));
            harel_api::router(Arc::new(backend))
        }
        StoreKind::Dynamodb => {
            let stack = stack.expect("connected above for --store dynamodb");
            let transport = stack.transport("the API enqueues creates and events")?;
            let backend = Backend::new(
                stack.store,
                transport,
                Driver::new(definitions, ActionRegistry::with_stdlib()),
            )
            .with_ingress(ingress_of(hooks, callback_key));
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

/// The hooks of `--hooks` (checked against the machines, secrets read once) and the key of
/// `--callback-secret`. AWS is asked only for an `ssm:` or `secretsmanager:` secret: with a
/// stack, through its configuration; without, through the default one.
async fn ingress(
    args: &ServeArgs,
    definitions: &[Definition],
    stack: Option<&super::stack::Stack>,
) -> anyhow::Result<(Option<Hooks>, Option<CallbackKey>)> {
    let file = match &args.hooks {
        Some(path) => {
            let file = HooksFile::load(path).map_err(super::exit::usage)?;
            let known: Vec<Arc<Definition>> = definitions.iter().cloned().map(Arc::new).collect();
            file.check(&|name| known.iter().find(|d| d.id == name).cloned())
                .map_err(super::exit::usage)?;
            Some(file)
        }
        None => None,
    };
    let secret = args
        .callback_secret
        .as_deref()
        .filter(|s| !s.trim().is_empty());
    let needs_aws = file
        .iter()
        .any(|f| f.entries.values().any(|entry| entry.verify.secret.is_aws()))
        || secret.is_some_and(|s| SecretSource::parse(s).is_ok_and(|s| s.is_aws()));
    let sdk = match (stack, needs_aws) {
        (Some(stack), _) => Some(stack.sdk.clone()),
        (None, true) => {
            Some(aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await)
        }
        (None, false) => None,
    };
    let reader = sdk.as_ref().map(harel_remote::AwsReader::new);
    let hooks = match file {
        Some(file) => Some(
            Hooks::resolve(file, reader.as_ref())
                .await
                .map_err(super::exit::usage)?,
        ),
        None => None,
    };
    let key = match secret {
        Some(text) => Some(
            CallbackKey::read(text, "--callback-secret", reader.as_ref())
                .await
                .map_err(super::exit::usage)?,
        ),
        None => None,
    };
    Ok((hooks, key))
}

fn ingress_of(hooks: Option<Hooks>, callback_key: Option<CallbackKey>) -> Ingress {
    Ingress {
        hooks,
        callback_key,
        metrics: Arc::new(LoggedCounts::default()),
    }
}

/// `harel serve`'s webhook metric: a count per hook and outcome, each delivery not
/// delivered written to stderr with its running count and reason.
#[derive(Default)]
struct LoggedCounts(HookCounts);

impl HookMetrics for LoggedCounts {
    fn record(&self, hook: &str, outcome: HookOutcome, reason: Option<&str>) {
        self.0.record(hook, outcome, reason);
        if outcome != HookOutcome::Delivered {
            eprintln!(
                "serve: hook {hook}: {} (count {}): {}",
                outcome.as_str(),
                self.0.get(hook, outcome),
                reason.unwrap_or("")
            );
        }
    }
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
