//! The client side: an [`Action`] that calls a remote function with harel's contract
//! (`lambda_action` / `http_action`), retried within the step when it times out or fails
//! transiently, bounded by the invocation's remaining time.
//!
//! One concept a module: `clients` holds the transports' clients and the call counts, `bind`
//! binds the action map's entries (their headers read at cold start), `attempts` sends a
//! call's attempts with retries and backoff within the invocation's time, `http` and `lambda`
//! are the two transports; here, the bound action and how its answer is applied.

mod attempts;
mod bind;
mod clients;
mod http;
mod lambda;

use std::time::{Duration, Instant};

use harel_model::{Event, Object};
use harel_runtime::{Action, ActionContext, ActionError, ActionFuture};
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::contract::Answer;
use crate::map::Binding;

use attempts::Sent;
pub use bind::{bind, BindError};
pub use clients::{CallStats, Clients};

/// Lambda's limit on a synchronous invocation's request and response payloads.
pub const LAMBDA_PAYLOAD_LIMIT: usize = 6 * 1024 * 1024;
/// The most an answer may hold, whatever the transport (a larger one is not read).
pub const ANSWER_LIMIT: usize = LAMBDA_PAYLOAD_LIMIT;
/// DynamoDB's item limit: a context past it can never be committed with its execution.
pub const CONTEXT_LIMIT: usize = 400 * 1024;
/// Time kept, when the invocation's deadline is known, for the step's commit after the call.
pub const COMMIT_RESERVE: Duration = Duration::from_secs(2);

/// One action bound to a remote function.
pub struct RemoteAction {
    binding: Binding,
    headers: HeaderMap,
    /// Bound with [`Secrets::unread`](crate::Secrets::unread) while its headers read AWS: never called here.
    unread: Option<String>,
    clients: Clients,
}

impl RemoteAction {
    /// The action map's entry this action was bound from.
    pub fn binding(&self) -> &Binding {
        &self.binding
    }

    /// One call: the request built, sent (retried until the invocation's `deadline`, when
    /// one is known), the answer applied to `context`.
    pub async fn invoke(
        &self,
        context: &mut Object,
        event: Option<&Event>,
        inputs: &Object,
        idempotency_key: &str,
        deadline: Option<Instant>,
    ) -> Result<Value, ActionError> {
        let started = Instant::now();
        let mut sent = Sent::default();
        let outcome = self
            .send_with_retries(context, event, inputs, idempotency_key, deadline, &mut sent)
            .await;
        let outcome = outcome.and_then(|answer| self.apply(context, answer));
        let elapsed = started.elapsed();
        let attempts = sent.attempts;
        self.clients
            .record(&self.binding.action, &sent, elapsed, outcome.is_err());
        match &outcome {
            Ok(_) => tracing::info!(
                action = %self.binding.action, target = %self.binding.target, attempts,
                latency_ms = elapsed.as_millis() as u64, "remote action"
            ),
            Err(e) => tracing::warn!(
                action = %self.binding.action, target = %self.binding.target, attempts,
                latency_ms = elapsed.as_millis() as u64, error = %e.kind, "remote action failed"
            ),
        }
        outcome
    }

    /// The answer's context replaces the execution's (harel's `_apply`); `result` is the
    /// action's value. A context the execution's item cannot hold is refused, nothing applied.
    fn apply(&self, context: &mut Object, answer: Answer) -> Result<Value, ActionError> {
        let size = serde_json::to_vec(&answer.context).map_or(0, |b| b.len());
        if size > CONTEXT_LIMIT {
            return Err(ActionError::new(
                "ContextTooLarge",
                format!(
                    "{} returned a context of {size} bytes: an execution's item holds at most {CONTEXT_LIMIT} (DynamoDB's 400 KB); nothing of it was applied",
                    self.binding.target
                ),
            ));
        }
        *context = answer.context;
        Ok(answer.result)
    }
}

impl Action for RemoteAction {
    fn call<'a>(
        &'a self,
        ctx: ActionContext<'a>,
        event: Option<&'a Event>,
        inputs: &'a Object,
    ) -> ActionFuture<'a> {
        Box::pin(async move {
            if let Some(reference) = &self.unread {
                return Err(ActionError::new(
                    "RemoteActionError",
                    format!(
                        "{}: this function did not read {reference} (it runs no actions)",
                        self.binding.action
                    ),
                ));
            }
            self.invoke(
                ctx.context,
                event,
                inputs,
                ctx.idempotency_key,
                ctx.deadline,
            )
            .await
        })
    }
}
