//! A remote action written in Rust, the template's `ChargeFunction` (named
//! `{TablePrefix}-charge`): the Lambda function a machine's `bind { charge = billing.charge }`
//! reaches through the action map (`"billing.charge": "lambda:harel-charge"`), and harel
//! Python's `lambda_action("harel-charge")` alike. The payload is harel's
//! (`events/remote-action-charge.json`); the answer `{"context", "result"}`. The handler is
//! `harel_remote::function::run`; this file is only the action.
//!
//! Locally: `cargo lambda watch -p harel-charge` then `cargo lambda invoke charge
//! --data-file events/remote-action-charge.json`; `sam build` builds it as the other
//! functions. Its test (`cargo test -p harel-charge`) plays the sample payload.

use harel_remote::function::{run, Call, Reply};
use serde_json::{json, Value};

#[derive(Debug, thiserror::Error)]
enum ChargeError {
    #[error("the event carries no amount")]
    NoAmount,
}

/// Charge the order: the amount authorized, in cents, against the order's total. A short
/// payment is a modelled failure (`"declined"`, for a selector), not an error.
async fn charge(mut call: Call) -> Result<Reply, ChargeError> {
    let amount = call
        .event
        .data
        .get("amount")
        .and_then(Value::as_f64)
        .ok_or(ChargeError::NoAmount)?;
    let cents = (amount * 100.0).round() as i64;
    let total = call
        .context
        .get("total_cents")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if cents < total {
        return Ok(call.reply(json!("declined")));
    }
    let currency = call.inputs.get("currency").cloned().unwrap_or(json!("EUR"));
    // a real charge passes call.idempotency_key to the payment provider: one charge per step
    let receipt = format!("rcpt-{}", call.idempotency_key.as_deref().unwrap_or("none"));
    call.context.insert("paid_cents".into(), json!(cents));
    call.context.insert("currency".into(), currency);
    call.context.insert("receipt".into(), json!(receipt));
    Ok(call.reply(json!("charged")))
}

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    run(charge).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use harel_remote::function::handle;

    #[tokio::test]
    async fn the_sample_payload_is_charged() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../events/remote-action-charge.json"
        );
        let payload: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("the sample"))
                .expect("JSON");
        let answer = handle(payload.clone(), &charge).await.expect("answered");
        assert_eq!(answer["result"], json!("charged"));
        assert_eq!(answer["context"]["paid_cents"], json!(6000));
        assert_eq!(answer["context"]["currency"], json!("EUR"));
        assert_eq!(
            answer["context"]["receipt"],
            json!("rcpt-order-1:ev-42:0:billing.charge")
        );
        assert_eq!(
            answer["context"]["items"],
            json!(3),
            "the rest of the context kept"
        );
        let mut short = payload.clone();
        short["event"]["data"]["amount"] = json!(10.0);
        assert_eq!(
            handle(short, &charge).await.expect("answered")["result"],
            json!("declined")
        );
        let mut none = payload;
        none["event"]["data"] = json!({});
        let err = handle(none, &charge).await.expect_err("an error");
        assert_eq!(err.kind(), "ChargeError");
        assert_eq!(err.to_string(), "the event carries no amount");
    }
}
