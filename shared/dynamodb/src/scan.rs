//! Table-wide reads and batched deletes the other concerns share: paged Scans, one
//! partition's Query, deletes in batches of 25.

use super::*;

impl DynamoDbStore {
    /// Scan a whole table, following `LastEvaluatedKey` through every page. Not an `async
    /// fn` around `scan_pages`: one more nested future would push the sweeper's main future
    /// past the compiler's layout depth limit.
    pub(crate) fn scan_all<'a>(
        &'a self,
        table: &'a str,
        configure: impl Fn(ScanFluentBuilder) -> ScanFluentBuilder + 'a,
    ) -> impl std::future::Future<Output = StoreResult<Vec<Item>>> + 'a {
        self.scan_pages(table, configure, |_, _| {})
    }

    /// `scan_all`, telling `on_page` the pages and items read after each page.
    pub(crate) async fn scan_pages(
        &self,
        table: &str,
        configure: impl Fn(ScanFluentBuilder) -> ScanFluentBuilder,
        on_page: impl Fn(usize, usize),
    ) -> StoreResult<Vec<Item>> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        let mut pages = 0;
        loop {
            let req = configure(self.client.scan().table_name(table))
                .set_exclusive_start_key(start.take())
                .return_consumed_capacity(ReturnConsumedCapacity::Total);
            let resp = req
                .send()
                .await
                .map_err(|e| errors::classify("Scan", table, e))?;
            items.extend(resp.items().iter().cloned());
            pages += 1;
            on_page(pages, items.len());
            match resp.last_evaluated_key() {
                Some(key) if !key.is_empty() => start = Some(key.clone()),
                _ => return Ok(items),
            }
        }
    }

    /// Every item of `table` in the partition of `execution_id`, in sort-key order (a Query
    /// of its key, all pages): what one execution has there, whatever the table holds.
    pub(crate) async fn partition(
        &self,
        table: &str,
        execution_id: &str,
        configure: impl Fn(QueryFluentBuilder) -> QueryFluentBuilder,
    ) -> StoreResult<Vec<Item>> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let req = self
                .client
                .query()
                .table_name(table)
                .key_condition_expression("execution_id = :e")
                .expression_attribute_values(":e", s(execution_id))
                .set_exclusive_start_key(start.take());
            let resp = configure(req)
                .send()
                .await
                .map_err(|e| errors::classify("Query", table, e))?;
            items.extend(resp.items().iter().cloned());
            match resp.last_evaluated_key() {
                Some(key) if !key.is_empty() => start = Some(key.clone()),
                _ => return Ok(items),
            }
        }
    }

    /// Every key of `table` in the partition of `execution_id`.
    pub(crate) async fn partition_keys(
        &self,
        table: &str,
        sort_key: &str,
        execution_id: &str,
    ) -> StoreResult<Vec<Item>> {
        self.partition(table, execution_id, |q| {
            q.projection_expression("execution_id, #sk")
                .expression_attribute_names("#sk", sort_key)
        })
        .await
    }

    /// Delete by key, 25 per BatchWriteItem, re-sending whatever comes back unprocessed.
    pub(crate) async fn delete_keys(&self, table: &str, keys: Vec<Item>) -> StoreResult<()> {
        for chunk in keys.chunks(25) {
            let mut pending: Vec<WriteRequest> = chunk
                .iter()
                .map(|k| {
                    WriteRequest::builder()
                        .delete_request(
                            DeleteRequest::builder()
                                .set_key(Some(k.clone()))
                                .build()
                                .expect("key is set"),
                        )
                        .build()
                })
                .collect();
            let mut backoff = Duration::from_millis(50);
            while !pending.is_empty() {
                let resp = self
                    .client
                    .batch_write_item()
                    .request_items(table, pending)
                    .send()
                    .await
                    .map_err(|e| errors::classify("BatchWriteItem", table, e))?;
                pending = resp
                    .unprocessed_items()
                    .and_then(|u| u.get(table))
                    .cloned()
                    .unwrap_or_default();
                if !pending.is_empty() {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
        Ok(())
    }
}
