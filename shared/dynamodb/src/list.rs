//! `list_executions`: through the listing indexes (reads O(limit) items whatever the table
//! holds), or by a full Scan (`ListQuery::scan`) that also finds rows harel Python wrote,
//! whose Put drops the index attributes.

mod merge;

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, ReturnConsumedCapacity};
use harel_model::{Execution, ExecutionPage, ExecutionSummary, Status};
use harel_store::listing::{machine_status_key, page_of, sort_key, status_key, Cursor};
use harel_store::{memory::matches, ListQuery, StoreError, StoreResult};

use crate::codec::{get_s, get_u64, s, Item};
use crate::shards::{sharded, LIST_SHARDS};
use crate::tables::{BY_MACHINE_STATUS, BY_PARENT, BY_STATUS, LIST_MPK, LIST_PK, LIST_SK, PARENT};
use crate::{errors, DynamoDbStore};

/// BatchGetItem's cap on keys per request.
const BATCH_GET_MAX: usize = 100;

/// Progress of a `--scan` listing: Scan pages read so far and items they held.
pub type ScanProgress = dyn Fn(usize, usize) + Send + Sync;

impl DynamoDbStore {
    pub(crate) async fn list(&self, query: &ListQuery) -> StoreResult<ExecutionPage> {
        let cursor = Cursor::after(query.cursor.as_deref(), query.scan)?;
        if query.scan {
            return self.list_by_scan(query, cursor).await;
        }
        let after = match cursor {
            Some(Cursor::After(sk)) => Some(sk),
            _ => None,
        };
        self.list_by_index(query, after).await
    }

    /// Each status partition (root, and child unless `roots_only`) is sharded
    /// ([`LIST_SHARDS`]); the shards' newest keys past the cursor are merged lazily
    /// ([`merge`]: each shard first asked for its share of `limit + 1` and one more, all at
    /// once), and one BatchGetItem reads the newest `limit` rows. Queries: one a shard, more
    /// only where the spread is uneven; keys read: about `limit` plus one a shard; items read:
    /// at most `limit`. None of it grows with the table.
    async fn list_by_index(
        &self,
        query: &ListQuery,
        after: Option<String>,
    ) -> StoreResult<ExecutionPage> {
        let mut statuses = query.status.clone().unwrap_or_else(|| Status::ALL.to_vec());
        statuses.sort_by_key(|s| s.as_str());
        statuses.dedup();
        let kinds: &[bool] = if query.roots_only {
            &[false]
        } else {
            &[false, true]
        };
        let (index, attr) = match &query.definition_id {
            Some(_) => (BY_MACHINE_STATUS, LIST_MPK),
            None => (BY_STATUS, LIST_PK),
        };
        let mut partitions = Vec::new();
        for status in &statuses {
            for &child in kinds {
                let logical = match &query.definition_id {
                    Some(def) => machine_status_key(def, *status, child),
                    None => status_key(*status, child),
                };
                partitions.extend((0..LIST_SHARDS).map(|shard| sharded(&logical, shard)));
            }
        }
        let want = query.limit + 1;
        let first = merge::first_ask(want, LIST_SHARDS as usize);
        let mut keys = merge::newest(partitions.len(), want, first, |i, start, limit| {
            self.index_page(index, attr, &partitions[i], after.as_deref(), limit, start)
        })
        .await?;
        let more = keys.len() > query.limit;
        keys.truncate(query.limit);
        let ids: Vec<String> = keys.iter().map(|(_, id)| id.clone()).collect();
        let rows = self.rows_by_id(&ids).await?;
        let table = self.tables.executions();
        let mut items = Vec::with_capacity(ids.len());
        for id in &ids {
            // purged since the index was read
            let Some(item) = rows.get(id) else { continue };
            let summary = summary_of(&table, item)?;
            // changed status since the index was read: it belongs to another listing now
            if matches(&summary, query) {
                items.push(summary);
            }
        }
        let next_cursor = match keys.last() {
            Some((sk, _)) if more => Some(Cursor::After(sk.clone()).encode()),
            _ => None,
        };
        Ok(ExecutionPage { items, next_cursor })
    }

    /// One page of one index partition: at most `limit` (list_sk, id), newest first, older
    /// than `after`, from `start`.
    async fn index_page(
        &self,
        index: &str,
        attr: &str,
        partition: &str,
        after: Option<&str>,
        limit: usize,
        start: Option<Item>,
    ) -> StoreResult<merge::Page<Item>> {
        let table = self.tables.executions();
        let mut req = self
            .client
            .query()
            .table_name(&table)
            .index_name(index)
            .expression_attribute_names("#pk", attr)
            .expression_attribute_values(":p", s(partition))
            .scan_index_forward(false)
            .limit(limit.min(i32::MAX as usize) as i32)
            .set_exclusive_start_key(start)
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        req = match after {
            Some(sk) => req
                .key_condition_expression("#pk = :p AND #sk < :after")
                .expression_attribute_names("#sk", LIST_SK)
                .expression_attribute_values(":after", s(sk)),
            None => req.key_condition_expression("#pk = :p"),
        };
        let resp = req
            .send()
            .await
            .map_err(|e| errors::classify("Query", &table, e))?;
        let corrupt = |e| errors::corrupt(&format!("{table} index {index}"), e);
        let keys = resp
            .items()
            .iter()
            .map(|item| {
                Ok((
                    get_s(item, LIST_SK).map_err(corrupt)?.to_string(),
                    get_s(item, "id").map_err(corrupt)?.to_string(),
                ))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let next = resp.last_evaluated_key().filter(|k| !k.is_empty()).cloned();
        Ok(merge::Page { keys, next })
    }

    /// The executions items (`id`, `data`, `version`) of `ids`, by id; absent ones left out.
    async fn rows_by_id(&self, ids: &[String]) -> StoreResult<HashMap<String, Item>> {
        let table = self.tables.executions();
        let mut out = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(BATCH_GET_MAX) {
            let keys = KeysAndAttributes::builder()
                .set_keys(Some(
                    chunk
                        .iter()
                        .map(|id| HashMap::from([("id".to_string(), s(id))]))
                        .collect(),
                ))
                .projection_expression("#i, #d, #v")
                .expression_attribute_names("#i", "id")
                .expression_attribute_names("#d", "data")
                .expression_attribute_names("#v", "version")
                .build()
                .expect("keys are set");
            let mut request = HashMap::from([(table.clone(), keys)]);
            let mut backoff = Duration::from_millis(50);
            for attempt in 0.. {
                let resp = self
                    .client
                    .batch_get_item()
                    .set_request_items(Some(request))
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(|e| errors::classify("BatchGetItem", &table, e))?;
                for item in resp
                    .responses()
                    .and_then(|r| r.get(&table))
                    .into_iter()
                    .flatten()
                {
                    let id = get_s(item, "id").map_err(|e| errors::corrupt(&table, e))?;
                    out.insert(id.to_string(), item.clone());
                }
                request = resp.unprocessed_keys().cloned().unwrap_or_default();
                request.retain(|_, k| !k.keys().is_empty());
                if request.is_empty() {
                    break;
                }
                if attempt >= 8 {
                    return Err(StoreError::retryable(
                        "DynamoDB BatchGetItem left listed executions unprocessed after 8 attempts",
                    ));
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
        Ok(out)
    }

    /// harel 0.9.0's listing: drain every Scan page, filter client-side; then newest first
    /// like the index listing, paged by offset.
    async fn list_by_scan(
        &self,
        query: &ListQuery,
        cursor: Option<Cursor>,
    ) -> StoreResult<ExecutionPage> {
        let table = self.tables.executions();
        let definition_id = query.definition_id.clone();
        let progress = self.scan_progress.clone();
        let rows = self
            .scan_pages(
                &table,
                |req| {
                    let req = req
                        .projection_expression("#dat,#v")
                        .expression_attribute_names("#dat", "data")
                        .expression_attribute_names("#v", "version");
                    match &definition_id {
                        Some(def) => req
                            .expression_attribute_names("#def", "definition_id")
                            .filter_expression("#def = :def")
                            .expression_attribute_values(":def", s(def)),
                        None => req,
                    }
                },
                |pages, items| {
                    if let Some(p) = &progress {
                        p(pages, items)
                    }
                },
            )
            .await?;
        let mut matched = Vec::new();
        for item in &rows {
            let data = get_s(item, "data").map_err(|e| errors::corrupt(&table, e))?;
            let exe = Execution::from_json(data)
                .map_err(|e| StoreError::Corrupt(format!("{table}: execution data: {e}")))?;
            let mut summary = ExecutionSummary::of(&exe);
            summary.version = get_u64(item, "version").unwrap_or(0);
            if matches(&summary, query) {
                matched.push((sort_key(&exe), summary));
            }
        }
        matched.sort_by(|a, b| b.0.cmp(&a.0));
        Ok(page_of(matched, cursor, query.limit, true))
    }
}

impl DynamoDbStore {
    /// A tree's descendants by the `by_parent` index, breadth first: one Query per member,
    /// never a Scan. A root last written by harel Python (its Put drops our attributes, so
    /// its children may lack them too) falls back to harel's prefix Scan.
    pub(crate) async fn tree_by_parent(&self, root_id: &str) -> StoreResult<Vec<String>> {
        let table = self.tables.executions();
        let resp = self
            .client
            .get_item()
            .table_name(&table)
            .key("id", s(root_id))
            .projection_expression("#sk")
            .expression_attribute_names("#sk", LIST_SK)
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| errors::classify("GetItem", &table, e))?;
        match resp.item() {
            None => return Ok(Vec::new()),
            Some(item) if !item.contains_key(LIST_SK) => {
                return self.ids_with_prefix_scan(&format!("{root_id}:")).await
            }
            Some(_) => {}
        }
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::from([root_id.to_string()]);
        let mut frontier = std::collections::VecDeque::from([root_id.to_string()]);
        while let Some(parent) = frontier.pop_front() {
            let mut start: Option<Item> = None;
            loop {
                let resp = self
                    .client
                    .query()
                    .table_name(&table)
                    .index_name(BY_PARENT)
                    .key_condition_expression("#p = :p")
                    .expression_attribute_names("#p", PARENT)
                    .expression_attribute_values(":p", s(&parent))
                    .set_exclusive_start_key(start.take())
                    .send()
                    .await
                    .map_err(|e| errors::classify("Query", &table, e))?;
                for item in resp.items() {
                    let id = get_s(item, "id").map_err(|e| errors::corrupt(&table, e))?;
                    if seen.insert(id.to_string()) {
                        out.push(id.to_string());
                        frontier.push_back(id.to_string());
                    }
                }
                match resp.last_evaluated_key() {
                    Some(key) if !key.is_empty() => start = Some(key.clone()),
                    _ => break,
                }
            }
        }
        Ok(out)
    }
}

fn summary_of(table: &str, item: &Item) -> StoreResult<ExecutionSummary> {
    let data = get_s(item, "data").map_err(|e| errors::corrupt(table, e))?;
    let exe = Execution::from_json(data)
        .map_err(|e| StoreError::Corrupt(format!("{table}: execution data: {e}")))?;
    let mut summary = ExecutionSummary::of(&exe);
    if let Some(AttributeValue::N(_)) = item.get("version") {
        summary.version = get_u64(item, "version").map_err(|e| errors::corrupt(table, e))?;
    }
    Ok(summary)
}
