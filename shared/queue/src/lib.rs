//! The queue port: harel's wire protocol (body = Event JSON, `MessageGroupId` = the target
//! execution id; the create message in [`inbound`]; the dedupe ids, [`DedupeKey`]; the
//! dead-letter attributes), the [`Transport`] and [`DeadLetterQueue`] traits a host needs from
//! a queue, and their in-memory twin. No AWS here: the SQS adapter is `harel-sqs`, and the
//! host logic (`harel-runtime`) depends on this crate only.

#[cfg(feature = "contract")]
pub mod contract;
pub mod dead_letters;
pub mod dedupe;
pub mod error;
pub mod inbound;
pub mod memory;
pub mod message;
pub mod transport;

pub use dead_letters::{DeadLetter, DeadLetterQueue};
pub use dedupe::DedupeKey;
pub use error::{EntryFailure, TransportError};
pub use inbound::{create_body, create_message, CreateRequest, Inbound, Malformed, CREATE_KIND};
pub use memory::MemoryTransport;
pub use message::{check_group_id, Outgoing, Received};
pub use transport::{Transport, MALFORMED_GROUP, REASON_ATTRIBUTE, SOURCE_ID_ATTRIBUTE};
