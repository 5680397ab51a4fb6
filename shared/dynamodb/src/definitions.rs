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
