//! A client that counts, on the wire, the requests it sends and the items DynamoDB read to
//! answer them (a Query's or Scan's `ScannedCount`, a BatchGetItem's or GetItem's returned
//! items): what a listing costs, whatever moto reports as consumed capacity. Shared by the
//! tests and `examples/bench_list.rs`.

use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::byte_stream::ByteStream;
use serde_json::Value;

/// Requests and items read since the last `take`, by operation.
#[derive(Clone, Debug, Default)]
pub struct Reads(Arc<Mutex<Vec<(String, u64)>>>);

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub requests: u64,
    pub items_read: u64,
    /// The operations, in order.
    pub ops: Vec<String>,
}

impl Reads {
    pub fn take(&self) -> Tally {
        let recs = std::mem::take(&mut *self.0.lock().expect("reads"));
        Tally {
            requests: recs.len() as u64,
            items_read: recs.iter().map(|(_, n)| n).sum(),
            ops: recs.into_iter().map(|(op, _)| op).collect(),
        }
    }
}

fn items_read(op: &str, resp: &Value) -> u64 {
    match op {
        "Query" | "Scan" => resp["ScannedCount"].as_u64().unwrap_or(0),
        "BatchGetItem" => resp["Responses"]
            .as_object()
            .map(|t| {
                t.values()
                    .filter_map(|v| v.as_array())
                    .map(|v| v.len() as u64)
                    .sum()
            })
            .unwrap_or(0),
        "GetItem" => u64::from(resp.get("Item").is_some()),
        _ => 0,
    }
}

#[derive(Debug)]
struct CountingClient {
    inner: SharedHttpClient,
    reads: Reads,
}

#[derive(Debug)]
struct CountingConnector {
    inner: SharedHttpConnector,
    reads: Reads,
}

impl HttpClient for CountingClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(CountingConnector {
            inner: self.inner.http_connector(settings, components),
            reads: self.reads.clone(),
        })
    }
}

impl HttpConnector for CountingConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let op = request
            .headers()
            .get("x-amz-target")
            .and_then(|t| t.rsplit('.').next())
            .unwrap_or("")
            .to_string();
        let reads = self.reads.clone();
        let fut = self.inner.call(request);
        HttpConnectorFuture::new(async move {
            let mut resp = fut.await?;
            let bytes = ByteStream::new(resp.take_body())
                .collect()
                .await
                .map_err(|e| ConnectorError::io(Box::new(e)))?
                .into_bytes();
            let n = serde_json::from_slice::<Value>(&bytes)
                .map(|v| items_read(&op, &v))
                .unwrap_or(0);
            reads.0.lock().expect("reads").push((op, n));
            *resp.body_mut() = SdkBody::from(bytes);
            Ok(resp)
        })
    }
}

/// A client on `endpoint` that counts what it reads.
pub async fn counting_client(endpoint: &str) -> (aws_sdk_dynamodb::Client, Reads) {
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .load()
        .await;
    let reads = Reads::default();
    let inner = aws_smithy_http_client::Builder::new()
        .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::AwsLc,
        ))
        .build_https();
    let conf = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .http_client(SharedHttpClient::new(CountingClient {
            inner,
            reads: reads.clone(),
        }))
        .build();
    (aws_sdk_dynamodb::Client::from_conf(conf), reads)
}
