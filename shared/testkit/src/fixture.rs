//! The one stack fixture: a stack in miniature on moto ([`MotoStack`]) with a worker on it,
//! the event source that feeds it and a reader on its tables; what a moto test that drives
//! the worker through the queue needs, so that no test wraps `MotoStack` in a `Stack` of
//! its own.

use std::sync::Arc;

use harel_dynamodb::DynamoDbStore;
use harel_idempotency::Client as IdempotencyClient;
use harel_lambda::{RecordOutcome, Worker};
use harel_model::{Event, Execution};
use harel_runtime::Driver;
use harel_sqs::{create_body, SqsTransport, Transport};
use harel_store::prelude::*;

use crate::moto::{MotoStack, MotoWorker};
use crate::source::{pump, pump_once, Outcome};

/// A stack with its worker deployed: send to its queue, pump the queue into the worker as
/// Lambda's event source does, read what the worker stored.
pub struct Deployed<W = MotoWorker> {
    /// The tables, the queue and the DLQ (their names, the SDK's configuration).
    pub moto: MotoStack,
    /// The event source's (and the clients') handle on the queue.
    pub source: SqsTransport,
    /// A store on the tables, on a client of its own (a reader, an operator).
    pub reader: DynamoDbStore,
    /// The worker the pumped messages go to, shared with the pump.
    pub worker: Arc<W>,
}

impl Deployed {
    /// A fresh stack (`tag` + random) and a worker on it driving `driver`, configured with
    /// `extra` settings.
    pub async fn start(tag: &str, driver: Driver, extra: &[(&str, &str)]) -> Deployed {
        let moto = MotoStack::new(tag).await;
        let worker = moto.worker(driver, extra);
        Deployed::with_worker(moto, worker)
    }
}

impl<S, T, C> Deployed<Worker<S, T, C>>
where
    S: ExecutionStore + 'static,
    T: Transport + 'static,
    C: IdempotencyClient + 'static,
{
    /// `worker`, built by the test (booted as a function boots, its clients counted), on
    /// `moto`.
    pub fn with_worker(moto: MotoStack, worker: Arc<Worker<S, T, C>>) -> Self {
        Deployed {
            source: moto.source(),
            reader: moto.store(),
            moto,
            worker,
        }
    }

    /// The table prefix.
    pub fn prefix(&self) -> &str {
        &self.moto.prefix
    }

    /// The queue's URL.
    pub fn queue(&self) -> &str {
        &self.moto.queue
    }

    /// Send `body` to the group `group` as a client does (a fresh deduplication id).
    pub async fn send(&self, group: &str, body: String) {
        crate::client::send(&self.source, group, body).await;
    }

    /// One batch into the worker; the records' outcomes (empty: nothing was visible).
    pub async fn pump_once(&self) -> Vec<Outcome> {
        pump_once(&self.source, &self.worker).await
    }

    /// Batches until the queue is empty; every record must succeed.
    pub async fn pump(&self) -> Vec<RecordOutcome> {
        pump(&self.source, &self.worker).await
    }

    /// Send the create message of `machine` as `id` (empty context), then pump.
    pub async fn create(&self, machine: &str, id: &str) -> Vec<RecordOutcome> {
        self.send(id, create_body(machine, Default::default(), Some(id)))
            .await;
        self.pump().await
    }

    /// Send the event `kind` (no data) to `id`, then pump.
    pub async fn event(&self, id: &str, kind: &str) -> Vec<RecordOutcome> {
        self.send(id, Event::new(kind).to_json()).await;
        self.pump().await
    }

    /// The execution `id` as stored; it must exist.
    pub async fn load(&self, id: &str) -> Execution {
        self.reader
            .load(id)
            .await
            .expect("load")
            .unwrap_or_else(|| panic!("{id} is stored"))
    }
}
