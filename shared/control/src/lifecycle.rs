//! cancel, terminate, suspend, resume (harel's `cancel_flow`, `terminate_flow`,
//! `suspend_flow`, `resume_flow`).

use harel_engine::has_cancel_handler;
use harel_model::{Definition, Object, Status};
use harel_store::{Commit, ExecutionStore};

use crate::outcome::{CancelMode, Command, ControlOutcome, Enqueued};
use crate::write::{commit_status, finished, load, propagate, step, StatusWrite, RETRIES};
use crate::ControlError;

/// Forceful cancel: CANCELLED now, no hooks run, regions follow; the queued backlog drains as
/// no-ops. A DONE or CANCELLED execution is left as it is.
pub async fn terminate<S: ExecutionStore>(
    store: &S,
    execution_id: &str,
    now: f64,
) -> Result<ControlOutcome, ControlError> {
    let mut out = ControlOutcome::new(Command::Terminate, execution_id);
    terminate_as(store, execution_id, Command::Terminate, now, &mut out).await?;
    Ok(out)
}

async fn terminate_as<S: ExecutionStore>(
    store: &S,
    execution_id: &str,
    command: Command,
    now: f64,
    out: &mut ControlOutcome,
) -> Result<(), ControlError> {
    let write = StatusWrite::status(command, Status::Cancelled);
    commit_status(store, execution_id, &write, now, out).await?;
    propagate(store, execution_id, Status::Cancelled, command, now, out).await
}

/// [`cancel_with_reason`] without a reason.
pub async fn cancel<S: ExecutionStore>(
    store: &S,
    definition: &Definition,
    execution_id: &str,
    now: f64,
) -> Result<ControlOutcome, ControlError> {
    cancel_with_reason(store, definition, execution_id, Object::new(), now).await
}

/// Cancel respecting the machine. Cooperative when the active configuration has a `Cancel`
/// transition (guard included, evaluated with `reason` as the event's data) that lands
/// directly on a terminal: CANCELLING and the `Cancel` event in the outbox, in one commit;
/// the worker skips the backlog until that `Cancel` runs the cleanup. Forceful (terminate)
/// otherwise, and always for a FAILED execution. Regions are terminated either way. The
/// decision and its write are one CAS attempt: after a conflict it is made again on the fresh
/// record.
pub async fn cancel_with_reason<S: ExecutionStore>(
    store: &S,
    definition: &Definition,
    execution_id: &str,
    reason: Object,
    now: f64,
) -> Result<ControlOutcome, ControlError> {
    let mut out = ControlOutcome::new(Command::Cancel, execution_id);
    for _ in 0..RETRIES {
        let mut exe = load(store, execution_id).await?;
        if finished(exe.status) {
            return Ok(out);
        }
        if exe.definition_id != definition.id {
            return Err(ControlError::WrongDefinition {
                execution_id: exe.id.to_string(),
                runs: exe.definition_id.to_string(),
                given: definition.id.clone(),
            });
        }
        let event = harel_engine::ids::event("Cancel").with_data(reason.clone());
        if exe.status == Status::Failed || !has_cancel_handler(definition, &exe, &event)? {
            out.mode = Some(CancelMode::Forceful);
            terminate_as(store, execution_id, Command::Cancel, now, &mut out).await?;
            return Ok(out);
        }
        let from_status = exe.status;
        exe.status = Status::Cancelling;
        exe.stamp(now);
        let commit = Commit {
            emits: vec![(Some(exe.id.clone()), event.clone())],
            ..Commit::default()
        };
        match store.commit(&mut exe, commit).await {
            Ok(seqs) => {
                out.steps.push(step(
                    Command::Cancel,
                    from_status,
                    exe.active_path.clone(),
                    &exe,
                ));
                out.enqueued.extend(seqs.into_iter().map(|seq| Enqueued {
                    seq,
                    target_id: exe.id.to_string(),
                    event: event.clone(),
                }));
            }
            Err(e) if e.is_conflict() => continue,
            Err(e) => return Err(e.into()),
        }
        out.mode = Some(CancelMode::Cooperative);
        propagate(
            store,
            execution_id,
            Status::Cancelled,
            Command::Cancel,
            now,
            &mut out,
        )
        .await?;
        return Ok(out);
    }
    // harel gives up silently after its retries
    out.contended.push(execution_id.to_string());
    Ok(out)
}

/// Pause: RUNNING -> SUSPENDED, state, history and the queued backlog kept; regions too.
/// A no-op unless RUNNING.
pub async fn suspend<S: ExecutionStore>(
    store: &S,
    execution_id: &str,
    now: f64,
) -> Result<ControlOutcome, ControlError> {
    toggle(
        store,
        execution_id,
        Command::Suspend,
        Status::Running,
        Status::Suspended,
        now,
    )
    .await
}

/// Unpause: SUSPENDED -> RUNNING, continuing where it stopped; regions too. A no-op unless
/// SUSPENDED.
pub async fn resume<S: ExecutionStore>(
    store: &S,
    execution_id: &str,
    now: f64,
) -> Result<ControlOutcome, ControlError> {
    toggle(
        store,
        execution_id,
        Command::Resume,
        Status::Suspended,
        Status::Running,
        now,
    )
    .await
}

async fn toggle<S: ExecutionStore>(
    store: &S,
    execution_id: &str,
    command: Command,
    from: Status,
    to: Status,
    now: f64,
) -> Result<ControlOutcome, ControlError> {
    let mut out = ControlOutcome::new(command, execution_id);
    // harel checks the precondition once, before the write (which then does not re-check
    // it): a status changed in between is overwritten, unless it finished
    if load(store, execution_id).await?.status != from {
        return Ok(out);
    }
    let write = StatusWrite::status(command, to);
    commit_status(store, execution_id, &write, now, &mut out).await?;
    // the regions get `to` whatever their own status (a FAILED region too), as in harel
    propagate(store, execution_id, to, command, now, &mut out).await?;
    Ok(out)
}
