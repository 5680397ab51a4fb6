//! The SQS adapter of the queue port (`harel-queue`): [`SqsTransport`] (harel's
//! `SqsTransport` over `aws-sdk-sqs`) and [`SqsDeadLetters`]. The port's modules are
//! re-exported under their old paths, so a client that wants the whole queue (the CLI, a
//! function, a test) needs this crate alone.

pub mod dead_letters;
pub mod sqs;

pub use harel_queue::{dedupe, error, inbound, memory, message, transport};

pub use dead_letters::SqsDeadLetters;
pub use harel_queue::{
    check_group_id, create_body, create_message, CreateRequest, DeadLetter, DeadLetterQueue,
    DedupeKey, EntryFailure, Inbound, Malformed, MemoryTransport, Outgoing, Received, Transport,
    TransportError, CREATE_KIND, MALFORMED_GROUP, REASON_ATTRIBUTE, SOURCE_ID_ATTRIBUTE,
};
pub use sqs::SqsTransport;
