//! The parsers' fuzzing harness, shared by the crates whose parsers face the outside world
//! (`.stm` files, queue messages, action maps). A dev-dependency only; it depends on nothing
//! in the workspace.
//!
//! - [`check`]: run one property over a strategy, each case on its own thread under a
//!   deadline ([`within`]), so a panic or a hang fails the test with the (shrunk) input
//!   instead of stalling it; prints how many cases ran and for how long.
//! - [`strategies`]: random bytes, token soup from a grammar's tokens, and real inputs
//!   mutated (byte flips, deletions, duplications, splices, tokens inserted).
//!
//! The budget: each property runs its own default number of cases (a few hundred: the fast
//! tier, in `cargo test`), or `FUZZ_CASES` cases when set, stopping early after
//! `FUZZ_SECONDS` seconds when that is set (`scripts/fuzz.sh` sets both for a longer run).
//!
//! Panics are the point here, as in any test harness: a property that fails panics with the
//! reason and the input.

pub mod deadline;
pub mod strategies;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use deadline::{within, Failure, CASE_DEADLINE, CASE_STACK};
pub use proptest;
use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

/// Cases per round: each round is a fresh runner (a fresh random seed), so a time-boxed run
/// stops between rounds.
const ROUND: u32 = 64;

/// How many cases a property runs: `FUZZ_CASES` when set, else its own default.
pub fn cases(default: u32) -> u32 {
    env_number("FUZZ_CASES").unwrap_or(default).max(1)
}

/// The time box of a property: `FUZZ_SECONDS` when set, else none (the case count decides).
pub fn time_box() -> Option<Duration> {
    env_number("FUZZ_SECONDS").map(|s| Duration::from_secs(u64::from(s)))
}

fn env_number(name: &str) -> Option<u32> {
    let text = std::env::var(name).ok()?;
    Some(
        text.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={text:?}: expected a whole number")),
    )
}

/// What one property ran.
#[derive(Clone, Copy, Debug)]
pub struct Ran {
    /// The cases that passed: all of them, as `check` panics on the first failure (fewer
    /// than asked when `FUZZ_SECONDS` ran out first).
    pub cases: u32,
    /// The wall time from the first case to the end of the last.
    pub elapsed: Duration,
}

/// Run the property `name`: `property` on `default_cases` inputs drawn from `strategy` (see
/// the crate's budget), each under [`CASE_DEADLINE`] on a thread of its own. `property`
/// returns `Err(why)` when an input breaks it; a panic or a hang breaks it too. The failure
/// is shrunk to a small input and reported with it.
pub fn check<S, P>(name: &str, default_cases: u32, strategy: S, property: P) -> Ran
where
    S: Strategy,
    S::Value: Send + 'static,
    P: Fn(S::Value) -> Result<(), String> + Send + Sync + 'static,
{
    let total = cases(default_cases);
    let time_box = time_box();
    let property = Arc::new(property);
    let started = Instant::now();
    let mut ran = 0;
    while ran < total && time_box.is_none_or(|t| started.elapsed() < t) {
        let round = ROUND.min(total - ran);
        let config = Config {
            cases: round,
            // a failure becomes a regression test written by hand, not a file beside the code
            failure_persistence: None,
            // a hang costs a deadline per shrinking step: bound the shrinking
            max_shrink_time: 120_000,
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        let outcome = runner.run(&strategy, |input| {
            let property = Arc::clone(&property);
            match within(CASE_DEADLINE, move || property(input)) {
                Ok(Ok(())) => Ok(()),
                Ok(Err(why)) => Err(TestCaseError::fail(why)),
                Err(failure) => Err(TestCaseError::fail(failure.to_string())),
            }
        });
        match outcome {
            Ok(()) => ran += round,
            Err(TestError::Fail(why, input)) => {
                panic!("fuzz {name}: {why}\nminimal input: {input:#?}")
            }
            Err(TestError::Abort(why)) => panic!("fuzz {name}: aborted: {why}"),
        }
    }
    let ran = Ran {
        cases: ran,
        elapsed: started.elapsed(),
    };
    eprintln!(
        "fuzz {name}: {} cases in {:.2} s",
        ran.cases,
        ran.elapsed.as_secs_f64()
    );
    ran
}
