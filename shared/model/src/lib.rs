//! harel's data contract, shared by every part of the project: the `Execution` and `Event`
//! documents (JSON compatible with harel 0.9.0), the immutable `Definition` tree, event and
//! context schemas, Python's text of values where harel's messages depend on it, and the
//! nesting limit of the JSON, YAML and TOML texts operators write ([`nesting`]).
//!
//! Pure data: serde and nothing else, so it compiles fast and embeds anywhere.

pub mod build;
pub mod definition;
pub mod effects;
pub mod execution;
pub mod nesting;
pub mod pyjson;
pub mod pyrepr;
pub mod schema;
pub mod unique;

pub use build::{build_definition, BuildError};
pub use definition::{
    ActionRef, Assign, Choice, Definition, EventFilter, Expr, FieldRef, Node, NodeId, NodeKind, Op,
    Predicate, Scope, Selector, Timeout, Transition,
};
pub use effects::{Spawn, TimerOp};
pub use execution::replace_key;
pub use execution::{
    ChildState, Event, Execution, ExecutionPage, ExecutionSummary, FastHash, KeyMap, NodeHints,
    Object, Status, StoredStatus,
};
pub use schema::{EventType, FieldSpec};
/// The string type of ids, node paths and event kinds: cloning one never allocates.
pub use smol_str::SmolStr;
