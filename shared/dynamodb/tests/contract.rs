//! The store contract on DynamoDB (moto): `scripts/with-moto.sh cargo test -p harel-dynamodb`.

mod common;

use harel_dynamodb::{DynamoDbStore, SeqAllocation};

async fn make(trace_max: usize) -> DynamoDbStore {
    common::store(trace_max)
        .await
        .with_events(harel_store::EventsConfig::default())
}

harel_store::contract_tests!(
    make,
    ignore = "needs a moto server: scripts/test.sh runs it"
);

/// harel's own seq allocation (the `counters` table) passes the same contract.
mod counter_seqs {
    use super::*;

    async fn make(trace_max: usize) -> DynamoDbStore {
        common::store(trace_max)
            .await
            .with_events(harel_store::EventsConfig::default())
            .with_seq_allocation(SeqAllocation::Counter)
    }

    harel_store::contract_tests!(
        make,
        ignore = "needs a moto server: scripts/test.sh runs it"
    );
}

/// The lean commit mode (marks in the execution item) passes the same contract.
mod lean_commits {
    use super::*;
    use harel_dynamodb::CommitMode;

    async fn make(trace_max: usize) -> DynamoDbStore {
        common::store(trace_max)
            .await
            .with_events(harel_store::EventsConfig::default())
            .with_commit_mode(CommitMode::Lean)
    }

    harel_store::contract_tests!(
        make,
        ignore = "needs a moto server: scripts/test.sh runs it"
    );
}
