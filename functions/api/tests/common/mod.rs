//! The api function's invocation, as `lambda_http::run` makes it: an API Gateway HTTP API
//! event (payload format 2.0) through lambda_http's own adapter to the router.

use lambda_http::request::LambdaRequest;
use lambda_http::{Adapter, Context, LambdaEvent, Service};
use serde_json::{json, Value};

pub struct Function {
    pub router: harel_api::axum::Router,
}

/// The API Gateway HTTP API event (payload format 2.0) for one request.
fn event(
    method: &str,
    path: &str,
    query: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> Value {
    let mut h = serde_json::Map::new();
    h.insert("content-type".into(), json!("application/json"));
    for (k, v) in headers {
        h.insert(k.to_string(), json!(v));
    }
    json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": h,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "harelapi",
            "domainName": "harelapi.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "harelapi",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "moto-test"},
            "requestId": "req-1",
            "routeKey": "$default",
            "stage": "$default",
            "time": "06/Dec/2026:04:00:00 +0000",
            "timeEpoch": 1796529600000u64
        },
        "body": body,
        "isBase64Encoded": false
    })
}

impl Function {
    /// One invocation: (status, JSON body) as API Gateway would return them.
    pub async fn invoke(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        self.invoke_with(method, path, body, &[]).await
    }

    pub async fn invoke_with(
        &self,
        method: &str,
        target: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let request: LambdaRequest =
            serde_json::from_value(event(method, path, query, body, headers))
                .expect("an API Gateway v2 event");
        let mut adapter = Adapter::from(self.router.clone());
        let response = adapter
            .call(LambdaEvent::new(request, Context::default()))
            .await
            .expect("the router never fails");
        let response = serde_json::to_value(&response).expect("a Lambda response");
        let status = response["statusCode"].as_u64().expect("statusCode") as u16;
        let body = response["body"].as_str().unwrap_or("null");
        (status, serde_json::from_str(body).expect("a JSON body"))
    }
}
