//! The Rust actions the machines bind by name. An action gets the live context (read and
//! write), the triggering event (None on start and automatic transitions) and its inputs, and
//! returns a value (a selector's result) or an `ActionError` (`kind` is what harel shows as
//! the exception type: `FAILED` executions record `kind: message`).

use harel_engine::ActionError;
use harel_lambda::Actions;
use serde_json::Value;

pub fn actions() -> Actions {
    let mut actions = Actions::new();
    // examples/order.stm binds these to Python stand-ins that do nothing; so do these
    for name in [
        "order_actions.reserve_stock",
        "order_actions.release_stock",
        "order_actions.notify_customer",
    ] {
        actions.register(name, |_ctx, _event, _inputs| Ok(Value::Null));
    }
    // the serverless test machine (machines/flow.stm)
    actions.register("flow.count", |ctx, _event, _inputs| {
        let n = ctx.get("shipped").and_then(Value::as_i64).unwrap_or(0);
        ctx.insert("shipped".into(), Value::from(n + 1));
        Ok(Value::Null)
    });
    actions.register("flow.explode", |_ctx, _event, _inputs| {
        Err(ActionError::new("RuntimeError", "the crate fell"))
    });
    actions
}
