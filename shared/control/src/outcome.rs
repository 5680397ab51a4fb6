//! What a control-plane command did: every commit it made (harel's `Step` with
//! `cause="control"`), the event it enqueued, and what it had to give up on.

use harel_model::{Event, Status};
use serde::Serialize;

/// The control-plane commands, by the name harel writes in a `Step`'s `command`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Command {
    /// Cooperative when the machine models it, else forceful ([`CancelMode`]).
    Cancel,
    /// CANCELLED at once, no hooks run; the backlog drains as no-ops.
    Terminate,
    /// RUNNING to SUSPENDED: state and backlog kept, messages parked.
    Suspend,
    /// SUSPENDED back to RUNNING.
    Resume,
    /// A FAILED execution back to RUNNING at a chosen leaf.
    Redrive,
}

impl Command {
    /// The command's name in a `Step` (`cancel`, `terminate`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Cancel => "cancel",
            Command::Terminate => "terminate",
            Command::Suspend => "suspend",
            Command::Resume => "resume",
            Command::Redrive => "redrive",
        }
    }
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How `cancel` went about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CancelMode {
    /// CANCELLING + a `Cancel` in the outbox: the machine's own transition cleans up.
    Cooperative,
    /// CANCELLED at once, no hooks (no `Cancel` transition, or a FAILED execution).
    Forceful,
}

/// One commit of a control command: harel's `_control_step` (cause `control`). harel hands
/// it to the store's observer and does not persist it; here it is returned to the caller.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ControlStep {
    /// The execution this commit wrote (the command's own, or one of its regions).
    pub execution_id: String,
    /// Always `"control"` (harel's `Step.cause` for a control commit).
    pub cause: &'static str,
    /// The command that made the commit.
    pub command: Command,
    /// The status before the commit.
    pub from_status: Status,
    /// The status the commit wrote.
    pub to_status: Status,
    /// The active path before the commit.
    pub from_path: Option<String>,
    /// The active path after it (differs from `from_path` on a redrive only).
    pub to_path: Option<String>,
}

/// An outbox entry a command committed (the cooperative `Cancel`), for a caller that
/// publishes it itself instead of waiting for the relay.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Enqueued {
    /// The outbox sequence number the store gave the entry.
    pub seq: u64,
    /// The execution the event is for.
    pub target_id: String,
    /// The event (a `Cancel`).
    pub event: Event,
}

/// What a control command did, for the caller to report (the CLI prints it, the API
/// returns it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ControlOutcome {
    /// The command that ran.
    pub command: Command,
    /// The execution it was asked about.
    pub execution_id: String,
    /// Set by `cancel` when it acted.
    pub mode: Option<CancelMode>,
    /// Every commit, in order: the execution's own first, then its regions'.
    pub steps: Vec<ControlStep>,
    /// The outbox entry a cooperative cancel committed (the `Cancel` to the execution itself);
    /// empty for every other command.
    pub enqueued: Vec<Enqueued>,
    /// Executions left unchanged after every retry lost to a concurrent writer. harel gives
    /// up on these silently; they are listed so a caller can say so.
    pub contended: Vec<String>,
}

impl ControlOutcome {
    pub(crate) fn new(command: Command, execution_id: &str) -> Self {
        ControlOutcome {
            command,
            execution_id: execution_id.to_string(),
            mode: None,
            steps: Vec::new(),
            enqueued: Vec::new(),
            contended: Vec::new(),
        }
    }

    /// Whether the execution itself was written (false: a no-op, e.g. suspending a DONE
    /// execution, or resuming a RUNNING one).
    pub fn changed(&self) -> bool {
        self.steps
            .iter()
            .any(|s| s.execution_id == self.execution_id)
    }

    /// The execution's own step, if it was written.
    pub fn own_step(&self) -> Option<&ControlStep> {
        self.steps
            .iter()
            .find(|s| s.execution_id == self.execution_id)
    }
}
