//! The queue's wire protocol and its transport: harel's message shape (body = Event JSON,
//! `MessageGroupId` = the target execution id), the create message ([`inbound`]), the dedupe
//! ids ([`DedupeKey`]) and the dead-letter attributes, over `aws-sdk-sqs`, with an in-memory
//! twin for in-process tests. The functions and every client (the CLI, a test) share it
//! without depending on each other.

pub mod dead_letters;
pub mod dedupe;
pub mod error;
pub mod inbound;
pub mod memory;
pub mod message;
pub mod sqs;
pub mod transport;

pub use dead_letters::{DeadLetter, DeadLetterQueue, SqsDeadLetters};
pub use dedupe::DedupeKey;
pub use error::{EntryFailure, TransportError};
pub use inbound::{create_body, create_message, CreateRequest, Inbound, Malformed, CREATE_KIND};
pub use memory::MemoryTransport;
pub use message::{check_group_id, Outgoing, Received};
pub use sqs::SqsTransport;
pub use transport::{Transport, MALFORMED_GROUP, REASON_ATTRIBUTE, SOURCE_ID_ATTRIBUTE};
