//! `harel callback complete TOKEN [--data JSON]` and `harel callback fail TOKEN [--error MSG]`:
//! what `POST /callbacks/{token}[/fail]` does, from a terminal. The token is opened with the
//! stack's callback secret (`HAREL_CALLBACK_SECRET`: the secret, `env:`, `ssm:` or
//! `secretsmanager:`), then its event is sent like `harel send` sends one. A repeat sends the
//! same event id (`cb:{nonce}`): the worker absorbs it (see docs/src/callbacks.md).

use std::process::ExitCode;

use harel_hooks::{callback, CallbackKey, Completion};
use harel_sqs::{DedupeKey, Outgoing, Transport};
use serde_json::json;

use super::create::json_object;
use super::stack::{StackArgs, AWS_HINT};

#[derive(clap::Subcommand)]
pub enum CallbackCommand {
    /// Complete a callback token: deliver its event, with --data
    Complete(CompleteArgs),
    /// Fail a callback token: deliver its fail event, with --error
    Fail(FailArgs),
}

#[derive(clap::Args)]
pub struct CompleteArgs {
    /// The token (from the execution's context)
    pub token: String,
    /// The event's data, a JSON object
    #[arg(long, value_name = "JSON")]
    pub data: Option<String>,
    #[command(flatten)]
    pub stack: StackArgs,
}

#[derive(clap::Args)]
pub struct FailArgs {
    /// The token (from the execution's context)
    pub token: String,
    /// Why it failed (the fail event's `error`)
    #[arg(long, value_name = "MSG", default_value = "failed")]
    pub error: String,
    #[command(flatten)]
    pub stack: StackArgs,
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

pub async fn execute(command: CallbackCommand) -> anyhow::Result<ExitCode> {
    let stack_args = match &command {
        CallbackCommand::Complete(a) => &a.stack,
        CallbackCommand::Fail(a) => &a.stack,
    };
    let stack = stack_args.connect().await?;
    let reader = harel_remote::AwsReader::new(&stack.sdk);
    let key = CallbackKey::from_env(Some(&reader))
        .await
        .map_err(super::exit::usage)?
        .ok_or_else(|| {
            super::exit::usage(format_args!(
                "{} is not set: the stack's callback secret opens the token",
                callback::SECRET_VAR
            ))
        })?;
    let completion: Completion = match &command {
        CallbackCommand::Complete(a) => {
            let data = match &a.data {
                Some(raw) => json_object(raw, "--data").map_err(super::exit::usage)?,
                None => Default::default(),
            };
            callback::complete(&key, &a.token, data, now())
        }
        CallbackCommand::Fail(a) => callback::fail(&key, &a.token, &a.error, now()),
    }
    .map_err(|r| super::exit::refused(format_args!("{r} ({})", r.status())))?;
    let exe = stack.execution(&completion.execution).await?;
    let transport = stack.transport("a callback's event goes through the queue")?;
    let message = Outgoing::event(exe.id.clone(), &completion.event, DedupeKey::Event)?;
    transport.publish_batch(&[message]).await.map_err(|e| {
        super::exit::aws(format_args!(
            "sending to {}: {e} ({AWS_HINT})",
            transport.queue_url()
        ))
    })?;
    println!(
        "{}",
        json!({"execution_id": exe.id, "kind": completion.event.kind, "event_id": completion.event.id})
    );
    Ok(ExitCode::SUCCESS)
}
