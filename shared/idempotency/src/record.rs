//! An idempotency record, as Powertools' `DataRecord`.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// The stored status of a claimed key whose call has not finished.
pub const INPROGRESS: &str = "INPROGRESS";
/// The stored status of a record holding its call's result.
pub const COMPLETED: &str = "COMPLETED";

/// A record's state; `Expired` is never stored, it is what a record past its expiry reads as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// A call holds the key and has not finished.
    InProgress,
    /// The call finished; the record holds its result.
    Completed,
    /// Past its expiry: the key is free again.
    Expired,
}

/// A stored status that is none of `INPROGRESS`, `COMPLETED` or `EXPIRED` (it carries the text
/// read).
#[derive(Debug, thiserror::Error)]
#[error("invalid idempotency record status {0:?}")]
pub struct InvalidStatus(pub String);

/// One idempotency record: a key's status, expiries, result and validation hash, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct DataRecord {
    /// The hashed key. Read back from a table with a composite key, it is still the hashed key
    /// (the sort key), where Python puts the static partition value.
    pub idempotency_key: String,
    /// The sort key's value, on tables with a composite key.
    pub sort_key: Option<String>,
    /// The stored status text (`INPROGRESS` or `COMPLETED`).
    pub raw_status: String,
    /// Epoch seconds.
    pub expiry_timestamp: Option<i64>,
    /// Epoch milliseconds.
    pub in_progress_expiry_timestamp: Option<i64>,
    /// The result as JSON text; empty while in progress.
    pub response_data: String,
    /// The payload validation hash; empty when validation is off.
    pub payload_hash: String,
    /// An in-progress record's claim token: random, one per call of `Idempotency::run` (not
    /// Powertools'). A put the SDK sent twice (its first answer lost after DynamoDB applied
    /// it) is refused by the record its first attempt wrote: the token tells the call that
    /// record is its own claim, not another call's.
    pub claim: Option<String>,
}

impl DataRecord {
    /// A record of `raw_status` (`INPROGRESS` or `COMPLETED`) for the key, with no expiry, result
    /// or hash yet.
    pub fn new(idempotency_key: impl Into<String>, raw_status: &str) -> Self {
        Self {
            idempotency_key: idempotency_key.into(),
            sort_key: None,
            raw_status: raw_status.to_owned(),
            expiry_timestamp: None,
            in_progress_expiry_timestamp: None,
            response_data: String::new(),
            payload_hash: String::new(),
            claim: None,
        }
    }

    /// Python: `bool(expiry and int(now) > expiry)`, so an expiry of 0 never expires.
    pub fn is_expired(&self) -> bool {
        matches!(self.expiry_timestamp, Some(e) if e != 0 && now_seconds() > e)
    }

    /// The status, `Expired` once past the expiry whatever is stored; `InvalidStatus` for a text
    /// Powertools does not write.
    pub fn status(&self) -> Result<Status, InvalidStatus> {
        if self.is_expired() {
            return Ok(Status::Expired);
        }
        match self.raw_status.as_str() {
            INPROGRESS => Ok(Status::InProgress),
            COMPLETED => Ok(Status::Completed),
            // Python accepts the literal "EXPIRED" too, as it is one of its status constants
            "EXPIRED" => Ok(Status::Expired),
            other => Err(InvalidStatus(other.to_owned())),
        }
    }

    /// Python's `response_json_as_dict`: the stored JSON, or None when there is none.
    pub fn response_json(&self) -> Result<Option<Value>, serde_json::Error> {
        if self.response_data.is_empty() {
            return Ok(None);
        }
        serde_json::from_str(&self.response_data).map(Some)
    }
}

/// The wall clock in epoch seconds, the unit of `expiry_timestamp`.
pub fn now_seconds() -> i64 {
    now_millis() / 1000
}

/// The wall clock in epoch milliseconds, the unit of `in_progress_expiry_timestamp` and of Lambda
/// deadlines.
pub fn now_millis() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970");
    i64::try_from(since.as_millis()).expect("epoch milliseconds fit in i64")
}
