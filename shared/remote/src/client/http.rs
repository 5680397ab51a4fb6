//! The HTTP transport (harel's `http_action`): the request POSTed as JSON with the bound
//! headers, the answer read up to the answer limit; which failures are worth another attempt.

use harel_runtime::ActionError;
use reqwest::header::CONTENT_TYPE;

use super::attempts::Failure;
use super::{RemoteAction, ANSWER_LIMIT};

impl RemoteAction {
    /// `http_action`: POST the JSON; a non-2xx answer is an error (429, 502, 503 and 504,
    /// and a failure to connect, are retried), as `raise_for_status` raises.
    pub(super) async fn post(&self, url: &str, body: &[u8]) -> Result<Vec<u8>, Failure> {
        let sent = self
            .clients
            .http
            .post(url)
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_vec())
            .send()
            .await;
        let mut response = match sent {
            Ok(r) => r,
            Err(e) => {
                // without the URL's query, which may hold a token
                let shown = e.without_url();
                return Err(Failure::transient(
                    "ConnectionError",
                    format!("{}: {shown}", self.binding.target),
                ));
            }
        };
        let status = response.status();
        if !status.is_success() {
            let class = if status.is_client_error() {
                "Client Error"
            } else {
                "Server Error"
            };
            let transient = matches!(status.as_u16(), 429 | 502 | 503 | 504);
            // harel's `raise_for_status` text; the URL as the target shows it (no query)
            let message = format!(
                "{} {class}: {} for url: {}",
                status.as_u16(),
                status.canonical_reason().unwrap_or(""),
                self.binding.target
            );
            return Err(Failure {
                error: ActionError::new("HTTPError", message),
                transient,
            });
        }
        if let Some(length) = response.content_length() {
            if length as usize > ANSWER_LIMIT {
                return Err(self.too_large(length as usize));
            }
        }
        let mut out = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    out.extend_from_slice(&chunk);
                    if out.len() > ANSWER_LIMIT {
                        return Err(self.too_large(out.len()));
                    }
                }
                Ok(None) => return Ok(out),
                Err(e) => {
                    return Err(Failure::transient(
                        "ConnectionError",
                        format!(
                            "{}: reading the answer: {}",
                            self.binding.target,
                            e.without_url()
                        ),
                    ))
                }
            }
        }
    }
}
