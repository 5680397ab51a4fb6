//! The storm's AWS side on the moto server: the tables, the idempotency table and the FIFO
//! queues under a fresh prefix; clean clients for the harness itself (the event source, the
//! clients that send, the checks); and, per invocation, the functions' own objects
//! (`DynamoDbStore`, `SqsTransport`, `Idempotency`, `Worker`) on SDK clients whose HTTP goes
//! through that invocation's fault layer.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use harel_dynamodb::{CommitMode, DynamoDbStore};
use harel_idempotency::{DynamoDbPersistenceLayer, Idempotency, IdempotencyConfig};
use harel_lambda::{Config, Role, Worker};
use harel_model::Definition;
use harel_runtime::Driver;
use harel_runtime::ManualClock;
use harel_sqs::SqsTransport;

use super::connector::{faulty_client, InvocationFaults};
use super::FaultError;

/// The worker function's handler as `harel_app::boot(Role::Worker)` builds it: DynamoDB store,
/// SQS transport, DynamoDB idempotency layer.
pub type StormWorker = Worker<DynamoDbStore, SqsTransport, aws_sdk_dynamodb::Client>;

/// The moto endpoint, or the reason the storm cannot run.
pub fn endpoint() -> Result<String, FaultError> {
    std::env::var("AWS_ENDPOINT_URL").map_err(|_| {
        FaultError::Setup(
            "AWS_ENDPOINT_URL is not set: run the storm under scripts/with-moto.sh (scripts/test.sh, scripts/storm.sh)"
                .into(),
        )
    })
}

/// One storm's (or one test's) resources on the moto server, and the factory of each
/// invocation's handlers on them; [`World::teardown`] deletes the resources.
pub struct World {
    /// The SDK configuration on moto's endpoint, which each invocation's clients start from.
    pub(crate) sdk: aws_config::SdkConfig,
    /// `storm` and ten hex digits: the prefix of every table (`{prefix}_executions`, ...) and
    /// queue, fresh per world so worlds never share state.
    pub prefix: String,
    /// The FIFO queue the functions send to and the event source receives from.
    pub queue_url: String,
    /// The FIFO dead-letter queue the worker puts malformed messages on.
    pub dlq_url: String,
    /// The worker's idempotency table (`{prefix}_idempotency`).
    pub(crate) idempotency_table: String,
    /// The harness's own clients: never faulted.
    pub ddb: aws_sdk_dynamodb::Client,
    /// The harness's own SQS client: never faulted.
    pub sqs: aws_sdk_sqs::Client,
    /// The store as the checks read it.
    pub store: DynamoDbStore,
    /// The functions' clock: the storm moves it between phases to bring timers due.
    pub(crate) clock: ManualClock,
    definitions: Vec<Definition>,
    inner_http: SharedHttpClient,
    /// Each worker's `HAREL_WORKER_CONCURRENCY`.
    pub(crate) worker_concurrency: usize,
    /// The bus the relays put the committed events on (the invariants read it).
    pub bus: Arc<harel_runtime::MemoryBus>,
    /// Where every function's commits keep the dedupe marks ([`World::with_commit_mode`]).
    pub commit_mode: CommitMode,
    /// Whether workers run the idempotency layer (as deployed); without it, every repeated
    /// message reaches the store, whose dedupe marks alone must hold.
    pub idempotency: bool,
}

fn setup<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> FaultError + '_ {
    move |e| FaultError::Setup(format!("{what}: {e}"))
}

impl World {
    /// Creates the tables, the idempotency table and both FIFO queues under a fresh prefix on
    /// the moto server of `AWS_ENDPOINT_URL`, the functions running on `clock` with
    /// `worker_concurrency` records at once. [`FaultError::Setup`] when moto is not there or
    /// refuses a resource.
    pub async fn new(clock: ManualClock, worker_concurrency: usize) -> Result<Self, FaultError> {
        let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .endpoint_url(endpoint()?)
            .load()
            .await;
        let ddb = aws_sdk_dynamodb::Client::new(&sdk);
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        let prefix = format!("storm{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
        let store = DynamoDbStore::new(ddb.clone(), &prefix).map_err(setup("prefix"))?;
        store.ensure_tables().await.map_err(setup("tables"))?;
        let idempotency_table = format!("{prefix}_idempotency");
        ddb.create_table()
            .table_name(&idempotency_table)
            .billing_mode(BillingMode::PayPerRequest)
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name("id")
                    .key_type(KeyType::Hash)
                    .build()
                    .map_err(setup("key schema"))?,
            )
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name("id")
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .map_err(setup("attribute"))?,
            )
            .send()
            .await
            .map_err(|e| {
                FaultError::Setup(format!(
                    "idempotency table: {}",
                    aws_sdk_dynamodb::error::DisplayErrorContext(e)
                ))
            })?;
        let queue_url = SqsTransport::create_fifo_queue(&sqs, &format!("{prefix}-q"))
            .await
            .map_err(setup("queue"))?;
        let dlq_url = SqsTransport::create_fifo_queue(&sqs, &format!("{prefix}-dlq"))
            .await
            .map_err(setup("dead-letter queue"))?;
        // the SDK's default HTTP client, built explicitly so each invocation can wrap it
        let inner_http = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::AwsLc,
            ))
            .build_https();
        Ok(World {
            sdk,
            prefix,
            queue_url,
            dlq_url,
            idempotency_table,
            ddb,
            sqs,
            store,
            clock,
            definitions: super::scenario::definitions(),
            inner_http,
            worker_concurrency,
            bus: Arc::new(harel_runtime::MemoryBus::new()),
            commit_mode: CommitMode::Compat,
            idempotency: true,
        })
    }

    /// Every function's store in `mode` (`HAREL_COMMIT_MODE`), the checks' store too.
    pub fn with_commit_mode(mut self, mode: CommitMode) -> Self {
        self.commit_mode = mode;
        self.store = self.store.with_commit_mode(mode);
        self
    }

    /// The SDK clients of one invocation, through its fault layer. The SDK's standard retries
    /// stay on (as in the functions) with short backoffs, so a storm does not sleep for them.
    pub fn clients(
        &self,
        faults: &Arc<InvocationFaults>,
    ) -> (aws_sdk_dynamodb::Client, aws_sdk_sqs::Client) {
        let http = faulty_client(self.inner_http.clone(), Arc::clone(faults));
        let retry = aws_smithy_types::retry::RetryConfig::standard()
            .with_max_attempts(3)
            .with_initial_backoff(Duration::from_millis(5))
            .with_max_backoff(Duration::from_millis(40));
        let timeouts = aws_smithy_types::timeout::TimeoutConfig::builder()
            .operation_attempt_timeout(Duration::from_secs(10))
            .build();
        let ddb = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&self.sdk)
                .http_client(http.clone())
                .retry_config(retry.clone())
                .timeout_config(timeouts.clone())
                .build(),
        );
        let sqs = aws_sdk_sqs::Client::from_conf(
            aws_sdk_sqs::config::Builder::from(&self.sdk)
                .http_client(http)
                .retry_config(retry)
                .timeout_config(timeouts)
                .build(),
        );
        (ddb, sqs)
    }

    /// The functions' configuration for `role`, as their environment on this world's tables
    /// and queues would give it.
    pub(crate) fn config(&self, role: Role) -> Config {
        let env = [
            ("AWS_REGION", "us-east-1".to_string()),
            ("HAREL_TABLE_PREFIX", self.prefix.clone()),
            ("HAREL_QUEUE_URL", self.queue_url.clone()),
            ("HAREL_DLQ_URL", self.dlq_url.clone()),
            ("IDEMPOTENCY_TABLE", self.idempotency_table.clone()),
            (
                "HAREL_WORKER_CONCURRENCY",
                self.worker_concurrency.to_string(),
            ),
        ];
        Config::from_lookup(role, |k| {
            env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
        })
        .expect("the storm's configuration is valid")
    }

    /// A driver with the storm's machines and actions ([`scenario`](super::scenario)) on the
    /// world's clock, as each function builds it.
    pub fn driver(&self) -> Driver {
        Driver::new(self.definitions.clone(), super::scenario::actions())
            .with_clock(Arc::new(self.clock.clone()))
    }

    /// An invocation without faults (for tests that feed bad input, not bad weather).
    pub fn calm() -> Arc<InvocationFaults> {
        Arc::new(InvocationFaults::new(
            0,
            super::connector::Rates::NONE,
            None,
            Arc::new(super::stats::Stats::default()),
        ))
    }

    /// What `harel_app::boot(Role::Worker)` builds, on this invocation's clients.
    pub fn worker(&self, faults: &Arc<InvocationFaults>) -> Arc<StormWorker> {
        let (ddb, sqs) = self.clients(faults);
        // events on, as the template deploys it: every commit writes its status change
        let store = DynamoDbStore::new(ddb.clone(), &self.prefix)
            .expect("a checked prefix")
            .with_events(harel_store::EventsConfig::default())
            .with_commit_mode(self.commit_mode);
        let transport = SqsTransport::new(sqs, self.queue_url.clone())
            .with_dead_letter_queue(self.dlq_url.clone());
        let config = self.config(Role::Worker);
        let idempotency = self.idempotency.then(|| {
            let layer = DynamoDbPersistenceLayer::new(ddb, self.idempotency_table.clone());
            let settings = IdempotencyConfig::default()
                .event_key_jmespath("messageId")
                .expires_after_seconds(config.idempotency_expiry.as_secs());
            Idempotency::new(layer, settings, "harel_worker").expect("a valid idempotency setup")
        });
        Arc::new(Worker::new(
            store,
            transport,
            self.driver(),
            idempotency,
            config,
        ))
    }

    /// A relay's or sweeper's store and transport, on this invocation's clients.
    pub fn scheduled(&self, faults: &Arc<InvocationFaults>) -> (DynamoDbStore, SqsTransport) {
        let (ddb, sqs) = self.clients(faults);
        (
            DynamoDbStore::new(ddb, &self.prefix)
                .expect("a checked prefix")
                .with_events(harel_store::EventsConfig::default())
                .with_commit_mode(self.commit_mode),
            SqsTransport::new(sqs, self.queue_url.clone()),
        )
    }

    /// Delete what the storm made (tables and queues), so long storms leave moto light.
    pub async fn teardown(&self) {
        for table in [
            "executions",
            "outbox",
            "spawns",
            "timers",
            "processed",
            "counters",
            "trace",
            "definitions",
            "events",
            "idempotency",
        ] {
            let _ = self
                .ddb
                .delete_table()
                .table_name(format!("{}_{table}", self.prefix))
                .send()
                .await;
        }
        for url in [&self.queue_url, &self.dlq_url] {
            let _ = self.sqs.delete_queue().queue_url(url.as_str()).send().await;
        }
    }
}
