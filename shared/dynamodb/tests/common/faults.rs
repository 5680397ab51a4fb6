//! An HTTP connector that answers chosen DynamoDB operations with a canned error, on cue,
//! without sending them (moto can't throttle or report a TransactionConflict); every other
//! request goes to the real endpoint.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;

/// A canned failure for the next request of `operation` (e.g. "TransactWriteItems").
#[derive(Clone, Debug)]
pub struct Fault {
    pub operation: &'static str,
    pub status: u16,
    pub body: String,
}

impl Fault {
    /// A `TransactionCanceledException` with these reason codes ("None" for fine items).
    pub fn cancelled(reasons: &[&str]) -> Self {
        let reasons: Vec<serde_json::Value> = reasons
            .iter()
            .map(|c| {
                if *c == "None" {
                    serde_json::json!({"Code": "None"})
                } else {
                    serde_json::json!({"Code": c, "Message": format!("injected {c}")})
                }
            })
            .collect();
        Fault {
            operation: "TransactWriteItems",
            status: 400,
            body: serde_json::json!({
                "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                "Message": "Transaction cancelled (injected)",
                "CancellationReasons": reasons,
            })
            .to_string(),
        }
    }

    /// A bare service error `code` on `operation`.
    pub fn error(operation: &'static str, code: &str) -> Self {
        Fault {
            operation,
            status: 400,
            body: serde_json::json!({
                "__type": format!("com.amazonaws.dynamodb.v20120810#{code}"),
                "message": format!("injected {code}"),
            })
            .to_string(),
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Faults(Arc<Mutex<VecDeque<Fault>>>);

impl Faults {
    pub fn push(&self, fault: Fault) {
        self.0.lock().expect("fault queue").push_back(fault);
    }

    pub fn pending(&self) -> usize {
        self.0.lock().expect("fault queue").len()
    }

    fn take_for(&self, operation: &str) -> Option<Fault> {
        let mut q = self.0.lock().expect("fault queue");
        let pos = q.iter().position(|f| f.operation == operation)?;
        q.remove(pos)
    }
}

#[derive(Debug)]
struct FaultyClient {
    inner: SharedHttpClient,
    faults: Faults,
}

#[derive(Debug)]
struct FaultyConnector {
    inner: SharedHttpConnector,
    faults: Faults,
}

impl HttpClient for FaultyClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(FaultyConnector {
            inner: self.inner.http_connector(settings, components),
            faults: self.faults.clone(),
        })
    }
}

impl HttpConnector for FaultyConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let op = request
            .headers()
            .get("x-amz-target")
            .and_then(|t| t.rsplit('.').next())
            .unwrap_or("")
            .to_string();
        if let Some(fault) = self.faults.take_for(&op) {
            let mut resp = HttpResponse::new(
                fault.status.try_into().expect("a valid status"),
                SdkBody::from(fault.body),
            );
            resp.headers_mut()
                .insert("content-type", "application/x-amz-json-1.0");
            return HttpConnectorFuture::ready(Ok(resp));
        }
        self.inner.call(request)
    }
}

/// A client on the moto endpoint that fails on cue, with SDK retries off (so each canned
/// failure reaches the store exactly once).
pub async fn faulty_client() -> (aws_sdk_dynamodb::Client, Faults) {
    let sdk = super::sdk_config().await;
    let faults = Faults::default();
    // the SDK's default client, built explicitly so it can be wrapped
    let inner = aws_smithy_http_client::Builder::new()
        .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::AwsLc,
        ))
        .build_https();
    let conf = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .http_client(SharedHttpClient::new(FaultyClient {
            inner,
            faults: faults.clone(),
        }))
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
        .build();
    (aws_sdk_dynamodb::Client::from_conf(conf), faults)
}
