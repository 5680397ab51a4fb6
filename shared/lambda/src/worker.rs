//! The worker: one SQS batch in, a partial batch response out. Per record: the idempotency
//! layer keyed on the SQS message id, then harel's `WorkerLogic.handle_flow` (load with the
//! dedupe mark, route by status, run the engine or broadcast to the regions, commit, deliver
//! what the commit enqueued).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use harel_idempotency::{Client as IdempotencyClient, Idempotency, RunError};
use harel_model::schema::{check_context, check_event, with_defaults};
use harel_model::{Event, Execution, Status};
use harel_sqs::{DedupeKey, Outgoing, Transport, TransportError};
use harel_store::{Commit, ExecutionStore, StoreError, TimerOp};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Semaphore;
use tracing::field::Empty;
use tracing::Instrument;

use crate::config::Config;
use crate::deliver::{deliver_stepped, DeliverError};
use crate::driver::{DriveError, Driver};
use crate::inbound::{parse, CreateRequest, Inbound};
use crate::wake::Waker;

/// harel's `runtime._CONTROL`: events that drive an execution itself, never broadcast.
pub const CONTROL_EVENTS: [&str; 6] = [
    "Start", "Reset", "Cancel", "SetState", "Finished", "Timeout",
];

/// The skip reason of an event whose commit found its dedupe mark (see `Observed::duplicate`).
pub const ALREADY_PROCESSED_AT_COMMIT: &str = "event already processed (found by the commit)";

/// One SQS record, as the worker needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub message_id: String,
    pub receipt_handle: String,
    pub group_id: Option<String>,
    pub body: String,
    /// SQS's `ApproximateReceiveCount` (1: the first delivery): how many times the message
    /// was handed out, parks included; it sets how long a parked message is hidden.
    pub receive_count: u32,
}

impl Record {
    /// A record on its first delivery.
    pub fn new(
        message_id: impl Into<String>,
        receipt_handle: impl Into<String>,
        group_id: Option<String>,
        body: impl Into<String>,
    ) -> Self {
        Record {
            message_id: message_id.into(),
            receipt_handle: receipt_handle.into(),
            group_id,
            body: body.into(),
            receive_count: 1,
        }
    }

    pub fn from_sqs(message: &aws_lambda_events::sqs::SqsMessage) -> Self {
        Record {
            message_id: message.message_id.clone().unwrap_or_default(),
            receipt_handle: message.receipt_handle.clone().unwrap_or_default(),
            group_id: message.attributes.get("MessageGroupId").cloned(),
            body: message.body.clone().unwrap_or_default(),
            receive_count: harel_sqs::sqs::receive_count(
                message
                    .attributes
                    .get("ApproximateReceiveCount")
                    .map_or("", String::as_str),
            ),
        }
    }

    /// A message as `SqsTransport::receive` (or the in-memory twin) hands it over: the
    /// record the event source would make of it.
    pub fn from_received(message: &harel_sqs::Received) -> Self {
        Record {
            message_id: message.message_id.clone(),
            receipt_handle: message.receipt_handle.clone(),
            group_id: Some(message.group_id.clone()),
            body: message.body.clone(),
            receive_count: message.receive_count,
        }
    }

    /// What the idempotency key is computed from (`messageId`, as Powertools' SQS examples).
    fn idempotency_payload(&self) -> Value {
        serde_json::json!({"messageId": self.message_id})
    }
}

impl From<&harel_sqs::Received> for Record {
    fn from(message: &harel_sqs::Received) -> Self {
        Record::from_received(message)
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

impl Handled {
    /// The outcome's name, as logged (the reason of a skip or a dead letter is not: it may
    /// quote the message's data).
    pub fn name(&self) -> &'static str {
        match self {
            Handled::Processed { .. } => "processed",
            Handled::Broadcast { .. } => "broadcast",
            Handled::Created { .. } => "created",
            Handled::AlreadyExists { .. } => "already_exists",
            Handled::Skipped { .. } => "skipped",
            Handled::DeadLettered { .. } => "dead_lettered",
        }
    }
}

/// What the worker saw while handling one record, for the metrics: the machine, the
/// transactions it committed, whether the step left the execution FAILED, and timings. A
/// record the idempotency layer answered from its store did nothing and saw nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    pub machine: Option<String>,
    pub event_kind: Option<String>,
    pub commits: usize,
    /// The step's commit found the event's dedupe mark already written (another writer
    /// applied it after this one's read): acknowledged, nothing applied twice.
    pub duplicate: bool,
    pub failed_execution: bool,
    /// A `Timeout`: its processing time less its due time (`fire_at`), in milliseconds.
    pub timer_lag_ms: Option<f64>,
    /// A step that enqueued outbox entries: from its commit to their publication.
    pub outbox_age_ms: Option<f64>,
    /// The `fire_at` of each timer the record's commits armed.
    pub armed: Vec<f64>,
}

/// Filled in while a record is handled (the idempotency layer owns the handler's future,
/// so the observation cannot be its return value).
#[derive(Default)]
struct Observer(Mutex<Observed>);

impl Observer {
    fn with(&self, f: impl FnOnce(&mut Observed)) {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()));
    }

    fn take(&self) -> Observed {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
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
    /// What was seen handling each record, in the same order.
    pub observed: Vec<Observed>,
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
    waker: Option<Arc<dyn Waker>>,
    /// The latest `until` a wake from this process asked for: a sweeper is covering timers
    /// due before it, so no other wake is needed for them.
    awake_until: Mutex<f64>,
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
            waker: None,
            awake_until: Mutex::new(f64::NEG_INFINITY),
        }
    }

    /// Wake a sweeper after a batch that armed a timer due within the sweep window.
    pub fn with_waker(mut self, waker: Arc<dyn Waker>) -> Self {
        self.waker = Some(waker);
        self
    }

    /// At most one wake per batch, and none when a wake this process sent still covers the
    /// timers armed: the woken sweeper sweeps the whole window ahead, looking again at least
    /// every `HAREL_SWEEP_INTERVAL_SECONDS`, so it sees timers armed after it started. A
    /// failed wake is logged, not fatal: the next tick fires the timer, late.
    async fn wake_for(&self, observed: &[Observed]) {
        let Some(waker) = &self.waker else { return };
        let now = self.driver.now();
        let horizon = now + self.config.sweep_window.as_secs_f64();
        let covered = *self.awake_until.lock().unwrap_or_else(|e| e.into_inner());
        let needs = observed
            .iter()
            .flat_map(|o| &o.armed)
            .any(|&at| at <= horizon && at > covered);
        if !needs {
            return;
        }
        match waker.wake(horizon).await {
            Ok(()) => {
                *self.awake_until.lock().unwrap_or_else(|e| e.into_inner()) = horizon;
                tracing::info!(until = horizon, "sweeper woken");
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not wake the sweeper; the next tick fires the timer")
            }
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
            let task = async move {
                let _permit = permits.acquire_owned().await;
                let mut results = Vec::with_capacity(members.len());
                let mut failed = false;
                // a parked head holds its group for the park's delay; the records queued
                // behind it are parked as long, or they would come back after the queue's
                // visibility timeout and spend a receive each time (toward the DLQ)
                let mut parked_for: Option<Duration> = None;
                for (i, record) in members {
                    // every line logged for the record carries these
                    let span = tracing::info_span!(
                        "record",
                        message_id = %record.message_id,
                        execution_id = record.group_id.as_deref().unwrap_or(""),
                        event_kind = Empty,
                        machine = Empty,
                    );
                    let observer = Observer::default();
                    let result = if failed {
                        if let Some(delay) = parked_for {
                            if let Err(e) =
                                worker.transport.park(&record.receipt_handle, delay).await
                            {
                                span.in_scope(|| tracing::warn!(error = %e, "could not park a record behind a parked one"));
                            }
                        }
                        Err(RecordError::Blocked(
                            record.group_id.clone().unwrap_or_default(),
                        ))
                    } else {
                        worker
                            .handle_idempotent(&record, deadline_ms, &observer)
                            .instrument(span.clone())
                            .await
                    };
                    span.in_scope(|| match &result {
                        Ok(handled) => tracing::info!(outcome = handled.name(), "record done"),
                        Err(e) if !failed => tracing::warn!(error = %e, "record failed"),
                        Err(e) => tracing::info!(error = %e, "record not processed"),
                    });
                    if let Err(e) = &result {
                        if !failed && matches!(e, RecordError::Parked(_)) {
                            parked_for =
                                Some(worker.config.suspend_park_delay(record.receive_count));
                        }
                        failed = true;
                    }
                    results.push((i, record.message_id, result, observer.take()));
                }
                results
            };
            // the task runs outside the caller's span unless given it (the invocation's)
            tasks.spawn(task.in_current_span());
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
        let mut by_index: HashMap<usize, (Result<Handled, RecordError>, Observed)> =
            all.into_iter().map(|(i, _, r, o)| (i, (r, o))).collect();
        let mut outcome = BatchOutcome::default();
        for (i, id) in ids.into_iter().enumerate() {
            let (result, observed) = by_index.remove(&i).unwrap_or_else(|| {
                (
                    Err(RecordError::Task("the record's task panicked".into())),
                    Observed::default(),
                )
            });
            outcome.records.push((id, result));
            outcome.observed.push(observed);
        }
        self.wake_for(&outcome.observed).await;
        outcome
    }

    async fn handle_idempotent(
        &self,
        record: &Record,
        deadline_ms: Option<i64>,
        observer: &Observer,
    ) -> Result<Handled, RecordError> {
        let Some(idempotency) = &self.idempotency else {
            return self.handle_observed(record, observer).await;
        };
        match idempotency
            .run(&record.idempotency_payload(), deadline_ms, || {
                self.handle_observed(record, observer)
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
        self.handle_observed(record, &Observer::default()).await
    }

    async fn handle_observed(
        &self,
        record: &Record,
        observer: &Observer,
    ) -> Result<Handled, RecordError> {
        let (group, inbound) = match parse(record.group_id.as_deref(), &record.body) {
            Ok(parsed) => parsed,
            Err(malformed) => return self.dead_letter(record, &malformed.0).await,
        };
        match inbound {
            Inbound::Create(request) => self.create(record, request, observer).await,
            Inbound::Event(event) => self.route(&group, record, event, observer).await,
        }
    }

    async fn dead_letter(&self, record: &Record, reason: &str) -> Result<Handled, RecordError> {
        // the reason may quote the message's data: only at debug (it travels with the
        // message, in its harel-dead-letter-reason attribute)
        tracing::error!("dead-lettering a message that can never succeed (the reason is in its harel-dead-letter-reason attribute)");
        tracing::debug!(reason, "dead-letter reason");
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
        observer: &Observer,
    ) -> Result<Handled, RecordError> {
        let execution_id = request.execution_id.clone();
        observe_event(
            observer,
            &request.definition_id,
            crate::inbound::CREATE_KIND,
        );
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
            // past DynamoDB's limits now, past them on every retry: nothing was written
            Err(DriveError::Store(StoreError::TooLarge(why))) => {
                return self
                    .dead_letter(record, &format!("create {execution_id}: {why}"))
                    .await;
            }
            Err(e) => return Err(e.into()),
        };
        self.stepped(observer, None, &exe, &stepped, None);
        self.deliver(&exe, stepped, observer).await;
        Ok(Handled::Created { execution_id })
    }

    async fn route(
        &self,
        group: &str,
        record: &Record,
        event: Event,
        observer: &Observer,
    ) -> Result<Handled, RecordError> {
        tracing::Span::current().record("event_kind", event.kind.as_str());
        let (exe, processed) = self.store.load_for_event(group, &event.id).await?;
        let skip = |reason: &str| {
            Ok(Handled::Skipped {
                execution_id: group.to_string(),
                reason: reason.to_string(),
            })
        };
        // the read said "not processed" but the commit's mark condition says otherwise
        let duplicate = || {
            tracing::info!("the event was committed by another writer since the read: acknowledged, not applied again");
            observer.with(|o| o.duplicate = true);
            skip(ALREADY_PROCESSED_AT_COMMIT)
        };
        let Some(mut exe) = exe else {
            return skip("no such execution");
        };
        observe_event(observer, &exe.definition_id, &event.kind);
        if processed {
            return skip("event already processed");
        }
        match exe.status {
            Status::Cancelled => return skip("execution is CANCELLED"),
            Status::Suspended => {
                let delay = self.config.suspend_park_delay(record.receive_count);
                tracing::info!(
                    receive_count = record.receive_count,
                    delay_s = delay.as_secs_f64(),
                    "execution is SUSPENDED: parking its message"
                );
                self.transport.park(&record.receipt_handle, delay).await?;
                return Err(RecordError::Parked(exe.id.to_string()));
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
                        live.push(child.id.to_string());
                    }
                }
            }
            if !live.is_empty() {
                let handled = match self.broadcast(&mut exe, &event, live, observer).await {
                    Err(RecordError::Store(e)) if e.is_already_processed() => return duplicate(),
                    handled => handled?,
                };
                observer.with(|o| o.commits += 1);
                return Ok(handled);
            }
        }
        let execution_id = exe.id.clone();
        let before = (exe.status, exe.active_path.clone());
        let stepped = match self.driver.step(&self.store, &mut exe, Some(&event)).await {
            Ok(s) => s,
            Err(DriveError::Store(e)) if e.is_already_processed() => return duplicate(),
            // the step would pass DynamoDB's item or transaction limits: so would every retry
            // (nothing was written); retried, it would reach the DLQ by SQS's redrive only,
            // without the reason
            Err(DriveError::Store(StoreError::TooLarge(why))) => {
                return self
                    .dead_letter(
                        record,
                        &format!("event {} for {execution_id}: {why}", event.kind),
                    )
                    .await;
            }
            Err(e) => return Err(e.into()),
        };
        self.stepped(observer, Some(before), &exe, &stepped, Some(&event));
        self.deliver(&exe, stepped, observer).await;
        Ok(Handled::Processed {
            execution_id: execution_id.to_string(),
        })
    }

    /// harel's `route_flow` broadcast: publish to each live region's group, re-arm the
    /// parent's ttl, and commit the parent's processed mark.
    async fn broadcast(
        &self,
        exe: &mut Execution,
        event: &Event,
        live: Vec<String>,
        observer: &Observer,
    ) -> Result<Handled, RecordError> {
        let messages = live
            .iter()
            .map(|child| Outgoing::event(child.clone(), event, DedupeKey::Event))
            .collect::<Result<Vec<_>, _>>()?;
        self.transport.publish_batch(&messages).await?;
        let mut timers = Vec::new();
        let mut armed = None;
        if let Some(defn) = self.driver.definition(&exe.definition_id) {
            if let Some(delay) = harel_engine::ttl_delay(&defn, exe) {
                let expires = self.driver.now() + delay;
                exe.expires_at = Some(expires);
                armed = Some(expires);
                timers.push(TimerOp::Schedule {
                    path: harel_engine::TTL_PATH.into(),
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
        observer.with(|o| o.armed.extend(armed));
        Ok(Handled::Broadcast {
            execution_id: exe.id.to_string(),
            regions: live.len(),
        })
    }

    /// A committed step: logged (where it went, never the context) and observed.
    fn stepped(
        &self,
        observer: &Observer,
        before: Option<(Status, Option<harel_model::SmolStr>)>,
        exe: &Execution,
        stepped: &crate::driver::Stepped,
        event: Option<&Event>,
    ) {
        let (from_status, from) = before.unzip();
        tracing::info!(
            from = from.flatten().as_deref().unwrap_or("(start)"),
            to = exe.active_path.as_deref().unwrap_or(""),
            status = exe.status.as_str(),
            outcome = exe.outcome.as_deref().unwrap_or(""),
            emitted = stepped.outbox.len(),
            spawned = stepped.spawns.len(),
            "step committed"
        );
        let failed = exe.status == Status::Failed && from_status != Some(Status::Failed);
        if failed {
            tracing::warn!(
                error = exe.error.as_deref().unwrap_or(""),
                "the step failed the execution"
            );
        }
        let timer_lag_ms = event
            .filter(|e| e.kind == "Timeout")
            .and_then(|e| e.data.get("fire_at"))
            .and_then(Value::as_f64)
            .map(|due| ((self.driver.now() - due) * 1000.0).max(0.0));
        observer.with(|o| {
            o.commits += 1;
            o.failed_execution |= failed;
            o.timer_lag_ms = timer_lag_ms;
            o.armed.extend_from_slice(&stepped.armed);
        });
    }

    /// Deliver what a commit enqueued. The commit is done: a failure here leaves the entries
    /// pending for the relay and does not fail the record.
    async fn deliver(&self, exe: &Execution, stepped: crate::driver::Stepped, observer: &Observer) {
        if stepped.is_empty() {
            return;
        }
        let had_outbox = !stepped.outbox.is_empty();
        match deliver_stepped(&self.store, &self.transport, &self.driver, &exe.id, stepped).await {
            Ok(delivered) => {
                let age = exe
                    .updated_at
                    .filter(|_| had_outbox)
                    .map(|committed| ((self.driver.now() - committed) * 1000.0).max(0.0));
                observer.with(|o| {
                    // each child created is its own commit
                    o.commits += delivered.children_created;
                    o.armed.extend_from_slice(&delivered.armed);
                    o.outbox_age_ms = age;
                });
            }
            Err(e) => report_undelivered(&exe.id, &e),
        }
    }
}

fn observe_event(observer: &Observer, machine: &str, kind: &str) {
    let span = tracing::Span::current();
    span.record("machine", machine);
    span.record("event_kind", kind);
    observer.with(|o| {
        o.machine = Some(machine.to_string());
        o.event_kind = Some(kind.to_string());
    });
}

fn report_undelivered(execution_id: &str, e: &DeliverError) {
    tracing::warn!(%execution_id, error = %e, "could not deliver everything the step enqueued; the relay will");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(attributes: serde_json::Value) -> aws_lambda_events::sqs::SqsMessage {
        serde_json::from_value(serde_json::json!({
            "messageId": "m-1",
            "receiptHandle": "rh",
            "body": "{}",
            "attributes": attributes,
            "messageAttributes": {},
        }))
        .expect("an SQS record")
    }

    #[test]
    fn a_record_carries_sqss_receive_count() {
        let record = Record::from_sqs(&message(serde_json::json!({
            "MessageGroupId": "g",
            "ApproximateReceiveCount": "3",
        })));
        assert_eq!(record.group_id.as_deref(), Some("g"));
        assert_eq!(record.receive_count, 3);
        // absent (never from Lambda): the first delivery
        let record = Record::from_sqs(&message(serde_json::json!({})));
        assert_eq!(record.receive_count, 1);
    }
}
