//! What a runner call can fail with.

use harel_control::ControlError;
use harel_engine::EngineError;
use harel_model::schema::{ContextError, EventError};
use harel_store::StoreError;

/// Why a runner, driver or worker call failed. Unless a variant says otherwise, nothing of
/// the step was committed.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The store failed or refused the commit (a `Conflict` means another writer moved the
    /// execution on first).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The engine refused the step (a harel assertion, a corrupt execution): nothing of it
    /// was committed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// No execution with this id is stored.
    #[error("no execution {0:?}")]
    NotFound(String),
    /// A create for an id that is already stored (the runner's `create`); the existing execution
    /// is untouched.
    #[error("execution {0:?} already exists")]
    AlreadyExists(String),
    /// The execution's (or the create's) `definition_id` is not one of the driver's machines.
    #[error("unknown definition_id {0:?}")]
    UnknownDefinition(String),
    /// The execution is pinned to a version neither deployed here nor kept in the store:
    /// nothing was done (its event is left to be retried once the version is available).
    #[error("machine {machine:?} version {version}: not deployed here and not kept in the store")]
    UnknownVersion {
        /// The machine the execution runs.
        machine: String,
        /// The version it is pinned to.
        version: String,
    },
    /// The execution's version does not carry its machine (a pin copied to the wrong
    /// execution by hand): nothing was done.
    #[error("version {version} has no machine {machine:?}")]
    VersionMismatch {
        /// The machine the execution runs.
        machine: String,
        /// The version it is pinned to, whose bundle lacks that machine.
        version: String,
    },
    /// A machine version could not be made or read back (see [`VersionError`](crate::versions::VersionError)).
    #[error(transparent)]
    Version(#[from] crate::versions::VersionError),
    /// A spawn names a submachine no registered definition has as its FQN (harel's
    /// `ResolveError`): nothing of the spawn was done, it stays pending.
    #[error("invoke {0:?}: no machine is registered for that FQN")]
    UnresolvedSubmachine(String),
    /// A create's context does not satisfy the machine's context schema.
    #[error(transparent)]
    Context(#[from] ContextError),
    /// An event's data does not satisfy the machine's schema for its kind.
    #[error(transparent)]
    Event(#[from] EventError),
    /// With the `Raise` policy: an action error nothing in the model handles, as
    /// `Type: message`; the step was not committed.
    #[error("unhandled action error: {0}")]
    ActionFailed(String),
    /// A control command refused (a redrive target, a Definition that is not the
    /// execution's).
    #[error(transparent)]
    Control(ControlError),
}

impl From<ControlError> for RuntimeError {
    /// The runner's own variants where the control plane's mean the same thing.
    fn from(e: ControlError) -> Self {
        match e {
            ControlError::NotFound(id) => RuntimeError::NotFound(id),
            ControlError::Store(s) => RuntimeError::Store(s),
            ControlError::Engine(e) => RuntimeError::Engine(e),
            other => RuntimeError::Control(other),
        }
    }
}
