//! What a runner call can fail with.

use harel_control::ControlError;
use harel_engine::EngineError;
use harel_model::schema::{ContextError, EventError};
use harel_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The engine refused the step (a harel assertion, a corrupt execution): nothing of it
    /// was committed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("no execution {0:?}")]
    NotFound(String),
    #[error("execution {0:?} already exists")]
    AlreadyExists(String),
    #[error("unknown definition_id {0:?}")]
    UnknownDefinition(String),
    /// The execution is pinned to a version neither deployed here nor kept in the store:
    /// nothing was done (its event is left to be retried once the version is available).
    #[error("machine {machine:?} version {version}: not deployed here and not kept in the store")]
    UnknownVersion { machine: String, version: String },
    /// The execution's version does not carry its machine (a pin copied to the wrong
    /// execution by hand): nothing was done.
    #[error("version {version} has no machine {machine:?}")]
    VersionMismatch { machine: String, version: String },
    #[error(transparent)]
    Version(#[from] crate::versions::VersionError),
    /// A spawn names a submachine no registered definition has as its FQN (harel's
    /// `ResolveError`): nothing of the spawn was done, it stays pending.
    #[error("invoke {0:?}: no machine is registered for that FQN")]
    UnresolvedSubmachine(String),
    #[error(transparent)]
    Context(#[from] ContextError),
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
