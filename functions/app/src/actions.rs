//! The Rust actions the machines bind by name (harel-runtime's `ActionRegistry`). An action
//! gets an `ActionContext` (the live context to read and write, the execution id and this
//! call's idempotency key), the triggering event (None on start and automatic transitions)
//! and its inputs, and returns a value (a selector's result) or an `ActionError` (`kind` is
//! what harel shows as the exception type: a FAILED execution records `kind: message`).
//! `register_fn` binds a plain function; `register` an async one.

use harel_runtime::ActionRegistry;
use serde_json::Value;

/// harel's standard library (`harel.lib.*`) plus the application's actions.
pub fn actions() -> ActionRegistry {
    let mut actions = ActionRegistry::with_stdlib();
    // examples/order.stm binds these to Python stand-ins that do nothing; so do these
    for name in [
        "order_actions.reserve_stock",
        "order_actions.release_stock",
        "order_actions.notify_customer",
    ] {
        actions.register_fn(name, |_ctx, _event, _inputs| Ok(Value::Null));
    }
    // the example application (machines/shop_order.stm)
    crate::shop::register(&mut actions);
    actions
}
