//! Remote actions: an action's implementation in another function, called with harel
//! 0.9.0's FaaS wire contract (`harel/faas.py`) over AWS Lambda (`Invoke`,
//! `RequestResponse`) or HTTP, bound by configuration (an action map file) instead of code.
//!
//! ```text
//! client -> function: {"context": {...}, "event": {"kind": K, "data": {...}}, "inputs": {...}, "idempotency_key": "..."}
//! function -> client: {"context": {...}, "result": ...}
//! ```
//!
//! The answer's context replaces the execution's, `result` is what a selector routes on; a
//! Lambda `FunctionError`, a non-2xx answer, a timeout after the last attempt, an answer or
//! context too large are action errors (the machine's `on error`, else FAILED). The step's
//! idempotency key (`{execution}:{event id | start}:{index}:{action}`, harel's
//! `_ActionKeys`) travels as `idempotency_key`: a retried step sends the same one.
//!
//! HTTP header values come from the map's text, the environment (`env:`), SSM Parameter
//! Store (`ssm:`) or Secrets Manager (`secretsmanager:`): [`Secrets::resolve`] reads the AWS
//! ones once (a function's cold start) and [`bind`] takes them; only references are shown.

pub mod client;
pub mod contract;
mod depth;
pub mod function;
pub mod map;
pub mod secrets;

use std::path::{Path, PathBuf};

pub use client::{bind, BindError, CallStats, Clients, RemoteAction, COMMIT_RESERVE};
pub use contract::{request, Answer};
pub use map::{ActionMap, Binding, Format, HeaderSource, MapError, Target};
pub use secrets::{AwsReader, Secrets};

/// The file names an action map has in a machines folder, looked for in this order.
pub const MAP_NAMES: [&str; 4] = [
    "actions.json",
    "actions.toml",
    "actions.yaml",
    "actions.yml",
];

/// The action map kept beside the machines in `dir`, if there is one. Two of them is an
/// error (which one wins would be a guess).
pub fn map_in_dir(dir: &Path) -> Result<Option<PathBuf>, MapError> {
    let found: Vec<PathBuf> = MAP_NAMES
        .iter()
        .map(|n| dir.join(n))
        .filter(|p| p.is_file())
        .collect();
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.into_iter().next()),
        _ => Err(MapError {
            origin: dir.display().to_string(),
            message: format!(
                "more than one action map: {}",
                found
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}
