//! The function side: an ordinary async Rust action served with harel's contract, the
//! counterpart of harel Python's `handler(fn)`. harel Python's `lambda_action` /
//! `http_action` and our own remote actions call it alike.
//!
//! ```no_run
//! use harel_remote::function::{run, Call, Reply};
//! use serde_json::json;
//!
//! #[derive(Debug, thiserror::Error)]
//! #[error("no amount")]
//! struct NoAmount;
//!
//! async fn charge(mut call: Call) -> Result<Reply, NoAmount> {
//!     let amount = call.event.data.get("amount").cloned().ok_or(NoAmount)?;
//!     // call.idempotency_key: pass it to the payment provider so a retried step charges once
//!     call.context.insert("charged".into(), amount);
//!     Ok(call.reply(json!("ok"))) // the result a selector routes on
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), lambda_runtime::Error> {
//!     run(charge).await
//! }
//! ```
//!
//! An `Err` is the function's failure: Lambda reports it as a `FunctionError`, which the
//! caller turns into an action error (`on error`, else FAILED). A modelled failure is a
//! result (`Ok(call.reply(json!("declined")))`), routed by a selector.

use std::fmt::Display;
use std::future::Future;

use harel_model::Object;
use serde_json::Value;

use crate::contract::Answer;

/// The event of a call: its kind and data (harel's `Event`, as the payload carries it).
#[derive(Clone, Debug, PartialEq)]
pub struct CallEvent {
    /// The event's kind (`order.placed`, ...).
    pub kind: String,
    /// The event's data (empty when it has none).
    pub data: Object,
}

/// One call of the action: what harel's `_ServerProxy` and `Event` give a Python action.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The execution's context: change it, and answer with it ([`Call::reply`]).
    pub context: Object,
    /// The event the step is handling.
    pub event: CallEvent,
    /// The action's inputs, as the machine's `call` passed them (empty when none).
    pub inputs: Object,
    /// Stable across retries of the step: give it to the callee's own idempotency.
    pub idempotency_key: Option<String>,
}

/// The function's answer: the context (which replaces the execution's) and the result.
pub type Reply = Answer;

impl Call {
    /// Read a payload as harel's `handler` does: `event.kind` is required, the rest default
    /// to empty.
    pub fn from_payload(payload: Value) -> Result<Call, String> {
        let Value::Object(mut p) = payload else {
            return Err("the payload must be a JSON object".into());
        };
        let object = |v: Option<Value>, what: &str| match v {
            None | Some(Value::Null) => Ok(Object::new()),
            Some(Value::Object(o)) => Ok(o),
            Some(other) => Err(format!("{what} must be an object, found {other}")),
        };
        let context = object(p.remove("context"), "context")?;
        let inputs = object(p.remove("inputs"), "inputs")?;
        let Some(Value::Object(mut event)) = p.remove("event") else {
            return Err("the payload has no event {\"kind\": ..., \"data\": ...}".into());
        };
        let kind = match event.remove("kind") {
            Some(Value::String(k)) => k,
            _ => return Err("the event has no kind".into()),
        };
        let data = object(event.remove("data"), "event.data")?;
        let idempotency_key = match p.remove("idempotency_key") {
            Some(Value::String(k)) => Some(k),
            _ => None,
        };
        Ok(Call {
            context,
            event: CallEvent { kind, data },
            inputs,
            idempotency_key,
        })
    }

    /// The answer: this call's (changed) context and `result`.
    pub fn reply(self, result: Value) -> Reply {
        Answer {
            context: self.context,
            result,
        }
    }
}

/// Why a call failed: a payload that is not harel's, or the action's own error (shown as
/// Lambda shows an unhandled error's type and message).
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The payload is not harel's call payload (no event kind, a context that is not an object,
    /// ...); Lambda's `errorType` is `ValueError`.
    #[error("not a harel action payload: {0}")]
    Payload(String),
    /// The action's error: its type's name (as Python's `type(exc).__name__`) and message.
    #[error("{message}")]
    Action {
        /// The error type's name, Lambda's `errorType`.
        kind: String,
        /// The error's message, Lambda's `errorMessage`.
        message: String,
    },
}

impl CallError {
    /// Lambda's `errorType` of this failure.
    pub fn kind(&self) -> &str {
        match self {
            CallError::Payload(_) => "ValueError",
            CallError::Action { kind, .. } => kind,
        }
    }
}

impl From<CallError> for lambda_runtime::Diagnostic {
    fn from(e: CallError) -> Self {
        lambda_runtime::Diagnostic {
            error_type: e.kind().to_string(),
            error_message: e.to_string(),
        }
    }
}

/// One payload through `action`: harel's `handler(fn)(payload)`.
pub async fn handle<F, Fut, E>(payload: Value, action: &F) -> Result<Value, CallError>
where
    F: Fn(Call) -> Fut,
    Fut: Future<Output = Result<Reply, E>>,
    E: Display,
{
    let call = Call::from_payload(payload).map_err(CallError::Payload)?;
    match action(call).await {
        Ok(reply) => Ok(reply.to_json()),
        Err(e) => Err(CallError::Action {
            kind: harel_runtime::short_type_name::<E>().to_string(),
            message: e.to_string(),
        }),
    }
}

/// Serve `action` as this Lambda function's handler (`lambda_runtime`), until the process
/// ends.
pub async fn run<F, Fut, E>(action: F) -> Result<(), lambda_runtime::Error>
where
    F: Fn(Call) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply, E>> + Send,
    E: Display,
{
    let action = std::sync::Arc::new(action);
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: lambda_runtime::LambdaEvent<Value>| {
            let action = action.clone();
            async move { handle(event.payload, action.as_ref()).await }
        },
    ))
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    async fn charge(mut call: Call) -> Result<Reply, String> {
        let amount = call.event.data.get("amount").cloned().ok_or("no amount")?;
        call.context.insert("charged".into(), amount);
        let key = call.idempotency_key.clone();
        call.context.insert("key".into(), json!(key));
        Ok(call.reply(json!("ok")))
    }

    #[tokio::test]
    async fn a_payload_runs_the_action_and_answers_the_contract() {
        let payload = json!({"context": {"n": 1}, "event": {"kind": "Pay", "data": {"amount": 3}},
                             "inputs": {}, "idempotency_key": "e:ev:0:a"});
        assert_eq!(
            handle(payload, &charge).await.expect("answer"),
            json!({"context": {"n": 1, "charged": 3, "key": "e:ev:0:a"}, "result": "ok"})
        );
        let failed = handle(json!({"event": {"kind": "Pay"}}), &charge).await;
        assert_eq!(failed.expect_err("no amount").to_string(), "no amount");
        let bad = handle(json!({"context": {}}), &charge).await;
        assert!(matches!(bad, Err(CallError::Payload(_))), "{bad:?}");
    }
}
