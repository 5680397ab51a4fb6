//! The moto server that `scripts/with-moto.sh` starts, as a test reaches it.

/// The moto server's URL; a test run outside `scripts/with-moto.sh` fails here, saying so
/// (it never passes without having run).
pub fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").expect(
        "this test needs a moto server: run it under scripts/with-moto.sh (AWS_ENDPOINT_URL is not set)",
    )
}

/// The SDK's configuration, pointed at the moto server.
pub async fn sdk_config() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint())
        .load()
        .await
}

/// `tag` and 12 random hex digits: a table prefix (and queue name) no other test uses.
pub fn unique_prefix(tag: &str) -> String {
    format!("{tag}{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
}
