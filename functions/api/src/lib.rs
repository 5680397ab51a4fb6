//! The api function: API Gateway (HTTP API) requests in, harel-api's router answers (the
//! same routes `harel serve` serves). Cold start wires the stack's store, queue and machines
//! as the worker's does, so the API checks against what the worker runs; and, when the stack
//! has them, the hooks file (`HAREL_HOOKS_FILE`) and the callback secret
//! (`HAREL_CALLBACK_SECRET`), each secret read once, here.

mod metrics;

use std::sync::Arc;

use harel_lambda::failure::failed;
use harel_lambda::Role;
use lambda_http::Error;

/// Boots the api (configuration, machines, clients: a refusal here fails the cold start)
/// and serves Lambda's Runtime API until the process ends. Its own binary calls it, and so
/// does the one binary of every function (`harel-bootstrap`), when Lambda names it.
pub async fn run() -> Result<(), Error> {
    harel_app::init_tracing();
    let booted = harel_app::boot(Role::Api)
        .await
        .map_err(|e| failed("cold start failed", e))?;
    let ingress = harel_api::Ingress {
        hooks: booted.hooks,
        callback_key: booted.callback_key,
        metrics: Arc::new(
            metrics::EmfHookMetrics::from_env().map_err(|e| failed("cold start failed", e))?,
        ),
    };
    let backend = harel_api::Backend::new(booted.store, booted.transport, booted.driver)
        .with_ingress(ingress);
    tracing::info!("api ready");
    lambda_http::run(harel_api::router(Arc::new(backend))).await
}
