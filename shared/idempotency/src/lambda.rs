//! The whole-handler wrapper for `lambda_runtime`:
//! `lambda_runtime::run(idempotent(service_fn(handler), idempotency))`, the counterpart of the
//! Go package's `lambda.Start(idempotency.Idempotent(handle, store))`.
//!
//! The raw event is what is hashed (as Powertools hashes the event dict), so the typed event
//! the inner handler takes does not change keys; the Lambda context's deadline bounds the
//! in-progress record.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use lambda_runtime::tower::{Layer, Service};
use lambda_runtime::LambdaEvent;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::client::Client;
use crate::error::RunError;
use crate::handler::Idempotency;

/// Wraps `inner` so that each distinct event runs it once.
pub fn idempotent<S, C, A>(inner: S, idempotency: Idempotency<C>) -> Idempotent<S, C, A> {
    Idempotent {
        inner,
        idempotency: Arc::new(idempotency),
        event: PhantomData,
    }
}

/// The tower layer form of [`idempotent`].
pub struct IdempotencyLayer<C, A> {
    idempotency: Arc<Idempotency<C>>,
    event: PhantomData<fn(A)>,
}

impl<C, A> IdempotencyLayer<C, A> {
    /// The layer wrapping every service it is applied to with `idempotency`.
    pub fn new(idempotency: Idempotency<C>) -> Self {
        Self {
            idempotency: Arc::new(idempotency),
            event: PhantomData,
        }
    }
}

impl<C, A> Clone for IdempotencyLayer<C, A> {
    fn clone(&self) -> Self {
        Self {
            idempotency: Arc::clone(&self.idempotency),
            event: PhantomData,
        }
    }
}

impl<S, C, A> Layer<S> for IdempotencyLayer<C, A> {
    type Service = Idempotent<S, C, A>;

    fn layer(&self, inner: S) -> Self::Service {
        Idempotent {
            inner,
            idempotency: Arc::clone(&self.idempotency),
            event: PhantomData,
        }
    }
}

/// A handler service made idempotent; it takes the raw JSON event and gives the inner
/// service its typed event `A`.
pub struct Idempotent<S, C, A> {
    inner: S,
    idempotency: Arc<Idempotency<C>>,
    event: PhantomData<fn(A)>,
}

impl<S: Clone, C, A> Clone for Idempotent<S, C, A> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            idempotency: Arc::clone(&self.idempotency),
            event: PhantomData,
        }
    }
}

impl<S, C, A> Service<LambdaEvent<Value>> for Idempotent<S, C, A>
where
    S: Service<LambdaEvent<A>> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Serialize + DeserializeOwned + Send,
    S::Error: Into<lambda_runtime::Error> + Send,
    C: Client + 'static,
    A: DeserializeOwned + Send + 'static,
{
    type Response = S::Response;
    type Error = lambda_runtime::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: LambdaEvent<Value>) -> Self::Future {
        // tower: the clone is not ready, the original is; call the ready one
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let idempotency = Arc::clone(&self.idempotency);
        Box::pin(async move {
            let LambdaEvent { payload, context } = request;
            let deadline_ms = i64::try_from(context.deadline).ok();
            let typed: A = serde_json::from_value(payload.clone())?;
            let outcome = idempotency
                .run(&payload, deadline_ms, || {
                    inner.call(LambdaEvent::new(typed, context))
                })
                .await;
            outcome.map_err(|e| match e {
                RunError::Handler(e) => e.into(),
                RunError::Idempotency(e) => Box::new(e) as lambda_runtime::Error,
            })
        })
    }
}
