//! The benchmarks that measure the stack over the wire on a moto server (`src/bin`: the
//! store's cost per step next to harel Python's, the periodic reads as the data grows, one
//! listed page, what an event costs through the functions next to harel Python's worker),
//! each run by a `scripts/bench-*.sh` (the last by `scripts/cost-table.sh`). They sit at the top of the workspace, so
//! they may drive any crate (the sweeper over the DynamoDB store, the embedded runner)
//! without making a lower crate's dev-dependencies point up.
//!
//! What they share: a DynamoDB client whose requests the one wire recorder
//! (`harel_testwire::Recorder`) records.

use harel_testwire::Recorder;

/// A DynamoDB client on `endpoint` (region us-east-1) whose requests `recorder` records.
pub async fn recorded_dynamodb(endpoint: &str, recorder: &Recorder) -> aws_sdk_dynamodb::Client {
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .load()
        .await;
    aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&sdk)
            .http_client(recorder.http_client())
            .build(),
    )
}
