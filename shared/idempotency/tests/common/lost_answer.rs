//! An HTTP client for the SDK that sends the first PutItem to the real endpoint and loses its
//! answer: the caller sees a retryable 500 (as after a dropped connection answered by a load
//! balancer), though the service applied the put, and the SDK's standard retry sends it again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;

#[derive(Debug, Clone)]
pub struct LoseFirstPutAnswer {
    inner: SharedHttpClient,
    /// PutItem requests sent to the endpoint.
    pub puts: Arc<AtomicUsize>,
}

impl LoseFirstPutAnswer {
    pub fn new() -> Self {
        let inner = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::AwsLc,
            ))
            .build_https();
        Self {
            inner,
            puts: Arc::new(AtomicUsize::new(0)),
        }
    }
}

#[derive(Debug)]
struct Connector {
    inner: SharedHttpConnector,
    puts: Arc<AtomicUsize>,
}

impl HttpClient for LoseFirstPutAnswer {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(Connector {
            inner: self.inner.http_connector(settings, components),
            puts: Arc::clone(&self.puts),
        })
    }
}

impl HttpConnector for Connector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let put = request
            .headers()
            .get("x-amz-target")
            .is_some_and(|t| t.ends_with(".PutItem"));
        let first_put = put && self.puts.fetch_add(1, Ordering::SeqCst) == 0;
        let sent = self.inner.call(request);
        HttpConnectorFuture::new(async move {
            let response = sent.await?;
            if !first_put {
                return Ok(response);
            }
            assert!(
                response.status().is_success(),
                "the first put is applied: {}",
                response.status()
            );
            let mut lost = HttpResponse::new(
                500.try_into().expect("a valid status"),
                SdkBody::from(
                    r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected: the answer was lost"}"#,
                ),
            );
            lost.headers_mut()
                .insert("content-type", "application/x-amz-json-1.0");
            Ok(lost)
        })
    }
}
