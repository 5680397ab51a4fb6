//! Partial `SendMessageBatch` failures, which moto never produces: a loopback HTTP endpoint
//! answers the batch calls with a scripted mix of successes and failures.

use std::sync::{Arc, Mutex};

use harel_model::Event;
use harel_sqs::{DedupeKey, Outgoing, SqsTransport, Transport, TransportError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Decides, for the n-th call (from 0) and an entry id, the failure to report (code, sender fault).
type Script = dyn Fn(usize, &str) -> Option<(&'static str, bool)> + Send + Sync;

/// Serve SendMessageBatch on a loopback port; returns the endpoint and the ids seen per call.
async fn fake_sqs(script: Arc<Script>) -> (String, Arc<Mutex<Vec<Vec<String>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = calls.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let script = script.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                loop {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 8192];
                    let body = loop {
                        let n = match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        buf.extend_from_slice(&chunk[..n]);
                        let text = String::from_utf8_lossy(&buf).to_string();
                        if let Some(end) = text.find("\r\n\r\n") {
                            let len = text[..end]
                                .lines()
                                .find_map(|l| {
                                    let (k, v) = l.split_once(':')?;
                                    k.eq_ignore_ascii_case("content-length")
                                        .then(|| v.trim().parse::<usize>().ok())?
                                })
                                .unwrap_or(0);
                            if buf.len() >= end + 4 + len {
                                break buf[end + 4..end + 4 + len].to_vec();
                            }
                        }
                    };
                    let request: serde_json::Value =
                        serde_json::from_slice(&body).expect("JSON request");
                    let ids: Vec<String> = request["Entries"]
                        .as_array()
                        .expect("entries")
                        .iter()
                        .map(|e| e["Id"].as_str().expect("id").to_string())
                        .collect();
                    let call = {
                        let mut s = seen.lock().expect("lock");
                        s.push(ids.clone());
                        s.len() - 1
                    };
                    let mut ok = Vec::new();
                    let mut failed = Vec::new();
                    for id in &ids {
                        match script(call, id) {
                            Some((code, sender)) => failed.push(serde_json::json!({
                                "Id": id, "Code": code, "Message": "scripted", "SenderFault": sender
                            })),
                            None => ok.push(serde_json::json!({
                                "Id": id, "MessageId": format!("m{call}-{id}"), "MD5OfMessageBody": "x"
                            })),
                        }
                    }
                    let answer =
                        serde_json::json!({"Successful": ok, "Failed": failed}).to_string();
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: {}\r\n\r\n{}",
                        answer.len(),
                        answer
                    );
                    if sock.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (endpoint, calls)
}

fn transport(endpoint: &str) -> SqsTransport {
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
        .region(aws_sdk_sqs::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "test", "test", None, None, "test",
        ))
        .endpoint_url(endpoint)
        .build();
    SqsTransport::new(
        aws_sdk_sqs::Client::from_conf(config),
        format!("{endpoint}/000000000000/q.fifo"),
    )
}

fn messages(n: usize) -> Vec<Outgoing> {
    (0..n)
        .map(|i| {
            Outgoing::event(format!("g{i}"), &Event::new("A"), DedupeKey::Event).expect("valid")
        })
        .collect()
}

#[tokio::test]
async fn retryable_failures_are_resent_and_sender_faults_reported() {
    let script: Arc<Script> = Arc::new(|call, id| match (call, id) {
        (0, "1") => Some(("InternalError", false)),
        (0, "2") => Some(("InvalidMessageContents", true)),
        _ => None,
    });
    let (endpoint, calls) = fake_sqs(script).await;
    let err = transport(&endpoint)
        .publish_batch(&messages(4))
        .await
        .expect_err("one entry can never be sent");
    match &err {
        TransportError::Partial { delivered, failed } => {
            assert_eq!(delivered, &vec![0, 1, 3]);
            assert_eq!(failed.len(), 1);
            assert_eq!(failed[0].index, 2);
            assert!(failed[0].sender_fault);
            assert_eq!(failed[0].code, "InvalidMessageContents");
        }
        other => panic!("expected a partial failure, got {other}"),
    }
    let calls = calls.lock().expect("lock").clone();
    assert_eq!(
        calls,
        vec![vec!["0", "1", "2", "3"], vec!["1"]],
        "only the retryable entry is resent"
    );
}

#[tokio::test]
async fn persistent_failures_are_reported_after_retries() {
    let script: Arc<Script> =
        Arc::new(|_, id| (id == "11").then_some(("ServiceUnavailable", false)));
    let (endpoint, calls) = fake_sqs(script).await;
    let err = transport(&endpoint)
        .publish_batch(&messages(12))
        .await
        .expect_err("never accepted");
    assert_eq!(err.delivered().len(), 11);
    assert!(
        err.to_string().contains("1 of 12 messages not sent"),
        "{err}"
    );
    let calls = calls.lock().expect("lock").clone();
    // two chunks (10 + 2), then three resends of the failing entry
    assert_eq!(calls.len(), 5);
    assert!(calls[2..].iter().all(|c| c == &vec!["11".to_string()]));
}

#[tokio::test]
async fn all_success_is_ok() {
    let (endpoint, calls) = fake_sqs(Arc::new(|_, _| None)).await;
    transport(&endpoint)
        .publish_batch(&messages(10))
        .await
        .expect("sent");
    assert_eq!(calls.lock().expect("lock").len(), 1);
}
