//! A commit laid out as `TransactWriteItems` entries, exactly as harel lays them out: the
//! CAS-conditioned Execution Put first, then the outbox and spawn Puts, the processed mark,
//! the timers, the trace ring and the bus events; what the outcome needs to read the
//! cancellation reasons back (the positions of the seq, mark and trace items).

use crate::shards::{machine_status_partition, status_partition};
use aws_sdk_dynamodb::types::{
    Delete, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
};
use harel_model::pyjson::json_dumps;
use harel_model::Execution;
use harel_store::listing::sort_key;
use harel_store::{Commit, StoreError, TimerOp};
use serde_json::Value;

use super::limits::{self, too_large, MAX_ITEM_BYTES};
use super::retention::Retention;
use super::token::request_token;
use crate::codec::{item_size, n_float, n_int, s, Item};
use crate::tables::{Tables, LIST_MPK, LIST_PK, LIST_SK, PARENT, RETAIN_UNTIL};

/// The top-level attribute on the Execution item holding the highest trace `idx` written,
/// so a traced commit knows the next index without harel's max-index Query. harel Python
/// neither reads nor keeps it (its Put replaces the item): its absence means "unknown".
pub const TRACE_IDX_ATTR: &str = "trace_idx";

/// One commit attempt, laid out.
pub struct Plan {
    /// The TransactWriteItems entries: the Execution's conditional Put (the CAS) first, then the
    /// commit's other writes.
    pub items: Vec<TransactWriteItem>,
    /// Outbox seqs in `emits` order.
    pub outbox_seqs: Vec<u64>,
    /// Index range of the outbox and spawn Puts in `items` (seq collisions land there).
    pub seq_items: std::ops::Range<usize>,
    /// Index of the trace Put in `items`, if any.
    pub trace_item: Option<usize>,
    /// Index of the processed mark's Put in `items`, if the commit carries one.
    pub mark_item: Option<usize>,
    /// `ClientRequestToken`: the same for the same write, so a request the SDK sends again
    /// after a lost answer is acknowledged by DynamoDB as the success it was (for 10
    /// minutes) instead of failing its own conditions.
    pub token: String,
    /// The trace idx the Execution item now records (written or carried).
    pub trace_idx: Option<u64>,
}

impl Plan {
    /// The tables the transaction writes, in order, each once: what a failure names (a
    /// missing table fails the whole transaction with a message that names none).
    pub fn tables(&self) -> String {
        let mut names: Vec<&str> = Vec::new();
        for item in &self.items {
            let name = item
                .put()
                .map(|p| p.table_name())
                .or_else(|| item.update().map(|u| u.table_name()))
                .or_else(|| item.delete().map(|d| d.table_name()))
                .or_else(|| item.condition_check().map(|c| c.table_name()));
            if let Some(name) = name {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        names.join(", ")
    }
}

/// What the commit needs decided before laying out items.
pub struct Inputs<'a> {
    /// The table names to write to.
    pub tables: &'a Tables,
    /// The execution as loaded: its `version` is the one the CAS expects stored (0: not stored
    /// yet).
    pub exe: &'a Execution,
    /// What the step wrote: the new state, emits, spawns, timer operations, trace, processed mark.
    pub commit: &'a Commit,
    /// The seq of the commit's first outbox entry; the others follow it, one each.
    pub outbox_base: u64,
    /// The seq of the commit's first spawn entry; the others follow it, one each.
    pub spawn_base: u64,
    /// The highest trace idx stored for this execution: `Some(None)` = none stored,
    /// `None` = unknown (nothing to carry on the item).
    pub known_trace_max: Option<Option<u64>>,
    /// The trace ring size (0: unbounded): a commit writing trace row `idx` deletes row
    /// `idx - trace_max` in the same transaction.
    pub trace_max: usize,
    /// Shards of the timers' `by_due` index (every timer Put carries its shard).
    pub due_shards: u32,
    /// How long finished work is kept (zero: forever), and the commit's wall-clock time.
    pub retention: Retention,
    /// The events for the bus this commit writes (`harel_store::events`).
    pub published: &'a [harel_store::BusEvent],
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
        retention,
        due_shards,
        published,
    } = input;
    let old = exe.version;
    let mut bumped = exe.clone();
    bumped.version = old + 1;

    let trace_idx = match (&commit.trace, known_trace_max) {
        (Some(_), Some(max)) => Some(max.map_or(0, |m| m + 1)),
        (Some(_), None) => {
            return Err(StoreError::other(format!(
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
    // the listing indexes' keys: they change only with the status (the sort key is fixed at
    // creation), so a commit that keeps the status writes no index item
    let child = exe.parent_id.is_some();
    exe_item.insert(
        LIST_PK.into(),
        s(status_partition(&exe.id, exe.status, child)),
    );
    exe_item.insert(
        LIST_MPK.into(),
        s(machine_status_partition(
            &exe.id,
            &exe.definition_id,
            exe.status,
            child,
        )),
    );
    exe_item.insert(LIST_SK.into(), s(sort_key(exe)));
    if let Some(parent) = &exe.parent_id {
        exe_item.insert(PARENT.into(), s(parent.as_str()));
    }
    if let Some(until) = retention.execution(exe) {
        exe_item.insert(RETAIN_UNTIL.into(), n_int(until));
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
    let mut mark_item = None;
    if let Some(event_id) = &commit.processed_event_id {
        let mut item = Item::new();
        item.insert("execution_id".into(), s(exe.id.as_str()));
        item.insert("event_id".into(), s(event_id.as_str()));
        if let Some(until) = retention.mark() {
            item.insert(RETAIN_UNTIL.into(), n_int(until));
        }
        let size = item_size(&item);
        mark_item = Some(puts.len());
        puts.push((
            TransactWriteItem::builder()
                .put(put_absent(tables.processed(), item, "event_id"))
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
                        StoreError::other(format!("timer {path:?} of {:?}: {e}", exe.id))
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
        if let Some(until) = retention.trace() {
            item.insert(RETAIN_UNTIL.into(), n_int(until));
        }
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

    // the events for the bus, each its own row keyed by its deterministic id: a put, not a
    // guarded one, so the same commit laid out again writes the same rows
    for event in published {
        let mut item = Item::new();
        item.insert("event_id".into(), s(event.event_id.as_str()));
        item.insert("execution_id".into(), s(event.execution_id.as_str()));
        item.insert(
            "entry".into(),
            s(serde_json::to_string(event).map_err(|e| {
                StoreError::other(format!("event {} of {:?}: {e}", event.event_id, exe.id))
            })?),
        );
        let size = item_size(&item);
        puts.push((
            TransactWriteItem::builder()
                .put(put(tables.events(), item))
                .build(),
            size,
        ));
    }

    limits::check_transaction(exe, &puts)?;
    let token = request_token(&bumped, commit, outbox_base, spawn_base, trace_idx);
    Ok(Plan {
        items: puts.into_iter().map(|(item, _)| item).collect(),
        outbox_seqs,
        seq_items,
        trace_item,
        mark_item,
        token,
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
