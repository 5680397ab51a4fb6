//! An HTTP connector that answers chosen DynamoDB operations with a canned error, on cue,
//! without sending them (moto can't throttle or report a TransactionConflict), or sends one
//! and loses its answer; every other request goes to the real endpoint. It also records the
//! `ClientRequestToken` of each TransactWriteItems and can answer a token it saw succeed the
//! way DynamoDB does for 10 minutes (moto ignores the token).

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
    /// Send the request, let the service act, then answer with this canned failure instead
    /// of the service's answer (a response lost on the way back).
    pub after_sending: bool,
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
            after_sending: false,
        }
    }

    /// The request reaches the service and acts, but its answer is lost: the client sees a
    /// retryable 500 (as after a dropped connection answered by the load balancer).
    pub fn answer_lost(operation: &'static str) -> Self {
        Fault {
            status: 500,
            after_sending: true,
            ..Fault::error(operation, "InternalServerError")
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
            after_sending: false,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Faults {
    queue: Arc<Mutex<VecDeque<Fault>>>,
    /// The ClientRequestToken of every TransactWriteItems sent, in order.
    tokens: Arc<Mutex<Vec<String>>>,
    /// Tokens of transactions the service applied: answered again as a success, without
    /// sending, when `dynamodb_tokens` is on.
    applied: Arc<Mutex<Vec<String>>>,
    dynamodb_tokens: Arc<std::sync::atomic::AtomicBool>,
}

impl Faults {
    pub fn push(&self, fault: Fault) {
        self.queue.lock().expect("fault queue").push_back(fault);
    }

    pub fn pending(&self) -> usize {
        self.queue.lock().expect("fault queue").len()
    }

    /// The tokens sent so far.
    pub fn tokens(&self) -> Vec<String> {
        self.tokens.lock().expect("tokens").clone()
    }

    /// Answer a TransactWriteItems whose token was applied before as DynamoDB does within its
    /// 10-minute window: a success, nothing applied again.
    pub fn emulate_dynamodb_tokens(&self) {
        self.dynamodb_tokens
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn take_for(&self, operation: &str) -> Option<Fault> {
        let mut q = self.queue.lock().expect("fault queue");
        let pos = q.iter().position(|f| f.operation == operation)?;
        q.remove(pos)
    }
}

fn canned(status: u16, body: String) -> HttpResponse {
    let mut resp = HttpResponse::new(
        status.try_into().expect("a valid status"),
        SdkBody::from(body),
    );
    resp.headers_mut()
        .insert("content-type", "application/x-amz-json-1.0");
    resp
}

fn request_token(request: &HttpRequest) -> Option<String> {
    let body: serde_json::Value = serde_json::from_slice(request.body().bytes()?).ok()?;
    body.get("ClientRequestToken")?.as_str().map(str::to_string)
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
        let token = (op == "TransactWriteItems")
            .then(|| request_token(&request))
            .flatten();
        if let Some(token) = &token {
            self.faults
                .tokens
                .lock()
                .expect("tokens")
                .push(token.clone());
            let replayed = self
                .faults
                .dynamodb_tokens
                .load(std::sync::atomic::Ordering::SeqCst)
                && self.faults.applied.lock().expect("applied").contains(token);
            if replayed {
                return HttpConnectorFuture::ready(Ok(canned(200, "{}".into())));
            }
        }
        let fault = self.faults.take_for(&op);
        if let Some(fault) = fault.as_ref().filter(|f| !f.after_sending) {
            return HttpConnectorFuture::ready(Ok(canned(fault.status, fault.body.clone())));
        }
        let sent = self.inner.call(request);
        let faults = self.faults.clone();
        HttpConnectorFuture::new(async move {
            let response = sent.await?;
            if response.status().is_success() {
                if let Some(token) = token {
                    faults.applied.lock().expect("applied").push(token);
                }
            }
            match fault {
                Some(lost) => Ok(canned(lost.status, lost.body)),
                None => Ok(response),
            }
        })
    }
}

/// A client on the moto endpoint that fails on cue, with SDK retries off (so each canned
/// failure reaches the store exactly once).
pub async fn faulty_client() -> (aws_sdk_dynamodb::Client, Faults) {
    faulty_client_with(aws_sdk_dynamodb::config::retry::RetryConfig::disabled()).await
}

/// The same with the SDK's standard retries (short backoffs): a lost answer is sent again.
pub async fn retrying_faulty_client() -> (aws_sdk_dynamodb::Client, Faults) {
    faulty_client_with(
        aws_sdk_dynamodb::config::retry::RetryConfig::standard()
            .with_max_attempts(3)
            .with_initial_backoff(std::time::Duration::from_millis(5)),
    )
    .await
}

async fn faulty_client_with(
    retry: aws_sdk_dynamodb::config::retry::RetryConfig,
) -> (aws_sdk_dynamodb::Client, Faults) {
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
        .retry_config(retry)
        .build();
    (aws_sdk_dynamodb::Client::from_conf(conf), faults)
}
