//! Outbox and spawn seqs: the keys of the `outbox`/`spawns` tables, and the order the relay
//! drains them in.
//!
//! harel reserves every block with an `ADD` on the `counters` item before the transaction:
//! one extra write round trip per emitting commit. The default here needs none: a seq is the
//! wall clock in nanoseconds (with a per-process random low part), kept strictly increasing
//! within the process. Why this is safe next to harel Python on the same tables:
//! - no collision with harel's seqs: its counter counts up from 1 and would need ~10^18
//!   emits to reach ours; between two of our processes a collision needs the same
//!   nanosecond and salt, and is still caught: every outbox/spawn Put is conditioned on
//!   `attribute_not_exists(seq)`, so a collision cancels the transaction, which is retried
//!   with fresh seqs, and never overwrites an entry;
//! - order per emitter holds: one execution's steps are serialized by its CAS, each step
//!   starts after the previous commit returned (milliseconds), far above the clock skew
//!   between hosts synchronized by NTP/Amazon Time Sync;
//! - what differs: in a fleet mixing harel Python and Rust writers, harel's small seqs sort
//!   before ours, so a backlog is drained Python-entries-first rather than in commit order.
//!   A deployment that needs harel's exact global order picks `SeqAllocation::Counter`.

use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// How `commit` numbers outbox and spawn entries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SeqAllocation {
    /// Clock-derived, no request (see the module docs).
    #[default]
    Clock,
    /// harel's `_next_seq`: an atomic `ADD` on the `counters` table before each commit that
    /// emits or spawns (named counters `outbox` and `spawn`, shared with harel Python).
    Counter,
}

/// The per-process state of the clock allocator.
pub struct ClockSeqs {
    last: Mutex<u64>,
    salt: u64,
}

impl Default for ClockSeqs {
    fn default() -> Self {
        // a random per-process low part, so two processes in the same microsecond differ
        let salt = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
            % 1000;
        ClockSeqs {
            last: Mutex::new(0),
            salt,
        }
    }
}

impl ClockSeqs {
    /// Reserve `count` consecutive seqs; returns the first.
    pub fn reserve(&self, count: u64) -> u64 {
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        let candidate = micros * 1000 + self.salt;
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let base = candidate.max(*last + 1);
        *last = base + count.max(1) - 1;
        base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_seqs_increase_strictly_and_dwarf_harels_counter() {
        let seqs = ClockSeqs::default();
        let a = seqs.reserve(3);
        let b = seqs.reserve(1);
        let c = seqs.reserve(2);
        assert!(b >= a + 3 && c > b);
        assert!(a > 1_000_000_000_000_000_000);
        // fits an i64 too, for consumers that store seqs signed
        assert!(c < i64::MAX as u64);
    }
}
