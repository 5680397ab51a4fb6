//! The fault storm (`tests/src/fault`): executions through the functions' worker, relay and
//! sweeper on moto while a seeded fault layer throttles, conflicts, loses answers, fails
//! sends, kills invocations at the commit, the sends, the child creates and the timer
//! publishes, duplicates deliveries and runs two workers on one group; then every invariant.
//! Run under `scripts/with-moto.sh` (`scripts/test.sh`); `scripts/storm.sh N SEED` runs a
//! long one. `HAREL_STORM_SEED` fixes the seed, `HAREL_STORM_EXECUTIONS` the size; without
//! it, the seed is the day's in a fixed rotation (`ROTATION`), so a red run names a seed that
//! reproduces it and the same commit meets the same storms.

use harel_tests::fault::{self, StormConfig};

fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
    )
}

/// Empty the moto server between rounds of a long storm (its own server: scripts/storm.sh).
/// moto slows down as it grows over a long run; the rounds' tables are deleted already.
async fn reset_moto() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let endpoint = std::env::var("AWS_ENDPOINT_URL").expect("moto's endpoint");
    let host = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = tokio::net::TcpStream::connect(host)
        .await
        .expect("connect to moto");
    let request = format!(
        "POST /moto-api/reset HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("reset request");
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .await
        .expect("reset answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "moto reset: {answer}");
}

/// The seeds the suite's storm takes in turn, one a day (UTC): each has run green at least
/// once with the change that added it. The first is the seed of the only double count a
/// storm ever reported (before the conditional dedupe mark and the harness fix in
/// `fault::connector::send`).
const ROTATION: [u64; 8] = [
    12791042257940025460,
    1,
    2718281828,
    3141592653,
    4_000_000_007,
    0x5eed_5eed_5eed_5eed,
    9_007_199_254_740_993,
    17_446_744_073_709_551_557,
];

fn rotation_seed() -> u64 {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400);
    ROTATION[(days % ROTATION.len() as u64) as usize]
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
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_calm_run_matches_the_reference() {
    require_moto();
    let report = fault::run(StormConfig::calm(1, fault::scenario::KINDS.len()))
        .await
        .expect("the calm run completes");
    eprintln!("{report}");
    assert!(report.violations.is_empty(), "{report}");
    assert!(report.faults.is_empty(), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn the_storm_loses_nothing_and_applies_nothing_twice() {
    require_moto();
    let seed = env_number("HAREL_STORM_SEED").unwrap_or_else(rotation_seed);
    let executions = env_number("HAREL_STORM_EXECUTIONS").unwrap_or(24) as usize;
    // a long storm runs in rounds of fresh tables, each with its own seed (seed + round)
    let round = env_number("HAREL_STORM_ROUND").unwrap_or(150).max(1) as usize;
    let lanes = env_number("HAREL_STORM_LANES").unwrap_or(1) as usize;
    // printed first, so a storm that panics or hangs still names its seed
    eprintln!("storm seed {seed}: HAREL_STORM_SEED={seed} HAREL_STORM_EXECUTIONS={executions} reproduces it");
    let started = std::time::Instant::now();
    let mut total: Option<fault::StormReport> = None;
    let mut left = executions;
    let mut n = 0u64;
    while left > 0 {
        let size = left.min(round);
        let round_seed = seed.wrapping_add(n);
        let mut config = StormConfig::stormy(round_seed, size);
        config.lanes = lanes;
        if let Some(limit) = env_number("HAREL_STORM_LIMIT_SECONDS") {
            config.limit = std::time::Duration::from_secs(limit);
        }
        let report = fault::run(config)
            .await
            .unwrap_or_else(|e| panic!("round seed {round_seed} ({size} executions): {e}"));
        eprintln!(
            "round {n}: seed {round_seed}, {size} executions, {} faults, {} violations, {:.1} s",
            report.faults.values().sum::<usize>(),
            report.violations.len(),
            report.duration.as_secs_f64()
        );
        for v in &report.violations {
            eprintln!("  round {n}: {v}");
        }
        match &mut total {
            None => total = Some(report),
            Some(t) => t.absorb(report),
        }
        left -= size;
        n += 1;
        if left > 0 && std::env::var("HAREL_STORM_RESET_MOTO").is_ok_and(|v| v == "1") {
            reset_moto().await;
        }
    }
    let mut report = total.expect("at least one round");
    report.seed = seed;
    report.duration = started.elapsed();
    eprintln!("{report}");
    assert!(report.violations.is_empty(), "{report}");
    assert!(
        report.faults.values().sum::<usize>() > 0,
        "the storm injected nothing: {report}"
    );
}

/// The same storm with the functions in the lean commit mode (`HAREL_COMMIT_MODE=lean`: the
/// dedupe marks in the execution items, a state-only step one UpdateItem without a request
/// token): the same invariants, nothing lost, nothing applied twice. Its duplicates and
/// concurrent workers bring applied events back to a commit, which the window refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn the_lean_storm_loses_nothing_and_applies_nothing_twice() {
    require_moto();
    let seed = env_number("HAREL_STORM_SEED").unwrap_or_else(rotation_seed);
    let executions = env_number("HAREL_STORM_EXECUTIONS").unwrap_or(24) as usize;
    eprintln!("lean storm seed {seed}: HAREL_STORM_SEED={seed} HAREL_STORM_EXECUTIONS={executions} reproduces it");
    let mut config = StormConfig::stormy(seed, executions);
    config.commit_mode = harel_dynamodb::CommitMode::Lean;
    // more batches handled twice at once: more applied events meet a commit again
    config.concurrent = 0.3;
    let report = fault::run(config).await.expect("the storm completes");
    eprintln!("{report}");
    assert!(report.violations.is_empty(), "{report}");
    assert!(
        report.faults.values().sum::<usize>() > 0,
        "the storm injected nothing: {report}"
    );
}

/// The lean mode's marks alone, without the idempotency layer in front of them: every
/// duplicate delivery and every batch handled twice at once reaches the store, and the
/// window in the execution item refuses each applied event that comes back to a commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn the_lean_marks_alone_refuse_what_comes_back() {
    require_moto();
    let seed = env_number("HAREL_STORM_SEED").unwrap_or(ROTATION[0]);
    let mut config = StormConfig::stormy(seed, 12);
    config.commit_mode = harel_dynamodb::CommitMode::Lean;
    config.idempotency = false;
    // it quiets in seconds; without the window it never does (messages stay in flight)
    config.limit = std::time::Duration::from_secs(300);
    config.duplicate = 0.5;
    config.concurrent = 0.5;
    let report = fault::run(config).await.expect("the storm completes");
    eprintln!("{report}");
    assert!(report.violations.is_empty(), "{report}");
    assert!(
        report.duplicates_absorbed > 0,
        "no applied event came back to a commit: {report}"
    );
}

/// The torn read DynamoDB's BatchGetItem can return (the Execution after a commit, the dedupe
/// mark from before it), injected on every load, with the storm's crashes, duplicates and
/// concurrent workers to bring processed events back: every one of them is refused by the
/// commit's mark condition, and nothing is applied twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn torn_reads_are_refused_by_the_dedupe_mark() {
    require_moto();
    let seed = env_number("HAREL_STORM_SEED").unwrap_or(ROTATION[0]);
    let mut config = fault::StormConfig::stormy(seed, 12);
    config.rates.torn_read = 1.0;
    let report = fault::run(config).await.expect("the storm completes");
    eprintln!("{report}");
    assert!(report.violations.is_empty(), "{report}");
    let torn = report
        .faults
        .get(&fault::FaultKind::TornRead)
        .copied()
        .unwrap_or(0);
    assert!(torn > 0, "no read was torn: {report}");
    assert!(
        report.duplicates_absorbed > 0,
        "no torn read reached a commit: {report}"
    );
}

/// What the storm's event source relies on: a FIFO group comes back in order after a failed
/// batch's release. Stock moto hands out the later message alone here (its receive skips the
/// earlier one while the later one still looks in flight); `scripts/moto-server.py` fixes
/// that, and this fails on a moto without the fix (the long storm's out-of-order groups).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_released_group_comes_back_in_order() {
    require_moto();
    use harel_tests::fault::source;
    use std::time::Duration;
    let sqs = aws_sdk_sqs::Client::new(&harel_testkit::moto::sdk_config().await);
    let name = harel_testkit::moto::unique_prefix("fifo-order");
    let url = harel_sqs::SqsTransport::create_fifo_queue(&sqs, &name)
        .await
        .expect("a FIFO queue");
    for body in ["earlier", "later"] {
        source::send(&sqs, &url, "g", body, body.to_string())
            .await
            .expect("send");
    }
    let bodies = |got: &[source::Received]| -> Vec<String> {
        got.iter()
            .map(|m| m.message.body.clone().unwrap_or_default())
            .collect()
    };
    let got = source::receive(&sqs, &url, Duration::from_secs(20))
        .await
        .expect("receive");
    assert_eq!(bodies(&got), ["earlier", "later"]);
    // the worker failed both: the event source releases them, as after a failed batch
    for m in &got {
        source::release(&sqs, &url, m, Duration::from_secs(1)).await;
    }
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let again = source::receive(&sqs, &url, Duration::from_secs(20))
        .await
        .expect("receive again");
    assert_eq!(
        bodies(&again),
        ["earlier", "later"],
        "the group out of order"
    );
}
