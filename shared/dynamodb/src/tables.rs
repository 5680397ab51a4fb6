//! The seven tables of harel's `DynamoDBStore` under one prefix, and their idempotent
//! creation (`_ensure_tables`): same names, key schemas and billing mode.

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
    GlobalSecondaryIndexUpdate, KeySchemaElement, KeyType, Projection, ProjectionType,
    ScalarAttributeType,
};

use crate::timers::{DUE_INDEX, DUE_SHARD_ATTR};
use aws_sdk_dynamodb::Client;

#[derive(Debug, thiserror::Error)]
pub enum TablesError {
    /// harel's `Names` rule, so a prefix valid here is valid for harel Python too.
    #[error("prefix must be an identifier (a letter or _, then letters, digits or _; at most 30 characters), got {0:?}")]
    BadPrefix(String),
    #[error("creating table {table}: {message}")]
    Create { table: String, message: String },
    #[error("adding index {index} to table {table}: {message}")]
    AddIndex {
        table: String,
        index: &'static str,
        message: String,
    },
}

/// Table names for one prefix: `{prefix}_executions`, ...
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tables {
    prefix: String,
}

/// (table suffix, [(key attribute, type)]): HASH then RANGE, as harel declares them.
const SPECS: [(&str, &[(&str, ScalarAttributeType)]); 7] = [
    ("executions", &[("id", ScalarAttributeType::S)]),
    ("outbox", &[("seq", ScalarAttributeType::N)]),
    ("spawns", &[("seq", ScalarAttributeType::N)]),
    (
        "timers",
        &[
            ("execution_id", ScalarAttributeType::S),
            ("path", ScalarAttributeType::S),
        ],
    ),
    (
        "processed",
        &[
            ("execution_id", ScalarAttributeType::S),
            ("event_id", ScalarAttributeType::S),
        ],
    ),
    ("counters", &[("id", ScalarAttributeType::S)]),
    (
        "trace",
        &[
            ("execution_id", ScalarAttributeType::S),
            ("idx", ScalarAttributeType::N),
        ],
    ),
];

impl Tables {
    pub fn new(prefix: &str) -> Result<Self, TablesError> {
        let mut chars = prefix.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !first_ok || !rest_ok || prefix.len() > 30 {
            return Err(TablesError::BadPrefix(prefix.to_string()));
        }
        Ok(Tables {
            prefix: prefix.to_string(),
        })
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn name(&self, suffix: &str) -> String {
        format!("{}_{suffix}", self.prefix)
    }

    pub fn executions(&self) -> String {
        self.name("executions")
    }
    pub fn outbox(&self) -> String {
        self.name("outbox")
    }
    pub fn spawns(&self) -> String {
        self.name("spawns")
    }
    pub fn timers(&self) -> String {
        self.name("timers")
    }
    pub fn processed(&self) -> String {
        self.name("processed")
    }
    pub fn counters(&self) -> String {
        self.name("counters")
    }
    pub fn trace(&self) -> String {
        self.name("trace")
    }

    /// Create every table that is missing, `PAY_PER_REQUEST`, the timers table with its
    /// `by_due` index (added to an existing timers table without it). An existing table is
    /// fine (`ResourceInUseException`); any other failure is returned.
    pub async fn ensure(&self, client: &Client) -> Result<(), TablesError> {
        for (suffix, keys) in SPECS {
            let table = self.name(suffix);
            let roles = [KeyType::Hash, KeyType::Range];
            let mut req = client
                .create_table()
                .table_name(&table)
                .billing_mode(BillingMode::PayPerRequest);
            for ((attr, ty), role) in keys.iter().zip(roles) {
                req = req
                    .key_schema(
                        KeySchemaElement::builder()
                            .attribute_name(*attr)
                            .key_type(role)
                            .build()
                            .expect("name and key type are set"),
                    )
                    .attribute_definitions(
                        AttributeDefinition::builder()
                            .attribute_name(*attr)
                            .attribute_type(ty.clone())
                            .build()
                            .expect("name and type are set"),
                    );
            }
            if suffix == "timers" {
                req = req
                    .global_secondary_indexes(due_index())
                    .attribute_definitions(attribute(DUE_SHARD_ATTR, ScalarAttributeType::S))
                    .attribute_definitions(attribute("fire_at", ScalarAttributeType::N));
            }
            match req.send().await {
                Ok(_) => {}
                Err(err) if err.code() == Some("ResourceInUseException") => {
                    if suffix == "timers" {
                        self.ensure_due_index(client).await?;
                    }
                }
                Err(err) => {
                    return Err(TablesError::Create {
                        table,
                        message: crate::errors::describe(&err),
                    })
                }
            }
        }
        Ok(())
    }

    /// A timers table harel Python created has no `by_due` index: add it (DynamoDB builds
    /// it in the background from the rows that carry `due_shard`; until it is ACTIVE a
    /// Query on it fails, and the sweeper reports that and tries again on its next tick).
    async fn ensure_due_index(&self, client: &Client) -> Result<(), TablesError> {
        let table = self.timers();
        let failed = |message: String| TablesError::AddIndex {
            table: table.clone(),
            index: DUE_INDEX,
            message,
        };
        let described = client
            .describe_table()
            .table_name(&table)
            .send()
            .await
            .map_err(|e| failed(crate::errors::describe(&e)))?;
        let has_index = described
            .table()
            .map(|t| t.global_secondary_indexes())
            .unwrap_or_default()
            .iter()
            .any(|i| i.index_name() == Some(DUE_INDEX));
        if has_index {
            return Ok(());
        }
        let index = due_index();
        let create = CreateGlobalSecondaryIndexAction::builder()
            .index_name(DUE_INDEX)
            .set_key_schema(Some(index.key_schema().to_vec()))
            .set_projection(index.projection().cloned())
            .build()
            .map_err(|e| failed(e.to_string()))?;
        let result = client
            .update_table()
            .table_name(&table)
            .attribute_definitions(attribute(DUE_SHARD_ATTR, ScalarAttributeType::S))
            .attribute_definitions(attribute("fire_at", ScalarAttributeType::N))
            .global_secondary_index_updates(
                GlobalSecondaryIndexUpdate::builder().create(create).build(),
            )
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // another process is adding it at this moment
            Err(e) if e.code() == Some("ResourceInUseException") => Ok(()),
            Err(e) => Err(failed(crate::errors::describe(&e))),
        }
    }
}

fn attribute(name: &str, ty: ScalarAttributeType) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ty)
        .build()
        .expect("name and type are set")
}

/// `by_due`: HASH `due_shard`, RANGE `fire_at`, keys only (the table's keys come along:
/// execution_id, path, due_shard, fire_at are all the sweeper needs). Sparse: only rows
/// carrying `due_shard` are in it.
fn due_index() -> GlobalSecondaryIndex {
    let key = |name: &str, role| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(role)
            .build()
            .expect("name and key type are set")
    };
    GlobalSecondaryIndex::builder()
        .index_name(DUE_INDEX)
        .key_schema(key(DUE_SHARD_ATTR, KeyType::Hash))
        .key_schema(key("fire_at", KeyType::Range))
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::KeysOnly)
                .build(),
        )
        .build()
        .expect("name and key schema are set")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_follow_harels_identifier_rule() {
        assert!(Tables::new("harel").is_ok());
        assert!(Tables::new("_t_1").is_ok());
        assert!(Tables::new(&"a".repeat(30)).is_ok());
        for bad in ["", "1abc", "a-b", "a b", &"a".repeat(31)] {
            assert!(Tables::new(bad).is_err(), "{bad:?}");
        }
        assert_eq!(Tables::new("p").unwrap().trace(), "p_trace");
    }
}
