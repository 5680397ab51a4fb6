//! `harel send ID -e KIND[:JSON]...`: send events to an execution of the deployed stack,
//! in harel's message shape (body = the Event JSON, group = the execution id), in order.

use std::process::ExitCode;

use harel_model::schema::check_event;
use harel_model::{Event, Status};
use serde_json::json;

use super::create::json_object;
use super::machines::MachineArgs;
use super::stack::{StackArgs, AWS_HINT};

#[derive(clap::Args)]
pub struct SendArgs {
    /// The execution id
    pub id: String,
    /// An event (repeatable, sent in order): KIND, or KIND:'{...}' with its data
    #[arg(
        short = 'e',
        long = "event",
        value_name = "KIND[:JSON]",
        required = true
    )]
    pub events: Vec<String>,
    /// Answer in JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub stack: StackArgs,
    #[command(flatten)]
    pub machines: MachineArgs,
}

/// `KIND` or `KIND:{json}`, as `harel run -e` reads them (a clock step has no meaning here).
pub fn parse_event(spec: &str) -> anyhow::Result<Event> {
    if spec.starts_with('+') {
        return Err(super::exit::usage(format_args!("-e {spec}: a clock step only means something to `harel run`; on a stack the sweeper fires the timers")));
    }
    let event = match spec.split_once(':') {
        Some((kind, raw)) => harel_engine::ids::event(kind).with_data(
            json_object(raw, &format!("the data of -e {kind}")).map_err(super::exit::usage)?,
        ),
        None => harel_engine::ids::event(spec),
    };
    if event.kind.is_empty() {
        return Err(super::exit::usage(format_args!(
            "-e {spec:?}: the event kind is empty"
        )));
    }
    Ok(event)
}

pub async fn execute(args: SendArgs) -> anyhow::Result<ExitCode> {
    let events = args
        .events
        .iter()
        .map(|s| parse_event(s))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let machines = args.machines.load()?;
    let stack = args.stack.connect().await?;
    let transport = stack.transport("events go through the queue")?;
    let exe = stack.execution(&args.id).await?;
    if exe.status.is_finished() || exe.status == Status::Failed {
        return Err(super::exit::refused(format_args!(
            "execution {} is {}: the worker would drop these events{}",
            exe.id,
            exe.status,
            if exe.status == Status::Failed {
                " (redrive it first: harel redrive ID --to STATE)"
            } else {
                ""
            }
        )));
    }
    // the worker dead-letters an event its declaration refuses: say so before sending
    let defn = machines.find(&exe.definition_id);
    if let Some(defn) = defn {
        for ev in &events {
            check_event(&defn.events, &ev.kind, &ev.data).map_err(|e| {
                super::exit::refused(format_args!("-e {}: machine {}: {e}", ev.kind, defn.id))
            })?;
        }
    }
    let sender = harel_runtime::Sender::new(transport);
    sender.send(&exe.id, &events).await.map_err(|e| match e {
        harel_sqs::TransportError::InvalidGroup(_) => anyhow::Error::new(e),
        e => super::exit::aws(format_args!(
            "sending to {}: {e} ({AWS_HINT})",
            sender.transport().queue_url()
        )),
    })?;
    if defn.is_none() {
        let what = format!("the events for machine {} were", exe.definition_id);
        eprintln!("{}", machines.unchecked(&exe.definition_id, &what));
    }
    if args.json {
        let sent: Vec<_> = events
            .iter()
            .map(|ev| json!({"id": ev.id, "kind": ev.kind}))
            .collect();
        println!("{}", json!({"execution_id": exe.id, "sent": sent}));
    } else {
        for ev in &events {
            println!("sent {} to {} (event id {})", ev.kind, exe.id, ev.id);
        }
        match exe.status {
            Status::Suspended => eprintln!(
                "note: {} is SUSPENDED: the events wait on the queue until `harel resume {}`",
                exe.id, exe.id
            ),
            Status::Cancelling => eprintln!(
                "note: {} is CANCELLING: the worker skips every event but its Cancel",
                exe.id
            ),
            _ => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}
