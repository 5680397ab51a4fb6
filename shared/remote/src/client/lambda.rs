//! The Lambda transport (harel's `lambda_action`): a `RequestResponse` `Invoke`; a
//! `FunctionError` is the action's error, throttling and service errors are worth another
//! attempt.

use harel_runtime::ActionError;

use super::attempts::Failure;
use super::{RemoteAction, ANSWER_LIMIT};

impl RemoteAction {
    /// `lambda_action`: `Invoke`, `RequestResponse`. A `FunctionError` is the action's error
    /// (harel: `RuntimeError("Lambda NAME failed: BODY")`); throttling, a service error and
    /// a failure to reach the endpoint are retried.
    pub(super) async fn invoke_lambda(&self, name: &str, body: &[u8]) -> Result<Vec<u8>, Failure> {
        use aws_sdk_lambda::error::SdkError;
        use aws_sdk_lambda::operation::invoke::InvokeError;
        let Some(client) = &self.clients.lambda else {
            return Err(Failure::permanent(
                "RuntimeError",
                format!("lambda:{name}: no AWS configuration"),
            ));
        };
        let sent = client
            .invoke()
            .function_name(name)
            .invocation_type(aws_sdk_lambda::types::InvocationType::RequestResponse)
            .payload(aws_smithy_types::Blob::new(body.to_vec()))
            .send()
            .await;
        let out = match sent {
            Ok(out) => out,
            Err(SdkError::ServiceError(e)) => {
                let err = e.err();
                let transient = matches!(
                    err,
                    InvokeError::TooManyRequestsException(_)
                        | InvokeError::ServiceException(_)
                        | InvokeError::ResourceNotReadyException(_)
                        | InvokeError::ResourceConflictException(_)
                        | InvokeError::Ec2ThrottledException(_)
                        | InvokeError::EniLimitReachedException(_)
                );
                let message = format!(
                    "Lambda {name}: {}",
                    aws_sdk_lambda::error::DisplayErrorContext(err)
                );
                return Err(Failure {
                    error: ActionError::new("RuntimeError", message),
                    transient,
                });
            }
            Err(e) => {
                return Err(Failure::transient(
                    "ConnectionError",
                    format!(
                        "Lambda {name}: {}",
                        aws_sdk_lambda::error::DisplayErrorContext(&e)
                    ),
                ))
            }
        };
        let payload = out
            .payload()
            .map(|b| b.as_ref().to_vec())
            .unwrap_or_default();
        if out.function_error().is_some() {
            let text = String::from_utf8_lossy(&payload);
            return Err(Failure::permanent(
                "RuntimeError",
                format!("Lambda {name} failed: {text}"),
            ));
        }
        if payload.len() > ANSWER_LIMIT {
            return Err(self.too_large(payload.len()));
        }
        Ok(payload)
    }
}
