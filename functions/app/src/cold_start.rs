//! The cold start the worker, the relay and the sweeper share: everything they read and
//! check before serving their first event, so that a refusal fails the cold start (Lambda
//! reports it as an init error, with the cause logged) rather than the first invocation.

use std::sync::Arc;

use harel_lambda::failure::failed;
use harel_lambda::metrics::MetricsSettings;
use harel_lambda::Role;

use crate::Services;

/// Why a function did not start: the cause, already logged (`lambda_runtime::Error`).
pub type Refused = Box<dyn std::error::Error + Send + Sync>;

/// A function booted for its first event.
pub struct Started {
    /// Its configuration, store, queue, machines and clients ([`crate::boot`]).
    pub services: Services,
    /// Its metrics' namespace and service (`POWERTOOLS_METRICS_NAMESPACE`,
    /// `POWERTOOLS_SERVICE_NAME`), shared by every invocation's metrics document.
    pub metrics: Arc<MetricsSettings>,
}

/// Starts the logs, boots `role` and reads the metrics settings; logs `<name> ready` once
/// everything is in place.
pub async fn cold_start(role: Role, name: &str) -> Result<Started, Refused> {
    crate::init_tracing();
    let services = crate::boot(role)
        .await
        .map_err(|e| failed("cold start failed", e))?;
    let metrics =
        Arc::new(MetricsSettings::from_env().map_err(|e| failed("cold start failed", e))?);
    tracing::info!("{name} ready");
    Ok(Started { services, metrics })
}
