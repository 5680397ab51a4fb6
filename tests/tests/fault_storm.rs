//! The fault storm (`tests/src/fault`): executions through the functions' worker, relay and
//! sweeper on moto while a seeded fault layer throttles, conflicts, loses answers, fails
//! sends, kills invocations at the commit, the sends, the child creates and the timer
//! publishes, duplicates deliveries and runs two workers on one group; then every invariant.
//! Run under `scripts/with-moto.sh` (`scripts/test.sh`); `scripts/storm.sh N SEED` runs a
//! long one. `HAREL_STORM_SEED` fixes the seed, `HAREL_STORM_EXECUTIONS` the size.

use harel_tests::fault::{self, StormConfig};

fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
    )
}

fn require_moto() {
    assert!(
        std::env::var("AWS_ENDPOINT_URL").is_ok(),
        "AWS_ENDPOINT_URL is not set: run the fault storm under scripts/with-moto.sh (scripts/test.sh)"
    );
}

/// Without faults, the harness (phases, event source, relay, sweeper) and the reference agree
/// on one execution of every kind: what the storm compares is the faults' doing alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calm_run_matches_the_reference() {
    require_moto();
    let report = fault::run(StormConfig::calm(1, fault::scenario::KINDS.len() * 2))
        .await
        .expect("the calm run completes");
    eprintln!("{report}");
    assert!(report.violations.is_empty(), "{report}");
    assert!(report.faults.is_empty(), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_storm_loses_nothing_and_applies_nothing_twice() {
    require_moto();
    let seed = env_number("HAREL_STORM_SEED").unwrap_or_else(|| fastrand::u64(..));
    let executions = env_number("HAREL_STORM_EXECUTIONS").unwrap_or(30) as usize;
    let mut config = StormConfig::stormy(seed, executions);
    if let Some(lanes) = env_number("HAREL_STORM_LANES") {
        config.lanes = lanes as usize;
    }
    // printed first, so a storm that panics or hangs still names its seed
    eprintln!("storm seed {seed}: HAREL_STORM_SEED={seed} reproduces it");
    let report = fault::run(config)
        .await
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    eprintln!("{report}");
    assert!(report.violations.is_empty(), "{report}");
    assert!(
        report.faults.values().sum::<usize>() > 0,
        "the storm injected nothing: {report}"
    );
}
