//! A delivery's way through a hook: the signature first (nothing is read from a body that
//! does not verify), then the mapping from the provider's event to a harel event.

use std::sync::Arc;

use harel_model::{Event, Object};
use harel_remote::AwsReader;
use http::HeaderMap;
use indexmap::IndexMap;
use serde_json::Value;
use sha2_11::Digest;

use crate::file::{Entry, Expr, Extract, HooksFile};
use crate::refusal::Refusal;
use crate::secret::{Secret, SecretError};

/// An event for an execution.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// The hook's name (the hooks file's entry).
    pub hook: String,
    /// The provider's event type (for logs and metrics).
    pub provider_kind: String,
    /// The target execution's id, read from the body by the entry's `execution`.
    pub execution: String,
    /// Its id is the provider's event id: a retried delivery has the same one, so the
    /// queue's dedupe and the worker's processed mark absorb it.
    pub event: Event,
}

/// Start an execution before delivering (a no-op in the worker when it exists).
#[derive(Clone, Debug, PartialEq)]
pub struct Create {
    /// The machine to start (the entry's `create.machine`).
    pub machine: String,
    /// The new execution's id: the delivery's target.
    pub execution: String,
    /// The new execution's context, from `create.context` (empty without one).
    pub context: Object,
}

/// What a verified delivery comes to.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Send the event to an execution that must exist.
    Deliver(Delivery),
    /// Start the execution if it does not exist, then send it the event.
    CreateAndDeliver(Create, Delivery),
    /// A provider event the file does not route: answered 200 with the reason (the provider
    /// stops retrying) and counted.
    Ignored {
        /// The hook's name.
        hook: String,
        /// The provider's event type, when the body had one.
        provider_kind: Option<String>,
        /// Why it was not routed (no event type, a type `kinds` does not map, ...).
        reason: String,
    },
}

/// The hooks file with its secrets read: what the routes verify deliveries with.
#[derive(Clone, Debug)]
pub struct Hooks {
    origin: String,
    hooks: Arc<IndexMap<String, (Entry, Secret)>>,
}

impl Hooks {
    /// Read every entry's secret (each reference once), at cold start.
    pub async fn resolve(
        file: HooksFile,
        reader: Option<&AwsReader>,
    ) -> Result<Hooks, SecretError> {
        let mut read: std::collections::HashMap<String, Secret> = Default::default();
        let mut hooks = IndexMap::new();
        for (name, entry) in file.entries {
            let key = entry.verify.secret.shown();
            let secret = match read.get(&key) {
                Some(s) if key != "<literal>" => s.clone(),
                _ => {
                    let s = entry.verify.secret.read(reader).await?;
                    read.insert(key, s.clone());
                    s
                }
            };
            hooks.insert(name, (entry, secret));
        }
        Ok(Hooks {
            origin: file.origin,
            hooks: Arc::new(hooks),
        })
    }

    /// Where the hooks came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The hook names, in the file's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.hooks.keys().map(String::as_str)
    }

    /// Verify and map one delivery to hook `name` at `now` (epoch seconds).
    pub fn handle(
        &self,
        name: &str,
        headers: &HeaderMap,
        body: &[u8],
        now: i64,
    ) -> Result<Outcome, Refusal> {
        let (entry, secret) = self
            .hooks
            .get(name)
            .ok_or_else(|| Refusal::UnknownHook(name.to_string()))?;
        let verified = entry
            .verify
            .scheme
            .verify(secret.bytes(), headers, body, now)?;
        let payload: Value = serde_json::from_slice(body)
            .map_err(|e| Refusal::BadBody(format!("the body is not JSON: {e}")))?;
        let ignored = |provider_kind: Option<String>, reason: String| {
            Ok(Outcome::Ignored {
                hook: name.to_string(),
                provider_kind,
                reason,
            })
        };
        let Some(provider_kind) = text(&entry.kind_from, headers, &payload) else {
            return ignored(
                None,
                format!("no event type at {}", shown(&entry.kind_from)),
            );
        };
        let Some(spec) = entry.kinds.get(&provider_kind) else {
            return ignored(
                Some(provider_kind.clone()),
                format!("{provider_kind:?} is not routed by hook {name:?}"),
            );
        };
        let Some(execution) = text(&entry.execution, headers, &payload) else {
            return ignored(
                Some(provider_kind),
                format!("no execution id at {}", shown(&entry.execution)),
            );
        };
        let event_id = match &entry.dedupe {
            Some(dedupe) => text(dedupe, headers, &payload)
                .ok_or_else(|| Refusal::BadBody(format!("no event id at {}", shown(dedupe))))?,
            None => match verified.delivery_id {
                Some(id) => id,
                // a digest of what was signed: the same delivery sent again has the same id
                None => format!(
                    "{name}:{}",
                    hex::encode(&sha2_11::Sha256::digest(body)[..16])
                ),
            },
        };
        let data = object(spec.data.as_ref().or(entry.data.as_ref()), &payload, "data")?;
        let event = Event::new(spec.kind.as_str())
            .with_id(event_id)
            .with_data(data);
        let delivery = Delivery {
            hook: name.to_string(),
            provider_kind,
            execution,
            event,
        };
        match &entry.create {
            Some(create)
                if create
                    .on
                    .as_ref()
                    .is_none_or(|on| on.iter().any(|k| k == &spec.kind)) =>
            {
                let context = object(create.context.as_ref(), &payload, "create.context")?;
                Ok(Outcome::CreateAndDeliver(
                    Create {
                        machine: create.machine.clone(),
                        execution: delivery.execution.clone(),
                        context,
                    },
                    delivery,
                ))
            }
            _ => Ok(Outcome::Deliver(delivery)),
        }
    }
}

fn shown(extract: &Extract) -> String {
    match extract {
        Extract::Path(e) => format!("{e:?}"),
        Extract::Header(h) => format!("header {h}"),
    }
}

fn search(expr: &Expr, payload: &Value) -> Value {
    match expr.0.search(payload) {
        // a Variable serializes as the JSON it holds
        Ok(found) => serde_json::to_value(&*found).unwrap_or(Value::Null),
        Err(_) => Value::Null,
    }
}

/// A string (or a number, as text) at `extract`; None for nothing, null or an empty string.
fn text(extract: &Extract, headers: &HeaderMap, payload: &Value) -> Option<String> {
    let found = match extract {
        Extract::Header(h) => headers.get(h)?.to_str().ok()?.to_string(),
        Extract::Path(e) => match search(e, payload) {
            Value::String(s) => s,
            Value::Number(n) => n.to_string(),
            _ => return None,
        },
    };
    (!found.is_empty()).then_some(found)
}

/// An object at `expr` (None or null: `{}`); anything else is a body this hook cannot map.
fn object(expr: Option<&Expr>, payload: &Value, what: &str) -> Result<Object, Refusal> {
    let Some(expr) = expr else {
        return Ok(Object::new());
    };
    match search(expr, payload) {
        Value::Object(o) => Ok(o),
        Value::Null => Ok(Object::new()),
        other => Err(Refusal::BadBody(format!(
            "{what} at {expr:?} is not an object but {}",
            match other {
                Value::Array(_) => "a list",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                _ => "a boolean",
            }
        ))),
    }
}
