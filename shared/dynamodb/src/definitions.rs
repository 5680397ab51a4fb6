//! Machine versions: kept once, the first with the commit of the first execution that uses it.

use super::*;

pub(crate) fn definition_of(table: &str, item: &Item) -> StoreResult<DefinitionDoc> {
    let text = get_s(item, "document").map_err(|e| errors::corrupt(table, e))?;
    Ok(DefinitionDoc {
        version: get_s(item, "version")
            .map_err(|e| errors::corrupt(table, e))?
            .to_string(),
        machine: get_s(item, "machine")
            .map_err(|e| errors::corrupt(table, e))?
            .to_string(),
        created_at: get_f64(item, "created_at").map_err(|e| errors::corrupt(table, e))?,
        document: serde_json::from_str(text)
            .map_err(|e| StoreError::Corrupt(format!("{table}: document: {e}")))?,
    })
}

impl Definitions for DynamoDbStore {
    async fn commit_keeping(
        &self,
        exe: &mut Execution,
        commit: Commit,
        doc: &DefinitionDoc,
    ) -> StoreResult<Vec<u64>> {
        self.commit_with(exe, commit, Some(doc)).await
    }

    async fn put_definition(&self, doc: &DefinitionDoc) -> StoreResult<bool> {
        let table = self.tables.definitions();
        let created_at = codec::n_float(doc.created_at)
            .map_err(|e| StoreError::other(format!("{table}: created_at: {e}")))?;
        let result = self
            .client
            .put_item()
            .table_name(&table)
            .item("version", s(&doc.version))
            .item("machine", s(&doc.machine))
            .item("created_at", created_at)
            .item("document", s(doc.document.to_string()))
            .condition_expression("attribute_not_exists(#v)")
            .expression_attribute_names("#v", "version")
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            // a version is its content: whoever kept it first kept the same thing
            Err(e) if e.code() == Some("ConditionalCheckFailedException") => Ok(false),
            Err(e) => Err(errors::classify("PutItem", &table, e)),
        }
    }

    async fn get_definition(&self, version: &str) -> StoreResult<Option<DefinitionDoc>> {
        let table = self.tables.definitions();
        // strongly consistent: the put may have been another process's a moment ago
        let resp = self
            .client
            .get_item()
            .table_name(&table)
            .key("version", s(version))
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|e| errors::classify("GetItem", &table, e))?;
        resp.item()
            .map(|item| definition_of(&table, item))
            .transpose()
    }

    /// Eventually consistent, the key alone projected (the read units are the whole item's
    /// all the same): a version once kept is never removed, so a "kept" read at any replica
    /// is exact, and a stale "not kept" only keeps it again with the commit (the same
    /// content, `if_not_exists`).
    async fn has_definition(&self, version: &str) -> StoreResult<bool> {
        let table = self.tables.definitions();
        let resp = self
            .client
            .get_item()
            .table_name(&table)
            .key("version", s(version))
            .projection_expression("#v")
            .expression_attribute_names("#v", "version")
            .consistent_read(false)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|e| errors::classify("GetItem", &table, e))?;
        Ok(resp.item().is_some())
    }

    /// One BatchGetItem for both, eventually consistent (see `load_eventually` and
    /// `has_definition`): the existence check of a create, which a cold process (a `harel
    /// run` command, a cold worker) makes anyway, learns the version is kept with no request
    /// of its own.
    async fn load_with_definition(
        &self,
        execution_id: &str,
        version: &str,
    ) -> StoreResult<(Option<Execution>, bool)> {
        let exe_table = self.tables.executions();
        let def_table = self.tables.definitions();
        let def_keys = KeysAndAttributes::builder()
            .keys(HashMap::from([("version".to_string(), s(version))]))
            .projection_expression("#v")
            .expression_attribute_names("#v", "version")
            .consistent_read(false)
            .build()
            .expect("keys are set");
        let request = HashMap::from([
            (exe_table.clone(), self.execution_keys(execution_id, false)),
            (def_table.clone(), def_keys),
        ]);
        let mut found = self.batch_get(request, execution_id).await?;
        let kept = found.remove(&def_table).is_some_and(|v| !v.is_empty());
        let exe = found
            .remove(&exe_table)
            .and_then(|v| v.into_iter().next())
            .map(|item| self.execution_of(&item))
            .transpose()?;
        Ok((exe, kept))
    }

    async fn list_definitions(&self) -> StoreResult<Vec<DefinitionDoc>> {
        let table = self.tables.definitions();
        let items = self
            .scan_all(&table, |req| req.consistent_read(true))
            .await?;
        let mut docs = items
            .iter()
            .map(|item| definition_of(&table, item))
            .collect::<StoreResult<Vec<_>>>()?;
        docs.sort_by(|a, b| a.created_at.total_cmp(&b.created_at));
        Ok(docs)
    }
}
