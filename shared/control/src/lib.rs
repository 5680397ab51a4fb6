//! The control plane: lifecycle commands that bypass the event queue, ported from harel
//! 0.9.0's `harel/engine/control.py`. Each is a CAS write on the `Execution` record (with
//! [`RETRIES`] attempts of optimistic-concurrency retry, since a worker may be committing an
//! event for the same execution), so it takes effect at the next event boundary instead of
//! waiting behind the FIFO backlog.
//!
//! - [`terminate`]: CANCELLED at once, no hooks; the backlog drains as no-ops.
//! - [`cancel`]: cooperative when the machine models it (the active configuration has a
//!   `Cancel` transition landing directly on a terminal): CANCELLING and a `Cancel` event in
//!   the outbox in the SAME commit; the worker skips the backlog until that `Cancel` runs the
//!   machine's cleanup. Forceful (as `terminate`) otherwise, and for a FAILED execution.
//! - [`suspend`] / [`resume`]: RUNNING <-> SUSPENDED, state, history and backlog kept (the
//!   worker parks a SUSPENDED execution's messages; its timers stay armed).
//! - [`redrive`]: a FAILED execution back to RUNNING at a chosen leaf (not propagated).
//! - [`purge`] / [`purge_finished`]: delete finished trees for good, archived first if asked
//!   ([`JsonlArchive`], harel's line for line).
//!
//! All but `redrive` propagate to an orthogonal parent's regions, each its own execution.
//! A DONE or CANCELLED execution is never changed.
//!
//! **The Definition is an argument**, as in harel (`cancel(store, defn, execution_id)`): only
//! `cancel` and `redrive` need it (to decide cooperative vs forceful, to check a redrive
//! target), and the caller, who knows which machines it runs, loads the execution's
//! `definition_id` to pick it. A Definition that is not the execution's is refused
//! ([`ControlError::WrongDefinition`]); harel would decide against the wrong machine.
//!
//! Each command returns a [`ControlOutcome`]: the commits it made (harel's `_control_step`
//! `Step`s, which harel hands to a store observer and does not persist; control commits write
//! no trace entry, as in harel), the outbox entry a cooperative cancel enqueued (a caller with
//! a queue may publish it at once rather than wait for the relay) and the executions it gave
//! up on after losing every retry to a concurrent writer (harel gives up silently).

mod error;
mod lifecycle;
mod migrate;
mod outcome;
mod purge;
mod redrive;
mod write;

pub use error::ControlError;
pub use lifecycle::{cancel, cancel_with_reason, resume, suspend, terminate};
pub use migrate::{migrate, plan_member, MemberPlan, MigrationReport, Moved, PathMap};
pub use outcome::{CancelMode, Command, ControlOutcome, ControlStep, Enqueued};
pub use purge::{
    purge, purge_finished, Archive, JsonlArchive, PurgeFinished, PurgeReport, PURGEABLE,
};
pub use redrive::redrive;
pub use write::RETRIES;
