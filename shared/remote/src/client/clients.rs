//! The transports' clients (HTTP, and Lambda when AWS is configured), built once and shared
//! by every remote action, and the counts of each action's calls for the metrics documents.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::attempts::Sent;

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
    pub(super) http: reqwest::Client,
    pub(super) lambda: Option<aws_sdk_lambda::Client>,
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

    /// Counts one call of `action`: its attempts, bytes and latency, and whether it failed.
    pub(super) fn record(&self, action: &str, sent: &Sent, elapsed: Duration, failed: bool) {
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
