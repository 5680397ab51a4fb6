//! What the worker accepts from the queue. A domain or control event is harel's message: the
//! body is the Event JSON and the group is the target execution id. Creating an execution is
//! a message too, so any SQS client in any language can start one:
//!
//! ```json
//! {"kind": "harel:create", "id": "<any unique id>",
//!  "data": {"definition_id": "Order", "context": {"amount": 12}, "execution_id": "order-17"}}
//! ```
//! sent with `MessageGroupId` = the new execution's id. `execution_id` is optional and
//! defaults to the group id; when given it must equal the group (the group is the execution's
//! one-writer lock). `context` is optional. The kind cannot clash with a machine's events:
//! `:` is not allowed in an event name. A create for an id that exists is a no-op, logged as
//! such.

use harel_model::{Event, Object};
use serde_json::Value;

/// The event kind of a create message.
pub const CREATE_KIND: &str = "harel:create";

/// What a [`CREATE_KIND`] message asks for: start a new execution of a machine.
#[derive(Clone, Debug, PartialEq)]
pub struct CreateRequest {
    /// The machine to run (its definition id, as the host's machine set names it).
    pub definition_id: String,
    /// The new execution's initial context (empty when the message gave none).
    pub context: Object,
    /// The id of the execution to create: always the message group.
    pub execution_id: String,
}

/// One queue message, read: either a create or an event for an existing execution.
#[derive(Clone, Debug, PartialEq)]
pub enum Inbound {
    /// A [`CREATE_KIND`] message: start an execution (a no-op if it exists).
    Create(CreateRequest),
    /// Any other event: deliver it to the execution named by the message group.
    Event(Event),
}

/// Why a message can never succeed (it goes to the dead-letter queue with this reason).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(pub String);

/// Read one message: its group (the target execution) and what it asks for.
pub fn parse(group_id: Option<&str>, body: &str) -> Result<(String, Inbound), Malformed> {
    let group = match group_id {
        Some(g) if !g.is_empty() => g.to_string(),
        _ => return Err(Malformed(
            "no MessageGroupId: send to the FIFO queue with the target execution id as the group"
                .into(),
        )),
    };
    let value: Value =
        serde_json::from_str(body).map_err(|e| Malformed(format!("body is not JSON: {e}")))?;
    let event: Event = serde_json::from_value(value)
        .map_err(|e| Malformed(format!("body is not a harel Event: {e}")))?;
    if event.kind != CREATE_KIND {
        return Ok((group, Inbound::Event(event)));
    }
    let data = &event.data;
    let definition_id = match data.get("definition_id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => {
            return Err(Malformed(format!(
                "{CREATE_KIND}: data.definition_id must be a machine name"
            )))
        }
    };
    let context = match data.get("context") {
        None | Some(Value::Null) => Object::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(_) => {
            return Err(Malformed(format!(
                "{CREATE_KIND}: data.context must be an object"
            )))
        }
    };
    let execution_id = match data.get("execution_id") {
        None | Some(Value::Null) => group.clone(),
        Some(Value::String(id)) if *id == group => id.clone(),
        Some(Value::String(id)) => {
            return Err(Malformed(format!(
                "{CREATE_KIND}: execution_id {id:?} is not the message group {group:?}: send it in the execution's own group"
            )))
        }
        Some(_) => return Err(Malformed(format!("{CREATE_KIND}: data.execution_id must be a string"))),
    };
    Ok((
        group,
        Inbound::Create(CreateRequest {
            definition_id,
            context,
            execution_id,
        }),
    ))
}

/// The body of a create message (for clients written in Rust, the CLI and tests).
pub fn create_body(definition_id: &str, context: Object, execution_id: Option<&str>) -> String {
    let mut data = Object::new();
    data.insert("definition_id".into(), Value::String(definition_id.into()));
    data.insert("context".into(), Value::Object(context));
    if let Some(id) = execution_id {
        data.insert("execution_id".into(), Value::String(id.into()));
    }
    Event::new(CREATE_KIND).with_data(data).to_json()
}

/// The create message for execution `execution_id`, as every Rust client sends it (`harel
/// create`, `harel schedules trigger`, the sweeper's schedules): the id is the message group,
/// and the deduplication id is derived from it, so the same create sent twice within SQS's
/// five minutes is dropped (later, the worker finds the execution and does nothing).
pub fn create_message(
    definition_id: &str,
    context: Object,
    execution_id: &str,
) -> Result<crate::Outgoing, crate::TransportError> {
    let body = create_body(definition_id, context, Some(execution_id));
    let dedupe =
        crate::DedupeKey::Explicit(format!("create-{execution_id}")).dedupe_id(execution_id, "");
    crate::Outgoing::raw(execution_id.to_string(), dedupe, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_creates() {
        let ev = Event::new("Pay");
        let (g, inbound) = parse(Some("exe-1"), &ev.to_json()).expect("an event");
        assert_eq!(g, "exe-1");
        assert_eq!(inbound, Inbound::Event(ev));

        let body = create_body("Order", Object::new(), None);
        match parse(Some("o-1"), &body).expect("a create") {
            (_, Inbound::Create(c)) => {
                assert_eq!(c.execution_id, "o-1");
                assert_eq!(c.definition_id, "Order");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_messages_say_why() {
        let cases = [
            (Some("g"), "not json", "body is not JSON"),
            (Some("g"), r#"{"id": "x"}"#, "not a harel Event"),
            (None, r#"{"kind": "A"}"#, "no MessageGroupId"),
            (
                Some("g"),
                r#"{"kind": "harel:create", "data": {}}"#,
                "definition_id",
            ),
            (
                Some("g"),
                r#"{"kind": "harel:create", "data": {"definition_id": "M", "context": 3}}"#,
                "context must be an object",
            ),
            (
                Some("g"),
                r#"{"kind": "harel:create", "data": {"definition_id": "M", "execution_id": "h"}}"#,
                "is not the message group",
            ),
        ];
        for (group, body, why) in cases {
            let err = parse(group, body).expect_err(body);
            assert!(err.0.contains(why), "{body}: {err}");
        }
    }
}
