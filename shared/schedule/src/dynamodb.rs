//! The marks in DynamoDB: one item per schedule in the store's `{prefix}_counters` table, key
//! `id = "harel:schedule:<name>"`, attributes `through` (epoch seconds), `execution_id` and
//! `updated`. harel Python only ever touches that table's `outbox` and `spawn` items (an
//! `ADD n` on each, never a Scan), so these items are invisible to it, and the table is
//! already in every stack: no new table, no new grant but the sweeper's on it.
//!
//! Reading every mark is one `BatchGetItem` per 100 schedules (strongly consistent, so a tick
//! sees the mark the previous one wrote); moving one is a conditional `PutItem`.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use aws_sdk_dynamodb::Client;

use crate::marks::{Mark, MarkError, Marks};

/// The items' key prefix: no harel counter name starts with it.
pub const KEY_PREFIX: &str = "harel:schedule:";

/// BatchGetItem's limit on keys per request.
const BATCH_KEYS: usize = 100;

/// [`Marks`] on DynamoDB: the sweeper's, one item per schedule in the store's counters table.
#[derive(Clone, Debug)]
pub struct DynamoDbMarks {
    client: Client,
    table: String,
}

impl DynamoDbMarks {
    /// The marks in `{table_prefix}_counters`.
    pub fn new(client: Client, table_prefix: &str) -> Self {
        DynamoDbMarks {
            client,
            table: format!("{table_prefix}_counters"),
        }
    }

    /// The table the marks are kept in (`{table_prefix}_counters`).
    pub fn table(&self) -> &str {
        &self.table
    }
}

fn key(name: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([(
        "id".to_string(),
        AttributeValue::S(format!("{KEY_PREFIX}{name}")),
    )])
}

fn mark_of(item: &HashMap<String, AttributeValue>) -> Result<(String, Mark), MarkError> {
    let corrupt = |why: &str| MarkError(format!("a schedule mark {why}: {item:?}"));
    let name = match item.get("id") {
        Some(AttributeValue::S(id)) => id
            .strip_prefix(KEY_PREFIX)
            .ok_or_else(|| corrupt("has a foreign key"))?
            .to_string(),
        _ => return Err(corrupt("has no id")),
    };
    let through = match item.get("through") {
        Some(AttributeValue::N(n)) => n.parse().map_err(|_| corrupt("has a bad `through`"))?,
        _ => return Err(corrupt("has no `through`")),
    };
    let execution_id = match item.get("execution_id") {
        Some(AttributeValue::S(s)) => Some(s.clone()),
        _ => None,
    };
    Ok((
        name,
        Mark {
            through,
            execution_id,
        },
    ))
}

impl Marks for DynamoDbMarks {
    async fn read(&self, names: &[&str]) -> Result<HashMap<String, Mark>, MarkError> {
        let mut out = HashMap::new();
        for chunk in names.chunks(BATCH_KEYS) {
            let mut keys = Some(
                KeysAndAttributes::builder()
                    .set_keys(Some(chunk.iter().map(|n| key(n)).collect()))
                    .consistent_read(true)
                    .build()
                    .map_err(|e| MarkError(e.to_string()))?,
            );
            // what DynamoDB leaves unprocessed (throttling) is asked again
            while let Some(request) = keys.take() {
                let resp = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, request)
                    .send()
                    .await
                    .map_err(|e| MarkError(format!("BatchGetItem on {}: {e:?}", self.table)))?;
                for item in resp
                    .responses()
                    .and_then(|r| r.get(&self.table))
                    .into_iter()
                    .flatten()
                {
                    let (name, mark) = mark_of(item)?;
                    out.insert(name, mark);
                }
                keys = resp
                    .unprocessed_keys()
                    .and_then(|u| u.get(&self.table))
                    .filter(|k| !k.keys().is_empty())
                    .cloned();
            }
        }
        Ok(out)
    }

    async fn advance(
        &self,
        name: &str,
        previous: Option<&Mark>,
        next: &Mark,
    ) -> Result<bool, MarkError> {
        let mut item = key(name);
        item.insert(
            "through".into(),
            AttributeValue::N(next.through.to_string()),
        );
        if let Some(id) = &next.execution_id {
            item.insert("execution_id".into(), AttributeValue::S(id.clone()));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        item.insert("updated".into(), AttributeValue::N(now.to_string()));
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item));
        put = match previous {
            None => put.condition_expression("attribute_not_exists(id)"),
            Some(p) => put
                .condition_expression("through = :prev")
                .expression_attribute_values(":prev", AttributeValue::N(p.through.to_string())),
        };
        match put.send().await {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(MarkError(format!("PutItem on {}: {e:?}", self.table))),
        }
    }
}
