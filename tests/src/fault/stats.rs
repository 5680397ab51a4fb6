//! What the storm injected, by kind, and what it ran.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

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
    CrashBeforeCommit,
    CrashAfterCommit,
    CrashAfterSend,
    CrashAfterChildCreate,
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
    pub fn label(self) -> &'static str {
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

#[derive(Debug, Default)]
pub struct Stats {
    faults: Mutex<BTreeMap<FaultKind, usize>>,
    pub worker_invocations: AtomicUsize,
    pub relay_invocations: AtomicUsize,
    pub sweeper_invocations: AtomicUsize,
    pub records: AtomicUsize,
    /// Steps whose commit the conditional dedupe mark refused (`Observation::duplicate`).
    pub duplicates_absorbed: AtomicUsize,
}

impl Stats {
    pub fn count(&self, kind: FaultKind) {
        *self
            .faults
            .lock()
            .expect("stats lock")
            .entry(kind)
            .or_default() += 1;
    }

    pub fn faults(&self) -> BTreeMap<FaultKind, usize> {
        self.faults.lock().expect("stats lock").clone()
    }

    pub fn bump(counter: &AtomicUsize) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicUsize) -> usize {
        counter.load(Ordering::Relaxed)
    }
}
