//! The monitor's read model (harel's `tui/model.py` and `tui/tree.py`): snapshots of the
//! store and the statechart tree with the active configuration marked. No terminal here,
//! so the screens' data is tested on the in-memory store.

use harel_model::{Definition, Execution, ExecutionSummary, NodeId, Status};
use harel_store::{ExecutionStore, ListQuery, StoreResult};

/// How a state stands in the execution's active configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// The active leaf.
    Active,
    /// An ancestor of the active leaf.
    OnActivePath,
    Inactive,
}

/// A region or invoke child the execution tracks at this state (`children` in the record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub child_id: String,
    pub finished: bool,
    pub outcome: Option<String>,
    /// An invoked machine (another Definition): shown as a box, not descended into.
    pub submachine: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeNode {
    pub name: String,
    pub full_path: String,
    pub mark: Mark,
    pub region: Option<Region>,
    pub children: Vec<TreeNode>,
}

/// The statechart of `defn` with `exe`'s active configuration marked. An active path the
/// machine does not have marks nothing (the record is shown as it is, not refused).
pub fn build_tree(defn: &Definition, exe: &Execution) -> TreeNode {
    let active = exe.active_path.as_deref().and_then(|p| defn.get(p));
    let on_path: Vec<NodeId> = active
        .and_then(|leaf| defn.chain(defn.root, leaf))
        .unwrap_or_default();
    let region_at = |path: &str| {
        exe.children
            .iter()
            .find(|(_, c)| !c.root_path.is_empty() && c.root_path == path)
            .map(|(id, c)| Region {
                child_id: id.to_string(),
                finished: c.finished,
                outcome: c.outcome.as_ref().map(ToString::to_string),
                submachine: c.submachine,
            })
    };
    fn visit(
        defn: &Definition,
        id: NodeId,
        active: Option<NodeId>,
        on_path: &[NodeId],
        region_at: &dyn Fn(&str) -> Option<Region>,
    ) -> TreeNode {
        let node = defn.node(id);
        let mark = if Some(id) == active {
            Mark::Active
        } else if on_path.contains(&id) {
            Mark::OnActivePath
        } else {
            Mark::Inactive
        };
        let region = region_at(&node.full_path);
        let children = if region.as_ref().is_some_and(|r| r.submachine) {
            Vec::new()
        } else {
            node.children
                .iter()
                .map(|c| visit(defn, *c, active, on_path, region_at))
                .collect()
        };
        TreeNode {
            name: node.name.clone(),
            full_path: node.full_path.to_string(),
            mark,
            region,
            children,
        }
    }
    visit(defn, defn.root, active, &on_path, &region_at)
}

/// One execution, as the detail screen shows it.
#[derive(Clone, Debug)]
pub struct Detail {
    pub execution: Execution,
    /// `None` when the monitor does not know its machine: data only.
    pub tree: Option<TreeNode>,
    /// `(state path, fire_at)` of its armed timers, soonest first.
    pub timers: Vec<(String, f64)>,
}

/// What the list screen shows: a page of executions, filtered by status.
pub async fn list<S: ExecutionStore>(
    store: &S,
    status: Option<Status>,
    limit: usize,
) -> StoreResult<Vec<ExecutionSummary>> {
    let query = ListQuery {
        status: status.map(|s| vec![s]),
        limit,
        ..ListQuery::default()
    };
    Ok(store.list_executions(&query).await?.items)
}

/// One execution's snapshot, `None` once it is gone. `machine` resolves its Definition.
pub async fn detail<'d, S: ExecutionStore>(
    store: &S,
    id: &str,
    machine: impl Fn(&Execution) -> Option<&'d Definition>,
) -> StoreResult<Option<Detail>> {
    let Some(execution) = store.load(id).await? else {
        return Ok(None);
    };
    let tree = machine(&execution).map(|d| build_tree(d, &execution));
    // its own timers only (harel's monitor reads every due timer and filters: the whole
    // table on DynamoDB at every refresh)
    let timers: Vec<(String, f64)> = store
        .armed_timers(id)
        .await?
        .into_iter()
        .map(|t| (t.path, t.fire_at))
        .collect();
    Ok(Some(Detail {
        execution,
        tree,
        timers,
    }))
}
