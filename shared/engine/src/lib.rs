//! The pure statechart interpreter: harel 0.9.0's `engine/core.py`, rule for rule.
//!
//! Python's engine is a generator yielding effects; here it is a pair of `async fn`s
//! ([`start`], [`process`]) over a small [`Host`] trait. The blocking effects (running an
//! action or a selector, reading the clock when a timer is armed) are host calls the engine
//! awaits; the deferred ones (emits, spawns, timer schedules/cancels, `set` values) are
//! collected as data in [`StepEffects`] for the driver to commit with the step.
//!
//! No IO and no runtime: with a host whose futures are ready, [`run_ready`] drives a step by
//! polling it once. A host whose actions always answer at once (no IO to await: an embedded
//! interpreter, a simulation, the benchmark) can use [`blocking`] instead: the same rules,
//! compiled from the same source without the async state machines.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use harel_model::{ActionRef, Event, KeyMap, Node, Object, SmolStr};
pub use harel_model::{Spawn, TimerOp};
use serde_json::Value;

pub mod blocking;
mod core;
pub mod expr;
pub mod guard;
pub mod ids;
pub mod invoke;
pub mod resolve;

pub use crate::core::{error_event, process, start, timeout_event, ttl_delay, TTL_PATH};

pub use expr::ExpressionError;
/// How `core.rs` and `invoke.rs` are compiled here: as written, async. [`blocking`] compiles
/// the same files through `must_be_sync`, which strips `async` and `.await`, so the two
/// engines cannot drift apart.
use maybe_async::must_be_async as step_mode;
pub use resolve::{has_cancel_handler, has_error_handler, is_active, is_valid_reposition_target};

/// Which hook of a node an action runs as (harel's `Hook`), or a transition's selector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    /// The node's `on_enter`, run as the state is entered.
    Enter,
    /// The node's `on_exit`, run as the state is left.
    Exit,
    /// The node's `on_activity`, run for an event the active state neither takes nor defers.
    Activity,
    /// A transition's selector, whose result picks the target.
    Selector,
}

impl CallKind {
    /// harel's name for it (`on_enter`, `on_exit`, `on_activity`, `selector`), as error
    /// messages and traces print it.
    pub fn as_str(self) -> &'static str {
        match self {
            CallKind::Enter => "on_enter",
            CallKind::Exit => "on_exit",
            CallKind::Activity => "on_activity",
            CallKind::Selector => "selector",
        }
    }
}

/// One blocking call the engine asks its host to make. The action may read and write the
/// execution's context while it runs (harel passes the live dict to actions).
pub struct ActionCall<'a> {
    /// The node whose hook runs (for a selector: the active state).
    pub node: &'a Node,
    /// Which hook (or the selector) this call runs as.
    pub kind: CallKind,
    /// What to run: the implementation name and its bound inputs.
    pub action: &'a ActionRef,
    /// The triggering event (None on start and automatic transitions, as in harel).
    pub event: Option<&'a Event>,
    /// The execution's live context: what the action writes stays (committed with the step).
    pub context: &'a mut Object,
}

/// A failed action: its error's type name (harel's `type(exc).__name__`, what an `error`
/// event's `type` and a FAILED execution's `error` carry) and message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct ActionError {
    /// The error's type name (`ValueError`, `TimeoutError`, ...), which `on error` guards
    /// match as the event's `type`.
    pub kind: String,
    /// The error's text (`str(exc)`).
    pub message: String,
}

impl ActionError {
    /// An error of type `kind` saying `message`.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        ActionError {
            kind: kind.into(),
            message: message.into(),
        }
    }
}

/// What the engine needs from the outside world.
pub trait Host {
    /// Run an action (or a selector) and answer with its result.
    fn call<'a>(
        &'a mut self,
        call: ActionCall<'a>,
    ) -> impl Future<Output = Result<Value, ActionError>> + Send + 'a;

    /// The driver's clock (epoch seconds), read when a timer is armed.
    fn now(&mut self) -> f64;
}

/// The deferred effects of one step, in the order the engine produced them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepEffects {
    /// `(target execution id, event)`: a `Cancel` to each child of a region left, a
    /// `Finished` to the parent. The target is an `Option` as in the store's outbox rows;
    /// the engine always names one.
    pub emits: Vec<(Option<SmolStr>, Event)>,
    /// Timers armed (a state with a `timeout` entered, the `ttl` re-armed) and disarmed (a
    /// timed state left), in order: a cancel then a re-arm of one path leaves it armed.
    pub timers: Vec<TimerOp>,
    /// Children to create (regions forked, submachines invoked, fan-out instances).
    pub spawns: Vec<Spawn>,
    /// The context values `set` assignments wrote (the trace's `assigned`), in the order
    /// first written, each key with its last value (a dict's `update`). A small map: a step
    /// assigns a few keys or none, and an empty one costs a step nothing to carry.
    pub assigned: KeyMap<Value>,
}

/// Why a step stopped. The execution is left exactly as harel leaves it at the raise.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// An action (or selector) failed: the driver routes it to `on error` or its policy.
    #[error("{} of {action} failed: {error}", .kind.as_str())]
    Action {
        /// What the action raised.
        error: ActionError,
        /// The hook (or selector) it ran as.
        kind: CallKind,
        /// The action's implementation name.
        action: String,
    },
    /// A `set` expression could not be evaluated (raised before leaving any state).
    #[error(transparent)]
    Expression(#[from] ExpressionError),
    /// One of harel's assertions failed (e.g. a selector result matching no branch and no
    /// `else`): a model bug; harel raises it to the caller and commits nothing.
    #[error("AssertionError: {0}")]
    Assertion(String),
    /// An execution that does not fit its definition (a path that isn't there, ...), or a
    /// value harel would fail to convert (a non-numeric `timeout context` key).
    #[error("{0}")]
    Corrupt(String),
}

/// Drive a step whose host answers synchronously (ready futures): poll it once.
/// Inlined so the (large) step future is built in place rather than moved in.
#[inline(always)]
pub fn run_ready<F: Future>(fut: F) -> Option<F::Output> {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}
