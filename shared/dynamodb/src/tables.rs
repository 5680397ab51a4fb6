//! The seven tables of harel's `DynamoDBStore` under one prefix, and their idempotent
//! creation (`_ensure_tables`): same names, key schemas and billing mode. Ours add sparse,
//! keys-only secondary indexes (the executions' listing and tree indexes, the timers' `by_due`)
//! and, on the tables that grow with finished work, a TTL attribute; harel Python never reads
//! either, so it shares the tables unchanged.

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
    GlobalSecondaryIndexUpdate, IndexStatus, KeySchemaElement, KeyType, Projection, ProjectionType,
    ScalarAttributeType, TableStatus, TimeToLiveSpecification, TimeToLiveStatus,
};

use crate::timers::{DUE_INDEX, DUE_SHARD_ATTR};
use aws_sdk_dynamodb::Client;

/// The executions' listing index by status partition (`list_pk`, `list_sk`).
pub const BY_STATUS: &str = "by_status";
/// The executions' listing index by machine and status (`list_mpk`, `list_sk`).
pub const BY_MACHINE_STATUS: &str = "by_machine_status";
/// The index attributes the store writes on every executions item (see `commit`).
pub const LIST_PK: &str = "list_pk";
/// The partition attribute of [`BY_MACHINE_STATUS`]: the definition id and the status.
pub const LIST_MPK: &str = "list_mpk";
/// The sort attribute of both listing indexes: creation time in microseconds, then the id
/// (`harel_store::listing::sort_key`).
pub const LIST_SK: &str = "list_sk";
/// The children of an execution (sparse: only children carry `PARENT`), for `purge` to walk
/// a tree without a Scan.
pub const BY_PARENT: &str = "by_parent";
/// The partition attribute of [`BY_PARENT`]: the parent execution's id, on child executions only.
pub const PARENT: &str = "parent_pk";
/// The TTL attribute (epoch seconds) of the executions, processed and trace tables. Not
/// `expires_at`: that is harel's own field inside the Execution JSON.
pub const RETAIN_UNTIL: &str = "retain_until";
/// The tables that carry `RETAIN_UNTIL`.
const TTL_TABLES: [&str; 3] = ["executions", "processed", "trace"];
/// How long `ensure` waits for an index added to an existing table to become ACTIVE (DynamoDB
/// backfills it from the table first, and takes one index change at a time).
const INDEX_WAIT: Duration = Duration::from_secs(30 * 60);

/// Why the tables cannot be named or created.
#[derive(Debug, thiserror::Error)]
pub enum TablesError {
    /// harel's `Names` rule, so a prefix valid here is valid for harel Python too.
    #[error("prefix must be an identifier (a letter or _, then letters, digits or _; at most 30 characters), got {0:?}")]
    BadPrefix(String),
    /// CreateTable failed with something other than "already exists".
    #[error("creating table {table}: {message}")]
    Create {
        /// The full table name.
        table: String,
        /// The service's error.
        message: String,
    },
    /// Adding a missing index to an existing table failed or did not become ACTIVE in time.
    #[error("adding index {index} to table {table}: {message}")]
    Index {
        /// The full table name.
        table: String,
        /// The index's name.
        index: String,
        /// The service's error, or how long it waited.
        message: String,
    },
    /// Turning the `retain_until` TTL on failed.
    #[error("enabling the {RETAIN_UNTIL} TTL on table {table}: {message}")]
    Ttl {
        /// The full table name.
        table: String,
        /// The service's error.
        message: String,
    },
}

fn key(attr: &str, role: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(attr)
        .key_type(role)
        .build()
        .expect("name and key type are set")
}

fn attribute(name: &str, ty: ScalarAttributeType) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ty)
        .build()
        .expect("name and type are set")
}

fn keys_only() -> Projection {
    Projection::builder()
        .projection_type(ProjectionType::KeysOnly)
        .build()
}

/// A secondary index this store adds to one of harel's tables. All are keys only and sparse
/// (a row without the partition attribute, e.g. one harel Python wrote, is not in it), so
/// they stay small and are written only when one of their keys changes.
#[derive(Clone, Debug)]
pub struct IndexSpec {
    /// The table's suffix (`executions`, `timers`).
    pub table: &'static str,
    /// The index's name.
    pub name: &'static str,
    /// The partition key attribute and its type.
    pub partition: (&'static str, ScalarAttributeType),
    /// The sort key attribute and its type, when the index has one.
    pub sort: Option<(&'static str, ScalarAttributeType)>,
}

/// The executions' listing indexes (a page reads its rows with one BatchGetItem; the keys
/// change only with the status), the tree index (a child's parent never changes), and the
/// timers' `by_due` (the sweeper reads what is due; the table's keys ride along, and
/// execution_id, path, due_shard and fire_at are all it needs).
pub const INDEXES: [IndexSpec; 4] = [
    IndexSpec {
        table: "executions",
        name: BY_STATUS,
        partition: (LIST_PK, ScalarAttributeType::S),
        sort: Some((LIST_SK, ScalarAttributeType::S)),
    },
    IndexSpec {
        table: "executions",
        name: BY_MACHINE_STATUS,
        partition: (LIST_MPK, ScalarAttributeType::S),
        sort: Some((LIST_SK, ScalarAttributeType::S)),
    },
    IndexSpec {
        table: "executions",
        name: BY_PARENT,
        partition: (PARENT, ScalarAttributeType::S),
        sort: None,
    },
    IndexSpec {
        table: "timers",
        name: DUE_INDEX,
        partition: (DUE_SHARD_ATTR, ScalarAttributeType::S),
        sort: Some(("fire_at", ScalarAttributeType::N)),
    },
];

impl IndexSpec {
    fn key_schema(&self) -> Vec<KeySchemaElement> {
        let mut keys = vec![key(self.partition.0, KeyType::Hash)];
        keys.extend(self.sort.as_ref().map(|(sk, _)| key(sk, KeyType::Range)));
        keys
    }

    fn attributes(&self) -> impl Iterator<Item = AttributeDefinition> + '_ {
        std::iter::once(&self.partition)
            .chain(self.sort.as_ref())
            .map(|(name, ty)| attribute(name, ty.clone()))
    }

    fn on(table: &str) -> impl Iterator<Item = &'static IndexSpec> + '_ {
        INDEXES.iter().filter(move |i| i.table == table)
    }
}

/// Table names for one prefix: `{prefix}_executions`, ...
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tables {
    prefix: String,
}

/// (table suffix, [(key attribute, type)]): HASH then RANGE, as harel declares them.
/// Beside harel's seven, `definitions` keeps each machine version an execution was started on
/// (harel Python neither reads nor writes it).
/// `events` holds the events for the bus until they are put (harel Python never reads it: its
/// relay scans `outbox` alone).
const SPECS: [(&str, &[(&str, ScalarAttributeType)]); 9] = [
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
    ("definitions", &[("version", ScalarAttributeType::S)]),
    ("events", &[("event_id", ScalarAttributeType::S)]),
];

impl Tables {
    /// The table names under `prefix`; `BadPrefix` unless it is an identifier of at most 30
    /// characters (harel's rule).
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

    /// The prefix every table name starts with (then `_` and the table's suffix).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn name(&self, suffix: &str) -> String {
        format!("{}_{suffix}", self.prefix)
    }

    /// `<prefix>_executions`: one item per execution (key `id`), its JSON in `data`, its `version`
    /// for the CAS.
    pub fn executions(&self) -> String {
        self.name("executions")
    }
    /// `<prefix>_outbox`: the events commits emitted, awaiting the relay (key `seq`).
    pub fn outbox(&self) -> String {
        self.name("outbox")
    }
    /// `<prefix>_spawns`: the child executions commits asked for, awaiting the relay (key `seq`).
    pub fn spawns(&self) -> String {
        self.name("spawns")
    }
    /// `<prefix>_timers`: armed timers (keys `execution_id`, `path`), with their `fire_at`.
    pub fn timers(&self) -> String {
        self.name("timers")
    }
    /// `<prefix>_processed`: the dedupe marks of events already applied (keys `execution_id`,
    /// `event_id`).
    pub fn processed(&self) -> String {
        self.name("processed")
    }
    /// `<prefix>_counters`: harel's named seq counters (key `id`: `outbox`, `spawn`), used with
    /// `SeqAllocation::Counter`.
    pub fn counters(&self) -> String {
        self.name("counters")
    }
    /// `<prefix>_trace`: the trace ring's rows (keys `execution_id`, `idx`).
    pub fn trace(&self) -> String {
        self.name("trace")
    }
    /// `<prefix>_definitions`: the registered machine definitions (key `version`).
    pub fn definitions(&self) -> String {
        self.name("definitions")
    }
    /// The events for the bus awaiting their put (see `harel_store::events`).
    pub fn events(&self) -> String {
        self.name("events")
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
            // an attribute shared by two indexes (list_sk) is declared once
            let mut declared: Vec<String> = keys.iter().map(|(a, _)| a.to_string()).collect();
            for index in IndexSpec::on(suffix) {
                for attr in index.attributes() {
                    if !declared.iter().any(|d| d == attr.attribute_name()) {
                        declared.push(attr.attribute_name().to_string());
                        req = req.attribute_definitions(attr);
                    }
                }
                req = req.global_secondary_indexes(
                    GlobalSecondaryIndex::builder()
                        .index_name(index.name)
                        .set_key_schema(Some(index.key_schema()))
                        .projection(keys_only())
                        .build()
                        .expect("name and keys are set"),
                );
            }
            match req.send().await {
                Ok(_) => {}
                Err(err) if err.code() == Some("ResourceInUseException") => {
                    self.add_missing_indexes(client, suffix, &table).await?;
                }
                Err(err) => {
                    return Err(TablesError::Create {
                        table,
                        message: crate::errors::describe(&err),
                    })
                }
            }
        }
        for suffix in TTL_TABLES {
            self.enable_ttl(client, &self.name(suffix)).await?;
        }
        Ok(())
    }

    /// A table created by harel Python (or an earlier release) lacks our indexes: add each
    /// (UpdateTable takes one index at a time) and wait until it is ACTIVE, since DynamoDB
    /// refuses a query on an index still backfilling.
    async fn add_missing_indexes(
        &self,
        client: &Client,
        suffix: &str,
        table: &str,
    ) -> Result<(), TablesError> {
        for index in IndexSpec::on(suffix) {
            let err = |message: String| TablesError::Index {
                table: table.to_string(),
                index: index.name.to_string(),
                message,
            };
            if self
                .index_status(client, table)
                .await
                .map_err(&err)?
                .0
                .iter()
                .any(|(n, _)| n == index.name)
            {
                continue;
            }
            client
                .update_table()
                .table_name(table)
                .set_attribute_definitions(Some(index.attributes().collect()))
                .global_secondary_index_updates(
                    GlobalSecondaryIndexUpdate::builder()
                        .create(
                            CreateGlobalSecondaryIndexAction::builder()
                                .index_name(index.name)
                                .set_key_schema(Some(index.key_schema()))
                                .projection(keys_only())
                                .build()
                                .expect("name, keys and projection are set"),
                        )
                        .build(),
                )
                .send()
                .await
                .map_err(|e| err(crate::errors::describe(&e)))?;
            let started = std::time::Instant::now();
            loop {
                let (indexes, table_status) =
                    self.index_status(client, table).await.map_err(&err)?;
                let ready = table_status == Some(TableStatus::Active)
                    && indexes
                        .iter()
                        .all(|(_, s)| s.as_ref().is_none_or(|s| *s == IndexStatus::Active));
                if ready {
                    break;
                }
                if started.elapsed() > INDEX_WAIT {
                    return Err(err(format!(
                        "still not ACTIVE after {} minutes; run again once it is",
                        INDEX_WAIT.as_secs() / 60
                    )));
                }
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }
        Ok(())
    }

    /// The table's indexes with their status, and the table's status.
    async fn index_status(
        &self,
        client: &Client,
        table: &str,
    ) -> Result<(Vec<(String, Option<IndexStatus>)>, Option<TableStatus>), String> {
        let resp = client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| crate::errors::describe(&e))?;
        let desc = resp.table();
        let indexes = desc
            .map(|t| {
                t.global_secondary_indexes()
                    .iter()
                    .map(|g| {
                        (
                            g.index_name().unwrap_or_default().to_string(),
                            g.index_status().cloned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok((indexes, desc.and_then(|t| t.table_status().cloned())))
    }

    /// Turn on the `RETAIN_UNTIL` TTL unless some TTL is already on (DynamoDB refuses to
    /// enable it twice, and a table has one TTL attribute: one the operator chose is kept).
    async fn enable_ttl(&self, client: &Client, table: &str) -> Result<(), TablesError> {
        let err = |message: String| TablesError::Ttl {
            table: table.to_string(),
            message,
        };
        let current = client
            .describe_time_to_live()
            .table_name(table)
            .send()
            .await
            .map_err(|e| err(crate::errors::describe(&e)))?;
        let status = current
            .time_to_live_description()
            .and_then(|d| d.time_to_live_status());
        if matches!(
            status,
            Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
        ) {
            return Ok(());
        }
        client
            .update_time_to_live()
            .table_name(table)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name(RETAIN_UNTIL)
                    .enabled(true)
                    .build()
                    .expect("name and flag are set"),
            )
            .send()
            .await
            .map_err(|e| err(crate::errors::describe(&e)))?;
        Ok(())
    }
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
