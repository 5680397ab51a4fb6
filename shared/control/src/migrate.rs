//! Moving an in-flight execution to another version of its machine (`harel migrate`): its
//! active path, history entries, armed timers and region paths are rewritten through an
//! operator's map (`OLD=NEW`, a state and everything under it) and must all exist in the
//! target version; the pin is then moved with a CAS write, propagated to its live regions.
//! Nothing is written unless every member checks: a refusal names each path without a
//! counterpart.

use harel_engine::TTL_PATH;
use harel_model::{Definition, Execution, KeyMap, NodeKind, SmolStr};
use harel_store::{Commit, ExecutionStore, TimerOp};
use serde::Serialize;

use crate::write::{finished, load, RETRIES};
use crate::ControlError;

/// `OLD=NEW` renames, the first matching one applied: a path equal to OLD, or under it
/// (`OLD.x`), gets NEW in its place.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PathMap(pub Vec<(String, String)>);

impl PathMap {
    /// From `OLD=NEW` arguments.
    pub fn parse<S: AsRef<str>>(pairs: &[S]) -> Result<Self, ControlError> {
        let mut out = Vec::new();
        for raw in pairs {
            let raw = raw.as_ref();
            match raw.split_once('=') {
                Some((old, new)) if !old.is_empty() && !new.is_empty() => {
                    out.push((old.trim().to_string(), new.trim().to_string()))
                }
                _ => {
                    return Err(ControlError::InvalidArgument(format!(
                        "--map {raw:?}: expected OLD=NEW (full state paths)"
                    )))
                }
            }
        }
        Ok(PathMap(out))
    }

    /// `path` renamed by the first pair matching it (equal to OLD, or under `OLD.`); unchanged
    /// when none does.
    pub fn apply(&self, path: &str) -> String {
        for (old, new) in &self.0 {
            if path == old {
                return new.clone();
            }
            if let Some(rest) = path.strip_prefix(old.as_str()) {
                if rest.starts_with('.') {
                    return format!("{new}{rest}");
                }
            }
        }
        path.to_string()
    }
}

/// One rewritten path: (before, after).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Moved {
    /// The path (or `key=value` history entry) as the execution holds it.
    pub from: String,
    /// What it becomes in the target version (the same text when no pair matched).
    pub to: String,
}

/// What a migration does to one member of the tree.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MemberPlan {
    /// The member's id.
    pub execution_id: String,
    /// The version it is pinned to now (None: unpinned, running the deployed definition).
    pub from_version: Option<String>,
    /// Its active path, mapped (None: it has none).
    pub active_path: Option<Moved>,
    /// Each `history` entry as `composite=child`, mapped.
    pub history: Vec<Moved>,
    /// Armed timers: (path moved, fire_at kept).
    pub timers: Vec<(Moved, f64)>,
    /// Paths with no counterpart in the target version.
    pub missing: Vec<String>,
}

/// The outcome of a migration (or its dry run).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MigrationReport {
    /// The execution asked for (the tree's top).
    pub execution_id: String,
    /// The version migrated to.
    pub to_version: String,
    /// Every member checked (the execution, then its live regions, depth first).
    pub members: Vec<MemberPlan>,
    /// Why nothing was written (empty: every member checked).
    pub refused: Vec<String>,
    /// Members written (none on a dry run or a refusal).
    pub migrated: Vec<String>,
    /// Already on the target version: nothing to do.
    pub unchanged: bool,
}

fn exists(target: &Definition, path: &str) -> bool {
    path.is_empty() || target.get(path).is_some()
}

/// Check one execution (not its regions) against the target: every path it holds, mapped,
/// must exist there (an active path as a leaf or an orthogonal state, as it was).
pub fn plan_member(
    target: &Definition,
    exe: &Execution,
    timers: &[(String, f64)],
    map: &PathMap,
) -> MemberPlan {
    let mut plan = MemberPlan {
        execution_id: exe.id.to_string(),
        from_version: exe.pinned_version().map(str::to_string),
        ..MemberPlan::default()
    };
    let missing = std::cell::RefCell::new(Vec::new());
    let need = |what: &str, path: &str, mapped: &str| -> bool {
        if exists(target, mapped) {
            return true;
        }
        let via = if path == mapped {
            String::new()
        } else {
            format!(" (mapped to {mapped:?})")
        };
        missing.borrow_mut().push(format!(
            "{}: {what} {path:?}{via} has no counterpart in the target version",
            exe.id
        ));
        false
    };
    let root = map.apply(&exe.root_path);
    need("region", &exe.root_path, &root);
    let mut active = None;
    if let Some(path) = exe.active_path.as_deref() {
        let mapped = map.apply(path);
        if need("active state", path, &mapped) {
            let kind = target.at(&mapped).kind;
            if !matches!(kind, NodeKind::Leaf | NodeKind::Orthogonal) {
                missing.borrow_mut().push(format!(
                    "{}: active state {path:?} maps to {mapped:?}, a {} in the target (a leaf or an orthogonal state is needed)",
                    exe.id,
                    kind.type_name()
                ));
            }
        }
        active = Some(Moved {
            from: path.to_string(),
            to: mapped,
        });
    }
    let mut history = Vec::new();
    for (key, value) in &exe.history {
        for p in [key.as_str(), value.as_str()] {
            let mapped = map.apply(p);
            need("history entry", p, &mapped);
        }
        history.push(Moved {
            from: format!("{key}={value}"),
            to: format!("{}={}", map.apply(key), map.apply(value)),
        });
    }
    let mut moved_timers = Vec::new();
    for (path, fire_at) in timers {
        let mapped = if path == TTL_PATH {
            path.clone()
        } else {
            map.apply(path)
        };
        if path != TTL_PATH {
            need("timer", path, &mapped);
        }
        moved_timers.push((
            Moved {
                from: path.clone(),
                to: mapped,
            },
            *fire_at,
        ));
    }
    plan.missing = missing.into_inner();
    plan.active_path = active;
    plan.history = history;
    plan.timers = moved_timers;
    plan
}

fn rewrite(exe: &mut Execution, map: &PathMap, to_version: &str) {
    exe.root_path = map.apply(&exe.root_path).into();
    exe.active_path = exe.active_path.as_deref().map(|p| map.apply(p).into());
    exe.history = exe
        .history
        .iter()
        .map(|(k, v)| (SmolStr::from(map.apply(k)), SmolStr::from(map.apply(v))))
        .collect::<KeyMap<SmolStr>>();
    exe.invoke_seq = exe
        .invoke_seq
        .iter()
        .map(|(k, v)| (SmolStr::from(map.apply(k)), *v))
        .collect();
    for child in exe.children.values_mut() {
        if !child.submachine {
            child.root_path = map.apply(&child.root_path).into();
        }
    }
    exe.pin_version(to_version);
}

/// The execution and its live regions (depth first), each with its armed timers. Submachine
/// children run machines of their own and keep their versions.
async fn members<S: ExecutionStore>(
    store: &S,
    execution_id: &str,
) -> Result<Vec<(Execution, Vec<(String, f64)>)>, ControlError> {
    let mut out = Vec::new();
    let mut queue = vec![execution_id.to_string()];
    while let Some(id) = queue.pop() {
        let exe = load(store, &id).await?;
        let timers = store
            .armed_timers(&id)
            .await?
            .into_iter()
            .map(|t| (t.path, t.fire_at))
            .collect();
        for (cid, cs) in &exe.children {
            if !cs.finished && !cs.submachine {
                queue.push(cid.to_string());
            }
        }
        out.push((exe, timers));
    }
    Ok(out)
}

/// Move `execution_id` (and its live regions) to `to_version`, whose machine is `target`:
/// checked first, every member, and refused with the report when a path has no counterpart
/// (nothing written); with `dry_run`, only checked. Each member is one CAS write of its
/// document with its timers re-armed on the mapped paths (same `fire_at`); a member that
/// moves meanwhile is checked again against its fresh record. The target version must be
/// kept in the store before (the caller's: this crate does not build versions).
pub async fn migrate<S: ExecutionStore>(
    store: &S,
    target: &Definition,
    to_version: &str,
    execution_id: &str,
    map: &PathMap,
    now: f64,
    dry_run: bool,
) -> Result<MigrationReport, ControlError> {
    let mut report = MigrationReport {
        execution_id: execution_id.to_string(),
        to_version: to_version.to_string(),
        ..MigrationReport::default()
    };
    let all = members(store, execution_id).await?;
    let root = &all[0].0;
    if root.definition_id != target.id {
        return Err(ControlError::WrongDefinition {
            execution_id: execution_id.to_string(),
            runs: root.definition_id.to_string(),
            given: target.id.clone(),
        });
    }
    if finished(root.status) {
        report.refused.push(format!(
            "{execution_id} is {}: nothing to migrate",
            root.status
        ));
        return Ok(report);
    }
    if all
        .iter()
        .all(|(e, _)| e.pinned_version() == Some(to_version))
    {
        report.unchanged = true;
        return Ok(report);
    }
    for (exe, timers) in &all {
        let plan = plan_member(target, exe, timers, map);
        report.refused.extend(plan.missing.iter().cloned());
        report.members.push(plan);
    }
    if dry_run || !report.refused.is_empty() {
        return Ok(report);
    }
    for (exe, _) in &all {
        write_member(store, target, to_version, &exe.id, map, now, &mut report).await?;
    }
    Ok(report)
}

async fn write_member<S: ExecutionStore>(
    store: &S,
    target: &Definition,
    to_version: &str,
    id: &str,
    map: &PathMap,
    now: f64,
    report: &mut MigrationReport,
) -> Result<(), ControlError> {
    for _ in 0..RETRIES {
        let mut exe = load(store, id).await?;
        let timers: Vec<(String, f64)> = store
            .armed_timers(id)
            .await?
            .into_iter()
            .map(|t| (t.path, t.fire_at))
            .collect();
        let plan = plan_member(target, &exe, &timers, map);
        if !plan.missing.is_empty() {
            // it moved on since the check, to somewhere the target lacks
            report.refused.extend(plan.missing);
            return Ok(());
        }
        let mut ops = Vec::new();
        for (moved, fire_at) in &plan.timers {
            if moved.from != moved.to {
                ops.push(TimerOp::Cancel {
                    path: moved.from.as_str().into(),
                });
                ops.push(TimerOp::Schedule {
                    path: moved.to.as_str().into(),
                    fire_at: *fire_at,
                });
            }
        }
        rewrite(&mut exe, map, to_version);
        exe.stamp(now);
        let commit = Commit {
            timers: ops,
            ..Commit::default()
        };
        match store.commit(&mut exe, commit).await {
            Ok(_) => {
                report.migrated.push(id.to_string());
                return Ok(());
            }
            Err(e) if e.is_conflict() => continue,
            Err(e) => return Err(e.into()),
        }
    }
    report.refused.push(format!(
        "{id}: kept changing under the migration ({RETRIES} attempts)"
    ));
    Ok(())
}
