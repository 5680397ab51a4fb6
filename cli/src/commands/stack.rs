//! Where the deployed stack is, for the operator commands: the table prefix and the queue URL
//! from the flags, else the CloudFormation stack's outputs (`--stack NAME`: `TablePrefix`,
//! `QueueUrl`, as `template.yaml` declares them), else the variables the functions read
//! (`HAREL_TABLE_PREFIX`, `HAREL_QUEUE_URL`). Region, credentials and `AWS_ENDPOINT_URL` come
//! from the SDK's standard configuration. The retention the commands' own commits stamp (a
//! cancel that finishes an execution) follows the functions' the same way, and so does the
//! commit mode (the stack's `CommitMode` output, else `HAREL_COMMIT_MODE`): a command that
//! commits must keep the dedupe marks where the functions keep them.

use anyhow::{anyhow, Context};
use aws_config::SdkConfig;
use harel_dynamodb::DynamoDbStore;
use harel_model::Execution;
use harel_sqs::SqsTransport;
use harel_stack::{
    parse_retention_days, retention_days, CommitMode, COMMIT_MODE, DEFAULT_RETENTION_DAYS, DLQ_URL,
    QUEUE_URL, RETENTION_DAYS, TABLE_PREFIX,
};
use harel_store::prelude::*;
use harel_store::StoreError;

use super::exit;

/// `HAREL_STACK`: the stack `--stack` reads when it is not given.
pub const HAREL_STACK: &str = "HAREL_STACK";

#[derive(Clone, Debug, Default, clap::Args)]
pub struct StackArgs {
    /// Read the table prefix and queue URL from this CloudFormation stack's outputs
    #[arg(long, value_name = "NAME", env = HAREL_STACK)]
    pub stack: Option<String>,
    /// The prefix of the DynamoDB tables ({prefix}_executions, ...) [default: the stack's
    /// TablePrefix output, else HAREL_TABLE_PREFIX]
    #[arg(long, value_name = "PREFIX")]
    pub table_prefix: Option<String>,
    /// The FIFO queue the worker reads [default: the stack's QueueUrl output, else
    /// HAREL_QUEUE_URL]
    #[arg(long, value_name = "URL")]
    pub queue_url: Option<String>,
    /// The queue's dead-letter queue (`harel dlq`, the console) [default: the stack's
    /// DeadLetterQueueUrl output, else HAREL_DLQ_URL]
    #[arg(long, value_name = "URL")]
    pub dlq_url: Option<String>,
    /// Days an execution this command finishes is kept before DynamoDB's TTL removes it, 0
    /// to keep it [default: the stack's RetentionDays output, else HAREL_RETENTION_DAYS,
    /// else 30, as the functions]
    #[arg(long, value_name = "DAYS")]
    pub retention_days: Option<String>,
}

/// A connected stack: its store, and its queue when one is configured.
pub struct Stack {
    pub sdk: SdkConfig,
    pub store: DynamoDbStore,
    queue_url: Option<String>,
    dlq_url: Option<String>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The hint every AWS failure carries: what to check.
pub const AWS_HINT: &str =
    "check AWS_REGION, the credentials and AWS_ENDPOINT_URL (is AWS, or the emulator, reachable?)";

impl StackArgs {
    pub async fn connect(&self) -> anyhow::Result<Stack> {
        let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        if sdk.region().is_none() {
            return Err(exit::usage(
                "no AWS region: set AWS_REGION (or a profile's region)",
            ));
        }
        let mut prefix = self.table_prefix.clone();
        let mut queue_url = self.queue_url.clone();
        // the control plane's status changes are announced as the functions' are
        let mut bus = env(harel_stack::EVENT_BUS);
        let mut dlq_url = self.dlq_url.clone();
        let mut retention = self
            .retention_days
            .as_ref()
            .map(|v| ("--retention-days", v.clone()));
        let mut commit_mode = None;
        if let Some(name) = &self.stack {
            let outputs = stack_outputs(&sdk, name).await?;
            let output = |key: &str| {
                outputs
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.clone())
            };
            prefix = prefix.or_else(|| output("TablePrefix"));
            bus = output("EventBus").or(bus);
            queue_url = queue_url.or_else(|| output("QueueUrl"));
            dlq_url = dlq_url.or_else(|| output("DeadLetterQueueUrl"));
            retention = retention.or_else(|| {
                output("RetentionDays").map(|v| ("the stack's RetentionDays output", v))
            });
            commit_mode = output("CommitMode").map(|v| ("the stack's CommitMode output", v));
            if prefix.is_none() {
                return Err(exit::usage(format_args!("stack {name:?} has no TablePrefix output: is it a harel stack (template.yaml)? or pass --table-prefix")));
            }
        }
        let prefix = prefix.or_else(|| env(TABLE_PREFIX)).ok_or_else(|| {
            exit::usage(format_args!("no table prefix: pass --table-prefix PREFIX or --stack NAME (or set {HAREL_STACK}), or set {TABLE_PREFIX} as the functions do"))
        })?;
        let queue_url = queue_url.or_else(|| env(QUEUE_URL));
        let dlq_url = dlq_url.or_else(|| env(DLQ_URL));
        let retention = match retention.or_else(|| env(RETENTION_DAYS).map(|v| (RETENTION_DAYS, v)))
        {
            None => retention_days(DEFAULT_RETENTION_DAYS),
            Some((from, v)) => parse_retention_days(&v)
                .map_err(|e| exit::usage(format_args!("{from} {v:?}: {e}")))?,
        };
        let commit_mode = match commit_mode.or_else(|| env(COMMIT_MODE).map(|v| (COMMIT_MODE, v))) {
            None => CommitMode::default(),
            Some((from, v)) => v
                .parse()
                .map_err(|e| exit::usage(format_args!("{from} {v:?}: {e}")))?,
        };
        let store = DynamoDbStore::new(aws_sdk_dynamodb::Client::new(&sdk), &prefix)
            .with_context(|| format!("table prefix {prefix:?}"))?
            .with_retention(retention)
            .with_commit_mode(commit_mode);
        let store = match bus.filter(|b| !b.trim().is_empty()) {
            Some(_) => store.with_events(events_config()?),
            None => store,
        };
        Ok(Stack {
            sdk,
            store,
            queue_url,
            dlq_url,
        })
    }
}

/// Which events the CLI's commits write: the functions' variables (HAREL_EVENT_SOURCE,
/// HAREL_EVENT_STATUSES, HAREL_EVENT_MACHINES), their defaults when unset.
fn events_config() -> anyhow::Result<harel_store::EventsConfig> {
    let list = |name: &str| {
        env(name).map(|v| {
            v.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
        })
    };
    let statuses = match list(harel_stack::EVENT_STATUSES) {
        None => None,
        Some(names) => Some(
            names
                .iter()
                .map(|n| {
                    serde_json::from_value(serde_json::Value::String(n.to_uppercase())).map_err(
                        |_| {
                            exit::usage(format_args!(
                                "{}: {n:?} is not a status",
                                harel_stack::EVENT_STATUSES
                            ))
                        },
                    )
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    Ok(harel_store::EventsConfig {
        source: env(harel_stack::EVENT_SOURCE)
            .unwrap_or_else(|| harel_store::events::DEFAULT_SOURCE.to_string()),
        statuses,
        machines: list(harel_stack::EVENT_MACHINES),
    })
}

async fn stack_outputs(sdk: &SdkConfig, name: &str) -> anyhow::Result<Vec<(String, String)>> {
    let client = aws_sdk_cloudformation::Client::new(sdk);
    let resp = client
        .describe_stacks()
        .stack_name(name)
        .send()
        .await
        .map_err(|e| {
            let e = aws_sdk_cloudformation::error::DisplayErrorContext(e);
            let text = format!("reading the outputs of stack {name:?}: {e} ({AWS_HINT}; is the stack deployed in this region?)");
            // CloudFormation answers a missing stack with a ValidationError "does not exist"
            if text.contains("does not exist") {
                exit::not_found(text)
            } else {
                exit::aws(text)
            }
        })?;
    let stack = resp
        .stacks()
        .first()
        .ok_or_else(|| exit::not_found(format_args!("no stack {name:?} in this region")))?;
    Ok(stack
        .outputs()
        .iter()
        .filter_map(|o| Some((o.output_key()?.to_string(), o.output_value()?.to_string())))
        .collect())
}

impl Stack {
    /// A Scan reads the whole executions table: say on stderr how far it is, page by page
    /// (`harel list --scan`, `harel purge --scan`).
    pub fn report_scan_progress(&mut self) {
        self.store
            .set_scan_progress(std::sync::Arc::new(|pages, items| {
                eprintln!("scan: page {pages}, {items} executions read");
            }));
    }

    /// The queue, or what to do to name one.
    pub fn transport(&self, why: &str) -> anyhow::Result<SqsTransport> {
        let url = self.queue_url.as_deref().ok_or_else(|| {
            exit::usage(format_args!("no queue URL ({why}): pass --queue-url URL or --stack NAME (or set {HAREL_STACK}), or set {QUEUE_URL} as the functions do"))
        })?;
        Ok(SqsTransport::new(aws_sdk_sqs::Client::new(&self.sdk), url))
    }

    /// The dead-letter queue, or what to do to name one.
    pub fn dead_letters(&self) -> anyhow::Result<harel_sqs::SqsDeadLetters> {
        let url = self.dlq_url.as_deref().ok_or_else(|| {
            exit::usage(format_args!("no dead-letter queue URL: pass --dlq-url URL or --stack NAME (or set {HAREL_STACK}), or set {DLQ_URL} as the functions do"))
        })?;
        Ok(harel_sqs::SqsDeadLetters::new(
            aws_sdk_sqs::Client::new(&self.sdk),
            url,
        ))
    }

    pub fn has_queue(&self) -> bool {
        self.queue_url.is_some()
    }

    pub fn executions_table(&self) -> String {
        self.store.tables().executions()
    }

    /// A store failure, with what to check.
    pub fn explain(&self, doing: &str, e: StoreError) -> anyhow::Error {
        let hint = match &e {
            StoreError::Conflict { .. } | StoreError::AlreadyExists(_) => "",
            StoreError::Corrupt(_) => " (the record does not read as a harel Execution)",
            _ if e.to_string().contains("ResourceNotFound") => {
                " (no such table: check --table-prefix / --stack)"
            }
            _ => "",
        };
        match &e {
            StoreError::Conflict { .. } | StoreError::AlreadyExists(_) => {
                exit::refused(format_args!("{doing}: {e}{hint}"))
            }
            StoreError::Corrupt(_) => anyhow!("{doing}: {e}{hint}"),
            _ if !hint.is_empty() => exit::not_found(format_args!("{doing}: {e}{hint}")),
            _ => exit::aws(format_args!("{doing}: {e} ({AWS_HINT})")),
        }
    }

    /// The execution, or an error naming the table it is not in.
    pub async fn execution(&self, id: &str) -> anyhow::Result<Execution> {
        match self.store.load(id).await {
            Ok(Some(exe)) => Ok(exe),
            Ok(None) => Err(exit::not_found(format_args!(
                "no execution {id:?} in table {}: check the id, --table-prefix or --stack",
                self.executions_table()
            ))),
            Err(e) => Err(self.explain(&format!("reading execution {id:?}"), e)),
        }
    }
}
