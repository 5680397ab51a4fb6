//! A commit laid out as `TransactWriteItems` entries, exactly as harel lays them out: the
//! CAS-conditioned Execution Put first, then the outbox and spawn Puts, the processed mark,
//! the timers, the trace ring and the bus events; what the outcome needs to read the
//! cancellation reasons back (the positions of the seq, mark and trace items).
//!
//! In the lean commit mode the Execution is an `Update` instead: it sets the item's
//! attributes and the step's mark in its slot of the item's window (`crate::marks`), and no
//! `processed` item is written; a step with nothing else to write is then sent alone, as one
//! `UpdateItem` (`super::send`).

use crate::shards::{machine_status_partition, status_partition};
use std::collections::HashMap;

use aws_sdk_dynamodb::types::{
    Delete, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use harel_model::pyjson::json_dumps;
use harel_model::Execution;
use harel_stack::CommitMode;
use harel_store::listing::sort_key;
use harel_store::{Commit, StoreError, TimerOp};
use serde_json::Value;

use super::limits::{self, too_large, MAX_ITEM_BYTES};
use super::retention::Retention;
use super::token::token_of_document;
use crate::codec::{item_size, n_float, n_int, s, Item};
use crate::marks;
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
    /// The lean commit mode's Execution write, what tells its outcome (None: compat).
    pub lean: Option<LeanWrite>,
}

/// What a lean commit wrote into the Execution item, to read a failed condition by: the item
/// as stored (`ALL_OLD`) holding this write's [`COMMIT_ID_ATTR`] means the write was this
/// one, its answer lost; holding this event's mark means the event was applied.
pub struct LeanWrite {
    /// The attempt's random id, written beside the document (8 bytes).
    pub commit_id: [u8; 8],
    /// The event whose mark the commit writes, if it applies one.
    pub event_id: Option<String>,
}

/// The attribute a lean commit stamps with its attempt's random id. An `UpdateItem` carries no
/// request token, so the SDK's resend of a write whose answer was lost meets its own write;
/// this id tells that from another writer's (which may have written the very same document).
pub const COMMIT_ID_ATTR: &str = "commit_id";

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
    /// Where the dedupe mark goes: its own `processed` item, or the Execution item's window.
    pub mode: CommitMode,
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
        mode,
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
    // the document, serialized once: the item's `data` and the request token's digest
    let document = bumped.to_json();
    let token = token_of_document(
        &bumped,
        &document,
        commit,
        outbox_base,
        spawn_base,
        trace_idx,
    );
    exe_item.insert("data".into(), s(document));
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
    let mut exe_size = item_size(&exe_item);
    if mode == CommitMode::Lean {
        // the window's slots ride in the same item, whichever this commit writes
        exe_size += marks::window_bytes() + COMMIT_ID_ATTR.len() + 8;
    }
    if exe_size > MAX_ITEM_BYTES {
        return Err(too_large(format!(
            "execution {:?} would be stored as a {exe_size}-byte item, above DynamoDB's {MAX_ITEM_BYTES}-byte item limit",
            exe.id
        )));
    }

    let (cas_item, lean) = match mode {
        CommitMode::Compat => (compat_cas(tables, exe_item, old), None),
        CommitMode::Lean => {
            let event_id = commit.processed_event_id.as_deref();
            let mut commit_id = [0u8; 8];
            commit_id.copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[..8]);
            exe_item.insert(
                COMMIT_ID_ATTR.into(),
                aws_sdk_dynamodb::types::AttributeValue::B(commit_id.to_vec().into()),
            );
            let item = lean_cas(tables, exe_item, old, event_id);
            let lean = LeanWrite {
                commit_id,
                event_id: event_id.map(str::to_string),
            };
            (item, Some(lean))
        }
    };
    let mut puts: Vec<(TransactWriteItem, usize)> = vec![(cas_item, exe_size)];

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
    // lean: the mark is in the Execution item's window
    if let (Some(event_id), CommitMode::Compat) = (&commit.processed_event_id, mode) {
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
    Ok(Plan {
        items: puts.into_iter().map(|(item, _)| item).collect(),
        outbox_seqs,
        seq_items,
        trace_item,
        mark_item,
        token,
        trace_idx,
        lean,
    })
}

/// harel's Execution write: a Put of the whole item carrying the CAS, insert iff absent, else
/// replace iff the stored version is still the one loaded; ALL_OLD hands back the stored
/// version on a miss.
fn compat_cas(tables: &Tables, exe_item: Item, old: u64) -> TransactWriteItem {
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
    TransactWriteItem::builder()
        .put(cas.build().expect("table name and item are set"))
        .build()
}

/// The optional attributes of an Execution item: a lean Update removes them when the commit
/// has none (a Put would have dropped them with the old item).
const OPTIONAL_ATTRS: [&str; 2] = [TRACE_IDX_ATTR, RETAIN_UNTIL];

/// The lean Execution write: an Update setting every attribute of `exe_item` and, when the
/// commit applies an event, its mark in the slot of the version it writes; the other slots
/// stay as stored, so no read of them comes first. The condition is harel's CAS and no slot
/// holding the mark; ALL_OLD hands back the stored item (its version, its window and its
/// commit id) on a miss.
fn lean_cas(
    tables: &Tables,
    mut exe_item: Item,
    old: u64,
    event_id: Option<&str>,
) -> TransactWriteItem {
    let key = exe_item.remove("id").expect("the item has its key");
    if let Some(event_id) = event_id {
        exe_item.insert(
            marks::slot_attr(marks::slot_of(old + 1)),
            marks::mark_value(event_id),
        );
    }
    let mut attrs: Vec<(String, aws_sdk_dynamodb::types::AttributeValue)> =
        exe_item.into_iter().collect();
    // one expression for one write: the token and a reader of the request see the same text
    attrs.sort_by(|a, b| a.0.cmp(&b.0));
    let mut names = HashMap::new();
    let mut values = HashMap::new();
    let mut sets = Vec::with_capacity(attrs.len());
    for (i, (name, value)) in attrs.iter().enumerate() {
        names.insert(format!("#a{i}"), name.clone());
        values.insert(format!(":a{i}"), value.clone());
        sets.push(format!("#a{i} = :a{i}"));
    }
    let removes: Vec<String> = OPTIONAL_ATTRS
        .iter()
        .filter(|name| !attrs.iter().any(|(n, _)| n == *name))
        .enumerate()
        .map(|(i, name)| {
            names.insert(format!("#r{i}"), (*name).to_string());
            format!("#r{i}")
        })
        .collect();
    let mut expression = format!("SET {}", sets.join(", "));
    if !removes.is_empty() {
        expression.push_str(&format!(" REMOVE {}", removes.join(", ")));
    }
    let mut condition = if old == 0 {
        names.insert("#k".into(), "id".into());
        "attribute_not_exists(#k)".to_string()
    } else {
        names.insert("#ov".into(), "version".into());
        values.insert(":ov".into(), n_int(old));
        "#ov = :ov".to_string()
    };
    // and no slot holds the event's mark: the commit itself refuses an applied event, as
    // compat's conditional mark does, whatever the read before it saw
    if let Some(event_id) = event_id {
        values.insert(":mk".into(), marks::mark_value(event_id));
        for (i, slot) in marks::slot_attrs().enumerate() {
            names.insert(format!("#m{i}"), slot);
            condition.push_str(&format!(
                " AND (attribute_not_exists(#m{i}) OR #m{i} <> :mk)"
            ));
        }
    }
    let update = Update::builder()
        .table_name(tables.executions())
        .key("id", key)
        .update_expression(expression)
        .condition_expression(condition)
        .set_expression_attribute_names(Some(names))
        .set_expression_attribute_values(Some(values))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .build()
        .expect("table name, key and expression are set");
    TransactWriteItem::builder().update(update).build()
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
