//! One call's attempts: the request built and sent over the binding's transport, the answer
//! read; a timeout or a transient failure retried with backoff while attempts remain and the
//! invocation's deadline leaves time, what was sent and read counted.

use std::time::{Duration, Instant};

use harel_model::{Event, Object};
use harel_runtime::ActionError;
use serde_json::Value;

use super::{RemoteAction, ANSWER_LIMIT, COMMIT_RESERVE, LAMBDA_PAYLOAD_LIMIT};
use crate::contract::{request, Answer};
use crate::map::Target;

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

/// What a call's attempts sent and read.
#[derive(Default)]
pub(super) struct Sent {
    pub(super) attempts: u32,
    pub(super) bytes_sent: u64,
    pub(super) bytes_received: u64,
}

/// Why an attempt failed, and whether another may succeed.
pub(super) struct Failure {
    pub(super) error: ActionError,
    pub(super) transient: bool,
}

impl Failure {
    pub(super) fn permanent(kind: &str, message: String) -> Failure {
        Failure {
            error: ActionError::new(kind, message),
            transient: false,
        }
    }

    pub(super) fn transient(kind: &str, message: String) -> Failure {
        Failure {
            error: ActionError::new(kind, message),
            transient: true,
        }
    }
}

impl RemoteAction {
    /// The request sent, attempt after attempt, until an answer, a permanent failure, the
    /// last attempt, or the end of the invocation's time; `sent` counts what went and came.
    pub(super) async fn send_with_retries(
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

    /// An answer past [`ANSWER_LIMIT`]: refused, not applied.
    pub(super) fn too_large(&self, size: usize) -> Failure {
        Failure::permanent(
            "AnswerTooLarge",
            format!(
                "{} answered with more than {ANSWER_LIMIT} bytes ({size} read); not applied",
                self.binding.target
            ),
        )
    }
}
