//! The runner's clock: when timers are armed, due and stamped.

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// Epoch seconds, as harel's `time.time`.
pub trait Clock: Send + Sync {
    /// The current time, Unix seconds with a fraction.
    fn now(&self) -> f64;
}

/// The wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    }
}

/// A clock that only moves when told to (tests, `harel run -e +30s`). Clones share the time.
#[derive(Clone, Debug)]
pub struct ManualClock(Arc<Mutex<f64>>);

impl ManualClock {
    /// A clock standing at `start` (Unix seconds).
    pub fn new(start: f64) -> Self {
        ManualClock(Arc::new(Mutex::new(start)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, f64> {
        // a plain number can't be left half-written: keep serving it after a panic
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Move the time (of this clock and its clones) on by `seconds`.
    pub fn advance(&self, seconds: f64) {
        *self.lock() += seconds;
    }

    /// Put the time (of this clock and its clones) at `now`, Unix seconds, even backwards.
    pub fn set(&self, now: f64) {
        *self.lock() = now;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> f64 {
        *self.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(100.0);
        let shared = c.clone();
        assert_eq!(c.now(), 100.0);
        shared.advance(30.0);
        assert_eq!(c.now(), 130.0);
        c.set(5.0);
        assert_eq!(shared.now(), 5.0);
        assert!(SystemClock.now() > 1.6e9);
    }
}
