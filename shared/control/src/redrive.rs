//! redrive (harel's `redrive_flow`): an operator bringing one dead-lettered (FAILED)
//! execution back to life at a leaf they choose, once the bug that killed it is fixed. Not
//! propagated: a region is its own execution, redriven on its own.

use harel_model::{Definition, Execution, NodeKind, Status};
use harel_store::ExecutionStore;

use crate::outcome::{Command, ControlOutcome};
use crate::write::{commit_status, load, StatusWrite};
use crate::ControlError;

/// Python's `repr` of a str, as harel's messages quote paths.
fn quoted(text: &str) -> String {
    harel_model::pyrepr::py_repr(&serde_json::Value::String(text.to_string()))
}

/// harel's `_validate_redrive_target`, same checks in the same order, same messages.
fn validate_target(
    defn: &Definition,
    exe: &Execution,
    target_path: &str,
) -> Result<(), ControlError> {
    let refuse = |m: String| Err(ControlError::RedriveRefused(m));
    let node = match defn.get(target_path) {
        Some(n) if !defn.node(n).is_composite() => n,
        _ => {
            return refuse(format!(
                "redrive target must be a leaf state, got {}",
                quoted(target_path)
            ))
        }
    };
    let Some(root) = defn.get(&exe.root_path) else {
        return Err(ControlError::RedriveRefused(format!(
            "execution {} has root path {} that machine {} does not have",
            quoted(&exe.id),
            quoted(&exe.root_path),
            quoted(&defn.id)
        )));
    };
    if !defn.is_descendant(node, root) {
        return refuse(format!(
            "redrive target {} is outside this execution's own branch (rooted at {})",
            quoted(target_path),
            quoted(&exe.root_path)
        ));
    }
    let mut cur = defn.node(node).parent;
    while let Some(id) = cur {
        let n = defn.node(id);
        if n.kind == NodeKind::Orthogonal {
            return refuse(format!(
                "redrive target {} is inside orthogonal state {} — a single leaf can't represent a fork's parallel regions; target a leaf before it instead, and let the model's own transition re-fork it normally",
                quoted(target_path),
                quoted(&n.full_path)
            ));
        }
        if id == root {
            break;
        }
        cur = n.parent;
    }
    if exe.children.values().any(|c| !c.finished) {
        return refuse(
            "redrive refused: execution has unfinished children (cancel/terminate them first)"
                .into(),
        );
    }
    Ok(())
}

/// FAILED -> RUNNING at `target_path` (a leaf of this execution's own branch), the error and
/// the history cleared, the machine's `ttl` restarted, the context untouched. A no-op unless
/// FAILED. Refused (`RedriveRefused`) for a target that is not such a leaf or while a child
/// is unfinished; checked again on every attempt of the write.
pub async fn redrive<S: ExecutionStore>(
    store: &S,
    definition: &Definition,
    execution_id: &str,
    target_path: &str,
    now: f64,
) -> Result<ControlOutcome, ControlError> {
    let mut out = ControlOutcome::new(Command::Redrive, execution_id);
    let exe = load(store, execution_id).await?;
    if exe.status != Status::Failed {
        return Ok(out);
    }
    if exe.definition_id != definition.id {
        return Err(ControlError::WrongDefinition {
            execution_id: exe.id.to_string(),
            runs: exe.definition_id.to_string(),
            given: definition.id.clone(),
        });
    }
    validate_target(definition, &exe, target_path)?;
    let check = |fresh: &Execution| validate_target(definition, fresh, target_path);
    let write = StatusWrite {
        require_status: Some(Status::Failed),
        validate: Some(&check),
        active_path: Some(target_path),
        clear_error: true,
        clear_history: true,
        rearm_ttl_of: Some(definition),
        ..StatusWrite::status(Command::Redrive, Status::Running)
    };
    commit_status(store, execution_id, &write, now, &mut out).await?;
    Ok(out)
}
