//! What is Lambda's in the serverless runtime: SQS records in, a partial batch response out
//! (the worker: group ordering and concurrency, parking, dead-lettering, deadlines), the
//! scheduled relay and sweeper, their configuration, logs, metrics and traces. The step and
//! the rules of its delivery are `harel-runtime`'s; the queue's messages are `harel-sqs`'s.
//! Generic over the store and the transport, so it runs in-process (MemoryStore +
//! MemoryTransport) as on AWS (DynamoDB + SQS).

pub mod config;
mod emf;
pub mod eventbridge;
pub mod failure;
pub mod logging;
pub mod metrics;
pub mod relay;
/// Queue timer firing is the runtime's (`harel_runtime::timers`); the sweeper function runs it.
pub use harel_runtime::timers as sweeper;
pub mod wake;
pub mod worker;
pub mod xray;

pub use config::{Config, ConfigError, Role};
pub use relay::{relay, RelayReport};
pub use sweeper::{compat_due, fire_due, sweep, sweep_once, SweepPlan, SweepReport};
pub use wake::{LambdaWaker, MemoryWaker, Waker};
pub use worker::{BatchOutcome, Observation, Record, RecordError, RecordOutcome, Worker};
