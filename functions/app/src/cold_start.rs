//! What the worker, the relay and the sweeper share around their handlers: the cold start
//! (everything read and checked before the first event, so that a refusal fails the cold
//! start, which Lambda reports as an init error with the cause logged, rather than the first
//! invocation) and the Runtime API loop that runs each event inside its invocation's span.

use std::future::Future;
use std::sync::Arc;

use harel_lambda::failure::failed;
use harel_lambda::logging::Invocation;
use harel_lambda::metrics::MetricsSettings;
use harel_lambda::Role;
use lambda_runtime::{service_fn, LambdaEvent};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tracing::Instrument;

use crate::Services;

/// Why a function did not start or an invocation failed: the cause, already logged
/// (`lambda_runtime::Error`).
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

/// Serves Lambda's Runtime API until the process ends: `handler` gets each event and whether
/// it is this environment's first (for the metrics' cold-start mark), and runs inside the
/// invocation's span, whose fields every log line carries (Powertools' keys: the function,
/// the request id, the X-Ray trace, the cold start).
pub async fn serve<A, R, F, Fut>(name: &'static str, handler: F) -> Result<(), Refused>
where
    A: DeserializeOwned,
    R: Serialize,
    F: Fn(LambdaEvent<A>, bool) -> Fut,
    Fut: Future<Output = Result<R, Refused>>,
{
    lambda_runtime::run(service_fn(move |event: LambdaEvent<A>| {
        let invocation = Invocation::new(
            name,
            &event.context.request_id,
            event.context.xray_trace_id.as_deref(),
        );
        let span = invocation.span();
        handler(event, invocation.cold_start).instrument(span)
    }))
    .await
}
