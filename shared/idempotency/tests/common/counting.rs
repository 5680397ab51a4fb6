//! A `Client` wrapper counting requests, and the DynamoDB write units they cost: 1 KB units of
//! the larger of the item before and after each write, sizes read by an uncounted client (the
//! same rule the Python side applies in powertools_side.py).

use std::sync::atomic::{AtomicUsize, Ordering};

use aws_sdk_dynamodb::operation::delete_item::DeleteItemInput;
use aws_sdk_dynamodb::operation::get_item::GetItemInput;
use aws_sdk_dynamodb::operation::put_item::PutItemInput;
use aws_sdk_dynamodb::operation::update_item::UpdateItemInput;
use harel_idempotency::size::{item_size, write_units};
use harel_idempotency::{Client, ClientError, Item};

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub get: usize,
    pub put: usize,
    pub update: usize,
    pub delete: usize,
    pub write_units: usize,
    /// Puts DynamoDB accepted (the conditional put was won).
    pub put_won: usize,
}

impl Counts {
    pub(crate) fn requests(&self) -> usize {
        self.get + self.put + self.update + self.delete
    }
}

pub(crate) struct Counting {
    inner: aws_sdk_dynamodb::Client,
    table: String,
    /// The table's key attributes, to find a put's item again.
    key_attrs: Vec<String>,
    measure_units: bool,
    get: AtomicUsize,
    put: AtomicUsize,
    update: AtomicUsize,
    delete: AtomicUsize,
    units: AtomicUsize,
    put_won: AtomicUsize,
}

impl Counting {
    pub(crate) fn new(inner: aws_sdk_dynamodb::Client, table: &str, key_attrs: &[&str]) -> Self {
        Self {
            inner,
            table: table.to_owned(),
            key_attrs: key_attrs.iter().map(|s| s.to_string()).collect(),
            measure_units: false,
            get: AtomicUsize::new(0),
            put: AtomicUsize::new(0),
            update: AtomicUsize::new(0),
            delete: AtomicUsize::new(0),
            units: AtomicUsize::new(0),
            put_won: AtomicUsize::new(0),
        }
    }

    /// Also measure write units (costs uncounted reads around each write).
    pub(crate) fn measuring_units(mut self) -> Self {
        self.measure_units = true;
        self
    }

    pub(crate) fn counts(&self) -> Counts {
        Counts {
            get: self.get.load(Ordering::SeqCst),
            put: self.put.load(Ordering::SeqCst),
            update: self.update.load(Ordering::SeqCst),
            delete: self.delete.load(Ordering::SeqCst),
            write_units: self.units.load(Ordering::SeqCst),
            put_won: self.put_won.load(Ordering::SeqCst),
        }
    }

    pub(crate) fn reset(&self) {
        for c in [
            &self.get,
            &self.put,
            &self.update,
            &self.delete,
            &self.units,
            &self.put_won,
        ] {
            c.store(0, Ordering::SeqCst);
        }
    }

    async fn size_of(&self, key: &Item) -> usize {
        let out = self
            .inner
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key.clone()))
            .consistent_read(true)
            .send()
            .await
            .expect("uncounted size read");
        out.item.as_ref().map_or(0, item_size)
    }

    async fn measured<F, T>(&self, key: Item, write: F) -> T
    where
        F: std::future::Future<Output = T>,
    {
        if !self.measure_units {
            return write.await;
        }
        let before = self.size_of(&key).await;
        let out = write.await;
        let after = self.size_of(&key).await;
        self.units
            .fetch_add(write_units(before.max(after)), Ordering::SeqCst);
        out
    }
}

impl Client for Counting {
    async fn get_item(&self, input: GetItemInput) -> Result<Option<Item>, ClientError> {
        self.get.fetch_add(1, Ordering::SeqCst);
        Client::get_item(&self.inner, input).await
    }

    async fn put_item(&self, input: PutItemInput) -> Result<(), ClientError> {
        self.put.fetch_add(1, Ordering::SeqCst);
        let item = input.item.clone().unwrap_or_default();
        let key: Item = self
            .key_attrs
            .iter()
            .filter_map(|k| item.get(k).map(|v| (k.clone(), v.clone())))
            .collect();
        let out = self
            .measured(key, Client::put_item(&self.inner, input))
            .await;
        if out.is_ok() {
            self.put_won.fetch_add(1, Ordering::SeqCst);
        }
        out
    }

    async fn update_item(&self, input: UpdateItemInput) -> Result<(), ClientError> {
        self.update.fetch_add(1, Ordering::SeqCst);
        let key = input.key.clone().unwrap_or_default();
        self.measured(key, Client::update_item(&self.inner, input))
            .await
    }

    async fn delete_item(&self, input: DeleteItemInput) -> Result<(), ClientError> {
        self.delete.fetch_add(1, Ordering::SeqCst);
        let key = input.key.clone().unwrap_or_default();
        self.measured(key, Client::delete_item(&self.inner, input))
            .await
    }
}
