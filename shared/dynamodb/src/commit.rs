//! `commit` as one `TransactWriteItems`: the CAS-conditioned Execution Put first, then the
//! outbox, spawns, processed mark, timers and the trace ring, exactly as harel lays them
//! out; the size limits checked before anything is sent; the outcome decided from the
//! cancellation reasons.
//!
//! The processed mark is written only if absent: the dedupe decision is taken by the
//! transaction, not by the read before it. A `BatchGetItem` is read-committed item by item,
//! so a worker can read the Execution after another writer's transaction and the mark from
//! before it; its CAS then matches and, with harel's unconditional mark, the event would be
//! applied twice. A mark that exists cancels the commit, and the reasons say so.
//!
//! In the lean commit mode (`harel_stack::CommitMode::Lean`) the mark is a slot of the
//! Execution item's window (`crate::marks`) instead, and a step that writes nothing else is
//! one `UpdateItem`.
//!
//! One concept a module: `layout` lays the commit out as transaction items, `limits` checks
//! them against DynamoDB's size limits, `retention` gives the TTLs they carry, `definition`
//! adds a machine version to the same transaction, `token` makes a re-sent request
//! idempotent, and `send` sends it and reads the cancellation reasons back as an [`Outcome`].

mod definition;
mod layout;
mod limits;
mod retention;
mod send;
mod token;

pub use definition::keep_definition;
pub use layout::{plan, Inputs, LeanWrite, Plan, COMMIT_ID_ATTR, TRACE_IDX_ATTR};
pub use limits::{MAX_ITEM_BYTES, MAX_TRANSACTION_BYTES, MAX_TRANSACTION_ITEMS};
pub use retention::{Retention, MARK_MIN_RETENTION_SECS};
pub use send::{request, send_alone, send_outcome, Outcome};
pub use token::request_token;
