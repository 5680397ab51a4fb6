//! Faults on the wire recorder (`harel_testwire::Fault`): chosen DynamoDB operations are
//! answered with a canned error, on cue, without being sent (moto can't throttle or report a
//! TransactionConflict), or sent with their answer lost; every other request goes to the
//! real endpoint. It also records the `ClientRequestToken` of each TransactWriteItems and
//! can answer a token it saw succeed the way DynamoDB does for 10 minutes (moto ignores the
//! token).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use harel_testwire::recorder::{Canned, Fault as WireFault, Request, Verdict};
use harel_testwire::Recorder;

/// A canned failure for the next request of `operation` (e.g. "TransactWriteItems").
#[derive(Clone, Debug)]
pub(crate) struct Fault {
    pub operation: &'static str,
    pub status: u16,
    pub body: String,
    /// Send the request, let the service act, then answer with this canned failure instead
    /// of the service's answer (a response lost on the way back).
    pub after_sending: bool,
}

impl Fault {
    /// A `TransactionCanceledException` with these reason codes ("None" for fine items).
    pub(crate) fn cancelled(reasons: &[&str]) -> Self {
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
    pub(crate) fn answer_lost(operation: &'static str) -> Self {
        Fault {
            status: 500,
            after_sending: true,
            ..Fault::error(operation, "InternalServerError")
        }
    }

    /// A bare service error `code` on `operation`.
    pub(crate) fn error(operation: &'static str, code: &str) -> Self {
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
pub(crate) struct Faults {
    queue: Arc<Mutex<VecDeque<Fault>>>,
    /// The ClientRequestToken of every TransactWriteItems sent, in order.
    tokens: Arc<Mutex<Vec<String>>>,
    /// Tokens of transactions the service applied: answered again as a success, without
    /// sending, when `dynamodb_tokens` is on.
    applied: Arc<Mutex<Vec<String>>>,
    dynamodb_tokens: Arc<std::sync::atomic::AtomicBool>,
}

impl Faults {
    pub(crate) fn push(&self, fault: Fault) {
        self.queue.lock().expect("fault queue").push_back(fault);
    }

    pub(crate) fn pending(&self) -> usize {
        self.queue.lock().expect("fault queue").len()
    }

    /// The tokens sent so far.
    pub(crate) fn tokens(&self) -> Vec<String> {
        self.tokens.lock().expect("tokens").clone()
    }

    /// Answer a TransactWriteItems whose token was applied before as DynamoDB does within its
    /// 10-minute window: a success, nothing applied again.
    pub(crate) fn emulate_dynamodb_tokens(&self) {
        self.dynamodb_tokens
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn take_for(&self, operation: &str) -> Option<Fault> {
        let mut q = self.queue.lock().expect("fault queue");
        let pos = q.iter().position(|f| f.operation == operation)?;
        q.remove(pos)
    }
}

fn request_token(request: &Request<'_>) -> Option<String> {
    (request.operation == "TransactWriteItems")
        .then(|| request.json())
        .flatten()?
        .get("ClientRequestToken")?
        .as_str()
        .map(str::to_string)
}

impl WireFault for Faults {
    fn before(&self, request: &Request<'_>) -> Verdict {
        if let Some(token) = request_token(request) {
            self.tokens.lock().expect("tokens").push(token.clone());
            let replayed = self
                .dynamodb_tokens
                .load(std::sync::atomic::Ordering::SeqCst)
                && self.applied.lock().expect("applied").contains(&token);
            if replayed {
                return Verdict::Answer(Canned::new(200, "{}"));
            }
        }
        match self.take_for(request.operation) {
            Some(fault) if fault.after_sending => {
                Verdict::SendThenAnswer(Canned::new(fault.status, fault.body))
            }
            Some(fault) => Verdict::Answer(Canned::new(fault.status, fault.body)),
            None => Verdict::Send,
        }
    }

    fn after(&self, request: &Request<'_>, status: u16) {
        if (200..300).contains(&status) {
            if let Some(token) = request_token(request) {
                self.applied.lock().expect("applied").push(token);
            }
        }
    }
}

/// A client on the moto endpoint that fails on cue, with SDK retries off (so each canned
/// failure reaches the store exactly once).
pub(crate) async fn faulty_client() -> (aws_sdk_dynamodb::Client, Faults) {
    faulty_client_with(aws_sdk_dynamodb::config::retry::RetryConfig::disabled()).await
}

/// The same with the SDK's standard retries (short backoffs): a lost answer is sent again.
pub(crate) async fn retrying_faulty_client() -> (aws_sdk_dynamodb::Client, Faults) {
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
    let recorder = Recorder::new().with_fault(faults.clone());
    let conf = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .http_client(recorder.http_client())
        .retry_config(retry)
        .build();
    (aws_sdk_dynamodb::Client::from_conf(conf), faults)
}
