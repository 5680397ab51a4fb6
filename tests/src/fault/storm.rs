//! The storm: every execution's script, phase by phase, through the worker, relay and sweeper
//! on moto, each invocation with faults of its own; then the invariants.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use harel_runtime::{Clock, ManualClock};
use harel_store::prelude::*;
use tokio::task::JoinSet;

use super::connector::{Crash, InvocationFaults, Rates};
use super::scenario::{self, Script, EPOCH, PHASES};
use super::source::{self, Received};
use super::stats::{FaultKind, Stats};
use super::world::World;
use super::{invariants, FaultError, StormReport};

/// How long a received message stays hidden from other receives (a live invocation finishes
/// well within it).
const VISIBILITY: Duration = Duration::from_secs(20);
/// What a dead invocation's messages wait before they come back (their visibility timeout
/// running out, shortened).
const DEAD_RETURN: Duration = Duration::from_secs(1);
/// A dead invocation's Lambda deadline, from its start: its idempotency records can be taken
/// over by the time its messages come back.
const DEAD_DEADLINE_MS: i64 = 300;
/// A live invocation's deadline: an idempotency record its completion failed to close is
/// taken over this long after (Lambda's timeout, shortened like the visibility timeout).
const LIVE_DEADLINE_MS: i64 = 3_000;
/// What a reported failure waits before it comes back (its visibility timeout, shortened):
/// without it, a record blocked by an in-progress idempotency record would spin.
const FAILED_RETURN: Duration = Duration::from_secs(1);

/// What a storm runs and how rough it is: [`StormConfig::stormy`] or [`StormConfig::calm`],
/// then any field changed (the tests set `lanes`, `limit`, `rates.torn_read`). Chances are
/// per invocation (per request for `rates`), 0..1.
#[derive(Clone, Debug)]
pub struct StormConfig {
    /// Seeds the scripts drawn and every invocation's faults: the same seed, the same storm
    /// (up to the interleaving of concurrent lanes and moto's timing).
    pub seed: u64,
    /// How many executions (one script each): one of each of
    /// [`KINDS`](super::scenario::KINDS) first, then kinds drawn at random.
    pub executions: usize,
    /// The transient faults on each request of every invocation.
    pub rates: Rates,
    /// Chance a worker invocation crashes at one of the named points.
    pub crash: f64,
    /// Chance a worker invocation runs out of time after a random number of requests.
    pub deadline_kill: f64,
    /// Chance a batch holds one of its messages twice.
    pub duplicate: f64,
    /// Chance a batch is handled by two invocations at once.
    pub concurrent: f64,
    /// Chance a relay invocation (or a sweeper's) crashes at one of its points.
    pub scheduled_crash: f64,
    /// Chance the relay runs between two worker invocations (it always runs when the queue is
    /// empty).
    pub relay_between: f64,
    /// Worker invocations in flight at once (Lambda's concurrent pollers).
    pub lanes: usize,
    /// `HAREL_WORKER_CONCURRENCY` of each worker.
    pub worker_concurrency: usize,
    /// Give up (as a failure) after this long.
    pub limit: Duration,
    /// Where the functions keep the dedupe marks (`HAREL_COMMIT_MODE`).
    pub commit_mode: harel_dynamodb::CommitMode,
    /// Whether the workers run the idempotency layer (as deployed).
    pub idempotency: bool,
}

impl StormConfig {
    /// The faults at their storm rates.
    pub fn stormy(seed: u64, executions: usize) -> Self {
        StormConfig {
            seed,
            executions,
            rates: Rates {
                throttle: 0.03,
                transaction_conflict: 0.05,
                sqs_failure: 0.05,
                timeout: 0.02,
                torn_read: 0.1,
            },
            crash: 0.25,
            deadline_kill: 0.08,
            duplicate: 0.15,
            concurrent: 0.08,
            scheduled_crash: 0.3,
            relay_between: 0.2,
            lanes: 1,
            worker_concurrency: 8,
            limit: Duration::from_secs(1800),
            commit_mode: harel_dynamodb::CommitMode::Compat,
            idempotency: true,
        }
    }

    /// No faults at all: the harness and the reference agree on their own.
    pub fn calm(seed: u64, executions: usize) -> Self {
        StormConfig {
            rates: Rates::NONE,
            crash: 0.0,
            deadline_kill: 0.0,
            duplicate: 0.0,
            concurrent: 0.0,
            scheduled_crash: 0.0,
            relay_between: 0.0,
            ..Self::stormy(seed, executions)
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

struct Storm {
    cfg: StormConfig,
    /// `HAREL_STORM_LOG`: one line per record handled (invocation, fate, message, outcome),
    /// to follow a violation back to the invocations that touched it.
    log: Option<std::sync::Mutex<std::fs::File>>,
    world: World,
    stats: Arc<Stats>,
    /// Invocations made so far: each one's RNG is seeded from the storm's seed and its number.
    invocations: AtomicU64,
    started: Instant,
}

impl Storm {
    fn rng(&self) -> fastrand::Rng {
        let n = self.invocations.fetch_add(1, Ordering::SeqCst);
        fastrand::Rng::with_seed(self.cfg.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    fn faults(
        &self,
        rng: &mut fastrand::Rng,
        crash: Option<(Crash, FaultKind)>,
    ) -> Arc<InvocationFaults> {
        Arc::new(InvocationFaults::new(
            rng.u64(..),
            self.cfg.rates.clone(),
            crash,
            Arc::clone(&self.stats),
        ))
    }

    fn note(
        &self,
        invocation: &str,
        dead: bool,
        got: &[Received],
        outcome: &harel_lambda::BatchOutcome,
    ) {
        let absorbed = outcome.observed.iter().filter(|o| o.duplicate).count();
        self.stats
            .duplicates_absorbed
            .fetch_add(absorbed, std::sync::atomic::Ordering::Relaxed);
        let Some(log) = &self.log else { return };
        use std::io::Write as _;
        let mut f = log.lock().expect("log lock");
        for (i, (id, result)) in outcome.records.iter().enumerate() {
            let body = got
                .iter()
                .find(|m| m.message_id() == id)
                .and_then(|m| m.message.body.clone())
                .unwrap_or_default();
            let group = got
                .iter()
                .find(|m| m.message_id() == id)
                .map(|m| m.group().to_string())
                .unwrap_or_default();
            let short: String = body.chars().take(160).collect();
            let _ = writeln!(
                f,
                "{invocation} dead={dead} #{i} {id} group={group} {short} => {result:?}"
            );
        }
    }

    fn check_time(&self, what: &str) -> Result<(), FaultError> {
        if self.started.elapsed() > self.cfg.limit {
            return Err(FaultError::Stuck(format!(
                "{what}: still not quiet after {:?}",
                self.cfg.limit
            )));
        }
        Ok(())
    }

    async fn send_phase(&self, scripts: &[Script], phase: usize) -> Result<(), FaultError> {
        let mut tasks = JoinSet::new();
        for chunk in scripts.chunks(scripts.len().div_ceil(8).max(1)) {
            let sqs = self.world.sqs.clone();
            let url = self.world.queue_url.clone();
            let chunk: Vec<Script> = chunk.to_vec();
            tasks.spawn(async move {
                for s in &chunk {
                    if phase == 0 {
                        let body = harel_sqs::create_body(
                            s.machine,
                            s.context.clone(),
                            Some(&s.execution_id),
                        );
                        let dedupe = format!("create-{}", s.execution_id);
                        source::send(&sqs, &url, &s.execution_id, &dedupe, body).await?;
                    }
                    for event in &s.phases[phase] {
                        source::send(&sqs, &url, &s.execution_id, &event.id, event.to_json())
                            .await?;
                    }
                }
                Ok::<(), FaultError>(())
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.map_err(|e| FaultError::Setup(format!("sender task: {e}")))??;
        }
        Ok(())
    }

    /// Until the queue is empty, nothing is pending for the relay and no timer is due.
    async fn quiesce(self: &Arc<Self>, what: &str) -> Result<(), FaultError> {
        loop {
            self.check_time(what)?;
            let mut lanes = JoinSet::new();
            for _ in 0..self.cfg.lanes.max(1) {
                let storm = Arc::clone(self);
                lanes.spawn(async move { storm.lane().await });
            }
            while let Some(done) = lanes.join_next().await {
                done.map_err(|e| FaultError::Setup(format!("lane task: {e}")))??;
            }
            self.relay_invocation().await;
            self.sweeper_invocation().await;
            let (visible, in_flight, delayed) =
                source::depth(&self.world.sqs, &self.world.queue_url).await?;
            let store = &self.world.store;
            let pending = !store.pending_outbox().await.map_err(store_err)?.is_empty()
                || !store.pending_spawns().await.map_err(store_err)?.is_empty()
                || !store
                    .due_timers(self.world.clock.now())
                    .await
                    .map_err(store_err)?
                    .is_empty();
            if visible + in_flight + delayed == 0 && !pending {
                return Ok(());
            }
            if self.started.elapsed() > self.cfg.limit {
                let outbox = store.pending_outbox().await.map_err(store_err)?;
                let spawns = store.pending_spawns().await.map_err(store_err)?;
                let due = store
                    .due_timers(self.world.clock.now())
                    .await
                    .map_err(store_err)?;
                return Err(FaultError::Stuck(format!(
                    "{what}: {visible} visible, {in_flight} in flight, {delayed} delayed; outbox {:?}; spawns {:?}; due timers {:?}",
                    outbox.iter().map(|e| (&e.target_id, &e.event.kind, &e.event.id)).collect::<Vec<_>>(),
                    spawns.iter().map(|e| &e.child_id).collect::<Vec<_>>(),
                    due.iter().map(|t| (&t.execution_id, &t.path)).collect::<Vec<_>>(),
                )));
            }
            if visible == 0 {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }

    /// One poller: receive and invoke until the queue has nothing visible.
    async fn lane(self: Arc<Self>) -> Result<(), FaultError> {
        loop {
            self.check_time("lane")?;
            let got = source::receive(&self.world.sqs, &self.world.queue_url, VISIBILITY).await?;
            if got.is_empty() {
                return Ok(());
            }
            self.worker_invocation(got).await?;
            let mut rng = self.rng();
            if rng.f64() < self.cfg.relay_between {
                self.relay_invocation().await;
            }
        }
    }

    async fn worker_invocation(&self, got: Vec<Received>) -> Result<(), FaultError> {
        let mut rng = self.rng();
        let mut batch = got.clone();
        if rng.f64() < self.cfg.duplicate {
            let i = rng.usize(0..batch.len());
            batch.insert(i + 1, batch[i].clone());
            self.stats.count(FaultKind::DuplicateInBatch);
        }
        let roll = rng.f64();
        let c = &self.cfg;
        if roll < c.concurrent {
            return self.concurrent_invocations(got, batch, &mut rng).await;
        }
        let crash = if roll < c.concurrent + c.crash {
            Some(match rng.usize(0..4) {
                0 => (
                    Crash::Before {
                        op: "TransactWriteItems",
                        nth: 1 + rng.usize(0..2),
                    },
                    FaultKind::CrashBeforeCommit,
                ),
                1 | 2 => (
                    Crash::After {
                        op: "TransactWriteItems",
                        nth: 1 + rng.usize(0..3),
                    },
                    FaultKind::CrashAfterCommit,
                ),
                _ => (
                    Crash::After {
                        op: "SendMessageBatch",
                        nth: 1,
                    },
                    FaultKind::CrashAfterSend,
                ),
            })
        } else if roll < c.concurrent + c.crash + c.deadline_kill {
            Some((
                Crash::AfterRequests {
                    nth: 1 + rng.usize(0..batch.len() * 4),
                },
                FaultKind::DeadlineKill,
            ))
        } else {
            None
        };
        let deadline = now_ms()
            + if crash.is_some() {
                DEAD_DEADLINE_MS
            } else {
                LIVE_DEADLINE_MS
            };
        let faults = self.faults(&mut rng, crash);
        let worker = self.world.worker(&faults);
        Stats::bump(&self.stats.worker_invocations);
        self.stats
            .records
            .fetch_add(batch.len(), std::sync::atomic::Ordering::Relaxed);
        let records = batch.iter().map(Received::record).collect();
        let outcome = worker.handle_batch(records, Some(deadline)).await;
        self.note(
            &format!("worker {:?}", faults),
            faults.crashed(),
            &batch,
            &outcome,
        );
        self.settle(&got, faults.crashed(), &outcome.failed_ids())
            .await;
        Ok(())
    }

    /// The first invocation outlives its visibility timeout: SQS hands the same messages to
    /// a second one, and both run at once.
    async fn concurrent_invocations(
        &self,
        got: Vec<Received>,
        batch: Vec<Received>,
        rng: &mut fastrand::Rng,
    ) -> Result<(), FaultError> {
        for m in &got {
            source::release(&self.world.sqs, &self.world.queue_url, m, Duration::ZERO).await;
        }
        let again = source::receive(&self.world.sqs, &self.world.queue_url, VISIBILITY).await?;
        self.stats.count(FaultKind::ConcurrentWorkers);
        let fa = self.faults(rng, None);
        let fb = self.faults(rng, None);
        let (wa, wb) = (self.world.worker(&fa), self.world.worker(&fb));
        let deadline = now_ms() + LIVE_DEADLINE_MS;
        Stats::bump(&self.stats.worker_invocations);
        Stats::bump(&self.stats.worker_invocations);
        self.stats.records.fetch_add(
            batch.len() + again.len(),
            std::sync::atomic::Ordering::Relaxed,
        );
        let ra = batch.iter().map(Received::record).collect();
        let rb = again.iter().map(Received::record).collect();
        let (oa, ob) = tokio::join!(
            wa.handle_batch(ra, Some(deadline)),
            wb.handle_batch(rb, Some(deadline))
        );
        self.note("concurrent-a", false, &batch, &oa);
        self.note("concurrent-b", false, &again, &ob);
        // the first one's receipt handles are stale: SQS may refuse its deletes, and what it
        // refuses comes back to be deduplicated
        self.settle(&got, false, &oa.failed_ids()).await;
        self.settle(&again, false, &ob.failed_ids()).await;
        Ok(())
    }

    /// What the event source does with an invocation's answer: a dead one answered nothing
    /// (its messages come back after their visibility timeout), a live one's failures come
    /// back, its successes are deleted.
    async fn settle(&self, got: &[Received], dead: bool, failed: &[String]) {
        let (sqs, url) = (&self.world.sqs, &self.world.queue_url);
        for m in got {
            if dead {
                source::release(sqs, url, m, DEAD_RETURN).await;
            } else if failed.iter().any(|f| f == m.message_id()) {
                source::release(sqs, url, m, FAILED_RETURN).await;
            } else {
                source::delete(sqs, url, m).await;
            }
        }
    }

    async fn relay_invocation(&self) {
        let mut rng = self.rng();
        let crash = (rng.f64() < self.cfg.scheduled_crash).then(|| {
            if rng.bool() {
                (
                    Crash::After {
                        op: "TransactWriteItems",
                        nth: 1 + rng.usize(0..2),
                    },
                    FaultKind::CrashAfterChildCreate,
                )
            } else {
                (
                    Crash::After {
                        op: "SendMessageBatch",
                        nth: 1,
                    },
                    FaultKind::CrashAfterSend,
                )
            }
        });
        let faults = self.faults(&mut rng, crash);
        let (store, transport) = self.world.scheduled(&faults);
        let driver = self.world.driver();
        Stats::bump(&self.stats.relay_invocations);
        // an error ends this run; the entries stay pending for the next
        let deadline = Instant::now() + Duration::from_secs(30);
        let _ = harel_lambda::relay(&store, &transport, &driver, deadline).await;
        // then the events, as the relay function does; a fault ends it, the rest stay pending
        let _ =
            harel_lambda::relay::publish_events(&store, self.world.bus.as_ref(), deadline).await;
    }

    async fn sweeper_invocation(&self) {
        let mut rng = self.rng();
        let crash = (rng.f64() < self.cfg.scheduled_crash).then_some((
            Crash::After {
                op: "SendMessageBatch",
                nth: 1,
            },
            FaultKind::CrashAfterTimeoutPublish,
        ));
        let faults = self.faults(&mut rng, crash);
        let (store, transport) = self.world.scheduled(&faults);
        Stats::bump(&self.stats.sweeper_invocations);
        let _ = harel_lambda::sweep_once(&store, &transport, self.world.clock.now()).await;
    }
}

fn store_err(e: harel_store::StoreError) -> FaultError {
    FaultError::Aws(format!("store: {e}"))
}

/// Run a storm and check the invariants.
pub async fn run(cfg: StormConfig) -> Result<StormReport, FaultError> {
    let started = Instant::now();
    let mut rng = fastrand::Rng::with_seed(cfg.seed);
    let scripts = scenario::scripts(cfg.executions, &mut rng);
    let clock = ManualClock::new(EPOCH);
    let mut world = World::new(clock.clone(), cfg.worker_concurrency)
        .await?
        .with_commit_mode(cfg.commit_mode);
    world.idempotency = cfg.idempotency;
    let storm = Arc::new(Storm {
        cfg: cfg.clone(),
        world,
        stats: Arc::new(Stats::default()),
        invocations: AtomicU64::new(0),
        started,
        log: match std::env::var("HAREL_STORM_LOG") {
            Ok(path) => Some(std::sync::Mutex::new(
                // appended to: a long storm's rounds each run a storm of their own
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .map_err(|e| FaultError::Setup(format!("HAREL_STORM_LOG {path}: {e}")))?,
            )),
            Err(_) => None,
        },
    });
    for phase in 0..PHASES {
        storm.send_phase(&scripts, phase).await?;
        storm.quiesce(&format!("phase {phase}")).await?;
        if let Some(dt) = scenario::advance_after(phase) {
            clock.advance(dt);
            storm
                .quiesce(&format!("timers after phase {phase}"))
                .await?;
        }
    }
    let reference = scenario::reference(&scripts)
        .await
        .map_err(|e| FaultError::Reference(e.to_string()))?;
    let violations = invariants::check(&storm.world, &reference, &scripts).await?;
    storm.world.teardown().await;
    let mut kinds = std::collections::BTreeMap::new();
    for s in &scripts {
        *kinds.entry(s.kind).or_insert(0) += 1;
    }
    Ok(StormReport {
        seed: cfg.seed,
        executions: scripts.len(),
        kinds,
        faults: storm.stats.faults(),
        worker_invocations: Stats::get(&storm.stats.worker_invocations),
        relay_invocations: Stats::get(&storm.stats.relay_invocations),
        sweeper_invocations: Stats::get(&storm.stats.sweeper_invocations),
        records: Stats::get(&storm.stats.records),
        duplicates_absorbed: Stats::get(&storm.stats.duplicates_absorbed),
        violations,
        duration: started.elapsed(),
    })
}
