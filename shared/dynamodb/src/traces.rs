//! The opt-in step trace: the ring of the last N steps, and the per-process memory of each
//! execution's highest trace index (so a traced commit needs no Query first).

use super::*;

impl DynamoDbStore {
    pub(crate) fn remember_trace(&self, id: &str, version: u64, max: Option<u64>) {
        let mut known = self.trace_known.lock().unwrap_or_else(|e| e.into_inner());
        if known.len() >= TRACE_CACHE_MAX {
            known.clear();
        }
        known.insert(id.to_string(), (version, max));
    }

    pub(crate) fn forget_trace(&self, id: &str) {
        self.trace_known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }

    pub(crate) fn known_trace_max(&self, id: &str, version: u64) -> Option<Option<u64>> {
        if version == 0 {
            // a brand-new execution has no trace yet (purge removes a reused id's)
            return Some(None);
        }
        self.trace_known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .filter(|(v, _)| *v == version)
            .map(|(_, max)| *max)
    }

    /// harel's `_max_trace_idx`: a Query on the partition, newest first, one row.
    pub(crate) async fn query_trace_max(&self, execution_id: &str) -> StoreResult<Option<u64>> {
        let resp = self
            .client
            .query()
            .table_name(self.tables.trace())
            .key_condition_expression("execution_id = :e")
            .expression_attribute_values(":e", s(execution_id))
            .projection_expression("idx")
            .scan_index_forward(false)
            .limit(1)
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| errors::classify("Query", &self.tables.trace(), e))?;
        match resp.items().first() {
            Some(item) => Ok(Some(
                get_u64(item, "idx").map_err(|e| errors::corrupt(&self.tables.trace(), e))?,
            )),
            None => Ok(None),
        }
    }

    pub(crate) async fn put_trace(
        &self,
        execution_id: &str,
        idx: u64,
        entry: &Object,
    ) -> StoreResult<()> {
        let retain = self.retention_now().trace();
        self.client
            .put_item()
            .table_name(self.tables.trace())
            .set_item(retain.map(|until| HashMap::from([(RETAIN_UNTIL.to_string(), n_int(until))])))
            .item("execution_id", s(execution_id))
            .item("idx", n_int(idx))
            .item(
                "entry",
                s(harel_model::pyjson::json_dumps(
                    &serde_json::Value::Object(entry.clone()),
                    false,
                )),
            )
            .send()
            .await
            .map_err(|e| errors::classify("PutItem", &self.tables.trace(), e))?;
        if self.trace_max > 0 && idx >= self.trace_max as u64 {
            self.client
                .delete_item()
                .table_name(self.tables.trace())
                .key("execution_id", s(execution_id))
                .key("idx", n_int(idx - self.trace_max as u64))
                .send()
                .await
                .map_err(|e| errors::classify("DeleteItem", &self.tables.trace(), e))?;
        }
        Ok(())
    }
}

impl Traces for DynamoDbStore {
    async fn read_trace(&self, execution_id: &str) -> StoreResult<Vec<Object>> {
        // all pages (harel reads one Query page, which would cut a ring past 1 MB short)
        let table = self.tables.trace();
        let mut out = Vec::new();
        for item in self.partition(&table, execution_id, |q| q).await? {
            let idx = get_u64(&item, "idx").map_err(|e| errors::corrupt(&table, e))?;
            let text = get_s(&item, "entry").map_err(|e| errors::corrupt(&table, e))?;
            let mut entry: Object = serde_json::from_str(text)
                .map_err(|e| StoreError::Corrupt(format!("{table}: entry {idx}: {e}")))?;
            entry.insert("index".into(), idx.into());
            out.push(entry);
        }
        Ok(out)
    }

    async fn append_trace(&self, execution_id: &str, entry: Object) -> StoreResult<()> {
        let idx = match entry.get("index").and_then(|v| v.as_u64()) {
            Some(idx) => idx,
            None => self
                .query_trace_max(execution_id)
                .await?
                .map_or(0, |m| m + 1),
        };
        // a commit of this process must not trust its remembered max past this write
        self.forget_trace(execution_id);
        self.put_trace(execution_id, idx, &entry).await
    }
}
