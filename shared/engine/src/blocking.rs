//! The engine for a host whose actions answer at once: [`start`] and [`process`] are plain
//! functions over a [`Host`] that returns each action's result directly.
//!
//! The rules are not a second copy: `core.rs` and `invoke.rs` are compiled a second time
//! here, through `maybe_async::must_be_sync`, which removes `async` and `.await`. A step
//! then runs as ordinary nested calls instead of nested futures, which the async engine
//! builds, moves and polls even when every action is ready (about a fifth of a simple
//! step's instructions). Use the crate's async [`crate::start`]/[`crate::process`] when an
//! action may await IO, as the runtime's do; use these when none can (embedding, a
//! simulation, the benchmark). [`Ready`] lets such a host drive the async engine too.

use std::future::{ready, Future, Ready as ReadyFuture};

use serde_json::Value;

use crate::{ActionCall, ActionError};

/// What the engine needs from a host whose actions never wait.
pub trait Host {
    /// Run an action (or a selector) and answer with its result.
    fn call(&mut self, call: ActionCall<'_>) -> Result<Value, ActionError>;

    /// The driver's clock (epoch seconds), read when a timer is armed.
    fn now(&mut self) -> f64;
}

/// A blocking [`Host`] as an async [`crate::Host`] whose futures are ready at once (drive
/// them with [`crate::run_ready`]): one host implementation for both engines.
pub struct Ready<H>(pub H);

impl<H: Host + Send> crate::Host for Ready<H> {
    fn call<'a>(
        &'a mut self,
        call: ActionCall<'a>,
    ) -> impl Future<Output = Result<Value, ActionError>> + Send + 'a {
        let answer: ReadyFuture<_> = ready(self.0.call(call));
        answer
    }

    fn now(&mut self) -> f64 {
        self.0.now()
    }
}

use maybe_async::must_be_sync as step_mode;

// Loaded twice on purpose (see the module's comment). The async engine's public helpers
// (event builders, ids) come along unused.
#[allow(dead_code, clippy::duplicate_mod)]
// the same files as the async compilation, whose `pub` items the crate re-exports from
// there: here they are reachable from this module only
#[allow(unreachable_pub)]
#[path = "core.rs"]
mod core;
#[allow(dead_code, clippy::duplicate_mod)]
#[allow(unreachable_pub)]
#[path = "invoke.rs"]
mod invoke;

pub use self::core::{process, start};
