//! The relay function's part of relaying: how long an invocation may drain. The draining
//! itself is the runtime's queue delivery ([`harel_runtime::relay`]), shared with the worker.

use std::time::{Duration, Instant};

pub use harel_runtime::{publish_events, relay, EventsReport, RelayReport};

/// The deadline of an invocation that must end `reserve` before Lambda's.
pub fn deadline_with_reserve(remaining: Duration, reserve: Duration) -> Instant {
    Instant::now() + remaining.saturating_sub(reserve)
}
