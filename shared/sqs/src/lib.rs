//! The SQS FIFO transport: harel's message shape (body = Event JSON, `MessageGroupId` = the
//! target execution id) over `aws-sdk-sqs`, and an in-memory twin for in-process tests.

pub mod dedupe;
pub mod error;
pub mod memory;
pub mod message;
pub mod sqs;
pub mod transport;

pub use dedupe::DedupeKey;
pub use error::{EntryFailure, TransportError};
pub use memory::MemoryTransport;
pub use message::{check_group_id, Outgoing, Received};
pub use sqs::SqsTransport;
pub use transport::{Transport, MALFORMED_GROUP, REASON_ATTRIBUTE, SOURCE_ID_ATTRIBUTE};
