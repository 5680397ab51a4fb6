//! The TTLs a commit writes (`retain_until`): on a finished execution, on its dedupe mark and
//! on its trace rows, from the configured retention and the commit's time.

use harel_model::{Execution, Status};

/// SQS keeps a message at most 14 days: past that no redelivery can need its dedupe mark.
pub const MARK_MIN_RETENTION_SECS: u64 = 15 * 24 * 3600;

/// The TTLs a commit writes, in epoch seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Retention {
    /// Zero: no TTL anywhere (keep forever).
    pub secs: u64,
    /// Epoch seconds of the commit.
    pub now: f64,
}

impl Retention {
    fn on(&self) -> bool {
        self.secs > 0
    }

    /// The executions item's TTL: retention after it finished, only once DONE or CANCELLED
    /// (FAILED awaits an operator; anything else is live).
    pub fn execution(&self, exe: &Execution) -> Option<u64> {
        let finished = matches!(exe.status, Status::Done | Status::Cancelled);
        (self.on() && finished)
            .then(|| exe.finished_at.unwrap_or(self.now).max(0.0) as u64 + self.secs)
    }

    /// A dedupe mark's TTL: it must outlive any redelivery of its message.
    pub fn mark(&self) -> Option<u64> {
        self.on()
            .then(|| self.now.max(0.0) as u64 + self.secs.max(MARK_MIN_RETENTION_SECS))
    }

    /// A trace row's TTL: retention after it was written.
    pub fn trace(&self) -> Option<u64> {
        self.on().then(|| self.now.max(0.0) as u64 + self.secs)
    }
}
