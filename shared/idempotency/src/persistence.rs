//! Powertools' `DynamoDBPersistenceLayer`: the item schema and the four requests.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::delete_item::DeleteItemInput;
use aws_sdk_dynamodb::operation::get_item::GetItemInput;
use aws_sdk_dynamodb::operation::put_item::PutItemInput;
use aws_sdk_dynamodb::operation::update_item::UpdateItemInput;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};

use crate::client::{Client, ClientError, Item};
use crate::keys::FUNCTION_NAME_ENV;
use crate::record::{now_millis, DataRecord, INPROGRESS};
use crate::size::item_size;

/// Powertools' condition, verbatim: the key is free, the record expired, or an in-progress
/// record's invocation timed out.
pub const PUT_CONDITION: &str = "attribute_not_exists(#id) OR #expiry < :now OR \
     (#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)";

/// What a store operation failed with.
#[derive(Debug, thiserror::Error)]
pub enum PersistenceError {
    /// The key is held; the holding record when DynamoDB returned it.
    #[error("an idempotency record already holds this key")]
    AlreadyExists(Option<Box<DataRecord>>),
    /// The request itself failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// A stored item lacks an attribute the record needs or has it with the wrong type.
    #[error("malformed idempotency record: {0}")]
    Malformed(String),
    /// The sort key is named like the partition key (Powertools' check, message and all).
    #[error("key_attr [{0}] and sort_key_attr [{0}] cannot be the same!")]
    SameKeyAttrs(String),
    /// The claim token's attribute is named like another (the update that completes a record
    /// would set and remove the same attribute).
    #[error("claim_attr [{0}] is already the name of another attribute")]
    ClaimAttr(String),
}

/// Attribute names, each renamable, with Powertools' defaults (and one of ours, `claim`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributeNames {
    /// The partition key (default `id`): the idempotency key, or the static value on a
    /// composite-key table.
    pub key: String,
    /// The sort key, when the table has one (none by default): the idempotency key then goes here.
    pub sort_key: Option<String>,
    /// When the record expires, epoch seconds (default `expiration`); point the table's TTL at it.
    pub expiry: String,
    /// When an in-progress record's invocation times out, epoch milliseconds (default
    /// `in_progress_expiration`).
    pub in_progress_expiry: String,
    /// `INPROGRESS` or `COMPLETED` (default `status`).
    pub status: String,
    /// The result as JSON text (default `data`).
    pub data: String,
    /// The payload validation hash, when validation is on (default `validation`).
    pub validation: String,
    /// An in-progress record's claim token ([`DataRecord::claim`]). Not Powertools': its
    /// functions ignore it on the records we write and never write it; the update that
    /// completes a record removes it, so completed records are Powertools' to the attribute.
    pub claim: String,
}

impl Default for AttributeNames {
    fn default() -> Self {
        Self {
            key: "id".into(),
            sort_key: None,
            expiry: "expiration".into(),
            in_progress_expiry: "in_progress_expiration".into(),
            status: "status".into(),
            data: "data".into(),
            validation: "validation".into(),
            claim: "in_progress_claim".into(),
        }
    }
}

/// Idempotency records in one DynamoDB table.
#[derive(Debug, Clone)]
pub struct DynamoDbPersistenceLayer<C = aws_sdk_dynamodb::Client> {
    client: C,
    table_name: String,
    attrs: AttributeNames,
    static_pk_value: String,
}

/// The store on the SDK client `sdk_config` describes, like the Go package's `FromConfig`.
pub fn from_config(
    sdk_config: &aws_config::SdkConfig,
    table_name: impl Into<String>,
) -> DynamoDbPersistenceLayer {
    DynamoDbPersistenceLayer::new(aws_sdk_dynamodb::Client::new(sdk_config), table_name)
}

impl<C: Client> DynamoDbPersistenceLayer<C> {
    /// The store on `table_name` with Powertools' attribute names; the static partition value is
    /// `idempotency#<function name>`, read from `AWS_LAMBDA_FUNCTION_NAME` now.
    pub fn new(client: C, table_name: impl Into<String>) -> Self {
        let function = std::env::var(FUNCTION_NAME_ENV).unwrap_or_default();
        Self {
            client,
            table_name: table_name.into(),
            attrs: AttributeNames::default(),
            static_pk_value: format!("idempotency#{function}"),
        }
    }

    /// Replaces every attribute name at once.
    pub fn with_attribute_names(mut self, attrs: AttributeNames) -> Self {
        self.attrs = attrs;
        self
    }

    /// Names the partition key attribute (Powertools' `key_attr`).
    pub fn with_key_attr(mut self, name: impl Into<String>) -> Self {
        self.attrs.key = name.into();
        self
    }

    /// Turns on the composite key: the idempotency key goes in this sort key, under the
    /// static partition value.
    pub fn with_sort_key_attr(mut self, name: impl Into<String>) -> Self {
        self.attrs.sort_key = Some(name.into());
        self
    }

    /// The partition key's value on a composite-key table (Powertools' `static_pk_value`).
    pub fn with_static_pk_value(mut self, value: impl Into<String>) -> Self {
        self.static_pk_value = value.into();
        self
    }

    /// Names the expiry attribute (Powertools' `expiry_attr`).
    pub fn with_expiry_attr(mut self, name: impl Into<String>) -> Self {
        self.attrs.expiry = name.into();
        self
    }

    /// Names the in-progress expiry attribute (Powertools' `in_progress_expiry_attr`).
    pub fn with_in_progress_expiry_attr(mut self, name: impl Into<String>) -> Self {
        self.attrs.in_progress_expiry = name.into();
        self
    }

    /// Names the status attribute (Powertools' `status_attr`).
    pub fn with_status_attr(mut self, name: impl Into<String>) -> Self {
        self.attrs.status = name.into();
        self
    }

    /// Names the result attribute (Powertools' `data_attr`).
    pub fn with_data_attr(mut self, name: impl Into<String>) -> Self {
        self.attrs.data = name.into();
        self
    }

    /// Names the validation hash attribute (Powertools' `validation_key_attr`).
    pub fn with_validation_key_attr(mut self, name: impl Into<String>) -> Self {
        self.attrs.validation = name.into();
        self
    }

    /// Names the claim token attribute (ours; default `in_progress_claim`); it must differ from
    /// every other name.
    pub fn with_claim_attr(mut self, name: impl Into<String>) -> Self {
        self.attrs.claim = name.into();
        self
    }

    /// The attribute names the store reads and writes.
    pub fn attribute_names(&self) -> &AttributeNames {
        &self.attrs
    }

    /// The DynamoDB table of the records.
    pub fn table_name(&self) -> &str {
        &self.table_name
    }

    /// The partition key's value on a composite-key table (unused otherwise).
    pub fn static_pk_value(&self) -> &str {
        &self.static_pk_value
    }

    /// The client the requests go through (a test reads a [`MemoryClient`](crate::MemoryClient)'s
    /// counters here).
    pub fn client(&self) -> &C {
        &self.client
    }

    /// Powertools refuses a sort key named like the partition key; the claim token's
    /// attribute must have a name of its own too.
    pub fn check(&self) -> Result<(), PersistenceError> {
        let a = &self.attrs;
        if let Some(sk) = &a.sort_key {
            if *sk == a.key {
                return Err(PersistenceError::SameKeyAttrs(sk.clone()));
            }
        }
        let others = [
            Some(&a.key),
            a.sort_key.as_ref(),
            Some(&a.expiry),
            Some(&a.in_progress_expiry),
            Some(&a.status),
            Some(&a.data),
            Some(&a.validation),
        ];
        if others.into_iter().flatten().any(|name| *name == a.claim) {
            return Err(PersistenceError::ClaimAttr(a.claim.clone()));
        }
        Ok(())
    }

    /// The primary key of a record: simple, or the static partition value + the key.
    pub fn key(&self, idempotency_key: &str) -> Item {
        let s = |v: &str| AttributeValue::S(v.to_owned());
        match &self.attrs.sort_key {
            Some(sk) => HashMap::from([
                (self.attrs.key.clone(), s(&self.static_pk_value)),
                (sk.clone(), s(idempotency_key)),
            ]),
            None => HashMap::from([(self.attrs.key.clone(), s(idempotency_key))]),
        }
    }

    /// The item a put writes (an in-progress record).
    pub fn in_progress_item(&self, record: &DataRecord, validation_enabled: bool) -> Item {
        let mut item = self.key(&record.idempotency_key);
        if let Some(expiry) = record.expiry_timestamp {
            item.insert(self.attrs.expiry.clone(), n(expiry));
        }
        item.insert(
            self.attrs.status.clone(),
            AttributeValue::S(record.raw_status.clone()),
        );
        if let Some(ms) = record.in_progress_expiry_timestamp {
            item.insert(self.attrs.in_progress_expiry.clone(), n(ms));
        }
        if validation_enabled && !record.payload_hash.is_empty() {
            item.insert(
                self.attrs.validation.clone(),
                AttributeValue::S(record.payload_hash.clone()),
            );
        }
        if let Some(claim) = &record.claim {
            item.insert(self.attrs.claim.clone(), AttributeValue::S(claim.clone()));
        }
        item
    }

    /// The size the item reaches once `update_record(completed)` has run on the in-progress
    /// item `claimed`.
    pub fn completed_item_size(
        &self,
        claimed: &DataRecord,
        completed: &DataRecord,
        validation_enabled: bool,
    ) -> usize {
        let mut item = self.in_progress_item(claimed, validation_enabled);
        item.extend(self.update_values(completed, validation_enabled));
        item.remove(&self.attrs.claim);
        item_size(&item)
    }

    fn update_values(&self, record: &DataRecord, validation_enabled: bool) -> Item {
        let mut values = HashMap::from([
            (
                self.attrs.data.clone(),
                AttributeValue::S(record.response_data.clone()),
            ),
            (
                self.attrs.expiry.clone(),
                n(record.expiry_timestamp.unwrap_or_default()),
            ),
            (
                self.attrs.status.clone(),
                AttributeValue::S(record.raw_status.clone()),
            ),
        ]);
        if validation_enabled {
            values.insert(
                self.attrs.validation.clone(),
                AttributeValue::S(record.payload_hash.clone()),
            );
        }
        values
    }

    /// Powertools' `_put_record`: one conditional PutItem; a refusal carries the holding
    /// record (ALL_OLD) so a replay needs no read.
    pub async fn put_record(
        &self,
        record: &DataRecord,
        validation_enabled: bool,
    ) -> Result<(), PersistenceError> {
        let now_ms = now_millis();
        let input = PutItemInput::builder()
            .table_name(&self.table_name)
            .set_item(Some(self.in_progress_item(record, validation_enabled)))
            .condition_expression(PUT_CONDITION)
            .expression_attribute_names("#id", &self.attrs.key)
            .expression_attribute_names("#expiry", &self.attrs.expiry)
            .expression_attribute_names("#in_progress_expiry", &self.attrs.in_progress_expiry)
            .expression_attribute_names("#status", &self.attrs.status)
            .expression_attribute_values(":now", n(now_ms / 1000))
            .expression_attribute_values(":now_in_millis", n(now_ms))
            .expression_attribute_values(":inprogress", AttributeValue::S(INPROGRESS.into()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .expect("table name and item are set");
        match self.client.put_item(input).await {
            Ok(()) => Ok(()),
            Err(ClientError::ConditionalCheckFailed { item: Some(item) }) if !item.is_empty() => {
                let old = self.item_to_record(&item)?;
                tracing::debug!(
                    key = record.idempotency_key,
                    status = old.raw_status,
                    "Failed to put record for already existing idempotency key"
                );
                Err(PersistenceError::AlreadyExists(Some(Box::new(old))))
            }
            Err(ClientError::ConditionalCheckFailed { .. }) => {
                Err(PersistenceError::AlreadyExists(None))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// A consistent read of the record under `idempotency_key`.
    pub async fn get_record(
        &self,
        idempotency_key: &str,
    ) -> Result<Option<DataRecord>, PersistenceError> {
        let input = GetItemInput::builder()
            .table_name(&self.table_name)
            .set_key(Some(self.key(idempotency_key)))
            .consistent_read(true)
            .build()
            .expect("table name and key are set");
        match self.client.get_item(input).await? {
            Some(item) => self.item_to_record(&item).map(Some),
            None => Ok(None),
        }
    }

    /// Powertools' `_update_record`: the result, the new expiry and COMPLETED; and the claim
    /// token removed (a completed record needs none, and is then Powertools' item exactly).
    pub async fn update_record(
        &self,
        record: &DataRecord,
        validation_enabled: bool,
    ) -> Result<(), ClientError> {
        let mut expression =
            "SET #response_data = :response_data, #expiry = :expiry, #status = :status".to_owned();
        let mut builder = UpdateItemInput::builder()
            .table_name(&self.table_name)
            .set_key(Some(self.key(&record.idempotency_key)))
            .expression_attribute_names("#expiry", &self.attrs.expiry)
            .expression_attribute_names("#response_data", &self.attrs.data)
            .expression_attribute_names("#status", &self.attrs.status)
            .expression_attribute_values(":expiry", n(record.expiry_timestamp.unwrap_or_default()))
            .expression_attribute_values(
                ":response_data",
                AttributeValue::S(record.response_data.clone()),
            )
            .expression_attribute_values(":status", AttributeValue::S(record.raw_status.clone()));
        if validation_enabled {
            expression.push_str(", #validation_key = :validation_key");
            builder = builder
                .expression_attribute_names("#validation_key", &self.attrs.validation)
                .expression_attribute_values(
                    ":validation_key",
                    AttributeValue::S(record.payload_hash.clone()),
                );
        }
        expression.push_str(" REMOVE #claim");
        let input = builder
            .expression_attribute_names("#claim", &self.attrs.claim)
            .update_expression(expression)
            .build()
            .expect("table name and key are set");
        self.client.update_item(input).await
    }

    /// Deletes the key's record unconditionally (Powertools' `_delete_record`): after a failed
    /// call, so that a retry runs again.
    pub async fn delete_record(&self, idempotency_key: &str) -> Result<(), ClientError> {
        let input = DeleteItemInput::builder()
            .table_name(&self.table_name)
            .set_key(Some(self.key(idempotency_key)))
            .build()
            .expect("table name and key are set");
        self.client.delete_item(input).await
    }

    /// Powertools' `_item_to_data_record`; the key, status and expiry must be there.
    pub fn item_to_record(&self, item: &Item) -> Result<DataRecord, PersistenceError> {
        let a = &self.attrs;
        let string = |name: &str| match item.get(name) {
            Some(AttributeValue::S(s)) => Ok(Some(s.clone())),
            None => Ok(None),
            Some(other) => Err(PersistenceError::Malformed(format!(
                "attribute {name:?} is {other:?}, not a string"
            ))),
        };
        let number = |name: &str| match item.get(name) {
            Some(AttributeValue::N(text)) => parse_number(text).map(Some).ok_or_else(|| {
                PersistenceError::Malformed(format!("attribute {name:?} is not a number: {text}"))
            }),
            None => Ok(None),
            Some(other) => Err(PersistenceError::Malformed(format!(
                "attribute {name:?} is {other:?}, not a number"
            ))),
        };
        let required = |name: &str, v: Option<String>| {
            v.ok_or_else(|| PersistenceError::Malformed(format!("attribute {name:?} is missing")))
        };
        let partition = required(&a.key, string(&a.key)?)?;
        let sort_key = match &a.sort_key {
            Some(sk) => Some(required(sk, string(sk)?)?),
            None => None,
        };
        let expiry = number(&a.expiry)?.ok_or_else(|| {
            PersistenceError::Malformed(format!("attribute {:?} is missing", a.expiry))
        })?;
        Ok(DataRecord {
            // Python keeps the partition value (the static one on composite tables) here;
            // the hashed key is what the record is about, as the Go package keeps it
            idempotency_key: sort_key.clone().unwrap_or(partition),
            sort_key,
            raw_status: required(&a.status, string(&a.status)?)?,
            expiry_timestamp: Some(expiry),
            in_progress_expiry_timestamp: number(&a.in_progress_expiry)?,
            response_data: string(&a.data)?.unwrap_or_default(),
            payload_hash: string(&a.validation)?.unwrap_or_default(),
            claim: string(&a.claim)?,
        })
    }
}

fn n(value: i64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// DynamoDB numbers are decimals; a fractional timestamp (written by hand) rounds down.
fn parse_number(text: &str) -> Option<i64> {
    text.parse::<i64>()
        .ok()
        .or_else(|| text.parse::<f64>().ok().map(|f| f.floor() as i64))
}
