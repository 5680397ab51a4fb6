//! Why a control-plane command could not run.

use harel_engine::EngineError;
use harel_store::StoreError;

/// Why a control-plane command refused or failed. Losing every CAS retry to a concurrent
/// writer is not an error: the execution is listed in [`crate::ControlOutcome::contended`].
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// harel raises `KeyError(execution_id)`.
    #[error("no execution {0:?}")]
    NotFound(String),
    /// The Definition handed in is not the one the execution runs: its cooperative-cancel
    /// decision (or a redrive target) would be made against the wrong machine.
    #[error("execution {execution_id:?} runs machine {runs:?}, not {given:?}")]
    WrongDefinition {
        /// The execution the command was asked about.
        execution_id: String,
        /// The `definition_id` the execution runs.
        runs: String,
        /// The id of the Definition handed in.
        given: String,
    },
    /// `redrive` refused its target (harel's `ValueError`, same text).
    #[error("{0}")]
    RedriveRefused(String),
    /// `purge` refused a tree (harel's `PurgeRefused`, same text): a child, or a member not
    /// DONE/CANCELLED.
    #[error("{0}")]
    PurgeRefused(String),
    /// The archive could not take a tree: nothing of it was deleted.
    #[error("archiving the tree of {root_id:?}: {source}")]
    Archive {
        /// The root of the tree being archived.
        root_id: String,
        /// What the archive's write raised.
        #[source]
        source: std::io::Error,
    },
    /// An argument the command cannot take (harel's `ValueError`, same text).
    #[error("{0}")]
    InvalidArgument(String),
    /// The store failed (a read, or a commit other than a lost CAS).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The engine could not read the execution against its Definition (a corrupt record).
    #[error(transparent)]
    Engine(#[from] EngineError),
}
