//! Waking the sweeper. The schedule ticks once a minute and an idle tick returns at once, so
//! a timer armed between two ticks and due before the next one would fire up to a minute
//! late. The worker, after a batch that armed such a timer, starts a sweeper itself: an
//! asynchronous `Invoke` (`InvocationType::Event`: queued by Lambda, the worker does not
//! wait for the sweep) whose payload says until when to sweep.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use serde_json::{json, Value};

/// The payload's key: `{"harel:wake": {"until": 1700000000.5}}` (epoch seconds).
pub(crate) const WAKE_KIND: &str = "harel:wake";

/// A wake that Lambda did not accept; the worker logs it and the timer fires on the next tick
/// instead.
#[derive(Debug, thiserror::Error)]
#[error("could not wake the sweeper {function}: {message}")]
pub struct WakeError {
    /// The sweeper function asked to run.
    pub function: String,
    /// What the Invoke failed with.
    pub message: String,
}

/// What [`Waker::wake`] returns: done once the wake is sent (not once the sweep is).
pub type WakeFuture<'a> = Pin<Box<dyn Future<Output = Result<(), WakeError>> + Send + 'a>>;

/// Starts a sweeper that covers the timers due up to `until`.
pub trait Waker: Send + Sync {
    /// Asks for a sweep of the timers due up to `until` (epoch seconds), without waiting for it.
    fn wake(&self, until: f64) -> WakeFuture<'_>;
}

/// The body a wake carries.
pub(crate) fn wake_payload(until: f64) -> Value {
    json!({ WAKE_KIND: { "until": until } })
}

/// The `until` of a wake payload; None for anything else (a scheduled tick's event).
pub fn wake_until(event: &Value) -> Option<f64> {
    event.get(WAKE_KIND)?.get("until")?.as_f64()
}

/// Records each wake (the in-process tests and harnesses run the sweep themselves).
#[derive(Debug, Default)]
pub struct MemoryWaker {
    wakes: Mutex<Vec<f64>>,
}

impl MemoryWaker {
    /// The `until` of every wake so far, in order, and forget them.
    pub fn take(&self) -> Vec<f64> {
        std::mem::take(&mut *self.wakes.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Waker for MemoryWaker {
    fn wake(&self, until: f64) -> WakeFuture<'_> {
        self.wakes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(until);
        Box::pin(async { Ok(()) })
    }
}

/// An asynchronous Lambda `Invoke` of the sweeper function.
pub struct LambdaWaker {
    client: aws_sdk_lambda::Client,
    function: String,
}

impl LambdaWaker {
    /// Invokes `function` (a name or an ARN) with `client`.
    pub fn new(client: aws_sdk_lambda::Client, function: impl Into<String>) -> Self {
        LambdaWaker {
            client,
            function: function.into(),
        }
    }

    /// A client from the SDK's standard configuration (`AWS_ENDPOINT_URL` included).
    pub async fn from_env(function: impl Into<String>) -> Self {
        let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        LambdaWaker::from_sdk(&config, function)
    }

    /// Invokes `function` with a client built from `config`.
    pub fn from_sdk(config: &aws_config::SdkConfig, function: impl Into<String>) -> Self {
        LambdaWaker::new(aws_sdk_lambda::Client::new(config), function)
    }

    /// The sweeper function woken.
    pub fn function(&self) -> &str {
        &self.function
    }
}

impl Waker for LambdaWaker {
    fn wake(&self, until: f64) -> WakeFuture<'_> {
        Box::pin(async move {
            let failed = |message: String| WakeError {
                function: self.function.clone(),
                message,
            };
            let payload =
                serde_json::to_vec(&wake_payload(until)).map_err(|e| failed(e.to_string()))?;
            let resp = self
                .client
                .invoke()
                .function_name(&self.function)
                .invocation_type(aws_sdk_lambda::types::InvocationType::Event)
                .payload(aws_sdk_lambda::primitives::Blob::new(payload))
                .send()
                .await
                .map_err(|e| failed(aws_sdk_lambda::error::DisplayErrorContext(&e).to_string()))?;
            // an accepted asynchronous invocation answers 202
            match resp.status_code() {
                202 => Ok(()),
                other => Err(failed(format!("Invoke answered {other}, not 202"))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_payload_round_trips_and_a_tick_is_no_wake() {
        assert_eq!(
            wake_until(&wake_payload(1_700_000_000.5)),
            Some(1_700_000_000.5)
        );
        let tick = json!({"source": "aws.events", "detail-type": "Scheduled Event"});
        assert_eq!(wake_until(&tick), None);
        assert_eq!(wake_until(&json!({WAKE_KIND: {"until": "soon"}})), None);
    }
}
