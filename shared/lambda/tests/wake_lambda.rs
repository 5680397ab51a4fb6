//! The Lambda waker against a loopback HTTP server playing Lambda's `Invoke` API: the
//! request is an asynchronous invocation (`X-Amz-Invocation-Type: Event`) of the configured
//! function with the wake payload, sent to `AWS_ENDPOINT_URL`; a refusal is an error naming
//! the function.

use std::sync::{Arc, Mutex};

use harel_lambda::wake::{wake_until, LambdaWaker, Waker};
use harel_testwire::actions::read_request;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

#[derive(Debug, Default, Clone)]
struct Seen {
    method: String,
    path: String,
    invocation_type: Option<String>,
    body: Vec<u8>,
}

/// Serves HTTP/1.1 requests one connection at a time, answering each with `status`.
async fn lambda_api(status: u16) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let log = log.clone();
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else {
                    return;
                };
                log.lock().expect("log").push(Seen {
                    invocation_type: request.header("x-amz-invocation-type").map(String::from),
                    method: request.method,
                    path: request.path,
                    body: request.body,
                });
                let body = if status == 202 {
                    String::new()
                } else {
                    r#"{"Type":"User","message":"Function not found: arn:aws:lambda:us-east-1:123456789012:function:nope"}"#.to_string()
                };
                let reason = if status == 202 {
                    "Accepted"
                } else {
                    "Not Found"
                };
                let mut answer = format!(
                    "HTTP/1.1 {status} {reason}\r\ncontent-length: {}\r\ncontent-type: application/json\r\n",
                    body.len()
                );
                if status != 202 {
                    answer.push_str("x-amzn-errortype: ResourceNotFoundException\r\n");
                }
                answer.push_str("\r\n");
                answer.push_str(&body);
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    (url, seen)
}

#[tokio::test]
async fn a_wake_is_an_asynchronous_invoke_of_the_sweeper_at_aws_endpoint_url() {
    let (url, seen) = lambda_api(202).await;
    // the waker takes the SDK's standard configuration, as the worker's boot does
    std::env::set_var("AWS_ENDPOINT_URL", &url);
    std::env::set_var("AWS_REGION", "us-east-1");
    std::env::set_var("AWS_ACCESS_KEY_ID", "test");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "test");
    let waker = LambdaWaker::from_env("harel-Sweeper-1").await;
    waker.wake(1_700_000_060.5).await.expect("accepted");
    let seen = seen.lock().expect("seen").clone();
    assert_eq!(seen.len(), 1, "one request: {seen:?}");
    assert_eq!(seen[0].method, "POST");
    assert_eq!(
        seen[0].path,
        "/2015-03-31/functions/harel-Sweeper-1/invocations"
    );
    assert_eq!(seen[0].invocation_type.as_deref(), Some("Event"));
    let payload: serde_json::Value = serde_json::from_slice(&seen[0].body).expect("JSON");
    assert_eq!(wake_until(&payload), Some(1_700_000_060.5), "{payload}");

    let (url, _) = lambda_api(404).await;
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(url)
        .load()
        .await;
    let err = LambdaWaker::from_sdk(&config, "nope")
        .wake(1.0)
        .await
        .expect_err("refused");
    assert_eq!(err.function, "nope");
    assert!(err.to_string().contains("ResourceNotFound"), "{err}");
}
