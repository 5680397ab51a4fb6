//! The hooks file (`HAREL_HOOKS_FILE`): one entry per provider, JSON, TOML or YAML told by
//! the extension. Unknown fields are refused; every mistake names the file, the entry, the
//! field and, where the format knows it, the line and column.
//!
//! ```yaml
//! stripe:
//!   verify: {scheme: stripe, secret: "secretsmanager:stripe-webhook", tolerance: 300}
//!   dedupe: id                                   # JMESPath: the provider's event id
//!   execution: data.object.metadata.harel_order_id
//!   kind_from: type
//!   kinds: {payment_intent.succeeded: PaymentSucceeded, payment_intent.payment_failed:
//! PaymentFailed}
//!   data: data.object
//! ```
//!
//! One concept a module: `entry` is an entry's fields and the rules between them, `verify`
//! its signature scheme and secret, `parse` reads the file in its format and places each
//! mistake, and `machines` checks the entries against the machines they name.

mod entry;
mod machines;
mod parse;
mod verify;

use indexmap::IndexMap;

pub use entry::{CreateSpec, Entry, Expr, Extract, KindSpec};
pub use verify::Verify;

/// The file's formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JSON (`.json`).
    Json,
    /// TOML (`.toml`).
    Toml,
    /// YAML (`.yaml`, `.yml`).
    Yaml,
}

/// A mistake in the hooks file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct FileError {
    /// The file's path (or the origin given to the parser).
    pub file: String,
    /// The entry at fault, when the mistake is inside one.
    pub entry: Option<String>,
    /// The field's path inside the entry (`verify.tolerance`).
    pub field: Option<String>,
    /// 1-based line and column.
    pub position: Option<(usize, usize)>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "hooks file {}", self.file)?;
        if let Some(entry) = &self.entry {
            write!(f, ", entry {entry:?}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ", field {field}")?;
        }
        if let Some((line, col)) = self.position {
            write!(f, ", at {line}:{col}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// The parsed file, secrets not yet read.
#[derive(Clone, Debug, PartialEq)]
pub struct HooksFile {
    /// Where the file was read from (for errors and logs).
    pub origin: String,
    /// The entries by hook name (the `/hooks/{name}` route), in the file's order.
    pub entries: IndexMap<String, Entry>,
}
