//! Fault injection over the functions' real code paths: the worker, relay and sweeper of
//! `harel-lambda` with `DynamoDbStore`, `SqsTransport` and the Powertools-compatible
//! idempotency layer on the moto server, each invocation's AWS requests going through a
//! seeded fault layer ([`connector`]); the harness plays Lambda's SQS event source
//! ([`source`]) and the schedules; afterwards the [`invariants`] are checked against the same
//! scripts run by the in-memory `DurableRunner` ([`scenario`]).

pub mod connector;
pub mod invariants;
pub mod scenario;
pub mod source;
pub mod stats;
pub mod storm;
pub mod world;

use std::collections::BTreeMap;
use std::time::Duration;

pub use stats::FaultKind;
pub use storm::{run, StormConfig};

/// Why a storm (or a test using its [`world::World`] and [`source`]) could not run to its
/// verdict. An invariant violation is not an error: it is in [`StormReport::violations`].
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    /// The world could not be built: `AWS_ENDPOINT_URL` unset (not under
    /// `scripts/with-moto.sh`), a table or queue not created, `HAREL_STORM_LOG` not
    /// writable, a task of the harness failed.
    #[error("storm setup: {0}")]
    Setup(String),
    /// A call the harness makes on its own, never-faulted clients failed (a send, receive,
    /// queue depth, scan or store read): moto's trouble or a refused request, not a fault.
    #[error("the harness's own AWS call failed: {0}")]
    Aws(String),
    /// The in-memory `DurableRunner` refused the scripts the storm compares against.
    #[error("the reference run failed: {0}")]
    Reference(String),
    /// Messages, outbox entries, spawns or due timers were still there after
    /// [`StormConfig::limit`]: what was left is in the text.
    #[error("the storm never quieted: {0}")]
    Stuck(String),
}

/// What a storm did and found.
#[derive(Debug)]
pub struct StormReport {
    /// The storm's seed: `HAREL_STORM_SEED=<it>` replays the same scripts and faults.
    pub seed: u64,
    /// Executions created (one script each).
    pub executions: usize,
    /// Scripts run, by kind (`scenario::KINDS`).
    pub kinds: BTreeMap<&'static str, usize>,
    /// Faults injected, by kind (a burst of retried failures counts once).
    pub faults: BTreeMap<FaultKind, usize>,
    /// Worker invocations (batches handed to `Worker::handle_batch`), crashed ones included.
    pub worker_invocations: usize,
    /// Relay invocations: outbox and spawns, then the events to the bus.
    pub relay_invocations: usize,
    /// Sweeper invocations: due timers published as `Timeout` events.
    pub sweeper_invocations: usize,
    /// Records handed to workers (redeliveries and duplicates included).
    pub records: usize,
    /// Steps the conditional dedupe mark refused: without it, each would have applied an
    /// event a second time.
    pub duplicates_absorbed: usize,
    /// Every invariant that did not hold, in words (empty: the storm passed).
    pub violations: Vec<String>,
    /// Wall time of the whole run, setup and teardown included (summed over rounds by
    /// [`StormReport::absorb`]).
    pub duration: Duration,
}

impl StormReport {
    /// Add another round's figures to these (a long storm runs in rounds on fresh tables:
    /// moto copies a table on every transaction, so one table of thousands of executions
    /// would make the storm quadratic).
    pub fn absorb(&mut self, other: StormReport) {
        self.executions += other.executions;
        for (k, n) in other.kinds {
            *self.kinds.entry(k).or_default() += n;
        }
        for (k, n) in other.faults {
            *self.faults.entry(k).or_default() += n;
        }
        self.worker_invocations += other.worker_invocations;
        self.relay_invocations += other.relay_invocations;
        self.sweeper_invocations += other.sweeper_invocations;
        self.records += other.records;
        self.duplicates_absorbed += other.duplicates_absorbed;
        self.violations.extend(
            other
                .violations
                .into_iter()
                .map(|v| format!("[round seed {}] {v}", other.seed)),
        );
        self.duration += other.duration;
    }
}

impl std::fmt::Display for StormReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "storm seed {} (HAREL_STORM_SEED={} reproduces it)",
            self.seed, self.seed
        )?;
        writeln!(f, "executions: {}", self.executions)?;
        for (kind, n) in &self.kinds {
            writeln!(f, "  {kind}: {n}")?;
        }
        writeln!(
            f,
            "invocations: worker {}, relay {}, sweeper {}; records handled {}",
            self.worker_invocations, self.relay_invocations, self.sweeper_invocations, self.records
        )?;
        let total: usize = self.faults.values().sum();
        writeln!(f, "faults injected: {total}")?;
        for (kind, n) in &self.faults {
            writeln!(f, "  {}: {n}", kind.label())?;
        }
        writeln!(
            f,
            "duplicate applications refused by the conditional dedupe mark: {}",
            self.duplicates_absorbed
        )?;
        writeln!(f, "invariant violations: {}", self.violations.len())?;
        for v in &self.violations {
            writeln!(f, "  {v}")?;
        }
        write!(f, "duration: {:.1} s", self.duration.as_secs_f64())
    }
}
