//! An in-memory `Client`: one table, the store's condition and update evaluated as DynamoDB
//! would, with request counters. For tests of code that uses the store without a DynamoDB.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use aws_sdk_dynamodb::operation::delete_item::DeleteItemInput;
use aws_sdk_dynamodb::operation::get_item::GetItemInput;
use aws_sdk_dynamodb::operation::put_item::PutItemInput;
use aws_sdk_dynamodb::operation::update_item::UpdateItemInput;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::client::{Client, ClientError, Item};
use crate::persistence::PUT_CONDITION;
use crate::record::now_millis;
use crate::size::{item_size, MAX_ITEM_SIZE};

/// Requests made, by operation.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Calls {
    /// GetItem requests.
    pub get: usize,
    /// PutItem requests, refused ones included.
    pub put: usize,
    /// UpdateItem requests.
    pub update: usize,
    /// DeleteItem requests.
    pub delete: usize,
}

impl Calls {
    /// Requests of any kind: what the calls would have cost on DynamoDB.
    pub fn total(&self) -> usize {
        self.get + self.put + self.update + self.delete
    }
}

/// A [`Client`] keeping one table in memory: conditions and updates are evaluated as DynamoDB does,
/// the 400 KB limit is enforced, and requests are counted ([`calls`](Self::calls)).
#[derive(Debug, Default)]
pub struct MemoryClient {
    key_attr: String,
    sort_key_attr: Option<String>,
    items: Mutex<BTreeMap<(String, String), Item>>,
    get: AtomicUsize,
    put: AtomicUsize,
    update: AtomicUsize,
    delete: AtomicUsize,
    omit_item_on_condition_failure: AtomicBool,
}

impl MemoryClient {
    /// A table whose partition key is `key_attr`.
    pub fn new(key_attr: impl Into<String>) -> Self {
        Self {
            key_attr: key_attr.into(),
            ..Self::default()
        }
    }

    /// Gives the table a composite key, the sort key named `sort_key_attr` (for a store with
    /// `with_sort_key_attr`).
    pub fn with_sort_key(mut self, sort_key_attr: impl Into<String>) -> Self {
        self.sort_key_attr = Some(sort_key_attr.into());
        self
    }

    /// Behave like an emulator that does not honour `ReturnValuesOnConditionCheckFailure`.
    pub fn omit_item_on_condition_failure(&self, omit: bool) {
        self.omit_item_on_condition_failure
            .store(omit, Ordering::SeqCst);
    }

    /// The requests made so far, by operation.
    pub fn calls(&self) -> Calls {
        Calls {
            get: self.get.load(Ordering::SeqCst),
            put: self.put.load(Ordering::SeqCst),
            update: self.update.load(Ordering::SeqCst),
            delete: self.delete.load(Ordering::SeqCst),
        }
    }

    /// Every stored item.
    pub fn items(&self) -> Vec<Item> {
        self.lock().values().cloned().collect()
    }

    /// Writes an item as is, bypassing any condition (to set up a test).
    pub fn insert(&self, item: Item) -> Result<(), ClientError> {
        let key = self.primary_key(&item)?;
        self.lock().insert(key, item);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), Item>> {
        self.items
            .lock()
            .expect("memory table lock is not poisoned")
    }

    fn primary_key(&self, item: &Item) -> Result<(String, String), ClientError> {
        let part = |name: &str| match item.get(name) {
            Some(AttributeValue::S(s)) => Ok(s.clone()),
            _ => Err(invalid(format!(
                "key attribute {name:?} is missing or not a string"
            ))),
        };
        let sort = match &self.sort_key_attr {
            Some(sk) => part(sk)?,
            None => String::new(),
        };
        Ok((part(&self.key_attr)?, sort))
    }
}

fn invalid(message: String) -> ClientError {
    ClientError::Other(format!("ValidationException: {message}").into())
}

type Names = HashMap<String, String>;
type Values = HashMap<String, AttributeValue>;

fn resolve_name<'a>(names: &'a Names, placeholder: &str) -> Result<&'a str, ClientError> {
    names
        .get(placeholder)
        .map(String::as_str)
        .ok_or_else(|| invalid(format!("no name for {placeholder}")))
}

fn number(values: &Values, placeholder: &str) -> Result<i64, ClientError> {
    match values.get(placeholder) {
        Some(AttributeValue::N(n)) => n
            .parse()
            .map_err(|_| invalid(format!("{placeholder} is not an integer"))),
        _ => Err(invalid(format!("no number for {placeholder}"))),
    }
}

fn item_number(item: &Item, name: &str) -> Option<i64> {
    match item.get(name) {
        Some(AttributeValue::N(n)) => n.parse().ok(),
        _ => None,
    }
}

/// The store's put condition on `existing`; any other condition is refused, not guessed.
fn put_condition_holds(
    condition: &str,
    names: &Names,
    values: &Values,
    existing: Option<&Item>,
) -> Result<bool, ClientError> {
    if condition != PUT_CONDITION {
        return Err(invalid(format!(
            "MemoryClient evaluates only the idempotency put condition, not {condition:?}"
        )));
    }
    let Some(item) = existing else {
        return Ok(true);
    };
    let id = resolve_name(names, "#id")?;
    if !item.contains_key(id) {
        return Ok(true);
    }
    let now = number(values, ":now")?;
    if item_number(item, resolve_name(names, "#expiry")?).is_some_and(|e| e < now) {
        return Ok(true);
    }
    let in_progress = match values.get(":inprogress") {
        Some(AttributeValue::S(s)) => s.as_str(),
        _ => return Err(invalid("no string for :inprogress".into())),
    };
    let status_is_in_progress = matches!(
        item.get(resolve_name(names, "#status")?),
        Some(AttributeValue::S(s)) if s == in_progress
    );
    let now_ms = number(values, ":now_in_millis")?;
    let timed_out = item_number(item, resolve_name(names, "#in_progress_expiry")?)
        .is_some_and(|ms| ms < now_ms);
    Ok(status_is_in_progress && timed_out)
}

impl Client for MemoryClient {
    async fn get_item(&self, input: GetItemInput) -> Result<Option<Item>, ClientError> {
        self.get.fetch_add(1, Ordering::SeqCst);
        let key = self.primary_key(&input.key.unwrap_or_default())?;
        Ok(self.lock().get(&key).cloned())
    }

    async fn put_item(&self, input: PutItemInput) -> Result<(), ClientError> {
        self.put.fetch_add(1, Ordering::SeqCst);
        let item = input.item.unwrap_or_default();
        if item_size(&item) > MAX_ITEM_SIZE {
            return Err(ClientError::ItemTooLarge(
                "Item size has exceeded the maximum allowed size".into(),
            ));
        }
        let key = self.primary_key(&item)?;
        let mut items = self.lock();
        if let Some(condition) = &input.condition_expression {
            let names = input.expression_attribute_names.unwrap_or_default();
            let values = input.expression_attribute_values.unwrap_or_default();
            if !put_condition_holds(condition, &names, &values, items.get(&key))? {
                let old = items.get(&key).cloned();
                let omit = self.omit_item_on_condition_failure.load(Ordering::SeqCst);
                return Err(ClientError::ConditionalCheckFailed {
                    item: if omit { None } else { old },
                });
            }
        }
        items.insert(key, item);
        Ok(())
    }

    async fn update_item(&self, input: UpdateItemInput) -> Result<(), ClientError> {
        self.update.fetch_add(1, Ordering::SeqCst);
        if input.condition_expression.is_some() {
            return Err(invalid(
                "MemoryClient does not evaluate update conditions".into(),
            ));
        }
        let key_item = input.key.unwrap_or_default();
        let key = self.primary_key(&key_item)?;
        let names = input.expression_attribute_names.unwrap_or_default();
        let values = input.expression_attribute_values.unwrap_or_default();
        let expression = input.update_expression.unwrap_or_default();
        let clauses = expression.strip_prefix("SET ").ok_or_else(|| {
            invalid(format!(
                "only SET [REMOVE] updates are supported: {expression:?}"
            ))
        })?;
        let (assignments, removals) = match clauses.split_once(" REMOVE ") {
            Some((set, remove)) => (set, Some(remove)),
            None => (clauses, None),
        };
        let mut items = self.lock();
        let mut item = items.get(&key).cloned().unwrap_or(key_item);
        for assignment in assignments.split(", ") {
            let (name, value) = assignment
                .split_once(" = ")
                .ok_or_else(|| invalid(format!("unsupported assignment {assignment:?}")))?;
            let value = values
                .get(value)
                .ok_or_else(|| invalid(format!("no value for {value}")))?;
            item.insert(resolve_name(&names, name)?.to_owned(), value.clone());
        }
        // REMOVE of an attribute the item lacks does nothing, as in DynamoDB
        for name in removals.into_iter().flat_map(|r| r.split(", ")) {
            item.remove(resolve_name(&names, name)?);
        }
        if item_size(&item) > MAX_ITEM_SIZE {
            return Err(ClientError::ItemTooLarge(
                "Item size to update has exceeded the maximum allowed size".into(),
            ));
        }
        items.insert(key, item);
        Ok(())
    }

    async fn delete_item(&self, input: DeleteItemInput) -> Result<(), ClientError> {
        self.delete.fetch_add(1, Ordering::SeqCst);
        let key = self.primary_key(&input.key.unwrap_or_default())?;
        self.lock().remove(&key);
        Ok(())
    }
}

/// Milliseconds since the epoch, for tests that plant records.
pub fn now_ms() -> i64 {
    now_millis()
}
