//! Deleting an execution and everything keyed by it, and finding a tree's members.

use super::*;

impl Purge for DynamoDbStore {
    async fn ids_with_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        self.ids_with_prefix_scan(prefix).await
    }

    async fn descendant_ids(&self, root_id: &str) -> StoreResult<Vec<String>> {
        self.tree_by_parent(root_id).await
    }

    async fn purge(&self, execution_id: &str, expected_version: u64) -> StoreResult<bool> {
        self.purge_one(execution_id, expected_version).await
    }
}

impl DynamoDbStore {
    /// harel's `ids_with_prefix`: a Scan of the whole table.
    pub(crate) async fn ids_with_prefix_scan(&self, prefix: &str) -> StoreResult<Vec<String>> {
        let table = self.tables.executions();
        let rows = self
            .scan_all(&table, |r| {
                r.filter_expression("begins_with(#i, :p)")
                    .expression_attribute_names("#i", "id")
                    .expression_attribute_values(":p", s(prefix))
                    .projection_expression("#i")
            })
            .await?;
        rows.iter()
            .map(|item| {
                get_s(item, "id")
                    .map(str::to_string)
                    .map_err(|e| errors::corrupt(&table, e))
            })
            .collect()
    }

    pub(crate) async fn purge_one(
        &self,
        execution_id: &str,
        expected_version: u64,
    ) -> StoreResult<bool> {
        let result = self
            .client
            .delete_item()
            .table_name(self.tables.executions())
            .key("id", s(execution_id))
            .condition_expression("version = :v")
            .expression_attribute_values(":v", n_int(expected_version))
            .send()
            .await;
        let deleted = match result {
            Ok(_) => true,
            Err(e) if e.code() == Some("ConditionalCheckFailedException") => {
                if self.stored_version(execution_id).await?.is_some() {
                    return Ok(false); // moved on: touch nothing
                }
                false
            }
            Err(e) => return Err(errors::classify("DeleteItem", &self.tables.executions(), e)),
        };
        self.forget_trace(execution_id);
        // not in the Execution's transaction, as in harel: the dedupe and trace rows are
        // unbounded; the Execution goes first, so a crash here leaves only unreachable rows
        // that a retry (Execution absent) still removes
        for (table, sort_key) in [
            (self.tables.processed(), "event_id"),
            (self.tables.trace(), "idx"),
            (self.tables.timers(), "path"),
        ] {
            let keys = self.partition_keys(&table, sort_key, execution_id).await?;
            self.delete_keys(&table, keys).await?;
        }
        for (table, attr) in [
            (self.tables.outbox(), "target_id"),
            (self.tables.spawns(), "parent_id"),
        ] {
            let rows = self
                .scan_all(&table, |r| {
                    r.filter_expression("#a = :v")
                        .expression_attribute_names("#a", attr)
                        .expression_attribute_values(":v", s(execution_id))
                        .projection_expression("seq")
                })
                .await?;
            let keys = rows
                .into_iter()
                .filter_map(|item| item.get("seq").cloned())
                .map(|seq| HashMap::from([("seq".to_string(), seq)]))
                .collect();
            self.delete_keys(&table, keys).await?;
        }
        Ok(deleted)
    }
}
