//! Timers by time: each timer row this store writes also carries `due_shard`, so the sparse
//! GSI `by_due` (HASH `due_shard`, RANGE `fire_at`, keys only) answers "what is due" with one
//! Query per shard that reads only the due rows. Rows written by harel Python carry no
//! `due_shard` (its Put replaces ours on a re-arm), are absent from the index, and are found
//! by the compatibility Scan (`legacy_due_timers`).
//!
//! Why shards: all timers due in the same second would otherwise share one GSI partition key,
//! and a partition takes about 1000 writes a second; `S` shards spread a burst over `S`
//! partitions, for `S` Queries per look (each at least 0.5 RCU, eventually consistent).

use super::*;
use harel_store::{DueAndNext, DueTimer, StoreError, StoreResult};

use crate::codec::{get_f64, get_s, Item};
use crate::errors;

/// The index on the timers table.
pub const DUE_INDEX: &str = "by_due";
/// The index's partition key on timer rows (a decimal string, "0".."S-1").
pub const DUE_SHARD_ATTR: &str = "due_shard";
/// Shards of the index unless the store is told otherwise (`with_due_shards`).
pub const DEFAULT_DUE_SHARDS: u32 = 8;
/// `IN` takes at most 100 operands; the compatibility Scan lists every shard.
pub const MAX_DUE_SHARDS: u32 = 100;

/// The shard of a timer: the stable hash of `execution_id \0 path`, mod `shards`
/// ([`crate::shards`]).
pub fn due_shard(execution_id: &str, path: &str, shards: u32) -> u32 {
    crate::shards::shard_of(&[execution_id, path], shards)
}

/// A timer row as both reads return it (index keys or a full row: the same attributes).
pub fn due_timer_of(table: &str, item: &Item) -> StoreResult<DueTimer> {
    let corrupt = |e| errors::corrupt(table, e);
    Ok(DueTimer {
        execution_id: get_s(item, "execution_id").map_err(corrupt)?.to_string(),
        path: get_s(item, "path").map_err(corrupt)?.to_string(),
        fire_at: get_f64(item, "fire_at").map_err(corrupt)?,
    })
}

/// The shard count if it is 1..=100, else the error a misconfigured store reports.
pub fn check_shards(shards: u32) -> Result<u32, StoreError> {
    if (1..=MAX_DUE_SHARDS).contains(&shards) {
        Ok(shards)
    } else {
        Err(StoreError::other(format!(
            "due shards must be 1..={MAX_DUE_SHARDS}, got {shards}"
        )))
    }
}

impl DynamoDbStore {
    /// One page of shard `shard` of `by_due`: its rows with `fire_at <= until`, soonest
    /// first, from `start`, at most `limit` of them.
    async fn due_page(
        &self,
        table: &str,
        shard: u32,
        until: &str,
        limit: Option<i32>,
        start: Option<Item>,
    ) -> StoreResult<aws_sdk_dynamodb::operation::query::QueryOutput> {
        self.client
            .query()
            .table_name(table)
            .index_name(timers::DUE_INDEX)
            .key_condition_expression("#ds = :s AND fire_at <= :until")
            .expression_attribute_names("#ds", timers::DUE_SHARD_ATTR)
            .expression_attribute_values(":s", s(shard.to_string()))
            .expression_attribute_values(":until", AttributeValue::N(until.to_string()))
            .scan_index_forward(true)
            .set_limit(limit)
            .set_exclusive_start_key(start)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|e| errors::classify("Query", table, e))
    }

    /// One Query per shard of `by_due` for `fire_at <= until`, soonest first, concurrently;
    /// `limit` stops each shard at its first page of that many rows, else every page is read.
    pub(crate) async fn query_due_shards(
        &self,
        until: &str,
        limit: Option<i32>,
    ) -> StoreResult<Vec<Vec<Item>>> {
        let table = self.tables.timers();
        let queries = (0..self.due_shards).map(|shard| {
            let table = table.clone();
            async move {
                let mut items = Vec::new();
                let mut start: Option<Item> = None;
                loop {
                    let resp = self
                        .due_page(&table, shard, until, limit, start.take())
                        .await?;
                    items.extend(resp.items().iter().cloned());
                    match resp.last_evaluated_key() {
                        Some(key) if !key.is_empty() && limit.is_none() => {
                            start = Some(key.clone())
                        }
                        _ => return Ok::<_, StoreError>(items),
                    }
                }
            }
        });
        let mut out = Vec::with_capacity(self.due_shards as usize);
        for result in join_all(queries).await {
            out.push(result?);
        }
        Ok(out)
    }

    /// The sweeper's look, every shard concurrently: a shard's first two rows not after
    /// `horizon`, and while they are all due, its next pages (of [`LOOK_PAGE`] rows) until
    /// its first row after `now`. So one Query per idle shard (as `next_timer_due`), and the
    /// rows read are the timers due plus at most a page per busy shard (a row is about 100
    /// bytes of keys).
    async fn look_due_shards(
        &self,
        now: f64,
        horizon: &str,
    ) -> StoreResult<(Vec<DueTimer>, Option<f64>)> {
        let table = self.tables.timers();
        let looks = (0..self.due_shards).map(|shard| {
            let table = table.clone();
            async move {
                let mut due = Vec::new();
                let mut start: Option<Item> = None;
                let mut limit = 2;
                loop {
                    let resp = self
                        .due_page(&table, shard, horizon, Some(limit), start.take())
                        .await?;
                    for item in resp.items() {
                        let timer = timers::due_timer_of(&table, item)?;
                        if timer.fire_at > now {
                            return Ok::<_, StoreError>((due, Some(timer.fire_at)));
                        }
                        due.push(timer);
                    }
                    match resp.last_evaluated_key() {
                        Some(key) if !key.is_empty() => start = Some(key.clone()),
                        _ => return Ok((due, None)),
                    }
                    limit = LOOK_PAGE;
                }
            }
        });
        let mut due = Vec::new();
        let mut next: Option<f64> = None;
        for result in join_all(looks).await {
            let (shard_due, shard_next) = result?;
            due.extend(shard_due);
            next = match (next, shard_next) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        due.sort_by(|a, b| a.fire_at.total_cmp(&b.fire_at));
        Ok((due, next))
    }
}

/// The page a busy shard is read on in (see `look_due_shards`): at most this many rows read
/// past the first one after `now` (about 2.5 KB of keys, under one read unit).
const LOOK_PAGE: i32 = 25;

impl Timers for DynamoDbStore {
    async fn due_timers(&self, now: f64) -> StoreResult<Vec<DueTimer>> {
        let now = py_decimal_str(now).map_err(|e| StoreError::other(format!("due_timers: {e}")))?;
        let table = self.tables.timers();
        let mut out = Vec::new();
        for rows in self.query_due_shards(&now, None).await? {
            for item in &rows {
                out.push(timers::due_timer_of(&table, item)?);
            }
        }
        out.sort_by(|a, b| a.fire_at.total_cmp(&b.fire_at));
        Ok(out)
    }

    async fn legacy_due_timers(&self, now: f64) -> StoreResult<Vec<DueTimer>> {
        let table = self.tables.timers();
        let now = py_decimal_str(now)
            .map_err(|e| StoreError::other(format!("legacy_due_timers: {e}")))?;
        // rows the index misses: harel Python's (no shard), and shards past ours (a writer
        // configured with more shards), so a mismatch is late, never lost
        let shards: Vec<String> = (0..self.due_shards).map(|i| format!(":s{i}")).collect();
        let filter = format!(
            "fire_at <= :now AND (attribute_not_exists(#ds) OR NOT (#ds IN ({})))",
            shards.join(", ")
        );
        let rows = self
            .scan_all(&table, |r| {
                let mut r = r
                    .filter_expression(&filter)
                    .expression_attribute_names("#ds", timers::DUE_SHARD_ATTR)
                    .expression_attribute_values(":now", AttributeValue::N(now.clone()));
                for (i, name) in shards.iter().enumerate() {
                    r = r.expression_attribute_values(name, s(i.to_string()));
                }
                r
            })
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for item in &rows {
            out.push(timers::due_timer_of(&table, item)?);
        }
        out.sort_by(|a, b| a.fire_at.total_cmp(&b.fire_at));
        Ok(out)
    }

    async fn due_and_next(&self, now: f64, horizon: f64) -> StoreResult<DueAndNext> {
        let horizon = py_decimal_str(horizon.max(now))
            .map_err(|e| StoreError::other(format!("due_and_next: {e}")))?;
        let (due, next) = self.look_due_shards(now, &horizon).await?;
        Ok(DueAndNext { due, next })
    }

    async fn next_timer_due(&self, horizon: f64) -> StoreResult<Option<f64>> {
        let horizon = py_decimal_str(horizon)
            .map_err(|e| StoreError::other(format!("next_timer_due: {e}")))?;
        let table = self.tables.timers();
        let mut next: Option<f64> = None;
        for rows in self.query_due_shards(&horizon, Some(1)).await? {
            if let Some(item) = rows.first() {
                let at = get_f64(item, "fire_at").map_err(|e| errors::corrupt(&table, e))?;
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        Ok(next)
    }

    async fn armed_timers(&self, execution_id: &str) -> StoreResult<Vec<DueTimer>> {
        let table = self.tables.timers();
        let corrupt = |e| errors::corrupt(&table, e);
        let mut out = self
            .partition(&table, execution_id, |q| q)
            .await?
            .iter()
            .map(|item| {
                Ok(DueTimer {
                    execution_id: execution_id.to_string(),
                    path: get_s(item, "path").map_err(corrupt)?.to_string(),
                    fire_at: get_f64(item, "fire_at").map_err(corrupt)?,
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        out.sort_by(|a, b| a.fire_at.total_cmp(&b.fire_at).then(a.path.cmp(&b.path)));
        Ok(out)
    }

    async fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> StoreResult<()> {
        let guard = codec::n_float(fire_at)
            .map_err(|e| StoreError::other(format!("delete_timer {path:?}: {e}")))?;
        let result = self
            .client
            .delete_item()
            .table_name(self.tables.timers())
            .key("execution_id", s(execution_id))
            .key("path", s(path))
            .condition_expression("fire_at = :f")
            .expression_attribute_values(":f", guard)
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // the timer was re-armed (or already fired): a stale sweep is a no-op
            Err(e) if e.code() == Some("ConditionalCheckFailedException") => Ok(()),
            Err(e) => Err(errors::classify("DeleteItem", &self.tables.timers(), e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_stable_and_spread() {
        // pinned (computed independently): a changed hash would strand every row indexed
        // before it in a shard no sweeper reads
        assert_eq!(due_shard("order-1", "Checkout.Wait", 8), 6);
        assert_eq!(due_shard("a", "b", 1000), 754);
        assert_eq!(due_shard("", "", 1000), 455);
        let mut seen = [0usize; 8];
        for i in 0..800 {
            seen[due_shard(&format!("exe-{i}"), "A.B", 8) as usize] += 1;
        }
        assert!(
            seen.iter().all(|&n| n > 60),
            "800 keys over 8 shards: {seen:?}"
        );
        assert_eq!(due_shard("x", "y", 1), 0);
    }
}
