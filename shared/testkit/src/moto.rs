//! One deployed stack in miniature on the moto server that `scripts/with-moto.sh` starts:
//! the seven tables under a prefix of its own, a FIFO queue and its DLQ, and the worker's
//! configuration naming them. Every stack has a fresh prefix, so tests share one server.

use std::sync::Arc;

use harel_dynamodb::DynamoDbStore;
use harel_lambda::{Config, Role, Worker};
use harel_runtime::Driver;
use harel_sqs::SqsTransport;

pub use harel_testwire::{endpoint, sdk_config, unique_prefix};

use crate::config::config_from;

/// A worker over this stack's tables and queue, without the idempotency layer.
pub type MotoWorker = Worker<DynamoDbStore, SqsTransport, harel_idempotency::MemoryClient>;

/// The stack's resources on moto, created by [`MotoStack::new`]; nothing is deleted after.
pub struct MotoStack {
    /// The SDK's configuration for the moto server (its endpoint, test credentials).
    pub sdk: aws_config::SdkConfig,
    /// The tables' name prefix (`HAREL_TABLE_PREFIX`), unique to this stack.
    pub prefix: String,
    /// An SQS client on the moto server.
    pub sqs: aws_sdk_sqs::Client,
    /// The FIFO queue's URL (`HAREL_QUEUE_URL`).
    pub queue: String,
    /// The dead-letter queue's URL (`HAREL_DLQ_URL`).
    pub dlq: String,
}

impl MotoStack {
    /// Tables (prefix `tag` + random), the FIFO queue `{prefix}-q` and its DLQ `{prefix}-dlq`.
    pub async fn new(tag: &str) -> MotoStack {
        let sdk = sdk_config().await;
        let prefix = unique_prefix(tag);
        DynamoDbStore::new(aws_sdk_dynamodb::Client::new(&sdk), &prefix)
            .expect("the prefix is an identifier")
            .ensure_tables()
            .await
            .expect("the tables");
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        let queue = SqsTransport::create_fifo_queue(&sqs, &format!("{prefix}-q"))
            .await
            .expect("the queue");
        let dlq = SqsTransport::create_fifo_queue(&sqs, &format!("{prefix}-dlq"))
            .await
            .expect("the dead-letter queue");
        MotoStack {
            sdk,
            prefix,
            sqs,
            queue,
            dlq,
        }
    }

    /// A store on these tables, on a client of its own.
    pub fn store(&self) -> DynamoDbStore {
        DynamoDbStore::new(aws_sdk_dynamodb::Client::new(&self.sdk), &self.prefix)
            .expect("the prefix is an identifier")
    }

    /// A store on these tables whose DynamoDB requests the returned recorder counts (what a
    /// freshly booted function pays, request by request).
    pub fn counted_store(&self) -> (DynamoDbStore, crate::Recorder) {
        let wire = crate::Recorder::new();
        let client = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&self.sdk)
                .http_client(wire.http_client())
                .build(),
        );
        let store = DynamoDbStore::new(client, &self.prefix).expect("the prefix is an identifier");
        (store, wire)
    }

    /// The worker's transport: this queue, dead letters to this DLQ.
    pub fn transport(&self) -> SqsTransport {
        SqsTransport::new(self.sqs.clone(), &self.queue).with_dead_letter_queue(&self.dlq)
    }

    /// The event source's (and the clients') handle on the queue.
    pub fn source(&self) -> SqsTransport {
        SqsTransport::new(self.sqs.clone(), &self.queue)
    }

    /// The idempotency table's name (`{prefix}_idempotency`, as the template names it).
    pub fn idempotency_table(&self) -> String {
        format!("{}_idempotency", self.prefix)
    }

    /// The settings a function of this stack reads, then `extra` (later ones win).
    pub fn settings(&self, extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut all: Vec<(String, String)> = vec![
            ("AWS_REGION".into(), "us-east-1".into()),
            ("HAREL_TABLE_PREFIX".into(), self.prefix.clone()),
            ("HAREL_QUEUE_URL".into(), self.queue.clone()),
            ("HAREL_DLQ_URL".into(), self.dlq.clone()),
            ("IDEMPOTENCY_TABLE".into(), self.idempotency_table()),
        ];
        for (name, value) in extra {
            all.retain(|(n, _)| n != name);
            all.push((name.to_string(), value.to_string()));
        }
        all
    }

    /// The worker's configuration for this stack, with `extra` settings.
    pub fn config(&self, extra: &[(&str, &str)]) -> Config {
        let settings = self.settings(extra);
        let pairs: Vec<(&str, &str)> = settings
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        config_from(Role::Worker, &pairs)
    }

    /// A worker over this stack (its own store client, the transport with the DLQ), driving
    /// `driver`, configured with `extra` settings.
    pub fn worker(&self, driver: Driver, extra: &[(&str, &str)]) -> Arc<MotoWorker> {
        Arc::new(Worker::new(
            self.store(),
            self.transport(),
            driver,
            None,
            self.config(extra),
        ))
    }

    /// The queue's redrive policy, as the template sets it: a message received more than
    /// `max_receive_count` times goes to the DLQ.
    pub async fn set_max_receive_count(&self, max_receive_count: u32) {
        use aws_sdk_sqs::types::QueueAttributeName;
        let dlq_arn = self
            .sqs
            .get_queue_attributes()
            .queue_url(&self.dlq)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .expect("the DLQ's attributes")
            .attributes()
            .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
            .expect("the DLQ's ARN");
        let policy = format!(
            r#"{{"deadLetterTargetArn": "{dlq_arn}", "maxReceiveCount": {max_receive_count}}}"#
        );
        self.sqs
            .set_queue_attributes()
            .queue_url(&self.queue)
            .attributes(QueueAttributeName::RedrivePolicy, policy)
            .send()
            .await
            .expect("the redrive policy");
    }

    /// Powertools' idempotency table (`{prefix}_idempotency`: hash key `id`, a string), as
    /// the template declares it.
    pub async fn create_idempotency_table(&self, client: &aws_sdk_dynamodb::Client) {
        use aws_sdk_dynamodb::types::{
            AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
        };
        client
            .create_table()
            .table_name(self.idempotency_table())
            .billing_mode(BillingMode::PayPerRequest)
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name("id")
                    .key_type(KeyType::Hash)
                    .build()
                    .expect("a complete key schema"),
            )
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name("id")
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .expect("a complete attribute definition"),
            )
            .send()
            .await
            .expect("the idempotency table");
    }
}
