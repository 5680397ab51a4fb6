//! Actions: async Rust functions bound by name, and the context they run with.
//!
//! ```
//! use harel_runtime::{ActionRegistry, ActionError};
//! use serde_json::{json, Value};
//!
//! let mut registry = ActionRegistry::new();
//! // a synchronous action
//! registry.register_fn("shop.count", |ctx, _event, _inputs| {
//!     let n = ctx.context.get("n").and_then(Value::as_i64).unwrap_or(0);
//!     ctx.context.insert("n".into(), json!(n + 1));
//!     Ok(Value::Null)
//! });
//! // an async one: the future may borrow the context for as long as it runs
//! registry.register("shop.charge", |ctx, _event, inputs| {
//!     Box::pin(async move {
//!         let amount = inputs.get("amount").cloned().unwrap_or(Value::Null);
//!         if amount.is_null() {
//!             return Err(ActionError::new("ValueError", "no amount"));
//!         }
//!         ctx.context.insert("charged".into(), amount);
//!         Ok(json!(ctx.idempotency_key))
//!     })
//! });
//! assert!(registry.get("shop.charge").is_some());
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use harel_engine::ActionError;
use harel_model::{Event, Object};
use harel_store::DomainEvent;
use serde_json::Value;

/// What an action sees of its execution (harel's `_Proxy`): the live context, which it may
/// change, and the idempotency key of this call,
/// `{execution_id}:{event_id | "start"}:{index}:{action_name}` (harel 0.9.0's `_ActionKeys`):
/// every attempt at the same event computes the same keys.
pub struct ActionContext<'a> {
    /// The execution's context, live: what the action writes is what the step commits (and the
    /// next actions of the step see).
    pub context: &'a mut Object,
    /// This call's idempotency key (the format above): the same on every attempt at the same
    /// event, so an action that calls an outside service can pass it along to be charged once.
    pub idempotency_key: &'a str,
    /// The id of the execution the action runs in.
    pub execution_id: &'a str,
    /// Domain events for the bus this step publishes (`harel.lib.publish`): committed with
    /// the step, dropped with it when it fails.
    pub published: &'a mut Vec<DomainEvent>,
    /// The deadline of the invocation the step runs in, when its host has one (a Lambda
    /// function's, set by [`crate::invocation::within`]): an action that waits on IO stops
    /// in time for the step to commit.
    pub deadline: Option<std::time::Instant>,
}

/// What an async action returns: its value (the selector's result), or the error the model's
/// `on error` handling sees.
pub type ActionFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, ActionError>> + Send + 'a>>;

/// An action: called with its execution's context, the triggering event (None on start and
/// automatic transitions) and its bound `inputs`; answers a value (a selector's result).
pub trait Action: Send + Sync {
    /// Run the action once; the driver awaits it before the step goes on.
    fn call<'a>(
        &'a self,
        ctx: ActionContext<'a>,
        event: Option<&'a Event>,
        inputs: &'a Object,
    ) -> ActionFuture<'a>;
}

impl<F> Action for F
where
    F: for<'a> Fn(ActionContext<'a>, Option<&'a Event>, &'a Object) -> ActionFuture<'a>
        + Send
        + Sync,
{
    fn call<'a>(
        &'a self,
        ctx: ActionContext<'a>,
        event: Option<&'a Event>,
        inputs: &'a Object,
    ) -> ActionFuture<'a> {
        self(ctx, event, inputs)
    }
}

struct SyncAction<F>(F);

impl<F> Action for SyncAction<F>
where
    F: for<'a> Fn(
            &mut ActionContext<'a>,
            Option<&'a Event>,
            &'a Object,
        ) -> Result<Value, ActionError>
        + Send
        + Sync,
{
    fn call<'a>(
        &'a self,
        mut ctx: ActionContext<'a>,
        event: Option<&'a Event>,
        inputs: &'a Object,
    ) -> ActionFuture<'a> {
        let out = (self.0)(&mut ctx, event, inputs);
        Box::pin(std::future::ready(out))
    }
}

/// `ActionError` of a Rust error: its type's name (the last path segment, as Python's
/// `type(exc).__name__`) and its message.
pub fn action_error<E: std::error::Error>(error: &E) -> ActionError {
    ActionError::new(short_type_name::<E>(), error.to_string())
}

/// A type's name as Python's `type(exc).__name__` shows a class: the last path segment,
/// without generic arguments.
pub fn short_type_name<T: ?Sized>() -> &'static str {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

/// Actions by the name a Definition refers to them with (`ActionRef::function`), plus what
/// to do with a name nothing is bound to.
#[derive(Clone, Default)]
pub struct ActionRegistry {
    actions: HashMap<String, Arc<dyn Action>>,
    fallback: Option<Arc<dyn Action>>,
}

impl ActionRegistry {
    /// An empty registry (harel's standard library is added by [`ActionRegistry::with_stdlib`]).
    pub fn new() -> Self {
        ActionRegistry::default()
    }

    /// A registry holding `harel.lib.*`.
    pub fn with_stdlib() -> Self {
        let mut r = ActionRegistry::new();
        crate::stdlib::register(&mut r);
        r
    }

    /// Bind `name` to an async action (one that returns an [`ActionFuture`]); a name bound
    /// again is replaced.
    pub fn register<F>(&mut self, name: impl Into<String>, action: F) -> &mut Self
    where
        F: for<'a> Fn(ActionContext<'a>, Option<&'a Event>, &'a Object) -> ActionFuture<'a>
            + Send
            + Sync
            + 'static,
    {
        self.actions.insert(name.into(), Arc::new(action));
        self
    }

    /// Bind `name` to a synchronous action (it returns its value directly); a name bound again
    /// is replaced.
    pub fn register_fn<F>(&mut self, name: impl Into<String>, action: F) -> &mut Self
    where
        F: for<'a> Fn(
                &mut ActionContext<'a>,
                Option<&'a Event>,
                &'a Object,
            ) -> Result<Value, ActionError>
            + Send
            + Sync
            + 'static,
    {
        self.actions
            .insert(name.into(), Arc::new(SyncAction(action)));
        self
    }

    /// Bind `name` to an [`Action`] already shared behind an `Arc` (one implementation serving
    /// several names, or a registry built elsewhere); a name bound again is replaced.
    pub fn register_action(
        &mut self,
        name: impl Into<String>,
        action: Arc<dyn Action>,
    ) -> &mut Self {
        self.actions.insert(name.into(), action);
        self
    }

    /// What runs for a name nothing is bound to. Without one, such a call fails like
    /// harel's import of a missing module (see [`unbound_error`]).
    pub fn set_fallback(&mut self, action: Arc<dyn Action>) -> &mut Self {
        self.fallback = Some(action);
        self
    }

    /// The action bound to `name` (the fallback is not consulted).
    pub fn get(&self, name: &str) -> Option<Arc<dyn Action>> {
        self.actions.get(name).cloned()
    }

    /// Whether `name` is bound (the fallback does not count).
    pub fn contains(&self, name: &str) -> bool {
        self.actions.contains_key(name)
    }

    pub(crate) fn resolve(&self, name: &str) -> Option<Arc<dyn Action>> {
        self.get(name).or_else(|| self.fallback.clone())
    }
}

/// The failure of calling a name nothing is bound to. harel imports the dotted path, so
/// the same machine there fails with `ModuleNotFoundError` (or `AttributeError`); the type
/// here says what actually happened.
pub fn unbound_error(name: &str) -> ActionError {
    ActionError::new("UnboundAction", format!("no action is bound to {name:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("card declined")]
    struct Declined;

    #[test]
    fn rust_errors_keep_their_type_name() {
        let e = action_error(&Declined);
        assert_eq!(e.to_string(), "Declined: card declined");
    }
}
