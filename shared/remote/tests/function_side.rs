//! The reverse direction: harel Python's own `http_action` and `lambda_action` (boto3) call
//! an action written in Rust with `harel_remote::function`, served on a loopback port as an
//! HTTP endpoint (`POST /fn/charge`) and as Lambda's Invoke API
//! (`POST /2015-03-31/functions/charge/invocations`, a failure answered as Lambda does: 200
//! with `X-Amz-Function-Error: Unhandled` and `{"errorType", "errorMessage"}`).

use harel_remote::function::{handle, Call, CallError, Reply};
use harel_testwire::actions::{python, read_request};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

#[derive(Debug, thiserror::Error)]
#[error("no amount in {0}")]
struct NoAmount(String);

/// An ordinary async Rust action.
async fn charge(mut call: Call) -> Result<Reply, NoAmount> {
    let amount = call
        .event
        .data
        .get("amount")
        .cloned()
        .ok_or_else(|| NoAmount(call.event.kind.clone()))?;
    call.context.insert("charged".into(), amount);
    let currency = call.inputs.get("currency").cloned().unwrap_or(Value::Null);
    call.context.insert("currency".into(), currency);
    let key = call.idempotency_key.clone();
    call.context.insert("key".into(), json!(key));
    Ok(call.reply(json!("approved")))
}

/// Serves `charge` both ways, one connection at a time, each closed after its answer.
async fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let Some(request) = read_request(&mut socket).await else {
                continue;
            };
            let lambda = request
                .path
                .starts_with("/2015-03-31/functions/charge/invocations");
            let payload: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let (status, extra, answer) = match handle(payload, &charge).await {
                Ok(answer) => (200, "", answer),
                Err(e) => {
                    let body = json!({"errorType": e.kind(), "errorMessage": e.to_string()});
                    if lambda {
                        (200, "X-Amz-Function-Error: Unhandled\r\n", body)
                    } else {
                        (500, "", body)
                    }
                }
            };
            let text = answer.to_string();
            let reason = if status == 200 {
                "OK"
            } else {
                "Internal Server Error"
            };
            let response = format!(
                "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    });
    base
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
async fn harel_pythons_clients_call_a_rust_action() {
    let base = serve().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/call_rust.py");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python())
            .arg(script)
            .arg(&base)
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .output()
            .expect("python runs")
    })
    .await
    .expect("joined");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    for transport in ["http", "lambda"] {
        let got = &seen[transport];
        assert_eq!(got["result"], json!("approved"), "{transport}: {got}");
        assert_eq!(
            got["context"],
            json!({"n": 1, "charged": 5, "currency": "EUR", "key": "e1:ev-1:0:billing.charge"}),
            "{transport}"
        );
    }
    assert!(
        seen["http"]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("HTTPError: 500 Server Error")),
        "{}",
        seen["http"]["error"]
    );
    assert_eq!(
        seen["lambda"]["error"],
        json!(
            r#"RuntimeError: Lambda charge failed: {"errorType":"NoAmount","errorMessage":"no amount in Pay"}"#
        )
    );
    let e = CallError::Payload("x".into());
    assert_eq!(e.kind(), "ValueError");
}
