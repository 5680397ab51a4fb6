//! Shared by the moto tests: the endpoint, an SDK client, throwaway tables.
#![allow(dead_code)]

pub(crate) mod counting;
pub(crate) mod lost_answer;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use harel_idempotency::Item;

/// The moto server's address; these tests refuse to pass without one.
pub(crate) fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL")
        .or_else(|_| std::env::var("MOTO_ENDPOINT"))
        .expect(
            "these tests need a moto server: run them as `scripts/with-moto.sh cargo test -p harel-idempotency`",
        )
}

pub(crate) async fn sdk_client() -> aws_sdk_dynamodb::Client {
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint())
        .load()
        .await;
    aws_sdk_dynamodb::Client::new(&config)
}

/// A new table with partition key `pk` and optional sort key `sk`; its name is unique.
pub(crate) async fn create_table(
    client: &aws_sdk_dynamodb::Client,
    pk: &str,
    sk: Option<&str>,
) -> String {
    let name = format!("idem-{}", uuid::Uuid::new_v4());
    let mut req = client
        .create_table()
        .table_name(&name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attr(pk))
        .key_schema(key(pk, KeyType::Hash));
    if let Some(sk) = sk {
        req = req
            .attribute_definitions(attr(sk))
            .key_schema(key(sk, KeyType::Range));
    }
    req.send().await.expect("create table");
    name
}

fn attr(name: &str) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .expect("name and type set")
}

fn key(name: &str, kind: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .expect("name and type set")
}

pub(crate) async fn get(client: &aws_sdk_dynamodb::Client, table: &str, key: Item) -> Option<Item> {
    client
        .get_item()
        .table_name(table)
        .set_key(Some(key))
        .consistent_read(true)
        .send()
        .await
        .expect("get item")
        .item
}

pub(crate) async fn put(client: &aws_sdk_dynamodb::Client, table: &str, item: Item) {
    client
        .put_item()
        .table_name(table)
        .set_item(Some(item))
        .send()
        .await
        .expect("put item");
}

pub(crate) fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

pub(crate) fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}
