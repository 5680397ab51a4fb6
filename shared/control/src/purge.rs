//! purge (harel's `purge_flow`, `purge_finished_flow` and `archive.JsonlArchive`):
//! permanently delete finished execution trees, optionally archiving each first.
//!
//! Only a root whose whole tree is DONE or CANCELLED is deleted (a FAILED execution awaits an
//! operator: `terminate` it first). Descendants go first, the root last, each only if
//! unchanged since it was checked, so an interrupted purge is resumed by running it again.
//! Candidates of `purge_finished` come from the store's listing, newest first, starting at
//! the cutoff (an execution finished before the cutoff was created before it), so a store
//! with a listing index reads the old roots only. One difference from harel follows: an
//! undated root (no `finished_at`) created after the cutoff is neither counted in
//! `skipped_undated` nor purged by `include_undated` (harel lists every finished root; such
//! a root was written by a harel older than `finished_at`, so it rarely has a `created_at`
//! either, and then it sorts oldest and is seen).

use std::collections::HashSet;
use std::io::Write as _;
use std::path::PathBuf;

use harel_model::pyjson::json_dumps_compact_utf8;
use harel_model::pyrepr::py_repr;
use harel_model::{Execution, Status};
use harel_store::listing::Cursor;
use harel_store::{ExecutionStore, ListQuery, StoreError};
use serde_json::{json, Map, Value};

use crate::ControlError;

/// The statuses a purged tree may be in: finished for good.
pub const PURGEABLE: [Status; 2] = [Status::Done, Status::Cancelled];

/// Where a tree goes before it is deleted: an error aborts the purge with nothing deleted.
/// A retried purge may hand the same `root_id` again.
pub trait Archive {
    /// Store `bundle` (`{"root_id", "executions", "traces"}`, harel's `_archive_bundle`)
    /// durably, or fail: the purge deletes the tree only after this returned Ok.
    fn archive(&mut self, bundle: &Value) -> std::io::Result<()>;
}

/// harel's `JsonlArchive`: one `json.dumps(bundle, separators=(",", ":"),
/// ensure_ascii=False)` line per tree, appended, flushed and fsynced before the purge
/// deletes anything; either side reads the other's file.
pub struct JsonlArchive {
    path: PathBuf,
}

impl JsonlArchive {
    /// An archive appending to the file at `path` (created when missing).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        JsonlArchive { path: path.into() }
    }
}

impl Archive for JsonlArchive {
    fn archive(&mut self, bundle: &Value) -> std::io::Result<()> {
        let mut line = json_dumps_compact_utf8(bundle);
        line.push('\n');
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        f.write_all(line.as_bytes())?;
        f.flush()?;
        f.sync_all()
    }
}

/// What `purge_finished` did (harel's `PurgeReport`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PurgeReport {
    /// The roots purged (on a dry run: that would be), in listing order.
    pub purged: Vec<String>,
    /// Finished roots without `finished_at`, skipped (see `include_undated`).
    pub skipped_undated: usize,
    /// Roots refused, with harel's reason, in listing order.
    pub refused: Vec<(String, String)>,
}

/// The knobs of `purge_finished` (harel's keyword arguments).
#[derive(Clone, Debug, PartialEq)]
pub struct PurgeFinished {
    /// Seconds since the root finished.
    pub older_than: f64,
    /// A subset of [`PURGEABLE`].
    pub statuses: Vec<Status>,
    /// Also take finished roots without `finished_at` (written by a harel that predates it),
    /// which are otherwise skipped and counted.
    pub include_undated: bool,
    /// Purge at most this many roots.
    pub limit: Option<usize>,
    /// Report what would be purged (`purged`, `refused`) without archiving or deleting.
    pub dry_run: bool,
    /// Epoch seconds "now" is (the cutoff is `now - older_than`).
    pub now: f64,
    /// List candidates by reading every stored execution (`ListQuery::scan`): on DynamoDB,
    /// also the roots harel Python wrote last, which the listing index does not hold.
    pub scan: bool,
}

/// Python's `repr` of a str, as harel's messages quote ids.
fn quoted(text: &str) -> String {
    py_repr(&Value::String(text.to_string()))
}

/// harel's `_check_purgeable`, same messages.
fn check_purgeable(root: &Execution, tree: &[Execution]) -> Result<(), ControlError> {
    if let Some(parent) = &root.parent_id {
        return Err(ControlError::PurgeRefused(format!(
            "purge refused: {} is a child of {} — purge its root, which removes the whole tree",
            quoted(&root.id),
            quoted(parent)
        )));
    }
    let live: Vec<&Execution> = tree
        .iter()
        .filter(|e| !PURGEABLE.contains(&e.status))
        .collect();
    if live.is_empty() {
        return Ok(());
    }
    let listed: Vec<String> = live
        .iter()
        .map(|e| format!("{} ({})", e.id, e.status.as_str()))
        .collect();
    let hint = if live.iter().any(|e| e.status == Status::Failed) {
        " — terminate a dead letter to abandon it"
    } else {
        ""
    };
    Err(ControlError::PurgeRefused(format!(
        "purge refused: not finished: {}{hint}",
        listed.join(", ")
    )))
}

/// harel's `_collect_tree_flow` + `_tree_of`: the root and its stored descendants, parents
/// first, and the ids a member lists in `children` that are no longer stored. The store's
/// `descendant_ids` finds those a parent dropped from `children` (a returned invoke, a
/// re-entered fork); `children` finds what it spawned. Only ids whose `parent_id` chain
/// reaches the root are taken in.
async fn collect_tree<S: ExecutionStore>(
    store: &S,
    root: &Execution,
) -> Result<(Vec<Execution>, Vec<String>), ControlError> {
    let mut found: Vec<Execution> = Vec::new();
    let mut known: HashSet<String> = HashSet::new();
    for id in store.descendant_ids(&root.id).await? {
        if known.contains(&id) {
            continue;
        }
        if let Some(e) = store.load(&id).await? {
            known.insert(id);
            found.push(e);
        }
    }
    let mut frontier: Vec<Execution> = std::iter::once(root.clone())
        .chain(found.iter().cloned())
        .collect();
    while let Some(exe) = frontier.pop() {
        for cid in exe.children.keys() {
            if cid.as_str() == root.id.as_str() || known.contains(cid.as_str()) {
                continue;
            }
            if let Some(child) = store.load(cid).await? {
                known.insert(cid.to_string());
                found.push(child.clone());
                frontier.push(child);
            }
        }
    }
    let mut members: Vec<Execution> = vec![root.clone()];
    let mut in_tree: HashSet<String> = HashSet::from([root.id.to_string()]);
    let mut added = true;
    while added {
        added = false;
        for exe in &found {
            let joins = exe
                .parent_id
                .as_ref()
                .is_some_and(|p| in_tree.contains(p.as_str()));
            if !in_tree.contains(exe.id.as_str()) && joins {
                in_tree.insert(exe.id.to_string());
                members.push(exe.clone());
                added = true;
            }
        }
    }
    let missing = members
        .iter()
        .flat_map(|e| e.children.keys())
        .filter(|cid| !in_tree.contains(cid.as_str()))
        .map(|cid| cid.to_string())
        .collect();
    Ok((members, missing))
}

/// harel's `_archive_bundle`: the tree root first as `model_dump(mode="json")`, each
/// member's trace.
async fn bundle<S: ExecutionStore>(
    store: &S,
    root: &Execution,
    tree: &[Execution],
) -> Result<Value, ControlError> {
    let mut traces = Map::new();
    for e in tree {
        let steps = store.read_trace(&e.id).await?;
        traces.insert(
            e.id.to_string(),
            Value::Array(steps.into_iter().map(Value::Object).collect()),
        );
    }
    let executions: Vec<Value> = tree
        .iter()
        .map(|e| serde_json::to_value(e).expect("an Execution always serializes"))
        .collect();
    Ok(json!({"root_id": root.id.as_str(), "executions": executions, "traces": traces}))
}

async fn purge_one<S: ExecutionStore>(store: &S, exe: &Execution) -> Result<(), ControlError> {
    if store.purge(&exe.id, exe.version).await? {
        return Ok(());
    }
    Err(StoreError::Conflict {
        execution_id: exe.id.to_string(),
        expected: exe.version,
        found: None,
    }
    .into())
}

/// harel's `purge`: delete the finished tree rooted at `execution_id` and everything the
/// store keys by its members. `Ok(false)` if there is no such execution (already purged).
/// Refuses a child or a tree with a member not DONE/CANCELLED
/// ([`ControlError::PurgeRefused`]); a member changed since it was checked stops the purge
/// with a conflict, and running it again resumes it.
pub async fn purge<S: ExecutionStore>(
    store: &S,
    execution_id: &str,
    archive: Option<&mut (dyn Archive + Send + 'static)>,
) -> Result<bool, ControlError> {
    let Some(root) = store.load(execution_id).await? else {
        return Ok(false);
    };
    let (tree, missing) = collect_tree(store, &root).await?;
    check_purgeable(&root, &tree)?;
    if let Some(archive) = archive {
        let bundle = bundle(store, &root, &tree).await?;
        archive
            .archive(&bundle)
            .map_err(|source| ControlError::Archive {
                root_id: root.id.to_string(),
                source,
            })?;
    }
    for exe in tree[1..].iter().rev() {
        purge_one(store, exe).await?;
    }
    for cid in &missing {
        // what an interrupted purge left behind (the version is unused when absent)
        store.purge(cid, 0).await?;
    }
    purge_one(store, &root).await?;
    Ok(true)
}

/// The listing cursor that starts at executions created before `cutoff` (newest first).
fn created_before(cutoff: f64) -> String {
    let micros = if cutoff.is_finite() && cutoff > 0.0 {
        (cutoff * 1e6).round() as u64
    } else {
        0
    };
    // "{micros}#" sorts after every key of that microsecond... none of which is wanted
    Cursor::After(format!("{micros:016}#")).encode()
}

/// harel's `purge_finished`: purge every root tree (in `statuses`) that finished more than
/// `older_than` seconds before `now`. All candidates are listed before any is deleted; a
/// candidate refused (a live member, a concurrent change) is reported and the run goes on;
/// an archive or store failure stops it.
pub async fn purge_finished<S: ExecutionStore>(
    store: &S,
    opts: &PurgeFinished,
    mut archive: Option<&mut (dyn Archive + Send + 'static)>,
) -> Result<PurgeReport, ControlError> {
    if opts.statuses.iter().any(|s| !PURGEABLE.contains(s)) {
        return Err(ControlError::InvalidArgument(
            "only DONE, CANCELLED executions can be purged".into(),
        ));
    }
    let cutoff = opts.now - opts.older_than;
    let mut report = PurgeReport::default();
    let mut candidates: Vec<String> = Vec::new();
    let mut query = ListQuery {
        status: Some(opts.statuses.clone()),
        definition_id: None,
        roots_only: true,
        limit: 500,
        cursor: (!opts.scan).then(|| created_before(cutoff)),
        scan: opts.scan,
    };
    while opts.limit.is_none_or(|l| candidates.len() < l) {
        let page = store.list_executions(&query).await?;
        for summary in &page.items {
            match summary.finished_at {
                None if !opts.include_undated => {
                    report.skipped_undated += 1;
                    continue;
                }
                Some(t) if t >= cutoff => continue,
                _ => candidates.push(summary.id.clone()),
            }
        }
        match page.next_cursor {
            Some(c) => query.cursor = Some(c),
            None => break,
        }
    }
    if let Some(l) = opts.limit {
        candidates.truncate(l);
    }
    if opts.dry_run {
        for root_id in candidates {
            let Some(root) = store.load(&root_id).await? else {
                continue;
            };
            let (tree, _) = collect_tree(store, &root).await?;
            match check_purgeable(&root, &tree) {
                Ok(()) => report.purged.push(root_id),
                Err(e) => report.refused.push((root_id, e.to_string())),
            }
        }
        return Ok(report);
    }
    for root_id in candidates {
        match purge(store, &root_id, archive.as_deref_mut()).await {
            Ok(true) => report.purged.push(root_id),
            Ok(false) => {}
            Err(e @ ControlError::PurgeRefused(_)) => report.refused.push((root_id, e.to_string())),
            Err(ControlError::Store(e @ StoreError::Conflict { .. })) => {
                report.refused.push((root_id, e.to_string()))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_say_what_harel_says() {
        let mut root = Execution::new("m").with_id("r");
        root.status = Status::Done;
        let mut child = Execution::new("m").with_id("r:A:1");
        child.parent_id = Some("r".into());
        child.status = Status::Running;
        let mut dead = child.clone().with_id("r:B:1");
        dead.status = Status::Failed;
        let err = check_purgeable(&child, &[child.clone()])
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "purge refused: 'r:A:1' is a child of 'r' — purge its root, which removes the whole tree"
        );
        let err = check_purgeable(&root, &[root.clone(), child.clone(), dead])
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "purge refused: not finished: r:A:1 (RUNNING), r:B:1 (FAILED) — terminate a dead letter to abandon it"
        );
        child.status = Status::Cancelled;
        assert!(check_purgeable(&root, &[root.clone(), child]).is_ok());
    }

    #[test]
    fn the_cutoff_cursor_lists_what_was_created_before_it() {
        let c = Cursor::decode(&created_before(1_700_000_000.5)).unwrap();
        assert_eq!(c, Cursor::After("1700000000500000#".into()));
        let mut at = Execution::new("m").with_id("x");
        at.created_at = Some(1_700_000_000.5);
        assert!(harel_store::listing::sort_key(&at).as_str() > "1700000000500000#");
    }
}
