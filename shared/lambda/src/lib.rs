//! The serverless runtime's logic, generic over the store, the transport and the engine
//! driver so it runs in-process (MemoryStore + MemoryTransport) as on AWS (DynamoDB + SQS):
//! the configuration, the worker (SQS-triggered), the relay and the sweeper (scheduled).

pub mod config;
pub mod deliver;
pub mod driver;
mod emf;
pub mod inbound;
pub mod logging;
pub mod metrics;
pub mod relay;
pub mod runtime_driver;
mod sqs_batch;
pub mod sweeper;
pub mod wake;
pub mod worker;
pub mod xray;

pub use config::{Config, ConfigError, Role};
pub use driver::{DriveError, Driver, Stepped};
pub use inbound::{create_body, CreateRequest, Inbound, CREATE_KIND};
pub use relay::{relay, RelayReport};
pub use runtime_driver::RuntimeDriver;
pub use sweeper::{compat_due, fire_due, sweep, sweep_once, SweepPlan, SweepReport};
pub use wake::{LambdaWaker, MemoryWaker, Waker};
pub use worker::{BatchOutcome, Handled, Observed, Record, RecordError, Worker};
