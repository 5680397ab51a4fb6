//! A fault on the wire recorder (`harel_testwire::Fault`) that sends the first PutItem to the
//! real endpoint and loses its answer: the caller sees a retryable 500 (as after a dropped
//! connection answered by a load balancer), though the service applied the put, and the
//! SDK's standard retry sends it again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use aws_smithy_runtime_api::client::http::SharedHttpClient;
use harel_testwire::recorder::{Canned, Fault, Request, Verdict};
use harel_testwire::Recorder;

#[derive(Debug, Clone, Default)]
pub(crate) struct LoseFirstPutAnswer {
    /// PutItem requests sent to the endpoint.
    pub puts: Arc<AtomicUsize>,
}

impl LoseFirstPutAnswer {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The SDK's HTTP client, with this fault on it.
    pub(crate) fn http_client(&self) -> SharedHttpClient {
        Recorder::new().with_fault(self.clone()).http_client()
    }
}

impl Fault for LoseFirstPutAnswer {
    fn before(&self, request: &Request<'_>) -> Verdict {
        let first_put =
            request.operation == "PutItem" && self.puts.fetch_add(1, Ordering::SeqCst) == 0;
        if !first_put {
            return Verdict::Send;
        }
        Verdict::SendThenAnswer(Canned::new(
            500,
            r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected: the answer was lost"}"#,
        ))
    }

    fn after(&self, request: &Request<'_>, status: u16) {
        if request.operation == "PutItem" && self.puts.load(Ordering::SeqCst) == 1 {
            assert!(
                (200..300).contains(&status),
                "the first put is applied: {status}"
            );
        }
    }
}
