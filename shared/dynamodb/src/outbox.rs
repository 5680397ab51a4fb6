//! What commits left behind for the relay: outbox rows, spawn intents, events for the bus.

use super::*;

impl Outbox for DynamoDbStore {
    async fn pending_outbox(&self) -> StoreResult<Vec<OutboxEntry>> {
        let table = self.tables.outbox();
        let rows = self.scan_all(&table, |r| r).await?;
        let mut out = Vec::with_capacity(rows.len());
        for item in &rows {
            let seq = get_u64(item, "seq").map_err(|e| errors::corrupt(&table, e))?;
            let target_id = get_opt_s(item, "target_id").map_err(|e| errors::corrupt(&table, e))?;
            let text = get_s(item, "event").map_err(|e| errors::corrupt(&table, e))?;
            let event: Event = serde_json::from_str(text)
                .map_err(|e| StoreError::Corrupt(format!("{table}: event of seq {seq}: {e}")))?;
            out.push(OutboxEntry {
                seq,
                target_id: target_id.map(SmolStr::from),
                event,
            });
        }
        out.sort_by_key(|e| e.seq);
        Ok(out)
    }

    async fn ack_outbox(&self, seq: u64) -> StoreResult<()> {
        self.client
            .delete_item()
            .table_name(self.tables.outbox())
            .key("seq", n_int(seq))
            .send()
            .await
            .map_err(|e| errors::classify("DeleteItem", &self.tables.outbox(), e))?;
        Ok(())
    }

    async fn pending_published(&self) -> StoreResult<Vec<BusEvent>> {
        let table = self.tables.events();
        let rows = self.scan_all(&table, |r| r.consistent_read(true)).await?;
        let mut out = Vec::with_capacity(rows.len());
        for item in &rows {
            let corrupt = |e| errors::corrupt(&table, e);
            let text = get_s(item, "entry").map_err(corrupt)?;
            let mut event: BusEvent = serde_json::from_str(text)
                .map_err(|e| StoreError::Corrupt(format!("{table}: event entry: {e}")))?;
            if let Some(attempts) = item.get("attempts").and_then(|a| a.as_n().ok()) {
                event.attempts = attempts.parse().unwrap_or(event.attempts);
            }
            out.push(event);
        }
        // oldest first; within one commit, in the order it wrote them
        out.sort_by(|a, b| {
            a.time
                .total_cmp(&b.time)
                .then_with(|| a.execution_id.cmp(&b.execution_id))
                .then_with(|| (a.sequence, a.index).cmp(&(b.sequence, b.index)))
        });
        Ok(out)
    }

    async fn ack_published(&self, event_ids: &[&str]) -> StoreResult<()> {
        let keys = event_ids
            .iter()
            .map(|id| HashMap::from([("event_id".to_string(), s(*id))]))
            .collect();
        self.delete_keys(&self.tables.events(), keys).await
    }

    async fn retry_published(&self, event_id: &str, attempts: u32) -> StoreResult<()> {
        // only while the row is there: an event acknowledged meanwhile stays gone
        let result = self
            .client
            .update_item()
            .table_name(self.tables.events())
            .key("event_id", s(event_id))
            .update_expression("SET attempts = :a")
            .condition_expression("attribute_exists(event_id)")
            .expression_attribute_values(":a", n_int(attempts as u64))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Some("ConditionalCheckFailedException") => Ok(()),
            Err(e) => Err(errors::classify("UpdateItem", &self.tables.events(), e)),
        }
    }

    async fn pending_spawns(&self) -> StoreResult<Vec<SpawnEntry>> {
        let table = self.tables.spawns();
        let rows = self.scan_all(&table, |r| r).await?;
        let mut out = Vec::with_capacity(rows.len());
        for item in &rows {
            let corrupt = |e| errors::corrupt(&table, e);
            let seq = get_u64(item, "seq").map_err(corrupt)?;
            let text = get_s(item, "context").map_err(corrupt)?;
            let context: Object = serde_json::from_str(text)
                .map_err(|e| StoreError::Corrupt(format!("{table}: context of seq {seq}: {e}")))?;
            out.push(SpawnEntry {
                seq,
                parent_id: get_s(item, "parent_id").map_err(corrupt)?.into(),
                child_id: get_s(item, "child_id").map_err(corrupt)?.into(),
                root_path: get_s(item, "root_path").map_err(corrupt)?.into(),
                context,
            });
        }
        out.sort_by_key(|e| e.seq);
        Ok(out)
    }

    async fn ack_spawn(&self, seq: u64) -> StoreResult<()> {
        self.client
            .delete_item()
            .table_name(self.tables.spawns())
            .key("seq", n_int(seq))
            .send()
            .await
            .map_err(|e| errors::classify("DeleteItem", &self.tables.spawns(), e))?;
        Ok(())
    }
}
