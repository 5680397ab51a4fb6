//! `commit` as one `TransactWriteItems`: the CAS-conditioned Execution Put first, then the
//! outbox, spawns, processed mark, timers and the trace ring, exactly as harel lays them
//! out; the size limits checked before anything is sent; the outcome decided from the
//! cancellation reasons.
//!
//! The processed mark is written only if absent: the dedupe decision is taken by the
//! transaction, not by the read before it. A `BatchGetItem` is read-committed item by item,
//! so a worker can read the Execution after another writer's transaction and the mark from
//! before it; its CAS then matches and, with harel's unconditional mark, the event would be
//! applied twice. A mark that exists cancels the commit, and the reasons say so.

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    CancellationReason, Delete, Put, ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem,
};
use harel_model::pyjson::json_dumps;
use harel_model::{Execution, Status};
use harel_store::listing::{machine_status_key, sort_key, status_key};
use harel_store::{Commit, StoreError, TimerOp};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::codec::{self, item_size, n_float, n_int, s, Item};
use crate::errors;
use crate::tables::{Tables, LIST_MPK, LIST_PK, LIST_SK, PARENT, RETAIN_UNTIL};

/// DynamoDB's limits on one transaction and one item.
pub const MAX_TRANSACTION_ITEMS: usize = 100;
/// DynamoDB's limit on a transaction's total size, in bytes (4 MB).
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;
/// DynamoDB's limit on one item's size, in bytes (400 KB); a bigger Execution fails its commit.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

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

/// SQS keeps a message at most 14 days: past that no redelivery can need its dedupe mark.
pub const MARK_MIN_RETENTION_SECS: u64 = 15 * 24 * 3600;

/// The TTLs a commit writes, in epoch seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Retention {
    /// Zero: no TTL anywhere (keep forever).
    pub secs: u64,
    /// Epoch seconds of the commit.
    pub now: f64,
}

impl Retention {
    fn on(&self) -> bool {
        self.secs > 0
    }

    /// The executions item's TTL: retention after it finished, only once DONE or CANCELLED
    /// (FAILED awaits an operator; anything else is live).
    pub fn execution(&self, exe: &Execution) -> Option<u64> {
        let finished = matches!(exe.status, Status::Done | Status::Cancelled);
        (self.on() && finished)
            .then(|| exe.finished_at.unwrap_or(self.now).max(0.0) as u64 + self.secs)
    }

    /// A dedupe mark's TTL: it must outlive any redelivery of its message.
    pub fn mark(&self) -> Option<u64> {
        self.on()
            .then(|| self.now.max(0.0) as u64 + self.secs.max(MARK_MIN_RETENTION_SECS))
    }

    /// A trace row's TTL: retention after it was written.
    pub fn trace(&self) -> Option<u64> {
        self.on().then(|| self.now.max(0.0) as u64 + self.secs)
    }
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
    exe_item.insert(LIST_PK.into(), s(status_key(exe.status, child)));
    exe_item.insert(
        LIST_MPK.into(),
        s(machine_status_key(&exe.definition_id, exe.status, child)),
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

/// Keep a machine version in the same transaction as the commit of the first execution that
/// uses it: no request of its own. An update, not a guarded put: a version is its content, so
/// when another process kept it first this writes the same values (`created_at` stays the
/// first), and nothing can cancel the commit.
pub fn keep_definition(
    plan: &mut Plan,
    tables: &Tables,
    doc: &harel_store::DefinitionDoc,
) -> Result<(), StoreError> {
    let table = tables.definitions();
    let created_at = n_float(doc.created_at)
        .map_err(|e| StoreError::other(format!("{table}: created_at: {e}")))?;
    let document = doc.document.to_string();
    let size = document.len() + doc.machine.len() + doc.version.len() + 64;
    if size > MAX_ITEM_BYTES {
        return Err(too_large(format!(
            "version {} of {} would be stored as a {size}-byte item, above DynamoDB's {MAX_ITEM_BYTES}-byte item limit",
            doc.version, doc.machine
        )));
    }
    if plan.items.len() + 1 > MAX_TRANSACTION_ITEMS {
        return Err(too_large(format!(
            "keeping version {} adds a transaction item past DynamoDB's {MAX_TRANSACTION_ITEMS}",
            doc.version
        )));
    }
    let update = aws_sdk_dynamodb::types::Update::builder()
        .table_name(table)
        .key("version", s(&doc.version))
        .update_expression(
            "SET #m = if_not_exists(#m, :m), #d = if_not_exists(#d, :d), #c = if_not_exists(#c, :c)",
        )
        .expression_attribute_names("#m", "machine")
        .expression_attribute_names("#d", "document")
        .expression_attribute_names("#c", "created_at")
        .expression_attribute_values(":m", s(&doc.machine))
        .expression_attribute_values(":d", s(document))
        .expression_attribute_values(":c", created_at)
        .build()
        .expect("table name, key and expression are set");
    // last: the indexes `send_outcome` reads (version, mark, seqs, trace) stay where they are
    plan.items
        .push(TransactWriteItem::builder().update(update).build());
    Ok(())
}

/// The commit's `ClientRequestToken` (at most 36 characters): a digest of the execution id,
/// the version it moves to, the event it processes and everything else that varies between
/// two writes (the document, the seqs, the trace idx). The SDK's own retries re-send the
/// same token; a different write of the same execution and version (another worker, a
/// re-laid-out attempt) gets another token, so DynamoDB never answers it with
/// `IdempotentParameterMismatch` where the version check or the mark should speak.
pub fn request_token(
    bumped: &Execution,
    commit: &Commit,
    outbox_base: u64,
    spawn_base: u64,
    trace_idx: Option<u64>,
) -> String {
    let mut digest = Sha256::new();
    for part in [
        bumped.id.as_bytes(),
        &bumped.version.to_be_bytes(),
        commit
            .processed_event_id
            .as_deref()
            .unwrap_or("")
            .as_bytes(),
        &outbox_base.to_be_bytes(),
        &spawn_base.to_be_bytes(),
        &trace_idx.map_or(u64::MAX, |i| i).to_be_bytes(),
    ] {
        digest.update((part.len() as u64).to_be_bytes());
        digest.update(part);
    }
    digest.update(bumped.to_json().as_bytes());
    digest.update(format!("{:?}", commit.timers).as_bytes());
    digest.update(format!("{:?}", commit.published).as_bytes());
    // "harel-" and 120 bits: DynamoDB's 36 characters
    let hex: String = digest
        .finalize()
        .iter()
        .take(15)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("harel-{hex}")
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
    /// Every write applied.
    Committed,
    /// The CAS failed: `found` is the stored version when the reasons carried it (ALL_OLD),
    /// `None` inside means "absent", and an outer `None` means "read it back".
    Conflict(Option<Option<u64>>),
    /// The processed mark exists: another writer committed this event (whatever the
    /// version check said).
    AlreadyProcessed,
    /// An outbox/spawn Put met an existing seq: retry with fresh seqs.
    SeqCollision,
    /// The trace Put met an existing idx: re-read the max and retry.
    TraceCollision,
    /// Any other failure, classified retryable or not (a throttled or unreachable DynamoDB, a
    /// missing table, a refused request).
    Failed(StoreError),
}

/// Reads a `TransactWriteItems` result against the plan that was sent: which condition failed
/// decides the outcome, the cancellation reasons' positions pointing into `plan.items`.
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
    Outcome::Failed(errors::classify("TransactWriteItems", &plan.tables(), err))
}

fn from_reasons(plan: &Plan, reasons: &[CancellationReason]) -> Outcome {
    let code = |i: usize| reasons.get(i).and_then(|r| r.code()).unwrap_or("None");
    if reasons.is_empty() {
        // nothing to decide from: the caller reads the stored version back
        return Outcome::Conflict(None);
    }
    // first: a present mark means the event is done, even when the version moved too (the
    // writer that set the mark moved it); acknowledging beats a reload and a retry
    if plan
        .mark_item
        .is_some_and(|i| code(i) == "ConditionalCheckFailed")
    {
        return Outcome::AlreadyProcessed;
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
        StoreError::retryable(text)
    } else {
        StoreError::other(text)
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
        .client_request_token(plan.token.clone())
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
}
