//! What the storm injected, by kind, and what it ran.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// A kind of fault the storm injects, as counted in
/// [`StormReport::faults`](super::StormReport::faults).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// DynamoDB `ProvisionedThroughputExceededException` / `ThrottlingException`.
    Throttle,
    /// A TransactWriteItems cancelled with `TransactionConflict`.
    TransactionConflict,
    /// An SQS send answered 500.
    SqsSendFailure,
    /// A request the service carried out whose answer was lost.
    Timeout,
    /// A worker died just before one of its `TransactWriteItems` (a step's commit) was sent.
    CrashBeforeCommit,
    /// A worker died just after a commit succeeded, before its outbox was delivered and its
    /// messages deleted.
    CrashAfterCommit,
    /// A worker or relay died just after its first SQS `SendMessageBatch` succeeded, before
    /// acknowledging what it sent.
    CrashAfterSend,
    /// A relay died just after a child's create (`TransactWriteItems`), before the spawn
    /// entry was acknowledged.
    CrashAfterChildCreate,
    /// A sweeper died just after publishing a `Timeout`, before deleting the timer.
    CrashAfterTimeoutPublish,
    /// Lambda's timeout: the invocation killed after a random number of requests.
    DeadlineKill,
    /// The same message twice in one batch.
    DuplicateInBatch,
    /// Two invocations with the same group at once (the first outlived its visibility timeout).
    ConcurrentWorkers,
    /// A load that saw an execution after a commit and the commit's dedupe mark not yet.
    TornRead,
}

impl FaultKind {
    /// How [`StormReport`](super::StormReport)'s `Display` names the kind.
    pub(crate) fn label(self) -> &'static str {
        match self {
            FaultKind::Throttle => "dynamodb throttling",
            FaultKind::TransactionConflict => "dynamodb TransactionConflict",
            FaultKind::SqsSendFailure => "sqs send failure",
            FaultKind::Timeout => "timeout (answer lost)",
            FaultKind::CrashBeforeCommit => "crash before the commit",
            FaultKind::CrashAfterCommit => "crash after the commit, before delivery",
            FaultKind::CrashAfterSend => "crash after an sqs send, before the ack",
            FaultKind::CrashAfterChildCreate => "crash after a child create, before the spawn ack",
            FaultKind::CrashAfterTimeoutPublish => {
                "crash after a Timeout publish, before the timer delete"
            }
            FaultKind::DeadlineKill => "invocation out of time mid-batch",
            FaultKind::DuplicateInBatch => "duplicate delivery in one batch",
            FaultKind::ConcurrentWorkers => "two workers on one group at once",
            FaultKind::TornRead => "torn read (execution after a commit, its mark before)",
        }
    }
}

/// The storm's counters, shared by every invocation's fault layer (`Arc`); read once at the
/// end into the [`StormReport`](super::StormReport).
#[derive(Debug, Default)]
pub(crate) struct Stats {
    faults: Mutex<BTreeMap<FaultKind, usize>>,
    /// Worker invocations made (each concurrent pair counts two).
    pub(crate) worker_invocations: AtomicUsize,
    /// Relay invocations made.
    pub(crate) relay_invocations: AtomicUsize,
    /// Sweeper invocations made.
    pub(crate) sweeper_invocations: AtomicUsize,
    /// Records handed to workers, redeliveries and in-batch duplicates included.
    pub(crate) records: AtomicUsize,
    /// Steps whose commit the conditional dedupe mark refused (`Observation::duplicate`).
    pub(crate) duplicates_absorbed: AtomicUsize,
}

impl Stats {
    /// One more fault of `kind`.
    pub(crate) fn count(&self, kind: FaultKind) {
        *self
            .faults
            .lock()
            .expect("stats lock")
            .entry(kind)
            .or_default() += 1;
    }

    /// The faults counted so far, by kind.
    pub(crate) fn faults(&self) -> BTreeMap<FaultKind, usize> {
        self.faults.lock().expect("stats lock").clone()
    }

    /// One more on `counter` (one of the fields).
    pub(crate) fn bump(counter: &AtomicUsize) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// `counter`'s value (read once the storm is quiet: no ordering needed).
    pub(crate) fn get(counter: &AtomicUsize) -> usize {
        counter.load(Ordering::Relaxed)
    }
}
