//! Creates what the functions need on a local endpoint (moto): the seven store tables, the
//! idempotency table and the two FIFO queues, named from the same environment the functions
//! read (HAREL_TABLE_PREFIX, HAREL_QUEUE_URL, HAREL_DLQ_URL, IDEMPOTENCY_TABLE). Idempotent.
//!   AWS_ENDPOINT_URL=http://127.0.0.1:5000 ... cargo run -p harel-app --bin local-setup

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};
use harel_lambda::{Config, Role};

fn queue_name(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or(url)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_env(Role::Worker)?;
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        return Err(
            "AWS_ENDPOINT_URL is not set: local-setup only creates resources on a local endpoint"
                .into(),
        );
    }
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let store = harel_dynamodb::DynamoDbStore::new(ddb.clone(), &config.table_prefix)?;
    store.ensure_tables().await?;
    let table = config.idempotency_table.clone().unwrap_or_default();
    let created = ddb
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("id")
                .key_type(KeyType::Hash)
                .build()?,
        )
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("id")
                .attribute_type(ScalarAttributeType::S)
                .build()?,
        )
        .send()
        .await;
    if let Err(e) = created {
        let text = aws_sdk_dynamodb::error::DisplayErrorContext(&e).to_string();
        if !text.contains("ResourceInUse") {
            return Err(text.into());
        }
    }
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    for url in [Some(config.queue_url.as_str()), config.dlq_url.as_deref()]
        .into_iter()
        .flatten()
    {
        let got = harel_sqs::SqsTransport::create_fifo_queue(&sqs, queue_name(url)).await?;
        if got != url {
            return Err(
                format!("the queue was created at {got}, not at the configured {url}").into(),
            );
        }
    }
    println!(
        "ready: tables {}_*, {table}, queues {}",
        config.table_prefix, config.queue_url
    );
    Ok(())
}
