//! The engine step the handlers need, as a port: run one event (or a child's start) on an
//! execution and commit it in one transaction, without harel's inline relay (the worker
//! delivers exactly what its commit enqueued; the relay recovers the rest).

use std::future::Future;
use std::sync::Arc;

use harel_model::{Definition, Event, Execution, SmolStr};
use harel_store::{ExecutionStore, Spawn, StoreError};

/// What one committed step enqueued, for immediate delivery.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stepped {
    /// The outbox entries the commit wrote: (seq, target execution id, event).
    pub outbox: Vec<(u64, Option<SmolStr>, Event)>,
    /// The children the commit asked for (their spawn seqs are found in `pending_spawns`).
    pub spawns: Vec<Spawn>,
    /// The `fire_at` of each timer the commit armed (the worker wakes the sweeper for one
    /// due before the next tick).
    pub armed: Vec<f64>,
}

impl Stepped {
    pub fn is_empty(&self) -> bool {
        self.outbox.is_empty() && self.spawns.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("unknown machine {0:?}: it is not compiled into this function")]
    UnknownMachine(String),
    /// harel raises these to the caller and commits nothing (an assertion in the model, an
    /// unsupported feature, an execution that does not fit its definition).
    #[error("engine error on {execution_id}: {message}")]
    Engine {
        execution_id: String,
        message: String,
    },
}

impl DriveError {
    pub fn is_conflict(&self) -> bool {
        matches!(self, DriveError::Store(e) if e.is_conflict())
    }
}

/// Runs the engine for the handlers.
pub trait Driver: Send + Sync + 'static {
    /// The machine `definition_id`, when this function was built with it.
    fn definition(&self, definition_id: &str) -> Option<Arc<Definition>>;

    /// Run `event` on `exe` (None: start a fresh child execution, harel's `engine.start`),
    /// route an action error by harel's production policy (`on error` or FAILED), and commit
    /// the step with the event's processed mark. On a store error nothing was written and
    /// `exe` must be reloaded.
    fn step<S: ExecutionStore>(
        &self,
        store: &S,
        exe: &mut Execution,
        event: Option<&Event>,
    ) -> impl Future<Output = Result<Stepped, DriveError>> + Send;

    /// The clock (epoch seconds) the driver stamps commits with.
    fn now(&self) -> f64;
}
