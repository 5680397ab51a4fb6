//! `harel_remote::function::run` under the Lambda Runtime API, as Lambda runs it: a loopback
//! server plays the API (`AWS_LAMBDA_RUNTIME_API`), hands out harel payloads from
//! `/invocation/next` and receives what the function posts back: the answer
//! `{"context", "result"}` on `/response`, the action's error on `/error` with its type.

use std::time::Duration;

use harel_remote::function::{run, Call, Reply};
use harel_testwire::actions::read_request;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

#[derive(Debug, thiserror::Error)]
#[error("no amount")]
struct NoAmount;

async fn charge(mut call: Call) -> Result<Reply, NoAmount> {
    let amount = call.event.data.get("amount").cloned().ok_or(NoAmount)?;
    call.context.insert("charged".into(), amount);
    let key = call.idempotency_key.clone();
    call.context.insert("key".into(), json!(key));
    Ok(call.reply(json!("ok")))
}

/// (path, error type header, body) of what the function posted.
type Posted = (String, Option<String>, Value);

async fn respond(socket: &mut tokio::net::TcpStream, status: u16, headers: &str, body: &str) {
    let text = format!(
        "HTTP/1.1 {status} OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{headers}\r\n{body}",
        body.len()
    );
    let _ = socket.write_all(text.as_bytes()).await;
}

/// The Runtime API: `payloads` handed out in turn (then none: the function waits), every
/// post reported on the channel.
async fn runtime_api(payloads: Vec<Value>) -> (String, mpsc::UnboundedReceiver<Posted>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("addr").to_string();
    let (tx, rx) = mpsc::unbounded_channel();
    let queue = std::sync::Arc::new(std::sync::Mutex::new(payloads.into_iter().enumerate()));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let (tx, queue) = (tx.clone(), queue.clone());
            tokio::spawn(async move {
                // the runtime's client keeps its connection alive: several requests on it
                while let Some(request) = read_request(&mut socket).await {
                    if request.path.ends_with("/invocation/next") {
                        let next = queue.lock().expect("queue").next();
                        let Some((i, payload)) = next else {
                            // no more invocations: leave the function waiting
                            std::future::pending::<()>().await;
                            return;
                        };
                        let deadline = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(0, |d| d.as_millis() + 60_000);
                        let headers = format!(
                            "lambda-runtime-aws-request-id: req-{i}\r\nlambda-runtime-deadline-ms: {deadline}\r\nlambda-runtime-invoked-function-arn: arn:aws:lambda:us-east-1:123456789012:function:charge\r\nlambda-runtime-trace-id: Root=1-0-0\r\n"
                        );
                        respond(&mut socket, 200, &headers, &payload.to_string()).await;
                    } else {
                        let body: Value =
                            serde_json::from_slice(&request.body).unwrap_or(Value::Null);
                        let kind = request
                            .header("lambda-runtime-function-error-type")
                            .map(String::from);
                        let _ = tx.send((request.path.clone(), kind, body));
                        respond(&mut socket, 202, "", "{}").await;
                    }
                }
            });
        }
    });
    (address, rx)
}

#[tokio::test(flavor = "multi_thread")]
async fn run_serves_harel_payloads_under_the_lambda_runtime_api() {
    let (address, mut posted) = runtime_api(vec![
        json!({"context": {"n": 1}, "event": {"kind": "Pay", "data": {"amount": 7}},
               "inputs": {}, "idempotency_key": "e1:ev-1:0:billing.charge"}),
        json!({"context": {}, "event": {"kind": "Pay", "data": {}}, "inputs": {}}),
    ])
    .await;
    // this test binary is the function's process: the variables Lambda sets
    for (name, value) in [
        ("AWS_LAMBDA_RUNTIME_API", address.as_str()),
        ("AWS_LAMBDA_FUNCTION_NAME", "charge"),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
        ("AWS_LAMBDA_LOG_STREAM_NAME", "stream"),
        ("AWS_LAMBDA_LOG_GROUP_NAME", "group"),
    ] {
        std::env::set_var(name, value);
    }
    let function = tokio::spawn(run(charge));
    let mut got = Vec::new();
    for _ in 0..2 {
        let one = tokio::time::timeout(Duration::from_secs(20), posted.recv())
            .await
            .expect("the function posted in time")
            .expect("a post");
        got.push(one);
    }
    function.abort();
    let (path, kind, body) = &got[0];
    assert_eq!(path, "/2018-06-01/runtime/invocation/req-0/response");
    assert_eq!(kind, &None);
    assert_eq!(
        body,
        &json!({"context": {"n": 1, "charged": 7, "key": "e1:ev-1:0:billing.charge"}, "result": "ok"})
    );
    let (path, kind, body) = &got[1];
    assert_eq!(path, "/2018-06-01/runtime/invocation/req-1/error");
    assert_eq!(body["errorType"], json!("NoAmount"), "{body} {kind:?}");
    assert_eq!(body["errorMessage"], json!("no amount"));
}
