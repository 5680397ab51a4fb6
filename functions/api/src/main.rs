//! The api function: API Gateway (HTTP API) requests in, harel-api's router answers (the
//! same routes `harel serve` serves). Cold start wires the stack's store, queue and machines
//! as the worker's does, so the API checks against what the worker runs.

use std::sync::Arc;

use harel_lambda::Role;
use lambda_http::Error;

#[tokio::main]
async fn main() -> Result<(), Error> {
    harel_app::init_tracing();
    let booted = harel_app::boot(Role::Api).await?;
    let backend = harel_api::Backend::new(booted.store, booted.transport, booted.driver);
    tracing::info!("api ready");
    lambda_http::run(harel_api::router(Arc::new(backend))).await
}
