//! The worker: one SQS batch in, a partial batch response out. What is Lambda's is here:
//! groups in order and concurrently, the idempotency layer keyed on the SQS message id, the
//! invocation's deadline, the logs, waking the sweeper. What a record does (harel's
//! `WorkerLogic.handle_flow`: load with the dedupe mark, route by status, run the engine or
//! broadcast to the regions, commit, deliver) is `harel_runtime::worker`, shared by every host.

mod handle;
mod outcome;
mod record;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use harel_idempotency::{Client as IdempotencyClient, Idempotency};
use harel_queue::Transport;
use harel_runtime::Driver;
use harel_store::ExecutionStore;
use tokio::sync::Semaphore;
use tracing::field::Empty;
use tracing::Instrument;

pub use harel_runtime::worker::{
    DeadLetterReason, Observation, Record, RecordError, RecordOutcome, WorkerLogic,
};
pub use outcome::BatchOutcome;
pub use record::sqs_record;

use crate::config::Config;
use crate::wake::Waker;
use harel_runtime::worker::Observer;

/// The Lambda host of the runtime's worker logic (its store, transport and driver are
/// reached through it: `worker.store`).
pub struct Worker<S, T, C> {
    logic: WorkerLogic<S, T>,
    idempotency: Option<Idempotency<C>>,
    config: Config,
    waker: Option<Arc<dyn Waker>>,
    /// The latest `until` a wake from this process asked for: a sweeper is covering timers
    /// due before it, so no other wake is needed for them.
    awake_until: Mutex<f64>,
}

impl<S, T, C> std::ops::Deref for Worker<S, T, C> {
    type Target = WorkerLogic<S, T>;

    fn deref(&self) -> &WorkerLogic<S, T> {
        &self.logic
    }
}

impl<S, T, C> Worker<S, T, C>
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
    C: IdempotencyClient + 'static,
{
    /// A worker committing to `store`, delivering through `transport`, stepping with `driver`;
    /// `idempotency` keys each record's run on its SQS message id (None: no idempotency layer).
    pub fn new(
        store: S,
        transport: T,
        driver: Driver,
        idempotency: Option<Idempotency<C>>,
        config: Config,
    ) -> Self {
        Worker {
            logic: WorkerLogic::new(store, transport, driver, config.park_policy()),
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
    async fn wake_for(&self, observed: &[Observation]) {
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
        // the actions of every step below see the invocation's deadline (remote actions
        // stop retrying in time for the step to commit)
        let invocation_deadline = deadline_ms
            .and_then(|ms| u64::try_from(ms).ok())
            .map(harel_runtime::invocation::deadline_from_epoch_ms);
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
                        machine_version = Empty,
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
                            parked_for = Some(worker.park.delay(record.receive_count));
                        }
                        failed = true;
                    }
                    results.push((i, record.message_id, result, observer.take()));
                }
                results
            };
            // the task runs outside the caller's span and invocation unless given them
            let task = harel_runtime::invocation::within(invocation_deadline, task);
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
        let mut by_index: HashMap<usize, (Result<RecordOutcome, RecordError>, Observation)> =
            all.into_iter().map(|(i, _, r, o)| (i, (r, o))).collect();
        let mut outcome = BatchOutcome::default();
        for (i, id) in ids.into_iter().enumerate() {
            let (result, observed) = by_index
                .remove(&i)
                .unwrap_or_else(|| (Err(RecordError::Panicked), Observation::default()));
            outcome.records.push((id, result));
            outcome.observed.push(observed);
        }
        self.wake_for(&outcome.observed).await;
        outcome
    }
}
