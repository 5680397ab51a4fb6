//! The test machine the functions' tests drive through the deployed wiring
//! (`machines/flow.stm`: a state-only event, a timer, an orthogonal fork whose regions finish
//! and join, an action that counts, an action that fails) and its Rust actions. It lives here,
//! not in the application, so that it is never compiled into a deployed function: a test adds
//! it to the application's machines (`harel_app::Application::with`).

use harel_model::Definition;
use harel_runtime::{ActionError, ActionRegistry};
use serde_json::Value;

/// The source of `Flow` (file name `flow.stm`), for tests that write it into a machines
/// folder or hand it to harel Python.
pub const FLOW_STM: &str = include_str!("../machines/flow.stm");

/// The machines of `flow.stm` (`Flow`), loaded and validated as every host loads machines.
pub fn flow() -> Vec<Definition> {
    harel_lang::machines::load_machines_of_text(FLOW_STM, "flow.stm")
        .expect("the test machine flow.stm loads")
}

/// Bind `Flow`'s actions: `flow.count` adds one to the context's `shipped` (entered on
/// `Shipping`), `flow.explode` fails with a `RuntimeError` (entered on `Fragile`: the
/// execution ends FAILED with harel's `kind: message`).
pub fn register_flow_actions(actions: &mut ActionRegistry) {
    actions.register_fn("flow.count", |ctx, _event, _inputs| {
        let n = ctx
            .context
            .get("shipped")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        ctx.context.insert("shipped".into(), Value::from(n + 1));
        Ok(Value::Null)
    });
    actions.register_fn("flow.explode", |_ctx, _event, _inputs| {
        Err(ActionError::new("RuntimeError", "the crate fell"))
    });
}
