//! `Client` for the AWS SDK's DynamoDB client.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::delete_item::DeleteItemInput;
use aws_sdk_dynamodb::operation::get_item::GetItemInput;
use aws_sdk_dynamodb::operation::put_item::{PutItemError, PutItemInput};
use aws_sdk_dynamodb::operation::update_item::UpdateItemInput;

use crate::client::{Client, ClientError, Item};

impl Client for aws_sdk_dynamodb::Client {
    async fn get_item(&self, input: GetItemInput) -> Result<Option<Item>, ClientError> {
        let output = self
            .get_item()
            .set_table_name(input.table_name)
            .set_key(input.key)
            .set_consistent_read(input.consistent_read)
            .send()
            .await
            .map_err(other)?;
        Ok(output.item)
    }

    async fn put_item(&self, input: PutItemInput) -> Result<(), ClientError> {
        let sent = self
            .put_item()
            .set_table_name(input.table_name)
            .set_item(input.item)
            .set_condition_expression(input.condition_expression)
            .set_expression_attribute_names(input.expression_attribute_names)
            .set_expression_attribute_values(input.expression_attribute_values)
            .set_return_values_on_condition_check_failure(
                input.return_values_on_condition_check_failure,
            )
            .send()
            .await;
        match sent {
            Ok(_) => Ok(()),
            Err(SdkError::ServiceError(service)) => match service.into_err() {
                PutItemError::ConditionalCheckFailedException(e) => {
                    Err(ClientError::ConditionalCheckFailed { item: e.item })
                }
                e => Err(classify(e)),
            },
            Err(e) => Err(other(e)),
        }
    }

    async fn update_item(&self, input: UpdateItemInput) -> Result<(), ClientError> {
        self.update_item()
            .set_table_name(input.table_name)
            .set_key(input.key)
            .set_update_expression(input.update_expression)
            .set_condition_expression(input.condition_expression)
            .set_expression_attribute_names(input.expression_attribute_names)
            .set_expression_attribute_values(input.expression_attribute_values)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| match e {
                SdkError::ServiceError(service) => classify(service.into_err()),
                e => other(e),
            })
    }

    async fn delete_item(&self, input: DeleteItemInput) -> Result<(), ClientError> {
        self.delete_item()
            .set_table_name(input.table_name)
            .set_key(input.key)
            .send()
            .await
            .map(|_| ())
            .map_err(other)
    }
}

/// DynamoDB reports an oversized item as a ValidationException whose message names the size.
fn classify<E>(error: E) -> ClientError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    // "Item size has exceeded ..." on a put, "Item size to update has exceeded ..." on an update
    let too_large = error.code() == Some("ValidationException")
        && error.message().is_some_and(|m| {
            let m = m.to_ascii_lowercase();
            m.contains("item size") && m.contains("exceeded")
        });
    if too_large {
        ClientError::ItemTooLarge(error.message().unwrap_or_default().to_owned())
    } else {
        other(error)
    }
}

fn other<E: std::error::Error + Send + Sync + 'static>(error: E) -> ClientError {
    // DisplayErrorContext prints the whole chain (code, message, cause), which is what an
    // operator needs from a failed request
    ClientError::Other(
        aws_sdk_dynamodb::error::DisplayErrorContext(error)
            .to_string()
            .into(),
    )
}
