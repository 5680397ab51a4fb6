//! The client side: an [`Action`] that calls a remote function with harel's contract
//! (`lambda_action` / `http_action`), retried within the step when it times out or fails
//! transiently, bounded by the invocation's remaining time.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harel_model::{Event, Object};
use harel_runtime::{Action, ActionContext, ActionError, ActionFuture, ActionRegistry};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use serde_json::Value;

use crate::contract::{request, Answer};
use crate::map::{ActionMap, Binding, HeaderSource, Target};
use crate::secrets::Secrets;

/// Lambda's limit on a synchronous invocation's request and response payloads.
pub const LAMBDA_PAYLOAD_LIMIT: usize = 6 * 1024 * 1024;
/// The most an answer may hold, whatever the transport (a larger one is not read).
pub const ANSWER_LIMIT: usize = LAMBDA_PAYLOAD_LIMIT;
/// DynamoDB's item limit: a context past it can never be committed with its execution.
pub const CONTEXT_LIMIT: usize = 400 * 1024;
/// Time kept, when the invocation's deadline is known, for the step's commit after the call.
pub const COMMIT_RESERVE: Duration = Duration::from_secs(2);
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// How long remains before the invocation's `deadline` (the action context's, set by the
/// function's host) less [`COMMIT_RESERVE`] (None: no deadline known, as in `harel run`).
fn remaining(deadline: Option<Instant>) -> Option<Duration> {
    deadline.map(|at| {
        at.saturating_duration_since(Instant::now())
            .saturating_sub(COMMIT_RESERVE)
    })
}

/// The counts of one action's remote calls since the last [`Clients::take_stats`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallStats {
    /// Calls made (a call is every attempt of one action invocation).
    pub calls: u64,
    /// Calls that ended in an action error.
    pub errors: u64,
    /// Attempts beyond the first.
    pub retries: u64,
    /// Each call's latency in milliseconds, attempts and backoff included.
    pub latency_ms: Vec<f64>,
    /// Request bytes sent (every attempt's).
    pub bytes_sent: u64,
    /// Answer bytes received (the answers read).
    pub bytes_received: u64,
}

/// The transports' clients, built once and shared by every remote action.
#[derive(Clone)]
pub struct Clients {
    http: reqwest::Client,
    lambda: Option<aws_sdk_lambda::Client>,
    stats: Arc<Mutex<BTreeMap<String, CallStats>>>,
}

impl Clients {
    /// `sdk` is needed only for Lambda targets (its region, credentials, `AWS_ENDPOINT_URL`).
    /// The SDK's own retries are turned off: the calls are retried here, within the step's
    /// budget.
    pub fn new(sdk: Option<&aws_config::SdkConfig>) -> Clients {
        let lambda = sdk.map(|sdk| {
            let config = aws_sdk_lambda::config::Builder::from(sdk)
                .retry_config(aws_sdk_lambda::config::retry::RetryConfig::disabled())
                .build();
            aws_sdk_lambda::Client::from_conf(config)
        });
        Clients {
            http: reqwest::Client::new(),
            lambda,
            stats: Arc::default(),
        }
    }

    /// The counts per action since the last take (for the metrics documents).
    pub fn take_stats(&self) -> BTreeMap<String, CallStats> {
        std::mem::take(&mut *self.stats.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn record(&self, action: &str, sent: &Sent, elapsed: Duration, failed: bool) {
        let attempts = sent.attempts;
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        let s = stats.entry(action.to_string()).or_default();
        s.bytes_sent += sent.bytes_sent;
        s.bytes_received += sent.bytes_received;
        s.calls += 1;
        s.errors += u64::from(failed);
        s.retries += u64::from(attempts.saturating_sub(1));
        s.latency_ms.push(elapsed.as_secs_f64() * 1000.0);
    }
}

/// Why the action map cannot be bound at cold start; each names the action (and header) at fault.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The map binds a name that is already an action: a Rust action or one of `harel.lib`.
    #[error("action {action:?} is bound twice: in the action map ({origin}) and already (a Rust action or harel.lib)")]
    Twice {
        /// The action's name.
        action: String,
        /// The action map's file.
        origin: String,
    },
    /// A header's `env:NAME` names an environment variable that is not set.
    #[error("action {action:?} ({target}): header {header:?} reads environment variable {var}, which is not set")]
    MissingEnv {
        /// The action's name.
        action: String,
        /// The action's target, as shown (an HTTP query elided).
        target: String,
        /// The header's name.
        header: String,
        /// The environment variable.
        var: String,
    },
    /// A header's name, or the value its source gave, is not valid in HTTP.
    #[error("action {action:?}: header {header:?}: the value of {source_name} is not a valid header value")]
    BadHeader {
        /// The action's name.
        action: String,
        /// The header's name.
        header: String,
        /// Where the value came from (`env:NAME`, `ssm:...`, or `its text`); the value itself is
        /// never shown.
        source_name: String,
    },
    /// The map needs AWS clients (Lambda targets, `ssm:` or `secretsmanager:` headers, named here)
    /// and none were given.
    #[error("the action map needs AWS ({0}) but no AWS configuration was given")]
    NoAws(String),
    /// An `ssm:` or `secretsmanager:` reference could not be read.
    #[error("action {action:?}: header {header:?}: cannot read {reference}: {message}")]
    Reference {
        /// The action's name.
        action: String,
        /// The header's name.
        header: String,
        /// The reference (`ssm:/path`, `secretsmanager:name`).
        reference: String,
        /// The service's error (a missing parameter, a denied read).
        message: String,
    },
    /// A header reads an AWS reference that [`Secrets::resolve`] did not read before binding.
    #[error("action {action:?}: header {header:?} reads {reference}, which was not resolved (harel_remote::Secrets::resolve reads it at cold start)")]
    Unresolved {
        /// The action's name.
        action: String,
        /// The header's name.
        header: String,
        /// The reference (`ssm:/path`, `secretsmanager:name`).
        reference: String,
    },
}

/// Bind every action of `map` in `registry` as a remote action over `clients`. Header values
/// are read now (`env:NAME` from `env`, `ssm:`/`secretsmanager:` from `secrets`, which
/// [`Secrets::resolve`] read); a name already bound (a Rust action) is an error.
pub fn bind(
    registry: &mut ActionRegistry,
    map: &ActionMap,
    clients: &Clients,
    env: impl Fn(&str) -> Option<String>,
    secrets: &Secrets,
) -> Result<(), BindError> {
    let lambdas: Vec<&str> = map.lambda_targets().collect();
    if !lambdas.is_empty() && clients.lambda.is_none() {
        return Err(BindError::NoAws(format!(
            "Lambda functions: {}",
            lambdas.join(", ")
        )));
    }
    for binding in &map.bindings {
        if registry.contains(&binding.action) {
            return Err(BindError::Twice {
                action: binding.action.clone(),
                origin: map.origin.clone(),
            });
        }
        let action = RemoteAction::new(binding.clone(), clients.clone(), &env, secrets)?;
        registry.register_action(binding.action.clone(), Arc::new(action));
    }
    Ok(())
}

/// One action bound to a remote function.
pub struct RemoteAction {
    binding: Binding,
    headers: HeaderMap,
    /// Bound with [`Secrets::unread`] while its headers read AWS: never called here.
    unread: Option<String>,
    clients: Clients,
}

/// What a call's attempts sent and read.
#[derive(Default)]
struct Sent {
    attempts: u32,
    bytes_sent: u64,
    bytes_received: u64,
}

/// Why an attempt failed, and whether another may succeed.
struct Failure {
    error: ActionError,
    transient: bool,
}

impl Failure {
    fn permanent(kind: &str, message: String) -> Failure {
        Failure {
            error: ActionError::new(kind, message),
            transient: false,
        }
    }

    fn transient(kind: &str, message: String) -> Failure {
        Failure {
            error: ActionError::new(kind, message),
            transient: true,
        }
    }
}

impl RemoteAction {
    /// Binds one action: reads its headers' values now (`env` for `env:`, `secrets` for AWS
    /// references), so a missing or invalid one fails here, at cold start, not at the first call.
    pub fn new(
        binding: Binding,
        clients: Clients,
        env: impl Fn(&str) -> Option<String>,
        secrets: &Secrets,
    ) -> Result<RemoteAction, BindError> {
        let mut headers = HeaderMap::new();
        let mut unread = None;
        for (name, source) in &binding.headers {
            if source.is_aws() && secrets.is_unread() {
                unread = unread.or_else(|| source.reference());
                continue;
            }
            let (value, source_name) = match source {
                HeaderSource::Env(var) => (
                    env(var).ok_or_else(|| BindError::MissingEnv {
                        action: binding.action.clone(),
                        target: binding.target.to_string(),
                        header: name.clone(),
                        var: var.clone(),
                    })?,
                    format!("env:{var}"),
                ),
                HeaderSource::Ssm(_) | HeaderSource::Secret(_) => {
                    let reference = source.reference().unwrap_or_default();
                    match secrets.get(source) {
                        Some(value) => (value.to_string(), reference),
                        None => {
                            return Err(BindError::Unresolved {
                                action: binding.action.clone(),
                                header: name.clone(),
                                reference,
                            })
                        }
                    }
                }
                HeaderSource::Literal(text) => (text.clone(), "its text".to_string()),
            };
            let bad = || BindError::BadHeader {
                action: binding.action.clone(),
                header: name.clone(),
                source_name: source_name.clone(),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| bad())?;
            value.set_sensitive(true);
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
            headers.insert(name, value);
        }
        Ok(RemoteAction {
            binding,
            headers,
            unread,
            clients,
        })
    }

    /// The action map's entry this action was bound from.
    pub fn binding(&self) -> &Binding {
        &self.binding
    }

    /// One call: the request built, sent (retried until the invocation's `deadline`, when
    /// one is known), the answer applied to `context`.
    pub async fn invoke(
        &self,
        context: &mut Object,
        event: Option<&Event>,
        inputs: &Object,
        idempotency_key: &str,
        deadline: Option<Instant>,
    ) -> Result<Value, ActionError> {
        let started = Instant::now();
        let mut sent = Sent::default();
        let outcome = self
            .send_with_retries(context, event, inputs, idempotency_key, deadline, &mut sent)
            .await;
        let outcome = outcome.and_then(|answer| self.apply(context, answer));
        let elapsed = started.elapsed();
        let attempts = sent.attempts;
        self.clients
            .record(&self.binding.action, &sent, elapsed, outcome.is_err());
        match &outcome {
            Ok(_) => tracing::info!(
                action = %self.binding.action, target = %self.binding.target, attempts,
                latency_ms = elapsed.as_millis() as u64, "remote action"
            ),
            Err(e) => tracing::warn!(
                action = %self.binding.action, target = %self.binding.target, attempts,
                latency_ms = elapsed.as_millis() as u64, error = %e.kind, "remote action failed"
            ),
        }
        outcome
    }

    /// The answer's context replaces the execution's (harel's `_apply`); `result` is the
    /// action's value. A context the execution's item cannot hold is refused, nothing applied.
    fn apply(&self, context: &mut Object, answer: Answer) -> Result<Value, ActionError> {
        let size = serde_json::to_vec(&answer.context).map_or(0, |b| b.len());
        if size > CONTEXT_LIMIT {
            return Err(ActionError::new(
                "ContextTooLarge",
                format!(
                    "{} returned a context of {size} bytes: an execution's item holds at most {CONTEXT_LIMIT} (DynamoDB's 400 KB); nothing of it was applied",
                    self.binding.target
                ),
            ));
        }
        *context = answer.context;
        Ok(answer.result)
    }

    async fn send_with_retries(
        &self,
        context: &Object,
        event: Option<&Event>,
        inputs: &Object,
        idempotency_key: &str,
        deadline: Option<Instant>,
        sent: &mut Sent,
    ) -> Result<Answer, ActionError> {
        let body = match serde_json::to_vec(&request(context, event, inputs, idempotency_key)) {
            Ok(b) => b,
            Err(e) => return Err(ActionError::new("TypeError", e.to_string())),
        };
        if matches!(self.binding.target, Target::Lambda(_)) && body.len() > LAMBDA_PAYLOAD_LIMIT {
            return Err(ActionError::new(
                "PayloadTooLarge",
                format!(
                    "the request to {} is {} bytes: Lambda's synchronous invocations take at most {LAMBDA_PAYLOAD_LIMIT}; not sent",
                    self.binding.target,
                    body.len()
                ),
            ));
        }
        let mut backoff = FIRST_BACKOFF;
        loop {
            let attempt = sent.attempts + 1;
            let mut timeout = self.binding.timeout;
            if let Some(left) = remaining(deadline) {
                if left < Duration::from_millis(50) {
                    return Err(ActionError::new(
                        "TimeoutError",
                        format!(
                            "{}: no time left in the invocation for attempt {attempt}",
                            self.binding.target
                        ),
                    ));
                }
                timeout = timeout.min(left);
            }
            sent.attempts = attempt;
            sent.bytes_sent += body.len() as u64;
            let answered = tokio::time::timeout(timeout, self.send_once(&body)).await;
            let failure = match answered {
                Ok(Ok((answer, bytes))) => {
                    sent.bytes_received += bytes as u64;
                    return Ok(answer);
                }
                Ok(Err(failure)) => failure,
                Err(_) => Failure::transient(
                    "TimeoutError",
                    format!(
                        "{} did not answer within {:.3} s",
                        self.binding.target,
                        timeout.as_secs_f64()
                    ),
                ),
            };
            let time_for_another =
                remaining(deadline).is_none_or(|left| left > backoff + Duration::from_millis(50));
            if !failure.transient || attempt >= self.binding.attempts || !time_for_another {
                let mut error = failure.error;
                if attempt > 1 {
                    error.message = format!("{} (after {attempt} attempts)", error.message);
                }
                return Err(error);
            }
            tracing::info!(
                action = %self.binding.action, target = %self.binding.target, attempt,
                error = %failure.error.kind, "remote action failed transiently; retrying"
            );
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// One attempt: the answer and its size in bytes.
    async fn send_once(&self, body: &[u8]) -> Result<(Answer, usize), Failure> {
        let bytes = match &self.binding.target {
            Target::Http(url) => self.post(url, body).await?,
            Target::Lambda(name) => self.invoke_lambda(name, body).await?,
        };
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
            Failure::permanent(
                "InvalidAnswer",
                format!("{} answered with no JSON: {e}", self.binding.target),
            )
        })?;
        let answer = Answer::from_json(value).map_err(|e| {
            Failure::permanent("InvalidAnswer", format!("{}: {e}", self.binding.target))
        })?;
        Ok((answer, bytes.len()))
    }

    fn too_large(&self, size: usize) -> Failure {
        Failure::permanent(
            "AnswerTooLarge",
            format!(
                "{} answered with more than {ANSWER_LIMIT} bytes ({size} read); not applied",
                self.binding.target
            ),
        )
    }

    /// `http_action`: POST the JSON; a non-2xx answer is an error (429, 502, 503 and 504,
    /// and a failure to connect, are retried), as `raise_for_status` raises.
    async fn post(&self, url: &str, body: &[u8]) -> Result<Vec<u8>, Failure> {
        let sent = self
            .clients
            .http
            .post(url)
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_vec())
            .send()
            .await;
        let mut response = match sent {
            Ok(r) => r,
            Err(e) => {
                // without the URL's query, which may hold a token
                let shown = e.without_url();
                return Err(Failure::transient(
                    "ConnectionError",
                    format!("{}: {shown}", self.binding.target),
                ));
            }
        };
        let status = response.status();
        if !status.is_success() {
            let class = if status.is_client_error() {
                "Client Error"
            } else {
                "Server Error"
            };
            let transient = matches!(status.as_u16(), 429 | 502 | 503 | 504);
            // harel's `raise_for_status` text; the URL as the target shows it (no query)
            let message = format!(
                "{} {class}: {} for url: {}",
                status.as_u16(),
                status.canonical_reason().unwrap_or(""),
                self.binding.target
            );
            return Err(Failure {
                error: ActionError::new("HTTPError", message),
                transient,
            });
        }
        if let Some(length) = response.content_length() {
            if length as usize > ANSWER_LIMIT {
                return Err(self.too_large(length as usize));
            }
        }
        let mut out = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    out.extend_from_slice(&chunk);
                    if out.len() > ANSWER_LIMIT {
                        return Err(self.too_large(out.len()));
                    }
                }
                Ok(None) => return Ok(out),
                Err(e) => {
                    return Err(Failure::transient(
                        "ConnectionError",
                        format!(
                            "{}: reading the answer: {}",
                            self.binding.target,
                            e.without_url()
                        ),
                    ))
                }
            }
        }
    }

    /// `lambda_action`: `Invoke`, `RequestResponse`. A `FunctionError` is the action's error
    /// (harel: `RuntimeError("Lambda NAME failed: BODY")`); throttling, a service error and
    /// a failure to reach the endpoint are retried.
    async fn invoke_lambda(&self, name: &str, body: &[u8]) -> Result<Vec<u8>, Failure> {
        use aws_sdk_lambda::error::SdkError;
        use aws_sdk_lambda::operation::invoke::InvokeError;
        let Some(client) = &self.clients.lambda else {
            return Err(Failure::permanent(
                "RuntimeError",
                format!("lambda:{name}: no AWS configuration"),
            ));
        };
        let sent = client
            .invoke()
            .function_name(name)
            .invocation_type(aws_sdk_lambda::types::InvocationType::RequestResponse)
            .payload(aws_smithy_types::Blob::new(body.to_vec()))
            .send()
            .await;
        let out = match sent {
            Ok(out) => out,
            Err(SdkError::ServiceError(e)) => {
                let err = e.err();
                let transient = matches!(
                    err,
                    InvokeError::TooManyRequestsException(_)
                        | InvokeError::ServiceException(_)
                        | InvokeError::ResourceNotReadyException(_)
                        | InvokeError::ResourceConflictException(_)
                        | InvokeError::Ec2ThrottledException(_)
                        | InvokeError::EniLimitReachedException(_)
                );
                let message = format!(
                    "Lambda {name}: {}",
                    aws_sdk_lambda::error::DisplayErrorContext(err)
                );
                return Err(Failure {
                    error: ActionError::new("RuntimeError", message),
                    transient,
                });
            }
            Err(e) => {
                return Err(Failure::transient(
                    "ConnectionError",
                    format!(
                        "Lambda {name}: {}",
                        aws_sdk_lambda::error::DisplayErrorContext(&e)
                    ),
                ))
            }
        };
        let payload = out
            .payload()
            .map(|b| b.as_ref().to_vec())
            .unwrap_or_default();
        if out.function_error().is_some() {
            let text = String::from_utf8_lossy(&payload);
            return Err(Failure::permanent(
                "RuntimeError",
                format!("Lambda {name} failed: {text}"),
            ));
        }
        if payload.len() > ANSWER_LIMIT {
            return Err(self.too_large(payload.len()));
        }
        Ok(payload)
    }
}

impl Action for RemoteAction {
    fn call<'a>(
        &'a self,
        ctx: ActionContext<'a>,
        event: Option<&'a Event>,
        inputs: &'a Object,
    ) -> ActionFuture<'a> {
        Box::pin(async move {
            if let Some(reference) = &self.unread {
                return Err(ActionError::new(
                    "RemoteActionError",
                    format!(
                        "{}: this function did not read {reference} (it runs no actions)",
                        self.binding.action
                    ),
                ));
            }
            self.invoke(
                ctx.context,
                event,
                inputs,
                ctx.idempotency_key,
                ctx.deadline,
            )
            .await
        })
    }
}
