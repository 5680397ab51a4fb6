//! `commit` as one `TransactWriteItems`: the CAS-conditioned Execution Put first, then the
//! outbox, spawns, processed mark, timers and the trace ring, exactly as harel lays them
//! out; the size limits checked before anything is sent; the outcome decided from the
//! cancellation reasons.

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    CancellationReason, Delete, Put, ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem,
};
use harel_model::pyjson::json_dumps;
use harel_model::Execution;
use harel_store::{Commit, StoreError, TimerOp};
use serde_json::Value;

use crate::codec::{self, item_size, n_float, n_int, s, Item};
use crate::errors;
use crate::tables::Tables;

/// DynamoDB's limits on one transaction and one item.
pub const MAX_TRANSACTION_ITEMS: usize = 100;
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// The top-level attribute on the Execution item holding the highest trace `idx` written,
/// so a traced commit knows the next index without harel's max-index Query. harel Python
/// neither reads nor keeps it (its Put replaces the item): its absence means "unknown".
pub const TRACE_IDX_ATTR: &str = "trace_idx";

/// One commit attempt, laid out.
pub struct Plan {
    pub items: Vec<TransactWriteItem>,
    /// Outbox seqs in `emits` order.
    pub outbox_seqs: Vec<u64>,
    /// Index range of the outbox and spawn Puts in `items` (seq collisions land there).
    pub seq_items: std::ops::Range<usize>,
    /// Index of the trace Put in `items`, if any.
    pub trace_item: Option<usize>,
    /// The trace idx the Execution item now records (written or carried).
    pub trace_idx: Option<u64>,
}

/// What the commit needs decided before laying out items.
pub struct Inputs<'a> {
    pub tables: &'a Tables,
    pub exe: &'a Execution,
    pub commit: &'a Commit,
    pub outbox_base: u64,
    pub spawn_base: u64,
    /// The highest trace idx stored for this execution: `Some(None)` = none stored,
    /// `None` = unknown (nothing to carry on the item).
    pub known_trace_max: Option<Option<u64>>,
    pub trace_max: usize,
    /// Shards of the timers' `by_due` index (every timer Put carries its shard).
    pub due_shards: u32,
}

fn put(table: String, item: Item) -> Put {
    Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .build()
        .expect("table name and item are set")
}

fn put_absent(table: String, item: Item, key_attr: &str) -> Put {
    Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression(format!("attribute_not_exists({key_attr})"))
        .build()
        .expect("table name and item are set")
}

fn delete(table: String, key: Item) -> Delete {
    Delete::builder()
        .table_name(table)
        .set_key(Some(key))
        .build()
        .expect("table name and key are set")
}

fn too_large(what: String) -> StoreError {
    StoreError::TooLarge(format!("{what}; nothing was written"))
}

/// Lay out the transaction and check DynamoDB's limits; nothing is sent.
pub fn plan(input: Inputs<'_>) -> Result<Plan, StoreError> {
    let Inputs {
        tables,
        exe,
        commit,
        outbox_base,
        spawn_base,
        known_trace_max,
        trace_max,
        due_shards,
    } = input;
    let old = exe.version;
    let mut bumped = exe.clone();
    bumped.version = old + 1;

    let trace_idx = match (&commit.trace, known_trace_max) {
        (Some(_), Some(max)) => Some(max.map_or(0, |m| m + 1)),
        (Some(_), None) => {
            return Err(StoreError::Other(format!(
                "internal: the trace index of {:?} was not resolved before laying out its commit",
                exe.id
            )))
        }
        (None, Some(max)) => max,
        (None, None) => None,
    };

    let mut exe_item: Item = Item::new();
    exe_item.insert("id".into(), s(exe.id.as_str()));
    exe_item.insert("data".into(), s(bumped.to_json()));
    exe_item.insert("version".into(), n_int(bumped.version));
    exe_item.insert("definition_id".into(), s(exe.definition_id.as_str()));
    if let Some(idx) = trace_idx {
        exe_item.insert(TRACE_IDX_ATTR.into(), n_int(idx));
    }
    let exe_size = item_size(&exe_item);
    if exe_size > MAX_ITEM_BYTES {
        return Err(too_large(format!(
            "execution {:?} would be stored as a {exe_size}-byte item, above DynamoDB's {MAX_ITEM_BYTES}-byte item limit",
            exe.id
        )));
    }

    // the Execution Put carries the CAS: insert iff absent, else update iff the stored
    // version is still the one loaded; ALL_OLD hands back the stored version on a miss
    let mut cas = Put::builder()
        .table_name(tables.executions())
        .set_item(Some(exe_item))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    cas = if old == 0 {
        cas.condition_expression("attribute_not_exists(id)")
    } else {
        cas.condition_expression("version = :ov")
            .expression_attribute_values(":ov", n_int(old))
    };
    let mut puts: Vec<(TransactWriteItem, usize)> = vec![(
        TransactWriteItem::builder()
            .put(cas.build().expect("table name and item are set"))
            .build(),
        exe_size,
    )];

    let mut outbox_seqs = Vec::with_capacity(commit.emits.len());
    for (i, (target, event)) in commit.emits.iter().enumerate() {
        let seq = outbox_base + i as u64;
        outbox_seqs.push(seq);
        let mut item = Item::new();
        item.insert("seq".into(), n_int(seq));
        item.insert(
            "target_id".into(),
            match target {
                Some(t) => s(t.as_str()),
                None => aws_sdk_dynamodb::types::AttributeValue::Null(true),
            },
        );
        item.insert("event".into(), s(event.to_json()));
        let size = item_size(&item);
        puts.push((
            TransactWriteItem::builder()
                .put(put_absent(tables.outbox(), item, "seq"))
                .build(),
            size,
        ));
    }
    for (i, spawn) in commit.spawns.iter().enumerate() {
        let mut item = Item::new();
        item.insert("seq".into(), n_int(spawn_base + i as u64));
        item.insert("parent_id".into(), s(exe.id.as_str()));
        item.insert("child_id".into(), s(spawn.child_id.as_str()));
        item.insert("root_path".into(), s(spawn.root_path.as_str()));
        item.insert(
            "context".into(),
            s(json_dumps(&Value::Object(spawn.context.clone()), false)),
        );
        let size = item_size(&item);
        puts.push((
            TransactWriteItem::builder()
                .put(put_absent(tables.spawns(), item, "seq"))
                .build(),
            size,
        ));
    }
    let seq_items = 1..puts.len();
    if let Some(event_id) = &commit.processed_event_id {
        let mut item = Item::new();
        item.insert("execution_id".into(), s(exe.id.as_str()));
        item.insert("event_id".into(), s(event_id.as_str()));
        let size = item_size(&item);
        puts.push((
            TransactWriteItem::builder()
                .put(put(tables.processed(), item))
                .build(),
            size,
        ));
    }
    for op in last_op_per_path(&commit.timers) {
        let mut item = Item::new();
        item.insert("execution_id".into(), s(exe.id.as_str()));
        match op {
            TimerOp::Schedule { path, fire_at } => {
                item.insert("path".into(), s(path.as_str()));
                item.insert(
                    "fire_at".into(),
                    n_float(*fire_at).map_err(|e| {
                        StoreError::Other(format!("timer {path:?} of {:?}: {e}", exe.id))
                    })?,
                );
                // beside harel's three attributes: puts the row in the sparse `by_due` index
                let shard = crate::timers::due_shard(&exe.id, path, due_shards);
                item.insert(crate::timers::DUE_SHARD_ATTR.into(), s(shard.to_string()));
                let size = item_size(&item);
                puts.push((
                    TransactWriteItem::builder()
                        .put(put(tables.timers(), item))
                        .build(),
                    size,
                ));
            }
            TimerOp::Cancel { path } => {
                item.insert("path".into(), s(path.as_str()));
                let size = item_size(&item);
                puts.push((
                    TransactWriteItem::builder()
                        .delete(delete(tables.timers(), item))
                        .build(),
                    size,
                ));
            }
        }
    }
    let mut trace_item = None;
    if let (Some(entry), Some(idx)) = (&commit.trace, trace_idx) {
        let mut item = Item::new();
        item.insert("execution_id".into(), s(exe.id.as_str()));
        item.insert("idx".into(), n_int(idx));
        item.insert(
            "entry".into(),
            s(json_dumps(&Value::Object(entry.clone()), false)),
        );
        let size = item_size(&item);
        trace_item = Some(puts.len());
        // guarded: an idx someone else wrote meanwhile (harel's standalone `append_trace`)
        // cancels instead of being overwritten, and the idx is then re-read
        puts.push((
            TransactWriteItem::builder()
                .put(put_absent(tables.trace(), item, "idx"))
                .build(),
            size,
        ));
        // the ring: drop the step leaving the last-N window, in the same transaction
        if trace_max > 0 && idx >= trace_max as u64 {
            let mut key = Item::new();
            key.insert("execution_id".into(), s(exe.id.as_str()));
            key.insert("idx".into(), n_int(idx - trace_max as u64));
            let size = item_size(&key);
            puts.push((
                TransactWriteItem::builder()
                    .delete(delete(tables.trace(), key))
                    .build(),
                size,
            ));
        }
    }

    if puts.len() > MAX_TRANSACTION_ITEMS {
        return Err(too_large(format!(
            "the commit of execution {:?} needs {} transaction items, above DynamoDB's {MAX_TRANSACTION_ITEMS}",
            exe.id,
            puts.len()
        )));
    }
    for (i, (_, size)) in puts.iter().enumerate().skip(1) {
        if *size > MAX_ITEM_BYTES {
            return Err(too_large(format!(
                "item {i} of the commit of execution {:?} is {size} bytes, above DynamoDB's {MAX_ITEM_BYTES}-byte item limit",
                exe.id
            )));
        }
    }
    let total: usize = puts.iter().map(|(_, size)| size).sum();
    if total > MAX_TRANSACTION_BYTES {
        return Err(too_large(format!(
            "the commit of execution {:?} is {total} bytes, above DynamoDB's {MAX_TRANSACTION_BYTES}-byte transaction limit",
            exe.id
        )));
    }
    Ok(Plan {
        items: puts.into_iter().map(|(item, _)| item).collect(),
        outbox_seqs,
        seq_items,
        trace_item,
        trace_idx,
    })
}

/// The timer ops with only the last one per path: their sequential effect (a re-entered
/// timed state cancels then re-arms its timer in one step). harel 0.9.0 sends both, and
/// DynamoDB refuses a transaction with two operations on one item (ValidationException), so
/// such a step can never commit there; harel's other backends apply them in order, as here.
fn last_op_per_path(ops: &[TimerOp]) -> Vec<&TimerOp> {
    let path = |op: &TimerOp| match op {
        TimerOp::Schedule { path, .. } | TimerOp::Cancel { path } => path.clone(),
    };
    let mut out: Vec<&TimerOp> = Vec::with_capacity(ops.len());
    for op in ops {
        match out.iter().position(|o| path(o) == path(op)) {
            Some(i) => out[i] = op,
            None => out.push(op),
        }
    }
    out
}

/// How a sent transaction ended.
pub enum Outcome {
    Committed,
    /// The CAS failed: `found` is the stored version when the reasons carried it (ALL_OLD),
    /// `None` inside means "absent", and an outer `None` means "read it back".
    Conflict(Option<Option<u64>>),
    /// An outbox/spawn Put met an existing seq: retry with fresh seqs.
    SeqCollision,
    /// The trace Put met an existing idx: re-read the max and retry.
    TraceCollision,
    Failed(StoreError),
}

pub fn send_outcome(
    plan: &Plan,
    result: Result<(), aws_sdk_dynamodb::error::SdkError<TransactWriteItemsError>>,
) -> Outcome {
    let err = match result {
        Ok(()) => return Outcome::Committed,
        Err(err) => err,
    };
    if let Some(TransactWriteItemsError::TransactionCanceledException(cancel)) =
        err.as_service_error()
    {
        return from_reasons(plan, cancel.cancellation_reasons());
    }
    // older emulators answer a failed condition with the bare exception, no reasons
    if err.code() == Some("ConditionalCheckFailedException") {
        return Outcome::Conflict(None);
    }
    Outcome::Failed(errors::classify("TransactWriteItems", &err))
}

fn from_reasons(plan: &Plan, reasons: &[CancellationReason]) -> Outcome {
    let code = |i: usize| reasons.get(i).and_then(|r| r.code()).unwrap_or("None");
    if reasons.is_empty() {
        // nothing to decide from: the caller reads the stored version back
        return Outcome::Conflict(None);
    }
    if code(0) == "ConditionalCheckFailed" {
        // ALL_OLD returns the stored item when there is one; without it, read the version back
        let found = reasons[0]
            .item()
            .and_then(|item| codec::get_u64(item, "version").ok())
            .map(Some);
        return Outcome::Conflict(found);
    }
    if plan
        .seq_items
        .clone()
        .any(|i| code(i) == "ConditionalCheckFailed")
    {
        return Outcome::SeqCollision;
    }
    if plan
        .trace_item
        .is_some_and(|i| code(i) == "ConditionalCheckFailed")
    {
        return Outcome::TraceCollision;
    }
    let codes: Vec<String> = reasons
        .iter()
        .enumerate()
        .filter(|(_, r)| r.code().is_some_and(|c| c != "None"))
        .map(|(i, r)| {
            format!(
                "item {i}: {}{}",
                r.code().unwrap_or("?"),
                r.message().map(|m| format!(" ({m})")).unwrap_or_default()
            )
        })
        .collect();
    let text = format!(
        "DynamoDB TransactWriteItems cancelled, not by the version check: {}",
        codes.join("; ")
    );
    let transient = reasons
        .iter()
        .filter_map(|r| r.code())
        .any(|c| errors::RETRYABLE_REASONS.contains(&c));
    Outcome::Failed(if transient {
        StoreError::Retryable(text)
    } else {
        StoreError::Other(text)
    })
}

/// The request, with consumed capacity asked for (the benchmark reads it).
pub fn request(
    client: &aws_sdk_dynamodb::Client,
    plan: &Plan,
) -> aws_sdk_dynamodb::operation::transact_write_items::builders::TransactWriteItemsFluentBuilder {
    client
        .transact_write_items()
        .set_transact_items(Some(plan.items.clone()))
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
}
