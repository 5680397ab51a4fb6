//! Test support: a DynamoDB client for the moto server `scripts/with-moto.sh` starts, and a
//! store on fresh tables per test (unique prefix), so tests run in parallel on one server.
#![allow(dead_code)]

use aws_sdk_dynamodb::Client;
use harel_dynamodb::DynamoDbStore;

pub(crate) fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL")
        .or_else(|_| std::env::var("MOTO_ENDPOINT"))
        .expect(
            "these tests need a moto server: run them as `scripts/with-moto.sh cargo test -p harel-dynamodb` \
             (AWS_ENDPOINT_URL / MOTO_ENDPOINT is not set)",
        )
}

pub(crate) async fn sdk_config() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint())
        .region(aws_config::Region::new("us-east-1"))
        .load()
        .await
}

pub(crate) async fn client() -> Client {
    Client::new(&sdk_config().await)
}

pub(crate) fn fresh_prefix() -> String {
    format!("t{}", &uuid::Uuid::new_v4().simple().to_string()[..20])
}

pub(crate) async fn store_on(client: Client, trace_max: usize) -> DynamoDbStore {
    let store = DynamoDbStore::new(client, &fresh_prefix())
        .expect("a valid prefix")
        .with_trace_max(trace_max);
    store.ensure_tables().await.expect("tables are created");
    store
}

pub(crate) async fn store(trace_max: usize) -> DynamoDbStore {
    store_on(client().await, trace_max).await
}
pub(crate) mod faults;

/// A client on the moto server whose every request the wire recorder records (requests per
/// operation, items read).
pub(crate) async fn recorded_client() -> (Client, harel_testwire::Recorder) {
    let recorder = harel_testwire::Recorder::new();
    let conf = aws_sdk_dynamodb::config::Builder::from(&sdk_config().await)
        .http_client(recorder.http_client())
        .build();
    (Client::from_conf(conf), recorder)
}
