//! The transport contract (`harel_queue::contract`) on SQS: a fresh FIFO queue and its own
//! FIFO dead-letter queue on the moto server per case. Run under `scripts/with-moto.sh`.

use std::time::Duration;

use harel_queue::contract::QueueUnderTest;
use harel_queue::Received;
use harel_sqs::{SqsDeadLetters, SqsTransport};

struct SqsQueue {
    transport: SqsTransport,
    dead_letters: SqsDeadLetters,
}

impl QueueUnderTest for SqsQueue {
    type Queue = SqsTransport;
    type DeadLetters = SqsDeadLetters;

    fn transport(&self) -> &SqsTransport {
        &self.transport
    }

    fn dead_letters(&self) -> &SqsDeadLetters {
        &self.dead_letters
    }

    async fn receive(&self, max: usize) -> Vec<Received> {
        // held for 30 s, as the event source holds a batch while the worker runs
        self.transport
            .receive(max as i32, Duration::ZERO, Duration::from_secs(30))
            .await
            .expect("ReceiveMessage")
    }

    async fn drain(&self) -> Vec<Received> {
        let url = self.transport.queue_url().to_string();
        let mut all = Vec::new();
        loop {
            // a FIFO queue hands out a group's next batch only once the held one is deleted,
            // so a pass that comes back empty has seen everything visible
            let got = self
                .transport
                .receive_from(&url, 10, Duration::ZERO, Duration::from_secs(30))
                .await
                .expect("ReceiveMessage");
            if got.is_empty() {
                return all;
            }
            for m in &got {
                self.transport
                    .delete(&url, &m.receipt_handle)
                    .await
                    .expect("DeleteMessage");
            }
            all.extend(got);
        }
    }
}

async fn fresh() -> SqsQueue {
    let endpoint = std::env::var("AWS_ENDPOINT_URL")
        .expect("AWS_ENDPOINT_URL is not set: run these tests under scripts/with-moto.sh");
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .load()
        .await;
    let client = aws_sdk_sqs::Client::new(&config);
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let url = SqsTransport::create_fifo_queue(&client, &format!("contract-{tag}"))
        .await
        .expect("queue created");
    let dlq = SqsTransport::create_fifo_queue(&client, &format!("contract-dlq-{tag}"))
        .await
        .expect("dead-letter queue created");
    SqsQueue {
        transport: SqsTransport::new(client.clone(), url).with_dead_letter_queue(&dlq),
        dead_letters: SqsDeadLetters::new(client, dlq),
    }
}

harel_queue::transport_contract_tests!(
    fresh,
    ignore = "needs a moto server: scripts/test.sh runs it"
);
