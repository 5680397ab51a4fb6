//! `harel create MACHINE [--context JSON] [--id ID]`: start an execution on the deployed
//! stack by sending harel-rs's create message (`harel:create`, group = the execution id) to
//! its queue; the worker creates it and runs its start (and so its actions). Prints the id.
//!
//! A queue is required: creating the record directly in the store would run the machine's
//! start, and its actions, in this process instead of in the worker.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::bail;
use harel_model::schema::{check_context, with_defaults};
use harel_model::{Object, Status};
use harel_sqs::check_group_id;
use harel_store::prelude::*;
use serde_json::{json, Value};

use super::machines::MachineArgs;
use super::stack::{Stack, StackArgs, AWS_HINT};

#[derive(clap::Args)]
pub struct CreateArgs {
    /// The machine to start (its name, as the functions run it)
    pub machine: String,
    /// The initial context, a JSON object (the machine's defaults fill the rest)
    #[arg(long, value_name = "JSON")]
    pub context: Option<String>,
    /// The execution id [default: a fresh one]; it is also the message group
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// Return once the worker has created it (at most this many seconds; default 30)
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "30")]
    pub wait: Option<f64>,
    /// Answer in JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub stack: StackArgs,
    #[command(flatten)]
    pub machines: MachineArgs,
}

/// `raw` as a JSON object, or what is wrong with it.
pub fn json_object(raw: &str, what: &str) -> anyhow::Result<Object> {
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(other) => bail!(
            "{what} must be a JSON object, got {}",
            harel_model::pyrepr::py_type_name(&other)
        ),
        Err(e) => bail!("{what} is not valid JSON ({e})"),
    }
}

pub async fn execute(args: CreateArgs) -> anyhow::Result<ExitCode> {
    let machines = args.machines.load()?;
    // with no machines at all there is nothing to check against: send it anyway, the worker
    // is the one that decides; with some, an unknown name is more likely a typo
    let defn = if machines.is_empty() {
        None
    } else {
        Some(machines.get(
            &args.machine,
            "create checks the name and the context before sending",
        )?)
    };
    let machine = args.machine.as_str();
    let context = match &args.context {
        Some(raw) => json_object(raw, "--context").map_err(super::exit::usage)?,
        None => Object::new(),
    };
    // the worker would dead-letter a context its schema refuses: say so before sending
    if let Some(defn) = defn {
        check_context(
            &defn.context_schema,
            &with_defaults(&defn.context_schema, &context),
            true,
        )
        .map_err(|e| {
            super::exit::refused(format_args!(
                "--context does not fit machine {machine}: {e}"
            ))
        })?;
    }
    let id = args
        .id
        .clone()
        .unwrap_or_else(|| harel_engine::ids::new_event_id().into());
    check_group_id(&id).map_err(|e| super::exit::usage(format_args!("--id {id:?}: {e}")))?;

    let stack = args.stack.connect().await?;
    send_create(&stack, machine, context, &id).await?;
    if defn.is_none() {
        eprintln!(
            "{}",
            machines.unchecked(machine, &format!("machine {machine} and its context were"))
        );
    }
    let status = match args.wait {
        Some(seconds) => Some(wait_for(&stack, &id, seconds).await?),
        None => None,
    };
    if args.json {
        let out = json!({"execution_id": id, "machine": machine, "queued": true, "status": status});
        println!("{out}");
    } else {
        println!("{id}");
        match status {
            Some(status) => eprintln!("created: {machine} {id} is {status}"),
            None => {
                eprintln!("queued: the worker creates and starts {machine} {id} (harel show {id})")
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Send the create of `id` to the stack's queue, refusing an id that exists (the path of
/// `harel create` and `harel schedules trigger`).
pub async fn send_create(
    stack: &Stack,
    machine: &str,
    context: Object,
    id: &str,
) -> anyhow::Result<()> {
    let transport = stack.transport(
        "a create goes through the queue: the worker starts the execution and runs its actions",
    )?;
    if let Some(existing) = stack
        .store
        .load(id)
        .await
        .map_err(|e| stack.explain(&format!("looking up {id:?}"), e))?
    {
        return Err(super::exit::refused(format_args!(
            "execution {id:?} already exists ({} machine {}): choose another --id",
            existing.status, existing.definition_id
        )));
    }
    // deterministic: the same create sent twice within SQS's five minutes is dropped
    let sender = harel_runtime::Sender::new(transport);
    sender.create(machine, context, id).await.map_err(|e| {
        super::exit::aws(format_args!(
            "sending the create to {}: {e} ({AWS_HINT})",
            sender.transport().queue_url()
        ))
    })?;
    Ok(())
}

/// How often a long `--wait` notes its progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// Poll the store until the worker has created `id`; its status then. A wait longer than
/// [`PROGRESS_EVERY`] says so on stderr, once per interval (stdout keeps only the id).
async fn wait_for(stack: &Stack, id: &str, seconds: f64) -> anyhow::Result<Status> {
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(seconds.max(0.0));
    let mut next_note = start + PROGRESS_EVERY;
    loop {
        let found = stack
            .store
            .load(id)
            .await
            .map_err(|e| stack.explain(&format!("looking up {id:?}"), e))?;
        if let Some(exe) = found {
            return Ok(exe.status);
        }
        let now = Instant::now();
        if now >= next_note {
            eprintln!(
                "waiting for the worker to create {id}: {:.0} s of {seconds} s",
                now.duration_since(start).as_secs_f64()
            );
            next_note = now + PROGRESS_EVERY;
        }
        if now >= deadline {
            bail!("{id} was not created within {seconds} s: is the worker running? (a create it cannot run goes to the dead-letter queue with the reason)");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
