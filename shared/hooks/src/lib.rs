//! The outside world in, without a line of glue: verified webhooks and callback tokens.
//!
//! - Webhooks ([`HooksFile`], [`Hooks`]): a hooks file names each provider's signature
//!   scheme and secret and maps its events to harel events; [`Hooks::handle`] verifies a
//!   delivery and answers what to enqueue ([`Outcome`]) or why not ([`Refusal`]). Nothing is
//!   read from a body whose signature does not verify.
//! - Callback tokens ([`callback`]): `harel.lib.callback_token` puts a signed, expiring
//!   token naming the execution and the events into the context; completing or failing it
//!   makes the event to send.
//!
//! The HTTP routes (`POST /hooks/{name}`, `POST /callbacks/{token}[/fail]`) and the CLI
//! only translate: they send what this crate answers through the API's sender.

pub mod callback;
pub mod file;
mod kinds;
mod refusal;
mod route;
pub mod secret;
pub mod signature;

pub use callback::{CallbackKey, Claims, Completion};
pub use file::{Entry, FileError, Format, HooksFile};
pub use kinds::known_kinds;
pub use refusal::Refusal;
pub use route::{Create, Delivery, Hooks, Outcome};
pub use secret::{Secret, SecretError, SecretSource};
pub use signature::{Algorithm, Encoding, Scheme};

/// The variable naming the hooks file.
pub const HOOKS_FILE_VAR: &str = "HAREL_HOOKS_FILE";
