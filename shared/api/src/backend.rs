//! What the routes run over: the store (read, and written by the control plane), the sender
//! (the queue) and the deployed machines, and for the outside world's routes the hooks and
//! the callback key ([`Ingress`]). Lambda gives it DynamoDB and SQS; `harel serve` the same
//! or the in-memory twins.

use std::sync::Arc;

use harel_model::{Definition, Execution};
use harel_queue::Transport;
use harel_runtime::{Driver, RuntimeError, Sender};
use harel_store::ExecutionStore;

use crate::error::ApiError;
use crate::ingress::Ingress;

/// The API's ports. Routes added by other crates take `State<Arc<Backend<S, T>>>` too.
pub struct Backend<S, T> {
    /// The execution store: read by every route, written by the control routes (cancel,
    /// terminate, suspend, resume, redrive).
    pub store: S,
    /// Where creates and events are enqueued for the worker (the API never steps a machine).
    pub sender: Sender<T>,
    /// The deployed machines (and, through the store, the versions executions are pinned
    /// to). Used to check, never to step: the worker runs the machines.
    pub driver: Driver,
    /// Webhooks and callback tokens (none by default: their routes answer 404).
    pub ingress: Ingress,
}

/// The state the router holds.
pub type Shared<S, T> = Arc<Backend<S, T>>;

impl<S: ExecutionStore, T: Transport> Backend<S, T> {
    /// A backend over `store`, sending through `transport`, checking against `driver`'s machines;
    /// without an [`Ingress`] (add one with [`with_ingress`](Self::with_ingress)) the hook and
    /// callback routes answer 404.
    pub fn new(store: S, transport: T, driver: Driver) -> Self {
        Backend {
            store,
            sender: Sender::new(transport),
            driver,
            ingress: Ingress::default(),
        }
    }

    /// With the hooks, the callback key and the webhook metrics of `ingress`.
    pub fn with_ingress(mut self, ingress: Ingress) -> Self {
        self.ingress = ingress;
        self
    }

    /// The execution, or `404 unknown_execution`.
    pub async fn execution(&self, id: &str) -> Result<Execution, ApiError> {
        self.store
            .load(id)
            .await?
            .ok_or_else(|| ApiError::unknown_execution(id))
    }

    /// The definition `exe` runs on (its pinned version's, as the worker resolves it).
    pub async fn definition_of(&self, exe: &Execution) -> Result<Arc<Definition>, ApiError> {
        self.driver
            .resolve(&self.store, exe)
            .await
            .map_err(|e| match e {
                RuntimeError::Store(e) => ApiError::from(e),
                other => ApiError::conflict(
                    "machine_unavailable",
                    format!(
                        "execution {} runs a machine this deployment cannot load: {other}",
                        exe.id
                    ),
                ),
            })
    }
}
