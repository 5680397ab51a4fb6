//! One case on a thread of its own, under a deadline: a hang fails the case instead of
//! stalling the test, a panic is caught and reported.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::time::Duration;

/// How long one case may take: a parser that needs more on one input hangs, as far as a
/// worker or an operator is concerned.
pub const CASE_DEADLINE: Duration = Duration::from_secs(2);

/// The case thread's stack: 2 MiB, a tokio worker thread's and a spawned thread's default,
/// the least the parsers run on in the functions and the CLI. Input nested deep enough to
/// overflow it aborts the whole test process (a stack overflow cannot be caught), which fails
/// the test as loudly.
pub const CASE_STACK: usize = 2 * 1024 * 1024;

/// Why a case did not come back with a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// It panicked, with this message.
    Panicked(String),
    /// It was still running at the deadline (its thread is left to finish on its own).
    Hung(Duration),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Panicked(message) => write!(f, "panicked: {message}"),
            Failure::Hung(deadline) => write!(f, "still running after {deadline:?} (a hang)"),
        }
    }
}

/// Run `case` on a new thread of [`CASE_STACK`] bytes and wait at most `deadline` for it.
pub fn within<T, F>(deadline: Duration, case: F) -> Result<T, Failure>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (done, outcome) = mpsc::channel();
    std::thread::Builder::new()
        .name("fuzz-case".into())
        .stack_size(CASE_STACK)
        .spawn(move || {
            // the receiver is gone only after a hang was reported: nothing left to tell
            let _ = done.send(catch_unwind(AssertUnwindSafe(case)));
        })
        .expect("a thread for the case");
    match outcome.recv_timeout(deadline) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(payload)) => Err(Failure::Panicked(panic_message(payload.as_ref()))),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(Failure::Hung(deadline)),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(Failure::Panicked(
            "the case's thread ended without an answer".into(),
        )),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_comes_back() {
        assert_eq!(within(CASE_DEADLINE, || 41 + 1), Ok(42));
    }

    #[test]
    fn a_panic_is_reported_with_its_message() {
        let outcome: Result<(), _> = within(CASE_DEADLINE, || panic!("index 7 out of range"));
        assert_eq!(
            outcome,
            Err(Failure::Panicked("index 7 out of range".into()))
        );
    }

    #[test]
    fn a_hang_is_reported_at_the_deadline() {
        let deadline = Duration::from_millis(50);
        let started = std::time::Instant::now();
        let outcome = within(deadline, || std::thread::sleep(Duration::from_secs(5)));
        assert_eq!(outcome, Err(Failure::Hung(deadline)));
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "waited for the hang"
        );
    }
}
