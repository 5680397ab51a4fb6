//! One recorder of the AWS SDK's requests, for every test and benchmark that counts or
//! breaks what goes over the wire: an HTTP client wrapped around the SDK's own, so it sees
//! each attempt (retries included) of any service's client it is given to.
//!
//! Each request becomes a [`Call`]: its service and operation, the step it was made under
//! ([`Recorder::step`]), the answer's status, the items the answer read (a Query's or Scan's
//! `ScannedCount`, the items a GetItem or BatchGetItem returned), the capacity units it
//! reports as consumed, when it does, and the read and write units DynamoDB bills it
//! ([`crate::units`], from the request and answer bodies). [`Recorder::take`] hands over what was recorded since
//! the last take as a [`Tally`] (counts per operation, totals). With
//! [`Recorder::with_bodies`] each call also keeps its request and answer as JSON (to price
//! them from the item sizes on the wire).
//!
//! A [`Fault`] hook, when set, decides each request's fate before it is sent: sent as is,
//! answered with a canned error without being sent, failed at the connection, or sent and
//! its answer replaced or lost. It hears each answer that did arrive.
//!
//! ```no_run
//! # async fn f(sdk: aws_config::SdkConfig) {
//! let recorder = harel_testwire::Recorder::new();
//! // aws_sdk_dynamodb::config::Builder::from(&sdk).http_client(recorder.http_client())
//! let tally = recorder.take();
//! println!("{} requests, {} items read", tally.requests(), tally.items_read());
//! # }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::byte_stream::ByteStream;
use serde_json::Value;

/// One request as sent (one attempt: the SDK's retries are calls of their own).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Call {
    /// `dynamodb`, `sqs`, `lambda`, or what the request's `X-Amz-Target` names.
    pub service: String,
    /// The operation (`GetItem`, `SendMessageBatch`, `Invoke`, ...).
    pub operation: String,
    /// The step it was made under ([`Recorder::step`]; empty when none was set).
    pub step: String,
    /// The answer's HTTP status; None when no answer came (a connection failure).
    pub status: Option<u16>,
    /// Whether a [`Fault`] answered or failed it instead of the service.
    pub injected: bool,
    /// What a Query or Scan read (its `ScannedCount`).
    pub scanned: u64,
    /// The items the answer read: `scanned` for a Query or Scan, the items a GetItem or
    /// BatchGetItem returned.
    pub items_read: u64,
    /// The capacity units the answer reports as consumed (`ConsumedCapacity`: read units,
    /// else total units), when it reports any.
    pub consumed_units: Option<f64>,
    /// The read capacity units DynamoDB bills this request ([`crate::units`], computed from
    /// the request and its answer; 0 for other services and for answers not seen).
    pub read_units: f64,
    /// The write capacity units DynamoDB bills this request (likewise).
    pub write_units: f64,
    /// The request's JSON body ([`Recorder::with_bodies`] only).
    pub request: Option<Value>,
    /// The answer's JSON body ([`Recorder::with_bodies`] only).
    pub response: Option<Value>,
}

impl Call {
    /// A DynamoDB request made by another client (harel Python's, recorded with botocore's
    /// hooks), counted and priced as the recorder counts and prices its own.
    pub fn dynamodb(operation: &str, status: u16, request: Value, answer: Value) -> Call {
        let units = crate::units::units(operation, Some(status), &request, Some(&answer));
        Call {
            service: "dynamodb".into(),
            operation: operation.into(),
            status: Some(status),
            scanned: scanned(operation, &answer),
            items_read: items_read(operation, &answer),
            consumed_units: consumed_units(&answer),
            read_units: units.read,
            write_units: units.write,
            request: Some(request),
            response: Some(answer),
            ..Call::default()
        }
    }
}

/// The calls recorded since the last [`Recorder::take`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    /// Every call, in the order the requests went out.
    pub calls: Vec<Call>,
}

impl Tally {
    /// How many requests were made.
    pub fn requests(&self) -> usize {
        self.calls.len()
    }

    /// Requests per operation.
    pub fn by_operation(&self) -> BTreeMap<String, usize> {
        let mut by = BTreeMap::new();
        for call in &self.calls {
            *by.entry(call.operation.clone()).or_default() += 1;
        }
        by
    }

    /// The operations, in order.
    pub fn operations(&self) -> Vec<String> {
        self.calls.iter().map(|c| c.operation.clone()).collect()
    }

    /// How many requests of `operation` were made.
    pub fn count(&self, operation: &str) -> usize {
        self.calls
            .iter()
            .filter(|c| c.operation == operation)
            .count()
    }

    /// The items the answers read (see [`Call::items_read`]).
    pub fn items_read(&self) -> u64 {
        self.calls.iter().map(|c| c.items_read).sum()
    }

    /// What the Queries and Scans read (their `ScannedCount`).
    pub fn scanned(&self) -> u64 {
        self.calls.iter().map(|c| c.scanned).sum()
    }

    /// The capacity units the answers reported as consumed (0 for those that reported none).
    pub fn consumed_units(&self) -> f64 {
        self.calls.iter().filter_map(|c| c.consumed_units).sum()
    }

    /// The read capacity units DynamoDB bills these requests ([`Call::read_units`]).
    pub fn read_units(&self) -> f64 {
        self.calls.iter().map(|c| c.read_units).sum()
    }

    /// The write capacity units DynamoDB bills these requests ([`Call::write_units`]).
    pub fn write_units(&self) -> f64 {
        self.calls.iter().map(|c| c.write_units).sum()
    }
}

/// A request as a [`Fault`] sees it.
#[derive(Debug)]
pub struct Request<'a> {
    /// As [`Call::service`].
    pub service: &'a str,
    /// As [`Call::operation`].
    pub operation: &'a str,
    /// The body, when it is in memory (the JSON protocols' always is).
    pub body: Option<&'a [u8]>,
}

impl Request<'_> {
    /// The body as JSON, when it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(self.body?).ok()
    }
}

/// A canned answer: a status and a JSON body (`application/x-amz-json-1.0`).
#[derive(Clone, Debug)]
pub struct Canned {
    /// The HTTP status (400 for most service errors, 500 or 503 for a server failure).
    pub status: u16,
    /// The JSON body, as text.
    pub body: String,
}

impl Canned {
    /// An answer with `status` and `body` (see [`Canned::dynamodb_error`] for a service
    /// error).
    pub fn new(status: u16, body: impl Into<String>) -> Self {
        Canned {
            status,
            body: body.into(),
        }
    }

    /// A DynamoDB service error `code` (`ThrottlingException`, ...), as DynamoDB answers it.
    pub fn dynamodb_error(status: u16, code: &str, extra: Value) -> Self {
        let mut body = serde_json::json!({
            "__type": format!("com.amazonaws.dynamodb.v20120810#{code}"),
            "message": format!("injected {code}"),
        });
        if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
            body.extend(extra);
        }
        Canned::new(status, body.to_string())
    }

    fn response(&self) -> HttpResponse {
        let mut resp = HttpResponse::new(
            self.status.try_into().expect("a valid status"),
            SdkBody::from(self.body.clone()),
        );
        resp.headers_mut()
            .insert("content-type", "application/x-amz-json-1.0");
        resp
    }
}

/// The answer of a request that was sent (or the connection's failure), as it comes back.
pub type Answer = Result<HttpResponse, ConnectorError>;

/// What a [`Verdict::SendThen`] does with the answer before the client sees it.
pub type Then = Box<dyn FnOnce(Answer) -> Pin<Box<dyn Future<Output = Answer> + Send>> + Send>;

/// A request's fate, decided before it is sent.
pub enum Verdict {
    /// Sent; the service's answer comes back.
    Send,
    /// Not sent: this answer comes back instead.
    Answer(Canned),
    /// Not sent: the connection fails with this message (not retryable).
    Fail(String),
    /// Sent, the service acts, and this answer comes back instead of its own.
    SendThenAnswer(Canned),
    /// Sent, the service acts, and its answer is lost: the client sees a timeout.
    SendThenTimeout(String),
    /// Sent; what comes back is what `then` makes of the answer (a fault that needs the
    /// answer: drop it after a crash, rewrite its body).
    SendThen(Then),
}

impl fmt::Debug for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Send => f.write_str("Send"),
            Verdict::Answer(c) => f.debug_tuple("Answer").field(c).finish(),
            Verdict::Fail(m) => f.debug_tuple("Fail").field(m).finish(),
            Verdict::SendThenAnswer(c) => f.debug_tuple("SendThenAnswer").field(c).finish(),
            Verdict::SendThenTimeout(m) => f.debug_tuple("SendThenTimeout").field(m).finish(),
            Verdict::SendThen(_) => f.write_str("SendThen(..)"),
        }
    }
}

/// Fault injection: decides each request's fate, hears each answer that arrived.
pub trait Fault: Send + Sync + fmt::Debug + 'static {
    /// The fate of `request`, decided before it is sent (called for every attempt).
    fn before(&self, request: &Request<'_>) -> Verdict;

    /// The service answered `request` with `status` (not called for canned answers).
    fn after(&self, _request: &Request<'_>, _status: u16) {}

    /// How a request that is sent goes out on `inner` (by default, as is; a fault may, say,
    /// send one request at a time).
    fn send(
        &self,
        _request: &Request<'_>,
        inner: &SharedHttpConnector,
        http: HttpRequest,
    ) -> HttpConnectorFuture {
        inner.call(http)
    }
}

#[derive(Debug, Default)]
struct State {
    step: String,
    calls: Vec<Call>,
    /// Bumped by each take, so an answer arriving after one fills in nothing.
    generation: u64,
}

/// Records the requests of every SDK client given its [`http_client`](Recorder::http_client);
/// clones share one record.
#[derive(Clone, Default)]
pub struct Recorder {
    state: Arc<Mutex<State>>,
    bodies: bool,
    fault: Option<Arc<dyn Fault>>,
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("bodies", &self.bodies)
            .field("fault", &self.fault)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder with no fault, keeping no bodies, at no step.
    pub fn new() -> Self {
        Recorder::default()
    }

    /// Keep each call's request and answer as JSON.
    pub fn with_bodies(mut self) -> Self {
        self.bodies = true;
        self
    }

    /// Let `fault` decide each request's fate.
    pub fn with_fault(self, fault: impl Fault) -> Self {
        self.with_shared_fault(Arc::new(fault))
    }

    /// The same with a fault shared with its owner.
    pub fn with_shared_fault(mut self, fault: Arc<dyn Fault>) -> Self {
        self.fault = Some(fault);
        self
    }

    /// Record the calls from now on under `step`.
    pub fn step(&self, step: &str) {
        self.lock().step = step.to_string();
    }

    /// The calls since the last take.
    pub fn take(&self) -> Tally {
        let mut state = self.lock();
        state.generation += 1;
        Tally {
            calls: std::mem::take(&mut state.calls),
        }
    }

    /// The calls since the last take, leaving them recorded.
    pub fn peek(&self) -> Tally {
        Tally {
            calls: self.lock().calls.clone(),
        }
    }

    /// The SDK's default HTTPS client (rustls on aws-lc), recorded.
    pub fn http_client(&self) -> SharedHttpClient {
        self.wrap(
            aws_smithy_http_client::Builder::new()
                .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                    aws_smithy_http_client::tls::rustls_provider::CryptoMode::AwsLc,
                ))
                .build_https(),
        )
    }

    /// `inner`, recorded.
    pub fn wrap(&self, inner: SharedHttpClient) -> SharedHttpClient {
        SharedHttpClient::new(Recording {
            inner,
            recorder: self.clone(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record a call, returning where it is.
    fn push(&self, mut call: Call) -> (u64, usize) {
        let mut state = self.lock();
        call.step = state.step.clone();
        state.calls.push(call);
        (state.generation, state.calls.len() - 1)
    }

    /// Fill in the answer of a call (unless a take happened meanwhile).
    fn answered(
        &self,
        (generation, index): (u64, usize),
        status: u16,
        body: Option<Value>,
        request: Option<&Value>,
    ) {
        let mut state = self.lock();
        if state.generation != generation {
            return;
        }
        let Some(call) = state.calls.get_mut(index) else {
            return;
        };
        let operation = call.operation.clone();
        let operation = operation.as_str();
        call.status = Some(status);
        if let Some(body) = &body {
            call.scanned = scanned(operation, body);
            call.items_read = items_read(operation, body);
            call.consumed_units = consumed_units(body);
        }
        if let (Some(request), "dynamodb") = (request, call.service.as_str()) {
            let units = crate::units::units(operation, Some(status), request, body.as_ref());
            call.read_units = units.read;
            call.write_units = units.write;
        }
        if self.bodies {
            call.response = body;
        }
    }
}

/// `(service, operation)` of a request: `X-Amz-Target` (`DynamoDB_20120810.GetItem`,
/// `AmazonSQS.SendMessage`), else Lambda's REST path (`/2015-03-31/functions/NAME/invocations`).
pub fn service_and_operation(request: &HttpRequest) -> (String, String) {
    if let Some(target) = request.headers().get("x-amz-target") {
        let (service, operation) = target.rsplit_once('.').unwrap_or(("", target));
        let service = match service {
            s if s.starts_with("DynamoDB") => "dynamodb".to_string(),
            "AmazonSQS" => "sqs".to_string(),
            s => s.to_string(),
        };
        return (service, operation.to_string());
    }
    let uri = request.uri();
    if uri.contains("/functions/") && uri.contains("/invocations") {
        return ("lambda".into(), "Invoke".into());
    }
    (String::new(), String::new())
}

fn scanned(operation: &str, answer: &Value) -> u64 {
    match operation {
        "Query" | "Scan" => answer["ScannedCount"].as_u64().unwrap_or(0),
        _ => 0,
    }
}

fn items_read(operation: &str, answer: &Value) -> u64 {
    match operation {
        "Query" | "Scan" => answer["ScannedCount"].as_u64().unwrap_or(0),
        "BatchGetItem" => answer["Responses"]
            .as_object()
            .map(|t| {
                t.values()
                    .filter_map(|v| v.as_array())
                    .map(|v| v.len() as u64)
                    .sum()
            })
            .unwrap_or(0),
        "GetItem" => u64::from(answer.get("Item").is_some()),
        _ => 0,
    }
}

fn consumed_units(answer: &Value) -> Option<f64> {
    let units = |c: &Value| {
        c["ReadCapacityUnits"]
            .as_f64()
            .or(c["CapacityUnits"].as_f64())
            .unwrap_or(0.0)
    };
    match &answer["ConsumedCapacity"] {
        Value::Array(all) => Some(all.iter().map(units).sum()),
        c @ Value::Object(_) => Some(units(c)),
        _ => None,
    }
}

#[derive(Debug)]
struct Recording {
    inner: SharedHttpClient,
    recorder: Recorder,
}

impl HttpClient for Recording {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(RecordingConnector {
            inner: self.inner.http_connector(settings, components),
            recorder: self.recorder.clone(),
        })
    }
}

#[derive(Debug)]
struct RecordingConnector {
    inner: SharedHttpConnector,
    recorder: Recorder,
}

impl HttpConnector for RecordingConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let (service, operation) = service_and_operation(&request);
        let body = request.body().bytes().map(<[u8]>::to_vec);
        let seen = Request {
            service: &service,
            operation: &operation,
            body: body.as_deref(),
        };
        let verdict = match &self.recorder.fault {
            Some(fault) => fault.before(&seen),
            None => Verdict::Send,
        };
        let recorder = self.recorder.clone();
        // DynamoDB's requests are priced from their body: always read
        let request_json: Option<Value> = (recorder.bodies || service == "dynamodb")
            .then(|| body.as_deref().and_then(|b| serde_json::from_slice(b).ok()))
            .flatten();
        let call = Call {
            service: service.clone(),
            operation: operation.clone(),
            injected: !matches!(verdict, Verdict::Send),
            request: request_json.clone().filter(|_| recorder.bodies),
            ..Call::default()
        };
        let index = recorder.push(call);
        let send = |http| match &self.recorder.fault {
            Some(fault) => fault.send(&seen, &self.inner, http),
            None => self.inner.call(http),
        };
        match verdict {
            Verdict::Answer(canned) => {
                recorder.answered(index, canned.status, None, None);
                HttpConnectorFuture::ready(Ok(canned.response()))
            }
            Verdict::Fail(message) => {
                HttpConnectorFuture::ready(Err(ConnectorError::other(message.into(), None)))
            }
            Verdict::SendThenAnswer(canned) => {
                let sent = send(request);
                HttpConnectorFuture::new(async move {
                    if let Ok(response) = sent.await {
                        after(
                            &recorder,
                            &service,
                            &operation,
                            &body,
                            response.status().as_u16(),
                        );
                    }
                    recorder.answered(index, canned.status, None, None);
                    Ok(canned.response())
                })
            }
            Verdict::SendThenTimeout(message) => {
                let sent = send(request);
                HttpConnectorFuture::new(async move {
                    if let Ok(response) = sent.await {
                        after(
                            &recorder,
                            &service,
                            &operation,
                            &body,
                            response.status().as_u16(),
                        );
                    }
                    Err(ConnectorError::timeout(message.into()))
                })
            }
            Verdict::SendThen(then) => {
                let sent = send(request);
                HttpConnectorFuture::new(async move {
                    let answer = sent.await;
                    if let Ok(response) = &answer {
                        after(
                            &recorder,
                            &service,
                            &operation,
                            &body,
                            response.status().as_u16(),
                        );
                    }
                    let answer = then(answer).await;
                    if let Ok(response) = &answer {
                        recorder.answered(index, response.status().as_u16(), None, None);
                    }
                    answer
                })
            }
            Verdict::Send => {
                let sent = send(request);
                HttpConnectorFuture::new(async move {
                    let mut response = sent.await?;
                    let status = response.status().as_u16();
                    after(&recorder, &service, &operation, &body, status);
                    let bytes = ByteStream::new(response.take_body())
                        .collect()
                        .await
                        .map_err(|e| ConnectorError::io(Box::new(e)))?
                        .into_bytes();
                    let answer = serde_json::from_slice::<Value>(&bytes).ok();
                    recorder.answered(index, status, answer, request_json.as_ref());
                    *response.body_mut() = SdkBody::from(bytes);
                    Ok(response)
                })
            }
        }
    }
}

fn after(recorder: &Recorder, service: &str, operation: &str, body: &Option<Vec<u8>>, status: u16) {
    if let Some(fault) = &recorder.fault {
        let seen = Request {
            service,
            operation,
            body: body.as_deref(),
        };
        fault.after(&seen, status);
    }
}
