//! harel's `WorkerLogic.handle_flow`, for any queue host: parse a message, route it by the
//! execution's status, run the step (or broadcast to the regions), commit, deliver what the
//! commit enqueued, and say what became of it as a [`RecordOutcome`]. The rules of the step and
//! its delivery are the runtime's (`crate::delivery`); what this adds is the queue's side:
//! dead-lettering what can never succeed, parking a SUSPENDED execution's messages. A host
//! (the Lambda worker, a test's pump) receives, wraps each call in its idempotency layer,
//! orders groups and reports; it turns the [`Observation`] facts into its metrics.

mod outcome;
mod record;

use std::time::Duration;

use harel_model::schema::check_event;
use harel_model::{Event, Execution, Status};
use harel_queue::inbound::{parse, CreateRequest, Inbound};
use harel_queue::Transport;
use harel_store::{ExecutionStore, StoreError};
use serde_json::Value;

use crate::admission::{create_context, gate, Gate, Skip};
use crate::delivery::queue::{broadcast, deliver_stepped};
use crate::delivery::{route, Route};
use crate::{CommitReceipt, DeliverError, Driver, RuntimeError};

pub use outcome::{DeadLetterReason, Observation, Observer, RecordError, RecordOutcome};
pub use record::Record;

/// How long a SUSPENDED execution's message is hidden when parked: `first` on its first
/// receive, doubling with each receive up to `max`. Each park is one more receive towards the
/// queue's `maxReceiveCount`; the growing delay lets a long suspension outlast it (harel's
/// constant `nack(delay)` sends the message to the DLQ after `maxReceiveCount` rechecks).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParkPolicy {
    /// The delay of the first park (a message on its first receive).
    pub first: Duration,
    /// The longest delay a park doubles up to (SQS caps a visibility timeout at 12 hours).
    pub max: Duration,
}

impl ParkPolicy {
    /// The park delay of a message received `receive_count` times (1: the first delivery).
    pub fn delay(&self, receive_count: u32) -> Duration {
        let doublings = receive_count.saturating_sub(1).min(31);
        self.first
            .checked_mul(1u32 << doublings)
            .map_or(self.max, |d| d.min(self.max))
    }
}

/// The worker's logic over a store, a transport and the driver, with no host in it.
pub struct WorkerLogic<S, T> {
    /// The store steps are committed to.
    pub store: S,
    /// The queue: what a commit enqueued is published here, and a message parked or
    /// dead-lettered through it.
    pub transport: T,
    /// The deployed machines and actions the steps run.
    pub driver: Driver,
    /// How long a SUSPENDED execution's messages are hidden.
    pub park: ParkPolicy,
}

impl<S, T> WorkerLogic<S, T>
where
    S: ExecutionStore,
    T: Transport,
{
    /// The worker over these parts (its fields, given in order).
    pub fn new(store: S, transport: T, driver: Driver, park: ParkPolicy) -> Self {
        WorkerLogic {
            store,
            transport,
            driver,
            park,
        }
    }

    /// One record, its facts recorded in `observer`.
    pub async fn handle(
        &self,
        record: &Record,
        observer: &Observer,
    ) -> Result<RecordOutcome, RecordError> {
        let (group, inbound) = match parse(record.group_id.as_deref(), &record.body) {
            Ok(parsed) => parsed,
            Err(malformed) => {
                return self
                    .dead_letter(record, DeadLetterReason::Malformed(malformed.0))
                    .await
            }
        };
        match inbound {
            Inbound::Create(request) => self.create(record, request, observer).await,
            Inbound::Event(event) => self.route(&group, record, event, observer).await,
        }
    }

    async fn dead_letter(
        &self,
        record: &Record,
        reason: DeadLetterReason,
    ) -> Result<RecordOutcome, RecordError> {
        let text = reason.to_string();
        // the reason may quote the message's data: only at debug (it travels with the
        // message, in its harel-dead-letter-reason attribute)
        tracing::error!("dead-lettering a message that can never succeed (the reason is in its harel-dead-letter-reason attribute)");
        tracing::debug!(reason = %text, "dead-letter reason");
        self.transport
            .dead_letter(
                &record.message_id,
                record.group_id.as_deref(),
                &record.body,
                &text,
            )
            .await?;
        Ok(RecordOutcome::DeadLettered { reason })
    }

    /// harel's `create(definition_id, context, execution_id)`, started at once: this record
    /// holds the new execution's group, so its Start runs here (as `DurableLogic.create`).
    async fn create(
        &self,
        record: &Record,
        request: CreateRequest,
        observer: &Observer,
    ) -> Result<RecordOutcome, RecordError> {
        let execution_id = request.execution_id.clone();
        observe_event(observer, &request.definition_id, harel_queue::CREATE_KIND);
        let Some(defn) = self.driver.definition(&request.definition_id).cloned() else {
            return self
                .dead_letter(
                    record,
                    DeadLetterReason::UnknownMachine(request.definition_id.to_string()),
                )
                .await;
        };
        let mut exe = Execution::new(request.definition_id).with_id(execution_id.clone());
        // eventually consistent, with the version's check when this process has not kept it
        // yet (`Driver::load_for_create`); a stale "absent" is refused by the commit below
        if self
            .driver
            .load_for_create(&self.store, &mut exe)
            .await?
            .is_some()
        {
            tracing::info!(%execution_id, "create for an execution that exists: nothing done");
            return Ok(RecordOutcome::AlreadyExists { execution_id });
        }
        let context = match create_context(&defn, &request.context) {
            Ok(context) => context,
            Err(e) => {
                return self
                    .dead_letter(
                        record,
                        DeadLetterReason::InvalidContext {
                            execution_id: execution_id.to_string(),
                            why: e.to_string(),
                        },
                    )
                    .await
            }
        };
        exe.context = context;
        let stepped = match self.driver.step(&self.store, &mut exe, None).await {
            Ok(s) => s,
            // created meanwhile by another delivery of the same create
            Err(RuntimeError::Store(StoreError::AlreadyExists(_))) => {
                return Ok(RecordOutcome::AlreadyExists { execution_id });
            }
            // the insert-if-absent commit found it (a stale existence check, or a create
            // that came first): nothing was written
            Err(RuntimeError::Store(StoreError::Conflict {
                execution_id: id,
                expected: 0,
                ..
            })) if id == execution_id.as_str() => {
                tracing::info!(%execution_id, "create for an execution that exists: nothing done");
                return Ok(RecordOutcome::AlreadyExists { execution_id });
            }
            // past DynamoDB's limits now, past them on every retry: nothing was written
            Err(RuntimeError::Store(StoreError::TooLarge(why))) => {
                return self
                    .dead_letter(
                        record,
                        DeadLetterReason::TooLarge {
                            execution_id: execution_id.to_string(),
                            event: None,
                            why: why.to_string(),
                        },
                    )
                    .await;
            }
            Err(e) => return Err(e.into()),
        };
        // the step pins the new execution: its version is known only now
        observe_version(observer, exe.pinned_version());
        self.stepped(observer, None, &exe, &stepped, None);
        self.deliver(&exe, stepped, observer).await;
        Ok(RecordOutcome::Created { execution_id })
    }

    async fn route(
        &self,
        group: &str,
        record: &Record,
        event: Event,
        observer: &Observer,
    ) -> Result<RecordOutcome, RecordError> {
        tracing::Span::current().record("event_kind", event.kind.as_str());
        let (exe, processed) = self.store.load_for_event(group, &event.id).await?;
        let skip = |reason: Skip| {
            Ok(RecordOutcome::Skipped {
                execution_id: group.to_string(),
                reason,
            })
        };
        // the read said "not processed" but the commit's mark condition says otherwise
        let duplicate = || {
            tracing::info!("the event was committed by another writer since the read: acknowledged, not applied again");
            observer.with(|o| o.duplicate = true);
            skip(Skip::ProcessedByAnotherWriter)
        };
        let Some(mut exe) = exe else {
            return skip(Skip::NoSuchExecution);
        };
        observe_event(observer, &exe.definition_id, &event.kind);
        observe_version(observer, exe.pinned_version());
        if processed {
            return skip(Skip::AlreadyProcessed);
        }
        match gate(exe.status, &event.kind) {
            Gate::Skip(reason) => {
                if exe.status == Status::Pending {
                    tracing::warn!(execution_id = %exe.id, kind = %event.kind, "discarding an event for an execution not started yet");
                }
                return skip(reason);
            }
            Gate::Park => {
                let delay = self.park.delay(record.receive_count);
                tracing::info!(
                    receive_count = record.receive_count,
                    delay_s = delay.as_secs_f64(),
                    "execution is SUSPENDED: parking its message"
                );
                self.transport.park(&record.receipt_handle, delay).await?;
                return Err(RecordError::Parked(exe.id.to_string()));
            }
            Gate::Run => {}
        }
        // harel checks an event against its declaration in the sender's stack; here the
        // queue is the API, so the worker is the first to see it: one that does not fit can
        // never succeed
        // against the version the execution runs on (one that cannot be had here is the
        // step's error to report, below)
        if let Ok(defn) = self.driver.resolve(&self.store, &exe).await {
            if let Err(e) = check_event(&defn.events, &event.kind, &event.data) {
                return self
                    .dead_letter(
                        record,
                        DeadLetterReason::RefusedEvent {
                            kind: event.kind.to_string(),
                            execution_id: exe.id.to_string(),
                            why: e.to_string(),
                        },
                    )
                    .await;
            }
        }
        if let Route::Regions(regions) = route(&self.store, &exe, &event).await? {
            let armed = match broadcast(
                &self.store,
                &self.transport,
                &self.driver,
                &mut exe,
                &event,
                &regions,
            )
            .await
            {
                Err(DeliverError::Store(e)) if e.is_already_processed() => return duplicate(),
                armed => armed?,
            };
            observer.with(|o| {
                o.commits += 1;
                o.armed.extend(armed);
            });
            return Ok(RecordOutcome::Broadcast {
                execution_id: exe.id.to_string(),
                regions: regions.len(),
            });
        }
        let execution_id = exe.id.clone();
        let before = (exe.status, exe.active_path.clone());
        let stepped = match self.driver.step(&self.store, &mut exe, Some(&event)).await {
            Ok(s) => s,
            Err(RuntimeError::Store(e)) if e.is_already_processed() => return duplicate(),
            // the step would pass DynamoDB's item or transaction limits: so would every retry
            // (nothing was written); retried, it would reach the DLQ by SQS's redrive only,
            // without the reason
            Err(RuntimeError::Store(StoreError::TooLarge(why))) => {
                return self
                    .dead_letter(
                        record,
                        DeadLetterReason::TooLarge {
                            execution_id: execution_id.to_string(),
                            event: Some(event.kind.to_string()),
                            why: why.to_string(),
                        },
                    )
                    .await;
            }
            Err(e) => return Err(e.into()),
        };
        self.stepped(observer, Some(before), &exe, &stepped, Some(&event));
        self.deliver(&exe, stepped, observer).await;
        Ok(RecordOutcome::Processed {
            execution_id: execution_id.to_string(),
        })
    }

    /// A committed step: logged (where it went, never the context) and observed.
    fn stepped(
        &self,
        observer: &Observer,
        before: Option<(Status, Option<harel_model::SmolStr>)>,
        exe: &Execution,
        stepped: &CommitReceipt,
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
    async fn deliver(&self, exe: &Execution, stepped: CommitReceipt, observer: &Observer) {
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

fn observe_version(observer: &Observer, version: Option<&str>) {
    if let Some(version) = version {
        tracing::Span::current().record("machine_version", version);
    }
    observer.with(|o| o.version = version.map(str::to_string));
}

fn report_undelivered(execution_id: &str, e: &DeliverError) {
    tracing::warn!(%execution_id, error = %e, "could not deliver everything the step enqueued; the relay will");
}
