//! The worker: one SQS batch in, a partial batch response out. Per record: the idempotency
//! layer keyed on the SQS message id, then harel's `WorkerLogic.handle_flow` (load with the
//! dedupe mark, route by status, run the engine or broadcast to the regions, commit, deliver
//! what the commit enqueued).

use std::collections::HashMap;
use std::sync::Arc;

use harel_idempotency::{Client as IdempotencyClient, Idempotency, RunError};
use harel_model::schema::{check_context, check_event, with_defaults};
use harel_model::{Event, Execution, Status};
use harel_sqs::{DedupeKey, Outgoing, Transport, TransportError};
use harel_store::{Commit, ExecutionStore, StoreError, TimerOp};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::config::Config;
use crate::deliver::{deliver_stepped, DeliverError};
use crate::driver::{DriveError, Driver};
use crate::inbound::{parse, CreateRequest, Inbound};

/// harel's `runtime._CONTROL`: events that drive an execution itself, never broadcast.
pub const CONTROL_EVENTS: [&str; 6] = [
    "Start", "Reset", "Cancel", "SetState", "Finished", "Timeout",
];

/// One SQS record, as the worker needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub message_id: String,
    pub receipt_handle: String,
    pub group_id: Option<String>,
    pub body: String,
}

impl Record {
    pub fn from_sqs(message: &aws_lambda_events::sqs::SqsMessage) -> Self {
        Record {
            message_id: message.message_id.clone().unwrap_or_default(),
            receipt_handle: message.receipt_handle.clone().unwrap_or_default(),
            group_id: message.attributes.get("MessageGroupId").cloned(),
            body: message.body.clone().unwrap_or_default(),
        }
    }

    /// What the idempotency key is computed from (`messageId`, as Powertools' SQS examples).
    fn idempotency_payload(&self) -> Value {
        serde_json::json!({"messageId": self.message_id})
    }
}

/// What became of a record that needs no retry (stored by the idempotency layer, so a replay
/// answers the same).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Handled {
    /// The engine ran and the step was committed.
    Processed {
        execution_id: String,
    },
    /// A domain event published to the execution's live regions.
    Broadcast {
        execution_id: String,
        regions: usize,
    },
    Created {
        execution_id: String,
    },
    /// A create for an id that exists: nothing done.
    AlreadyExists {
        execution_id: String,
    },
    /// Nothing to do (unknown execution, processed already, cancelled, not started...).
    Skipped {
        execution_id: String,
        reason: String,
    },
    /// Could never succeed: moved to the dead-letter queue with the reason.
    DeadLettered {
        reason: String,
    },
}

/// Why a record is reported failed (SQS redelivers it, and with it the rest of its group).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("execution {0} is SUSPENDED: parked")]
    Parked(String),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error(transparent)]
    Drive(DriveError),
    #[error("idempotency: {0}")]
    Idempotency(String),
    #[error("not processed: an earlier record of group {0} failed")]
    Blocked(String),
    #[error("worker task failed: {0}")]
    Task(String),
}

impl From<DriveError> for RecordError {
    fn from(e: DriveError) -> Self {
        match e {
            DriveError::Store(s) if s.is_conflict() => RecordError::Conflict(s.to_string()),
            DriveError::Store(s) => RecordError::Store(s),
            other => RecordError::Drive(other),
        }
    }
}

/// The result of one batch.
#[derive(Debug, Default)]
pub struct BatchOutcome {
    /// Every record, in batch order, with what became of it.
    pub records: Vec<(String, Result<Handled, RecordError>)>,
}

impl BatchOutcome {
    /// The message ids to report in `batchItemFailures`.
    pub fn failed_ids(&self) -> Vec<String> {
        self.records
            .iter()
            .filter(|(_, r)| r.is_err())
            .map(|(id, _)| id.clone())
            .collect()
    }

    pub fn to_response(&self) -> aws_lambda_events::event::sqs::SqsBatchResponse {
        let mut response = aws_lambda_events::event::sqs::SqsBatchResponse::default();
        for id in self.failed_ids() {
            let mut failure = aws_lambda_events::event::sqs::BatchItemFailure::default();
            failure.item_identifier = id;
            response.batch_item_failures.push(failure);
        }
        response
    }
}

pub struct Worker<S, T, D, C> {
    pub store: S,
    pub transport: T,
    pub driver: D,
    idempotency: Option<Idempotency<C>>,
    config: Config,
}

impl<S, T, D, C> Worker<S, T, D, C>
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
    D: Driver,
    C: IdempotencyClient + 'static,
{
    pub fn new(
        store: S,
        transport: T,
        driver: D,
        idempotency: Option<Idempotency<C>>,
        config: Config,
    ) -> Self {
        Worker {
            store,
            transport,
            driver,
            idempotency,
            config,
        }
    }

    /// Process one batch: groups concurrently (at most `worker_concurrency` at a time), the
    /// records of a group in order; once a record of a group fails, the group's later records
    /// are reported failed without being processed (FIFO order).
    pub async fn handle_batch(
        self: &Arc<Self>,
        records: Vec<Record>,
        deadline_ms: Option<i64>,
    ) -> BatchOutcome {
        let ids: Vec<String> = records.iter().map(|r| r.message_id.clone()).collect();
        let mut order: Vec<String> = Vec::new();
        let mut groups: HashMap<String, Vec<(usize, Record)>> = HashMap::new();
        for (i, record) in records.into_iter().enumerate() {
            // a record without a group is malformed: alone in a group of its own
            let key = match &record.group_id {
                Some(g) => format!("g:{g}"),
                None => format!("m:{}", record.message_id),
            };
            if !groups.contains_key(&key) {
                order.push(key.clone());
            }
            groups.entry(key).or_default().push((i, record));
        }
        let permits = Arc::new(Semaphore::new(self.config.worker_concurrency));
        let mut tasks = tokio::task::JoinSet::new();
        for key in order {
            let members = groups.remove(&key).unwrap_or_default();
            let worker = Arc::clone(self);
            let permits = Arc::clone(&permits);
            tasks.spawn(async move {
                let _permit = permits.acquire_owned().await;
                let mut results = Vec::with_capacity(members.len());
                let mut failed = false;
                for (i, record) in members {
                    let result = if failed {
                        Err(RecordError::Blocked(record.group_id.clone().unwrap_or_default()))
                    } else {
                        worker.handle_idempotent(&record, deadline_ms).await
                    };
                    if let Err(e) = &result {
                        if !failed {
                            tracing::warn!(message_id = %record.message_id, error = %e, "record failed");
                        }
                        failed = true;
                    }
                    results.push((i, record.message_id, result));
                }
                results
            });
        }
        let mut all = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(results) => all.extend(results),
                // a panicking handler: its group's records were not reported yet; they are
                // found missing below and reported failed
                Err(e) => tracing::error!(error = %e, "a worker task panicked"),
            }
        }
        let mut by_index: HashMap<usize, Result<Handled, RecordError>> =
            all.into_iter().map(|(i, _, r)| (i, r)).collect();
        let records = ids
            .into_iter()
            .enumerate()
            .map(|(i, id)| {
                let result = by_index
                    .remove(&i)
                    .unwrap_or_else(|| Err(RecordError::Task("the record's task panicked".into())));
                (id, result)
            })
            .collect();
        BatchOutcome { records }
    }

    async fn handle_idempotent(
        &self,
        record: &Record,
        deadline_ms: Option<i64>,
    ) -> Result<Handled, RecordError> {
        let Some(idempotency) = &self.idempotency else {
            return self.handle(record).await;
        };
        match idempotency
            .run(&record.idempotency_payload(), deadline_ms, || {
                self.handle(record)
            })
            .await
        {
            Ok(handled) => Ok(handled),
            Err(RunError::Handler(e)) => Err(e),
            Err(RunError::Idempotency(e)) => Err(RecordError::Idempotency(e.to_string())),
        }
    }

    /// One record, without the idempotency layer.
    pub async fn handle(&self, record: &Record) -> Result<Handled, RecordError> {
        let (group, inbound) = match parse(record.group_id.as_deref(), &record.body) {
            Ok(parsed) => parsed,
            Err(malformed) => return self.dead_letter(record, &malformed.0).await,
        };
        match inbound {
            Inbound::Create(request) => self.create(record, request).await,
            Inbound::Event(event) => self.route(&group, record, event).await,
        }
    }

    async fn dead_letter(&self, record: &Record, reason: &str) -> Result<Handled, RecordError> {
        tracing::error!(message_id = %record.message_id, reason, "dead-lettering a message that can never succeed");
        self.transport
            .dead_letter(
                &record.message_id,
                record.group_id.as_deref(),
                &record.body,
                reason,
            )
            .await?;
        Ok(Handled::DeadLettered {
            reason: reason.to_string(),
        })
    }

    /// harel's `create(definition_id, context, execution_id)`, started at once: this record
    /// holds the new execution's group, so its Start runs here (as `DurableLogic.create`).
    async fn create(
        &self,
        record: &Record,
        request: CreateRequest,
    ) -> Result<Handled, RecordError> {
        let execution_id = request.execution_id.clone();
        let Some(defn) = self.driver.definition(&request.definition_id) else {
            return self
                .dead_letter(
                    record,
                    &format!(
                        "unknown machine {:?}: it is not compiled into this worker",
                        request.definition_id
                    ),
                )
                .await;
        };
        if self.store.load(&execution_id).await?.is_some() {
            tracing::info!(%execution_id, "create for an execution that exists: nothing done");
            return Ok(Handled::AlreadyExists { execution_id });
        }
        let context = with_defaults(&defn.context_schema, &request.context);
        if let Err(e) = check_context(&defn.context_schema, &context, true) {
            return self
                .dead_letter(
                    record,
                    &format!("create {execution_id}: invalid context: {e}"),
                )
                .await;
        }
        let mut exe = Execution::new(request.definition_id).with_id(execution_id.clone());
        exe.context = context;
        let stepped = match self.driver.step(&self.store, &mut exe, None).await {
            Ok(s) => s,
            // created meanwhile by another delivery of the same create
            Err(DriveError::Store(StoreError::AlreadyExists(_))) => {
                return Ok(Handled::AlreadyExists { execution_id });
            }
            Err(e) => return Err(e.into()),
        };
        self.deliver(&execution_id, stepped).await;
        Ok(Handled::Created { execution_id })
    }

    async fn route(
        &self,
        group: &str,
        record: &Record,
        event: Event,
    ) -> Result<Handled, RecordError> {
        let (exe, processed) = self.store.load_for_event(group, &event.id).await?;
        let skip = |reason: &str| {
            Ok(Handled::Skipped {
                execution_id: group.to_string(),
                reason: reason.to_string(),
            })
        };
        let Some(mut exe) = exe else {
            return skip("no such execution");
        };
        if processed {
            return skip("event already processed");
        }
        match exe.status {
            Status::Cancelled => return skip("execution is CANCELLED"),
            Status::Suspended => {
                self.transport
                    .park(&record.receipt_handle, self.config.suspend_recheck)
                    .await?;
                return Err(RecordError::Parked(exe.id));
            }
            Status::Pending if event.kind != "Start" => {
                // harel discards it rather than parking: parking would hold the group and
                // block the Start itself behind it
                tracing::warn!(execution_id = %exe.id, kind = %event.kind, "discarding an event for an execution not started yet");
                return skip("execution is PENDING (not started)");
            }
            Status::Cancelling if event.kind != "Cancel" => return skip("execution is CANCELLING"),
            _ => {}
        }
        // harel checks an event against its declaration in the sender's stack; here the
        // queue is the API, so the worker is the first to see it: one that does not fit can
        // never succeed
        if let Some(defn) = self.driver.definition(&exe.definition_id) {
            if let Err(e) = check_event(&defn.events, &event.kind, &event.data) {
                return self
                    .dead_letter(record, &format!("event {} for {}: {e}", event.kind, exe.id))
                    .await;
            }
        }
        if !CONTROL_EVENTS.contains(&event.kind.as_str()) {
            let mut live = Vec::new();
            for (cid, cs) in &exe.children {
                if !cs.finished && !cs.submachine {
                    if let Some(child) = self.store.load(cid).await? {
                        live.push(child.id);
                    }
                }
            }
            if !live.is_empty() {
                return self.broadcast(&mut exe, &event, live).await;
            }
        }
        let execution_id = exe.id.clone();
        let stepped = self
            .driver
            .step(&self.store, &mut exe, Some(&event))
            .await?;
        self.deliver(&execution_id, stepped).await;
        Ok(Handled::Processed { execution_id })
    }

    /// harel's `route_flow` broadcast: publish to each live region's group, re-arm the
    /// parent's ttl, and commit the parent's processed mark.
    async fn broadcast(
        &self,
        exe: &mut Execution,
        event: &Event,
        live: Vec<String>,
    ) -> Result<Handled, RecordError> {
        let messages = live
            .iter()
            .map(|child| Outgoing::event(child.clone(), event, DedupeKey::Event))
            .collect::<Result<Vec<_>, _>>()?;
        self.transport.publish_batch(&messages).await?;
        let mut timers = Vec::new();
        if let Some(defn) = self.driver.definition(&exe.definition_id) {
            if let Some(delay) = harel_engine::ttl_delay(&defn, exe) {
                let expires = self.driver.now() + delay;
                exe.expires_at = Some(expires);
                timers.push(TimerOp::Schedule {
                    path: harel_engine::TTL_PATH.to_string(),
                    fire_at: expires,
                });
            }
        }
        exe.stamp(self.driver.now());
        let commit = Commit {
            processed_event_id: Some(event.id.clone()),
            timers,
            ..Commit::default()
        };
        self.store.commit(exe, commit).await.map_err(|e| {
            if e.is_conflict() {
                RecordError::Conflict(e.to_string())
            } else {
                RecordError::Store(e)
            }
        })?;
        Ok(Handled::Broadcast {
            execution_id: exe.id.clone(),
            regions: live.len(),
        })
    }

    /// Deliver what a commit enqueued. The commit is done: a failure here leaves the entries
    /// pending for the relay and does not fail the record.
    async fn deliver(&self, execution_id: &str, stepped: crate::driver::Stepped) {
        if stepped.is_empty() {
            return;
        }
        if let Err(e) = deliver_stepped(
            &self.store,
            &self.transport,
            &self.driver,
            execution_id,
            stepped,
        )
        .await
        {
            report_undelivered(execution_id, &e);
        }
    }
}

fn report_undelivered(execution_id: &str, e: &DeliverError) {
    tracing::warn!(%execution_id, error = %e, "could not deliver everything the step enqueued; the relay will");
}
