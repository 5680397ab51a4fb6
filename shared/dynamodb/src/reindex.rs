//! `reindex_listing`: the one-off rewrite of the listing indexes' keys that an earlier release
//! wrote unsharded (`list_pk` = `RUNNING`, `list_mpk` = `order#RUNNING`) into their sharded
//! form ([`crate::shards`]). A listing asks only the shards, so an execution that no commit
//! has touched since the upgrade is missing from it until this runs; any later commit
//! rewrites the keys itself (every commit puts the whole item).
//!
//! One Scan of the executions table, page by page (projected to the four attributes it
//! needs, filtered to items that carry listing keys: harel Python's rows carry none and are
//! left alone), and one conditional UpdateItem per item whose keys are not already sharded.
//! Safe beside running workers: the update holds only while the keys are still the ones it
//! read, so a commit in between wins.

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::ReturnConsumedCapacity;
use futures_util::future::join_all;
use harel_model::Status;
use harel_store::{StoreError, StoreResult};

use crate::codec::{get_s, s, Item};
use crate::errors;
use crate::shards::{machine_status_partition, status_partition};
use crate::tables::{LIST_MPK, LIST_PK};
use crate::DynamoDbStore;

/// Updates sent at once within a Scan page.
const CONCURRENT_UPDATES: usize = 16;

/// What [`DynamoDbStore::reindex_listing`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reindexed {
    /// Executions items with listing keys the Scan read.
    pub read: usize,
    /// Items whose keys it rewrote (or, on a dry run, would rewrite).
    pub rewritten: usize,
    /// Items a commit changed between the read and the update: the commit's keys stand.
    pub changed_meanwhile: usize,
}

/// One item's keys as stored and as they should be.
struct Rekey {
    id: String,
    old_pk: String,
    old_mpk: String,
    new_pk: String,
    new_mpk: String,
}

/// The status and kind an item's `list_pk` names, sharded (`RUNNING#child#3`) or not
/// (`RUNNING#child`).
fn logical_partition(list_pk: &str) -> Option<(Status, bool)> {
    let unsharded = match list_pk.rsplit_once('#') {
        Some((rest, shard)) if !shard.is_empty() && shard.bytes().all(|b| b.is_ascii_digit()) => {
            rest
        }
        _ => list_pk,
    };
    let (status, child) = match unsharded.split_once('#') {
        Some((status, "child")) => (status, true),
        Some(_) => return None,
        None => (unsharded, false),
    };
    Some((status.parse().ok()?, child))
}

fn rekey(table: &str, item: &Item) -> StoreResult<Option<Rekey>> {
    let corrupt = |e| errors::corrupt(table, e);
    let id = get_s(item, "id").map_err(corrupt)?;
    let old_pk = get_s(item, LIST_PK).map_err(corrupt)?;
    let old_mpk = item
        .get(LIST_MPK)
        .and_then(|v| v.as_s().ok())
        .cloned()
        .unwrap_or_default();
    let definition_id = get_s(item, "definition_id").map_err(corrupt)?;
    let (status, child) = logical_partition(old_pk).ok_or_else(|| {
        StoreError::Corrupt(format!(
            "{table}: execution {id:?} has {LIST_PK} {old_pk:?}, which names no status"
        ))
    })?;
    let new_pk = status_partition(id, status, child);
    let new_mpk = machine_status_partition(id, definition_id, status, child);
    if new_pk == old_pk && new_mpk == old_mpk {
        return Ok(None);
    }
    Ok(Some(Rekey {
        id: id.to_string(),
        old_pk: old_pk.to_string(),
        old_mpk,
        new_pk,
        new_mpk,
    }))
}

impl DynamoDbStore {
    /// Rewrite every unsharded listing key of the executions table into its sharded form
    /// (see the module doc); `dry_run` counts what it would rewrite and writes nothing.
    /// Idempotent: a second run reads and rewrites nothing more.
    pub async fn reindex_listing(&self, dry_run: bool) -> StoreResult<Reindexed> {
        let table = self.tables.executions();
        let mut done = Reindexed::default();
        let mut start: Option<Item> = None;
        loop {
            let resp = self
                .client
                .scan()
                .table_name(&table)
                .projection_expression("#id, #pk, #mpk, #def")
                .filter_expression("attribute_exists(#pk)")
                .expression_attribute_names("#id", "id")
                .expression_attribute_names("#pk", LIST_PK)
                .expression_attribute_names("#mpk", LIST_MPK)
                .expression_attribute_names("#def", "definition_id")
                .set_exclusive_start_key(start.take())
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(|e| errors::classify("Scan", &table, e))?;
            done.read += resp.items().len();
            let mut rekeys = Vec::new();
            for item in resp.items() {
                rekeys.extend(rekey(&table, item)?);
            }
            if dry_run {
                done.rewritten += rekeys.len();
            } else {
                for chunk in rekeys.chunks(CONCURRENT_UPDATES) {
                    for applied in join_all(chunk.iter().map(|r| self.apply_rekey(&table, r))).await
                    {
                        if applied? {
                            done.rewritten += 1;
                        } else {
                            done.changed_meanwhile += 1;
                        }
                    }
                }
            }
            match resp.last_evaluated_key() {
                Some(key) if !key.is_empty() => start = Some(key.clone()),
                _ => return Ok(done),
            }
        }
    }

    /// Set the item's new keys while its keys are still the old ones; false when a commit
    /// changed them first.
    async fn apply_rekey(&self, table: &str, rekey: &Rekey) -> StoreResult<bool> {
        let mut req = self
            .client
            .update_item()
            .table_name(table)
            .key("id", s(&rekey.id))
            .update_expression("SET #pk = :new_pk, #mpk = :new_mpk")
            .expression_attribute_names("#pk", LIST_PK)
            .expression_attribute_names("#mpk", LIST_MPK)
            .expression_attribute_values(":new_pk", s(&rekey.new_pk))
            .expression_attribute_values(":new_mpk", s(&rekey.new_mpk))
            .expression_attribute_values(":old_pk", s(&rekey.old_pk));
        req = if rekey.old_mpk.is_empty() {
            req.condition_expression("#pk = :old_pk AND attribute_not_exists(#mpk)")
        } else {
            req.condition_expression("#pk = :old_pk AND #mpk = :old_mpk")
                .expression_attribute_values(":old_mpk", s(&rekey.old_mpk))
        };
        match req.send().await {
            Ok(_) => Ok(true),
            Err(e) if e.code() == Some("ConditionalCheckFailedException") => Ok(false),
            Err(e) => Err(errors::classify("UpdateItem", table, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_key_forms_name_their_status_and_kind() {
        assert_eq!(logical_partition("RUNNING"), Some((Status::Running, false)));
        assert_eq!(logical_partition("DONE#child"), Some((Status::Done, true)));
        assert_eq!(
            logical_partition("SUSPENDED#7"),
            Some((Status::Suspended, false))
        );
        assert_eq!(
            logical_partition("FAILED#child#0"),
            Some((Status::Failed, true))
        );
        assert_eq!(logical_partition("RUNNING#adult"), None);
        assert_eq!(logical_partition("SLEEPING"), None);
    }
}
