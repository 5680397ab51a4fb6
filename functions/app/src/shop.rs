//! The order application's actions (machines/shop_order.stm): pricing, stock held and released,
//! payment attempts, the warehouse and invoice regions' work, dispatch and the cleanup of a
//! cancelled order. Each reads and writes the execution's context; a real deployment would
//! call the stock, payment and billing services here, passing `ctx.idempotency_key` so a
//! retried step does not repeat a side effect (each attempt's key is recorded for that).
//!
//! Money is kept in cents (integers) so totals are exact; the context also shows `total` in
//! the currency unit for people.

use harel_model::{Event, Object};
use harel_runtime::{ActionContext, ActionError, ActionRegistry};
use serde_json::{json, Value};

/// Orders of at least this many cents ship free.
const FREE_SHIPPING_CENTS: i64 = 5_000;
const SHIPPING_CENTS: i64 = 490;

/// Bind the example shop's actions (`shop_actions.*`, named by machines/shop_order.stm).
pub fn register(actions: &mut ActionRegistry) {
    actions.register_fn("shop_actions.price_order", |ctx, _e, _i| price_order(ctx));
    actions.register_fn("shop_actions.reserve_stock", |ctx, _e, _i| {
        reserve_stock(ctx)
    });
    actions.register_fn("shop_actions.request_payment", |ctx, _e, _i| {
        request_payment(ctx)
    });
    actions.register_fn("shop_actions.record_payment", |ctx, event, _i| {
        record_payment(ctx, event)
    });
    actions.register_fn("shop_actions.pick_items", |ctx, _e, _i| pick_items(ctx));
    actions.register_fn("shop_actions.pack_parcel", |ctx, _e, _i| pack_parcel(ctx));
    actions.register_fn("shop_actions.issue_invoice", |ctx, _e, _i| {
        issue_invoice(ctx)
    });
    actions.register_fn("shop_actions.dispatch", |ctx, _e, inputs| {
        dispatch(ctx, inputs)
    });
    actions.register_fn("shop_actions.release_stock", |ctx, _e, _i| {
        release_stock(ctx)
    });
    actions.register_fn("shop_actions.cancel_cleanup", |ctx, _e, _i| {
        cancel_cleanup(ctx)
    });
}

fn value_error(message: String) -> ActionError {
    ActionError::new("ValueError", message)
}

fn int(ctx: &ActionContext<'_>, key: &str) -> i64 {
    ctx.context.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn set(ctx: &mut ActionContext<'_>, key: &str, value: Value) {
    ctx.context.insert(key.to_string(), value);
}

fn cents_to_amount(cents: i64) -> Value {
    json!(cents as f64 / 100.0)
}

/// The order a region works for. harel names a region's execution
/// `{parent id}:{region path}:{entry seq}`, and a region starts with an empty context (no
/// `with`), so its id is the only link to its order.
fn order_of_region(execution_id: &str) -> &str {
    let mut parts = execution_id.rsplitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(_seq), Some(_path), Some(parent)) => parent,
        _ => execution_id,
    }
}

/// Leaving the cart: `items` x `unit_price`, shipping unless the order is large enough.
fn price_order(ctx: &mut ActionContext<'_>) -> Result<Value, ActionError> {
    let items = ctx
        .context
        .get("items")
        .and_then(Value::as_i64)
        .ok_or_else(|| value_error("items must be an integer".into()))?;
    let unit_price = ctx
        .context
        .get("unit_price")
        .and_then(Value::as_f64)
        .ok_or_else(|| value_error("unit_price must be a number".into()))?;
    if items < 0 || unit_price < 0.0 {
        return Err(value_error(format!(
            "a negative order: {items} x {unit_price}"
        )));
    }
    let subtotal = items * (unit_price * 100.0).round() as i64;
    let shipping = if subtotal >= FREE_SHIPPING_CENTS {
        0
    } else {
        SHIPPING_CENTS
    };
    set(ctx, "subtotal_cents", json!(subtotal));
    set(ctx, "shipping_cents", json!(shipping));
    set(ctx, "total_cents", json!(subtotal + shipping));
    set(ctx, "total", cents_to_amount(subtotal + shipping));
    Ok(Value::Null)
}

/// The stock held for the order while it is paid for.
fn reserve_stock(ctx: &mut ActionContext<'_>) -> Result<Value, ActionError> {
    let items = int(ctx, "items");
    set(ctx, "reserved", json!(items));
    Ok(Value::Null)
}

/// One payment attempt asked of the payment service: counted, and recorded with the key a
/// real charge request would carry (the same on every retry of this step).
fn request_payment(ctx: &mut ActionContext<'_>) -> Result<Value, ActionError> {
    let attempt = int(ctx, "payment_attempts") + 1;
    let record = json!({
        "attempt": attempt,
        "amount_cents": int(ctx, "total_cents"),
        "idempotency_key": ctx.idempotency_key,
    });
    let key = ctx.idempotency_key.to_string();
    let attempts = ctx
        .context
        .entry("payments")
        .or_insert_with(|| Value::Array(Vec::new()));
    match attempts {
        Value::Array(list) => list.push(record),
        other => {
            return Err(value_error(format!(
                "payments must be a list, found {other} (attempt {key})"
            )))
        }
    }
    set(ctx, "payment_attempts", json!(attempt));
    Ok(Value::Null)
}

/// The authorization: the amount taken (the order's total when the event does not say), and
/// the order's reference for the regions' documents.
fn record_payment(
    ctx: &mut ActionContext<'_>,
    event: Option<&Event>,
) -> Result<Value, ActionError> {
    let total = int(ctx, "total_cents");
    let paid = match event.and_then(|e| e.data.get("amount")) {
        None | Some(Value::Null) => total,
        Some(amount) => {
            let amount = amount
                .as_f64()
                .ok_or_else(|| value_error(format!("amount must be a number, got {amount}")))?;
            (amount * 100.0).round() as i64
        }
    };
    if paid < total {
        return Err(value_error(format!(
            "authorized {paid} cents for an order of {total}"
        )));
    }
    set(ctx, "paid_cents", json!(paid));
    let order_ref = ctx.execution_id.to_string();
    set(ctx, "order_ref", json!(order_ref));
    Ok(Value::Null)
}

/// The warehouse region: the pick list is made for the order.
fn pick_items(ctx: &mut ActionContext<'_>) -> Result<Value, ActionError> {
    let order = order_of_region(ctx.execution_id).to_string();
    set(ctx, "pick_list", json!(format!("PICK-{order}")));
    Ok(Value::Null)
}

/// The warehouse region: the picked items packed into a labelled parcel (handed back to the
/// order with `carry parcel`).
fn pack_parcel(ctx: &mut ActionContext<'_>) -> Result<Value, ActionError> {
    let order = order_of_region(ctx.execution_id).to_string();
    set(ctx, "parcel", json!(format!("PCL-{order}")));
    Ok(Value::Null)
}

/// The invoice region: the invoice number, stable for the order (handed back with `carry
/// invoice_no`).
fn issue_invoice(ctx: &mut ActionContext<'_>) -> Result<Value, ActionError> {
    let order = order_of_region(ctx.execution_id).to_string();
    set(ctx, "invoice_no", json!(format!("INV-{order}")));
    Ok(Value::Null)
}

/// Joined: what the regions handed back (`region_results`, by region path), or None.
fn region_value(ctx: &ActionContext<'_>, key: &str) -> Option<Value> {
    ctx.context
        .get("region_results")
        .and_then(Value::as_object)
        .and_then(|results| {
            results
                .values()
                .find_map(|r| r.get(key).filter(|v| !v.is_null()).cloned())
        })
}

/// The parcel leaves: its number and invoice copied onto the order, the held stock shipped.
fn dispatch(ctx: &mut ActionContext<'_>, inputs: &Object) -> Result<Value, ActionError> {
    let parcel = region_value(ctx, "parcel")
        .ok_or_else(|| value_error("no parcel was packed for this order".into()))?;
    let invoice = region_value(ctx, "invoice_no")
        .ok_or_else(|| value_error("no invoice was issued for this order".into()))?;
    let carrier = inputs.get("carrier").cloned().unwrap_or(Value::Null);
    let shipped = int(ctx, "reserved");
    set(ctx, "parcel", parcel);
    set(ctx, "invoice_no", invoice);
    set(ctx, "carrier", carrier);
    set(ctx, "shipped", json!(shipped));
    set(ctx, "reserved", json!(0));
    Ok(Value::Null)
}

/// The held stock goes back on the shelf.
fn release_stock(ctx: &mut ActionContext<'_>) -> Result<Value, ActionError> {
    let held = int(ctx, "reserved") + int(ctx, "shipped");
    set(ctx, "released", json!(held));
    set(ctx, "reserved", json!(0));
    set(ctx, "shipped", json!(0));
    Ok(Value::Null)
}

/// A cancelled order, from wherever it was: the stock released, an issued invoice voided, a
/// payment refunded.
fn cancel_cleanup(ctx: &mut ActionContext<'_>) -> Result<Value, ActionError> {
    release_stock(ctx)?;
    let invoice = ctx
        .context
        .get("invoice_no")
        .cloned()
        .or_else(|| region_value(ctx, "invoice_no"));
    if let Some(invoice) = invoice {
        set(ctx, "voided_invoice", invoice);
    }
    let paid = int(ctx, "paid_cents");
    if paid > 0 {
        set(ctx, "refunded_cents", json!(paid));
    }
    Ok(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        f: impl Fn(&mut ActionContext<'_>) -> Result<Value, ActionError>,
        id: &str,
        context: Value,
    ) -> Result<Object, ActionError> {
        let mut context = context.as_object().cloned().expect("an object");
        let mut published = Vec::new();
        let mut ctx = ActionContext {
            published: &mut published,
            deadline: None,
            context: &mut context,
            idempotency_key: "k",
            execution_id: id,
        };
        f(&mut ctx)?;
        Ok(context)
    }

    #[test]
    fn prices_in_cents_with_free_shipping_from_fifty() {
        let small = run(price_order, "o", json!({"items": 3, "unit_price": 4.5})).expect("priced");
        assert_eq!(small["total_cents"], json!(1350 + 490));
        assert_eq!(small["total"], json!(18.4));
        let large = run(price_order, "o", json!({"items": 4, "unit_price": 12.5})).expect("priced");
        assert_eq!(large["shipping_cents"], json!(0));
        assert_eq!(large["total_cents"], json!(5000));
        let bad = run(price_order, "o", json!({"items": "two", "unit_price": 1.0}));
        assert!(bad.is_err());
    }

    #[test]
    fn a_region_finds_its_order_in_its_own_id() {
        assert_eq!(order_of_region("order-1:Fulfilment.Invoicing:0"), "order-1");
        assert_eq!(order_of_region("a:b:Fulfilment.Warehouse:2"), "a:b");
        assert_eq!(order_of_region("plain"), "plain");
    }

    #[test]
    fn payment_attempts_are_recorded_with_their_keys() {
        let once = run(request_payment, "o", json!({"total_cents": 900})).expect("asked");
        let twice = run(request_payment, "o", Value::Object(once)).expect("asked");
        assert_eq!(twice["payment_attempts"], json!(2));
        assert_eq!(twice["payments"][1]["attempt"], json!(2));
        assert_eq!(twice["payments"][1]["idempotency_key"], json!("k"));
    }

    #[test]
    fn an_underpaid_order_is_an_error() {
        let event = Event::new("PaymentAuthorized").with_data(
            json!({"amount": 1.0})
                .as_object()
                .cloned()
                .expect("an object"),
        );
        let mut context = json!({"total_cents": 900})
            .as_object()
            .cloned()
            .expect("object");
        let mut published = Vec::new();
        let mut ctx = ActionContext {
            published: &mut published,
            deadline: None,
            context: &mut context,
            idempotency_key: "k",
            execution_id: "o",
        };
        let err = record_payment(&mut ctx, Some(&event)).expect_err("underpaid");
        assert!(err.to_string().contains("authorized 100 cents"), "{err}");
    }

    #[test]
    fn cleanup_releases_voids_and_refunds() {
        let after = run(
            cancel_cleanup,
            "o",
            json!({"reserved": 2, "paid_cents": 2990, "region_results": {
                "Fulfilment.Invoicing": {"outcome": "success", "invoice_no": "INV-o"}}}),
        )
        .expect("cleaned");
        assert_eq!(after["released"], json!(2));
        assert_eq!(after["reserved"], json!(0));
        assert_eq!(after["voided_invoice"], json!("INV-o"));
        assert_eq!(after["refunded_cents"], json!(2990));
    }
}
