//! The X-Ray interceptor on a real client (DynamoDB, on moto): each call sends one subsegment
//! to the daemon address under the invocation's trace, with the operation, the table, the
//! HTTP status and the error flag; nothing when the trace is not sampled.

use std::net::UdpSocket;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use harel_lambda::xray::XrayInterceptor;
use serde_json::Value;

const ROOT: &str = "1-5759e988-bd862e3fe1be46a994272793";
const PARENT: &str = "53995c3f42cd8ad8";

fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL")
        .expect("AWS_ENDPOINT_URL is not set: run these tests under scripts/with-moto.sh")
}

/// The daemon's side: the next datagram's subsegment, or None within the timeout.
fn next_subsegment(daemon: &UdpSocket) -> Option<Value> {
    let mut buf = [0u8; 65536];
    let n = daemon.recv(&mut buf).ok()?;
    let text = std::str::from_utf8(&buf[..n]).expect("utf-8");
    let (header, body) = text
        .split_once('\n')
        .expect("a header line, then the document");
    assert_eq!(header, r#"{"format":"json","version":1}"#);
    Some(serde_json::from_str(body).expect("a JSON subsegment"))
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn each_call_is_a_subsegment_of_the_invocations_trace() {
    let daemon = UdpSocket::bind("127.0.0.1:0").expect("a UDP port");
    daemon
        .set_read_timeout(Some(Duration::from_millis(1500)))
        .expect("timeout");
    let header = Arc::new(Mutex::new(format!("Root={ROOT};Parent={PARENT};Sampled=1")));
    let source = header.clone();
    let interceptor = XrayInterceptor::new(
        daemon.local_addr().expect("addr").to_string(),
        Arc::new(move || Some(source.lock().expect("header").clone())),
    )
    .expect("a socket");
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint())
        .region(aws_config::Region::new("us-east-1"))
        .load()
        .await;
    let client = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&sdk)
            .interceptor(interceptor)
            .build(),
    );

    let missing = client
        .describe_table()
        .table_name("xray_no_such_table")
        .send()
        .await;
    assert!(missing.is_err());
    let seg = next_subsegment(&daemon).expect("a subsegment for the failed call");
    assert_eq!(seg["type"], "subsegment");
    assert_eq!(seg["namespace"], "aws");
    assert_eq!(
        seg["name"], "DynamoDB",
        "X-Ray names AWS subsegments by service: {seg}"
    );
    assert_eq!(seg["trace_id"], ROOT);
    assert_eq!(seg["parent_id"], PARENT);
    assert_eq!(seg["aws"]["operation"], "DescribeTable");
    assert_eq!(seg["aws"]["table_name"], "xray_no_such_table");
    assert_eq!(seg["http"]["response"]["status"], 400);
    assert_eq!(seg["error"], true, "a 4xx is an error, not a fault: {seg}");
    assert!(seg.get("fault").is_none());
    let (start, end) = (
        seg["start_time"].as_f64().expect("start"),
        seg["end_time"].as_f64().expect("end"),
    );
    assert!(start > 1.7e9 && end >= start, "{seg}");
    assert_eq!(seg["id"].as_str().map(str::len), Some(16));

    client.list_tables().send().await.expect("ListTables");
    let seg = next_subsegment(&daemon).expect("a subsegment for the call");
    assert_eq!(seg["aws"]["operation"], "ListTables");
    assert_eq!(seg["http"]["response"]["status"], 200);
    assert!(
        seg.get("error").is_none() && seg.get("fault").is_none(),
        "{seg}"
    );

    // not sampled: nothing is sent
    *header.lock().expect("header") = format!("Root={ROOT};Parent={PARENT};Sampled=0");
    client.list_tables().send().await.expect("ListTables");
    assert!(
        next_subsegment(&daemon).is_none(),
        "an unsampled trace sends nothing"
    );
}
