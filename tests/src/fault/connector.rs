//! The fault layer: a [`Fault`] on the wire recorder (`harel_testwire::Recorder`) between the
//! functions' SDK clients and the moto server. Each invocation gets its own
//! [`InvocationFaults`]: it answers some requests with a canned throttle, conflict or send
//! failure without sending them, lets some through and loses their answer (a timeout after
//! the service acted), and models a crash: from a chosen point on, every request of that
//! invocation fails, as if the process had died there.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorFuture, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_types::body::SdkBody;
use harel_testwire::recorder::{Canned, Fault, Request, Verdict};
use harel_testwire::Recorder;

use super::stats::{FaultKind, Stats};

/// Where an invocation dies.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Crash {
    /// Just before the `nth` (1-based) request of `op` is sent (e.g. before the commit).
    Before { op: &'static str, nth: usize },
    /// Just after the `nth` request of `op` succeeded (the commit, a send, a child's create).
    After { op: &'static str, nth: usize },
    /// After `nth` requests of any kind: Lambda's timeout killing the invocation mid-batch.
    AfterRequests { nth: usize },
}

/// Chances (0..1) of the transient faults, per request.
#[derive(Clone, Debug)]
pub struct Rates {
    /// A DynamoDB request answered with a throttling error, not sent (then a burst of 0 to 3
    /// more, so the SDK's own retries sometimes run out).
    pub throttle: f64,
    /// A `TransactWriteItems` cancelled with `TransactionConflict`, not sent (with a burst,
    /// as `throttle`).
    pub transaction_conflict: f64,
    /// An SQS `SendMessage`/`SendMessageBatch` answered 500, not sent (with a burst).
    pub sqs_failure: f64,
    /// Any request sent and carried out, its answer lost: the caller sees a timeout for work
    /// that was done.
    pub timeout: f64,
    /// A `BatchGetItem` answered torn: the Execution as it is now, the dedupe mark as if read
    /// before the commit that wrote it (DynamoDB's BatchGetItem is read-committed item by
    /// item, not a snapshot). Only a read that found a mark is torn, so each one counted is a
    /// worker that believes a processed event is new.
    pub torn_read: f64,
}

impl Rates {
    /// No transient fault at all (a calm storm, or an invocation that only crashes).
    pub const NONE: Rates = Rates {
        throttle: 0.0,
        transaction_conflict: 0.0,
        sqs_failure: 0.0,
        timeout: 0.0,
        torn_read: 0.0,
    };
}

/// One invocation's faults: its plan, its RNG, what it has seen.
pub struct InvocationFaults {
    rng: Mutex<fastrand::Rng>,
    rates: Rates,
    crash: Option<(Crash, FaultKind)>,
    crashed: AtomicBool,
    seen: Mutex<HashMap<String, usize>>,
    requests: Mutex<usize>,
    /// Requests still to fail of a burst (the SDK retries: a single fault is often absorbed).
    burst: Mutex<usize>,
    stats: Arc<Stats>,
}

impl InvocationFaults {
    /// The faults of one invocation: its own RNG from `seed` (so a storm replays), the
    /// transient `rates`, and at most one `crash` point with the kind it is counted as in
    /// `stats` when reached.
    pub(crate) fn new(
        seed: u64,
        rates: Rates,
        crash: Option<(Crash, FaultKind)>,
        stats: Arc<Stats>,
    ) -> Self {
        InvocationFaults {
            rng: Mutex::new(fastrand::Rng::with_seed(seed)),
            rates,
            crash,
            crashed: AtomicBool::new(false),
            seen: Mutex::new(HashMap::new()),
            requests: Mutex::new(0),
            burst: Mutex::new(0),
            stats,
        }
    }

    /// Whether the invocation died (its answer, if any, is ignored: nothing is deleted).
    pub fn crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }

    fn die(&self) {
        if !self.crashed.swap(true, Ordering::SeqCst) {
            if let Some((_, kind)) = &self.crash {
                self.stats.count(*kind);
            }
        }
    }

    fn chance(&self, p: f64) -> bool {
        p > 0.0 && self.rng.lock().expect("rng lock").f64() < p
    }

    /// Decide a request's fate before it is sent; returns its index among `op`'s requests.
    fn before(&self, op: &str) -> Result<usize, Decision> {
        if self.crashed() {
            return Err(Decision::Dead);
        }
        let nth = {
            let mut seen = self.seen.lock().expect("seen lock");
            let n = seen.entry(op.to_string()).or_default();
            *n += 1;
            *n
        };
        let total = {
            let mut r = self.requests.lock().expect("requests lock");
            *r += 1;
            *r
        };
        match &self.crash {
            Some((Crash::Before { op: o, nth: n }, _)) if *o == op && *n == nth => {
                self.die();
                return Err(Decision::Dead);
            }
            Some((Crash::AfterRequests { nth: n }, _)) if total > *n => {
                self.die();
                return Err(Decision::Dead);
            }
            _ => {}
        }
        {
            let mut burst = self.burst.lock().expect("burst lock");
            if *burst > 0 {
                *burst -= 1;
                return Err(Decision::Transient);
            }
        }
        let r = &self.rates;
        let fault = if is_dynamodb(op) {
            if op == "TransactWriteItems" && self.chance(r.transaction_conflict) {
                Some(FaultKind::TransactionConflict)
            } else if self.chance(r.throttle) {
                Some(FaultKind::Throttle)
            } else {
                None
            }
        } else if op.starts_with("SendMessage") && self.chance(r.sqs_failure) {
            Some(FaultKind::SqsSendFailure)
        } else {
            None
        };
        if let Some(kind) = fault {
            self.stats.count(kind);
            // up to three more: sometimes the SDK's own retries run out and our code sees it
            let extra = self.rng.lock().expect("rng lock").usize(0..=3);
            *self.burst.lock().expect("burst lock") = extra;
            return Err(Decision::Fail(kind));
        }
        if self.chance(r.timeout) {
            self.stats.count(FaultKind::Timeout);
            return Err(Decision::LoseAnswer);
        }
        if op == "BatchGetItem" && self.chance(r.torn_read) {
            return Err(Decision::TearRead(nth));
        }
        Ok(nth)
    }

    fn after_success(&self, op: &str, nth: usize) {
        if let Some((Crash::After { op: o, nth: n }, _)) = &self.crash {
            if *o == op && *n == nth {
                self.die();
            }
        }
    }
}

enum Decision {
    /// The invocation is dead: the request never leaves.
    Dead,
    /// The burst of the previous fault goes on (same kind as it, counted once).
    Transient,
    /// A canned service error, not sent.
    Fail(FaultKind),
    /// Sent, the service acts, the answer is lost (a timeout).
    LoseAnswer,
    /// Sent; the answer loses its dedupe marks (a torn read).
    TearRead(usize),
}

fn is_dynamodb(op: &str) -> bool {
    !op.starts_with("SendMessage")
        && !matches!(
            op,
            "ReceiveMessage"
                | "DeleteMessage"
                | "DeleteMessageBatch"
                | "ChangeMessageVisibility"
                | "ChangeMessageVisibilityBatch"
                | "GetQueueAttributes"
                | "GetQueueUrl"
        )
}

fn canned(kind: FaultKind, op: &str) -> Canned {
    let (status, body) = match kind {
        FaultKind::TransactionConflict => (
            400,
            serde_json::json!({
                "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                "Message": "Transaction cancelled (injected)",
                "CancellationReasons": [{"Code": "TransactionConflict", "Message": "injected"}],
            }),
        ),
        FaultKind::SqsSendFailure => (
            500,
            serde_json::json!({"__type": "com.amazonaws.sqs#InternalError", "message": "injected"}),
        ),
        _ => {
            // DynamoDB's two throttling codes, alternating by operation name length
            let code = if op.len().is_multiple_of(2) {
                "ProvisionedThroughputExceededException"
            } else {
                "ThrottlingException"
            };
            (
                400,
                serde_json::json!({
                    "__type": format!("com.amazonaws.dynamodb.v20120810#{code}"),
                    "message": "injected",
                }),
            )
        }
    };
    Canned::new(status, body.to_string())
}

/// One invocation's faults as the wire recorder applies them.
#[derive(Debug)]
struct Faulty(Arc<InvocationFaults>);

impl std::fmt::Debug for InvocationFaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InvocationFaults")
            .field("crash", &self.crash)
            .field("crashed", &self.crashed())
            .finish()
    }
}

/// The HTTP client of one invocation's SDK clients: `inner` through the wire recorder, with
/// `faults` deciding each request's fate.
pub fn faulty_client(inner: SharedHttpClient, faults: Arc<InvocationFaults>) -> SharedHttpClient {
    Recorder::new().with_fault(Faulty(faults)).wrap(inner)
}

/// One DynamoDB request at a time on the moto server. moto runs a TransactWriteItems by
/// copying the tables it touches and, when a condition fails, putting the copies back: a
/// write another thread made meanwhile is silently undone (a lost update AWS never makes:
/// each of its requests is atomic and isolated); and it applies a transaction's items one
/// by one, so a read running beside it can see half of it. Serializing the requests gives
/// the storm AWS's per-request atomicity while the invocations still interleave request by
/// request.
static DYNAMODB: std::sync::LazyLock<Arc<tokio::sync::Mutex<()>>> =
    std::sync::LazyLock::new(|| Arc::new(tokio::sync::Mutex::new(())));

/// Send `request` on `inner`, alone among DynamoDB requests when it is one.
///
/// Once its turn comes, the request runs in a task of its own that holds the lock until
/// moto has answered. The SDK drops the future of an attempt that outlives its timeout (a
/// slow, loaded moto): had that future held the lock, it would have been released while moto
/// was still inside the request, and the next one would have run beside it, where moto's
/// missing isolation can undo a committed step or show a half-applied one to a read (the
/// likely cause of the one double count a storm reported before this: `x2-flow-full`, seed
/// 12791042257940025460). An attempt dropped while still waiting for its turn is never sent,
/// as a request a client gave up on before sending. DynamoDB has no such window; the torn
/// read it does have is injected on purpose (`Rates::torn_read`).
fn send(inner: &SharedHttpConnector, op: &str, request: HttpRequest) -> HttpConnectorFuture {
    if !is_dynamodb(op) {
        return inner.call(request);
    }
    let inner = inner.clone();
    HttpConnectorFuture::new(async move {
        let turn = Arc::clone(&DYNAMODB).lock_owned().await;
        let sent = tokio::spawn(async move {
            let _alone = turn;
            inner.call(request).await
        });
        sent.await.unwrap_or_else(|e| {
            Err(ConnectorError::other(
                format!("the request's task failed: {e}").into(),
                None,
            ))
        })
    })
}

/// A BatchGetItem answer without the items of the `*_processed` table; whether it had any.
async fn without_marks(response: HttpResponse) -> Result<(HttpResponse, bool), ConnectorError> {
    let status = response.status();
    let bytes = aws_smithy_types::byte_stream::ByteStream::new(response.into_body())
        .collect()
        .await
        .map_err(|e| ConnectorError::io(e.into()))?
        .into_bytes();
    let rebuilt = |body: SdkBody| {
        let mut resp = HttpResponse::new(status, body);
        resp.headers_mut()
            .insert("content-type", "application/x-amz-json-1.0");
        resp
    };
    let Ok(mut body) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Ok((rebuilt(SdkBody::from(bytes)), false));
    };
    let mut torn = false;
    if let Some(tables) = body.get_mut("Responses").and_then(|r| r.as_object_mut()) {
        for (table, items) in tables.iter_mut() {
            if table.ends_with("_processed") && items.as_array().is_some_and(|a| !a.is_empty()) {
                *items = serde_json::Value::Array(Vec::new());
                torn = true;
            }
        }
    }
    if !torn {
        return Ok((rebuilt(SdkBody::from(bytes)), false));
    }
    Ok((rebuilt(SdkBody::from(body.to_string())), true))
}

/// SQS's request size limit, which moto does not enforce: the layer answers as AWS does (the
/// long-standing 256 KiB; the message envelope adds a little to the bodies' total).
pub const SQS_MAX_REQUEST: usize = 256 * 1024 + 16 * 1024;

fn too_long(op: &str) -> Canned {
    let code = if op == "SendMessageBatch" {
        "BatchRequestTooLong"
    } else {
        "InvalidParameterValue"
    };
    let body = serde_json::json!({
        "__type": format!("com.amazonaws.sqs#{code}"),
        "message": "One or more parameters are invalid. Reason: Message must be shorter than 262144 bytes.",
    });
    Canned::new(400, body.to_string())
}

const CRASHED: &str = "the invocation crashed (injected)";

impl Fault for Faulty {
    fn before(&self, request: &Request<'_>) -> Verdict {
        let op = request.operation;
        if op.starts_with("SendMessage") && request.body.map_or(0, <[u8]>::len) > SQS_MAX_REQUEST {
            return Verdict::Answer(too_long(op));
        }
        let (nth, tear) = match self.0.before(op) {
            Ok(nth) => (nth, false),
            Err(Decision::TearRead(nth)) => (nth, true),
            // not retryable: a dead process makes no more requests
            Err(Decision::Dead) => return Verdict::Fail(CRASHED.into()),
            Err(Decision::Transient) | Err(Decision::Fail(_)) if op.starts_with("SendMessage") => {
                return Verdict::Answer(canned(FaultKind::SqsSendFailure, op))
            }
            Err(Decision::Fail(FaultKind::TransactionConflict)) => {
                return Verdict::Answer(canned(FaultKind::TransactionConflict, op))
            }
            Err(Decision::Transient) | Err(Decision::Fail(_)) => {
                return Verdict::Answer(canned(FaultKind::Throttle, op))
            }
            Err(Decision::LoseAnswer) => {
                return Verdict::SendThenTimeout("the answer was lost (injected timeout)".into())
            }
        };
        let faults = Arc::clone(&self.0);
        let op = op.to_string();
        Verdict::SendThen(Box::new(move |answer| {
            Box::pin(async move {
                let response = answer?;
                if faults.crashed() {
                    // died while this request was in flight: its answer is never read
                    return Err(ConnectorError::other(CRASHED.into(), None));
                }
                if response.status().is_success() {
                    faults.after_success(&op, nth);
                }
                if tear {
                    let (response, torn) = without_marks(response).await?;
                    if torn {
                        faults.stats.count(FaultKind::TornRead);
                    }
                    return Ok(response);
                }
                Ok(response)
            })
        }))
    }

    fn send(
        &self,
        request: &Request<'_>,
        inner: &SharedHttpConnector,
        http: HttpRequest,
    ) -> HttpConnectorFuture {
        send(inner, request.operation, http)
    }
}
