//! The four DynamoDB calls the store makes, as a trait: the AWS SDK client is one
//! implementation; DynamoDB Local, a custom endpoint or retryer are SDK configurations, and an
//! in-memory fake (`MemoryClient`) or a counting wrapper plug in for tests.

use std::collections::HashMap;
use std::future::Future;

use aws_sdk_dynamodb::operation::delete_item::DeleteItemInput;
use aws_sdk_dynamodb::operation::get_item::GetItemInput;
use aws_sdk_dynamodb::operation::put_item::PutItemInput;
use aws_sdk_dynamodb::operation::update_item::UpdateItemInput;
use aws_sdk_dynamodb::types::AttributeValue;

/// A DynamoDB item.
pub type Item = HashMap<String, AttributeValue>;

/// A failed request, told apart where the store reacts differently: a refused condition, an item
/// over 400 KB, or anything else.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The write's condition did not hold; `item` is the item that held the key, when the
    /// service returned it (`ReturnValuesOnConditionCheckFailure=ALL_OLD`).
    #[error("the conditional request failed")]
    ConditionalCheckFailed {
        /// The item holding the key, absent when the service (or an emulator) did not return it.
        item: Option<Item>,
    },
    /// The write would make the item larger than DynamoDB's 400 KB.
    #[error("item too large: {0}")]
    ItemTooLarge(String),
    /// Any other failure (network, throttling, permissions, a bad request), as the client reported
    /// it.
    #[error("{0}")]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

/// The subset of `aws_sdk_dynamodb::Client` the idempotency store uses.
pub trait Client: Send + Sync {
    /// The item under the input's key, if any.
    fn get_item(
        &self,
        input: GetItemInput,
    ) -> impl Future<Output = Result<Option<Item>, ClientError>> + Send;

    /// Writes the item; with a condition, `ConditionalCheckFailed` when it does not hold.
    fn put_item(&self, input: PutItemInput)
        -> impl Future<Output = Result<(), ClientError>> + Send;

    /// Applies the update expression to the item under the input's key.
    fn update_item(
        &self,
        input: UpdateItemInput,
    ) -> impl Future<Output = Result<(), ClientError>> + Send;

    /// Deletes the item under the input's key (a missing item is not an error).
    fn delete_item(
        &self,
        input: DeleteItemInput,
    ) -> impl Future<Output = Result<(), ClientError>> + Send;
}

impl<C: Client> Client for std::sync::Arc<C> {
    fn get_item(
        &self,
        input: GetItemInput,
    ) -> impl Future<Output = Result<Option<Item>, ClientError>> + Send {
        (**self).get_item(input)
    }

    fn put_item(
        &self,
        input: PutItemInput,
    ) -> impl Future<Output = Result<(), ClientError>> + Send {
        (**self).put_item(input)
    }

    fn update_item(
        &self,
        input: UpdateItemInput,
    ) -> impl Future<Output = Result<(), ClientError>> + Send {
        (**self).update_item(input)
    }

    fn delete_item(
        &self,
        input: DeleteItemInput,
    ) -> impl Future<Output = Result<(), ClientError>> + Send {
        (**self).delete_item(input)
    }
}
