//! The engine's host during a step: action calls with harel's idempotency keys, and the
//! clock.

use std::future::Future;

use harel_engine::{ActionCall, Host};
use harel_store::DomainEvent;
use serde_json::Value;

use crate::actions::{unbound_error, ActionContext, ActionRegistry};
use crate::clock::Clock;

/// The idempotency keys of one step's actions (harel 0.9.0 `_ActionKeys`):
/// `{execution_id}:{event_id | "start"}:{index}:{action_name}`.
pub(crate) struct ActionKeys {
    base: String,
    index: usize,
}

impl ActionKeys {
    /// The keys of one step of `execution_id`; `step` is the event's id, or `start`.
    pub(crate) fn new(execution_id: &str, step: &str) -> Self {
        ActionKeys {
            base: format!("{execution_id}:{step}"),
            index: 0,
        }
    }

    /// The key of the step's next action call, `action_name` (numbered from 0 in call order).
    pub(crate) fn next(&mut self, action_name: &str) -> String {
        let key = format!("{}:{}:{}", self.base, self.index, action_name);
        self.index += 1;
        key
    }
}

/// The engine's host for one step: calls the registered actions (each with its idempotency
/// key, in call order) and reads the clock, collecting the actions run and the domain events
/// they published.
pub(super) struct DriverHost<'r> {
    pub(super) registry: &'r ActionRegistry,
    pub(super) clock: &'r dyn Clock,
    pub(super) execution_id: String,
    pub(super) keys: &'r mut ActionKeys,
    pub(super) actions: Vec<String>,
    pub(super) published: Vec<DomainEvent>,
}

impl Host for DriverHost<'_> {
    fn call<'a>(
        &'a mut self,
        call: ActionCall<'a>,
    ) -> impl Future<Output = Result<Value, harel_engine::ActionError>> + Send + 'a {
        let name = &call.action.function;
        let key = self.keys.next(name);
        self.actions.push(name.clone());
        let action = self.registry.resolve(name);
        let execution_id: &'a str = &self.execution_id;
        let published = &mut self.published;
        async move {
            let Some(action) = action else {
                return Err(unbound_error(&call.action.function));
            };
            let ctx = ActionContext {
                context: call.context,
                idempotency_key: &key,
                execution_id,
                published,
                deadline: crate::invocation::deadline(),
            };
            action.call(ctx, call.event, &call.action.inputs).await
        }
    }

    fn now(&mut self) -> f64 {
        self.clock.now()
    }
}
