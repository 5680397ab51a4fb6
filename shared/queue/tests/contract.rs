//! The transport contract on the in-memory twin (the same cases run on SQS in `harel-sqs`).

use harel_queue::MemoryTransport;

async fn fresh() -> MemoryTransport {
    MemoryTransport::new()
}

harel_queue::transport_contract_tests!(fresh);
