//! Drives the pure engine over stored executions (harel `driving.py` + `hosting.py`):
//! actions bound by name, the effect loop and its error routing, one atomic commit per
//! step ([`Driver`]), and the delivery of what a step enqueued ([`delivery`]), inline (the
//! embedded [`DurableRunner`]) or through a queue (the Lambda functions, the control plane).
//! The runner's control methods (`cancel`, `terminate`, `suspend`, `resume`, `redrive`) are
//! `harel-control`'s commands followed, like harel's, by the inline relay.

pub mod actions;
pub mod admission;
pub mod clock;
pub mod dead_letters;
pub mod delivery;
mod driver;
mod error;
pub mod invocation;
mod runner;
pub mod sender;
pub mod stdlib;
pub mod timers;
pub mod trace;
pub mod versions;
pub mod worker;

pub use actions::{
    action_error, short_type_name, unbound_error, Action, ActionContext, ActionFuture,
    ActionRegistry,
};
pub use clock::{Clock, ManualClock, SystemClock};
pub use delivery::events::{publish_events, EventBus, EventsReport, MemoryBus};
pub use delivery::queue::{relay, DeliverError, RelayReport};
pub use delivery::{Delivered, CONTROL_EVENTS};
pub use driver::{ActionErrorPolicy, CommitReceipt, Driver};
pub use error::RuntimeError;
pub use harel_control::{Archive, ControlError, JsonlArchive, PurgeFinished, PurgeReport};
pub use harel_engine::ActionError;
pub use runner::{register, DurableRunner};
pub use sender::Sender;
