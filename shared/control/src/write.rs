//! The one write every command is made of (harel's `_commit_status_flow`): load, re-check,
//! set the status, CAS-commit; on a conflict start over from a fresh load. And its
//! propagation to an orthogonal parent's regions (`_propagate_flow`).

use std::future::Future;
use std::pin::Pin;

use harel_engine::{ttl_delay, TTL_PATH};
use harel_model::{Definition, Execution, SmolStr, Status};
use harel_store::{Commit, ExecutionStore, TimerOp};

use crate::outcome::{Command, ControlOutcome, ControlStep};
use crate::ControlError;

/// harel's `_RETRIES`: attempts before a command gives up on a contended execution.
pub const RETRIES: usize = 5;

/// Statuses past which no control command changes an execution (harel's `_TERMINAL`).
pub(crate) fn finished(status: Status) -> bool {
    matches!(status, Status::Cancelled | Status::Done)
}

pub(crate) type Check<'a> = &'a (dyn Fn(&Execution) -> Result<(), ControlError> + Sync);

/// What one status write does beside the status.
pub(crate) struct StatusWrite<'a> {
    pub command: Command,
    pub status: Status,
    /// Re-checked on every attempt: once it no longer holds, the write is a no-op.
    pub require_status: Option<Status>,
    /// Called on every attempt against the fresh record; an error aborts.
    pub validate: Option<Check<'a>>,
    pub active_path: Option<&'a str>,
    pub clear_error: bool,
    pub clear_history: bool,
    /// The machine whose `ttl` restarts from this write.
    pub rearm_ttl_of: Option<&'a Definition>,
}

impl StatusWrite<'_> {
    pub(crate) fn status(command: Command, status: Status) -> Self {
        StatusWrite {
            command,
            status,
            require_status: None,
            validate: None,
            active_path: None,
            clear_error: false,
            clear_history: false,
            rearm_ttl_of: None,
        }
    }
}

pub(crate) fn step(
    command: Command,
    from_status: Status,
    from_path: Option<SmolStr>,
    exe: &Execution,
) -> ControlStep {
    ControlStep {
        execution_id: exe.id.to_string(),
        cause: "control",
        command,
        from_status,
        to_status: exe.status,
        from_path: from_path.map(String::from),
        to_path: exe.active_path.as_deref().map(str::to_string),
    }
}

pub(crate) async fn load<S: ExecutionStore>(
    store: &S,
    execution_id: &str,
) -> Result<Execution, ControlError> {
    store
        .load(execution_id)
        .await?
        .ok_or_else(|| ControlError::NotFound(execution_id.to_string()))
}

/// CAS `execution_id` to `write.status`, retrying on a concurrent writer.
pub(crate) async fn commit_status<S: ExecutionStore>(
    store: &S,
    execution_id: &str,
    write: &StatusWrite<'_>,
    now: f64,
    out: &mut ControlOutcome,
) -> Result<(), ControlError> {
    for _ in 0..RETRIES {
        let mut exe = load(store, execution_id).await?;
        if write.require_status.is_some_and(|s| exe.status != s) {
            return Ok(()); // someone else already moved it on
        }
        if finished(exe.status) {
            return Ok(());
        }
        if let Some(validate) = write.validate {
            validate(&exe)?;
        }
        let (from_status, from_path) = (exe.status, exe.active_path.clone());
        exe.status = write.status;
        if let Some(path) = write.active_path {
            exe.active_path = Some(path.into());
        }
        if write.clear_error {
            exe.error = None;
        }
        if write.clear_history {
            exe.history.clear();
        }
        let mut timers = Vec::new();
        if let Some(delay) = write.rearm_ttl_of.and_then(|d| ttl_delay(d, &exe)) {
            let fire_at = now + delay;
            exe.expires_at = Some(fire_at);
            timers.push(TimerOp::Schedule {
                path: TTL_PATH.into(),
                fire_at,
            });
        }
        exe.stamp(now);
        let commit = Commit {
            timers,
            ..Commit::default()
        };
        match store.commit(&mut exe, commit).await {
            Ok(_) => {
                out.steps
                    .push(step(write.command, from_status, from_path, &exe));
                return Ok(());
            }
            Err(e) if e.is_conflict() => continue,
            Err(e) => return Err(e.into()),
        }
    }
    // harel falls out of its retry loop without a word; the outcome says so instead
    out.contended.push(execution_id.to_string());
    Ok(())
}

type Boxed<'a> = Pin<Box<dyn Future<Output = Result<(), ControlError>> + Send + 'a>>;

/// Forcefully apply `status` to `parent_id`'s children (every one it lists, finished or
/// not: the write skips the finished), recursively. One at a time: each is its own record.
pub(crate) fn propagate<'a, S: ExecutionStore>(
    store: &'a S,
    parent_id: &'a str,
    status: Status,
    command: Command,
    now: f64,
    out: &'a mut ControlOutcome,
) -> Boxed<'a> {
    Box::pin(async move {
        let Some(parent) = store.load(parent_id).await? else {
            return Ok(());
        };
        for child_id in parent.children.keys() {
            if store.load(child_id).await?.is_none() {
                continue;
            }
            let write = StatusWrite::status(command, status);
            commit_status(store, child_id, &write, now, out).await?;
            propagate(store, child_id, status, command, now, out).await?;
        }
        Ok(())
    })
}
