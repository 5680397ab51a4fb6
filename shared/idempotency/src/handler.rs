//! Powertools' `IdempotencyHandler`: claim the key, replay or refuse, run, record.
//!
//! Requests per call, as in Powertools: a first call is one conditional PutItem and one
//! UpdateItem; a replay is one refused PutItem that returns the holding record (no read); a
//! failure is a PutItem and a DeleteItem. A local cache hit costs nothing.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use harel_model::pyjson::json_dumps;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::cache::LruCache;
use crate::client::{Client, ClientError};
use crate::config::IdempotencyConfig;
use crate::error::{IdempotencyError, RunError};
use crate::keys::{default_key_prefix, KeyMaker};
use crate::persistence::{DynamoDbPersistenceLayer, PersistenceError};
use crate::record::{now_millis, now_seconds, DataRecord, Status, COMPLETED, INPROGRESS};
use crate::size::MAX_ITEM_SIZE;

/// Powertools retries twice when the record changes between its put and its read.
const MAX_RETRIES: usize = 2;

static NO_DEADLINE_WARNED: AtomicBool = AtomicBool::new(false);

/// Powertools' switch for development: `POWERTOOLS_IDEMPOTENCY_DISABLED=true` runs handlers
/// without any persistence.
pub const IDEMPOTENCY_DISABLED_ENV: &str = "POWERTOOLS_IDEMPOTENCY_DISABLED";

/// Called with a replayed result and its record; what it returns is the call's result
/// (Powertools' `response_hook`).
pub type ResponseHook = Arc<dyn Fn(Value, &DataRecord) -> Value + Send + Sync>;

/// Makes calls idempotent over one store, with one configuration and key prefix.
pub struct Idempotency<C = aws_sdk_dynamodb::Client> {
    store: DynamoDbPersistenceLayer<C>,
    keys: KeyMaker,
    config: IdempotencyConfig,
    cache: Option<Mutex<LruCache>>,
    response_hook: Option<ResponseHook>,
}

/// What claiming a key came to.
enum Claim {
    /// The key is ours: run the handler.
    Run,
    /// A completed record: its result, as Powertools returns it.
    Replay(Value),
}

impl<C: Client> Idempotency<C> {
    /// Keys are `<function name>.<handler_name>#<hash>` (Powertools' default prefix, with the
    /// handler's name standing for Python's module and qualified name).
    pub fn new(
        store: DynamoDbPersistenceLayer<C>,
        config: IdempotencyConfig,
        handler_name: &str,
    ) -> Result<Self, IdempotencyError> {
        Self::with_key_prefix(store, config, default_key_prefix(handler_name))
    }

    /// Keys are `<key_prefix>#<hash>` (Powertools' `key_prefix`).
    pub fn with_key_prefix(
        store: DynamoDbPersistenceLayer<C>,
        config: IdempotencyConfig,
        key_prefix: impl Into<String>,
    ) -> Result<Self, IdempotencyError> {
        store
            .check()
            .map_err(|e| IdempotencyError::Config(e.to_string()))?;
        if config.use_local_cache && config.local_cache_max_items == 0 {
            return Err(IdempotencyError::Config(
                "local_cache_max_items must be at least 1".into(),
            ));
        }
        let keys = KeyMaker::new(&config, key_prefix)?;
        let cache = config
            .use_local_cache
            .then(|| Mutex::new(LruCache::new(config.local_cache_max_items)));
        Ok(Self {
            store,
            keys,
            config,
            cache,
            response_hook: None,
        })
    }

    /// Passes every replayed result through `hook` before it is returned (Powertools'
    /// `response_hook`); fresh results are not.
    pub fn with_response_hook(mut self, hook: ResponseHook) -> Self {
        self.response_hook = Some(hook);
        self
    }

    /// The store the records are written to.
    pub fn store(&self) -> &DynamoDbPersistenceLayer<C> {
        &self.store
    }

    /// The configuration the calls run with.
    pub fn config(&self) -> &IdempotencyConfig {
        &self.config
    }

    /// How payloads become keys (the prefix and the compiled expressions).
    pub fn key_maker(&self) -> &KeyMaker {
        &self.keys
    }

    /// The key a payload gets, or None when it has none (and that is allowed).
    pub fn key_for(&self, payload: &Value) -> Result<Option<String>, IdempotencyError> {
        Ok(self.keys.idempotency_key(payload)?)
    }

    /// Runs `handler` once per distinct `payload`: a repeat returns the stored result without
    /// running it. `deadline_ms` is when the invocation times out (epoch milliseconds, the
    /// Lambda context's deadline): past it, another invocation may take the key over. Without
    /// it an in-progress record blocks the key until the record expires, as in Powertools.
    pub async fn run<T, E, F, Fut>(
        &self,
        payload: &Value,
        deadline_ms: Option<i64>,
        handler: F,
    ) -> Result<T, RunError<E>>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        if disabled_by_env() {
            tracing::warn!("Disabling idempotency is intended for development environments only and should not be used in production.");
            return handler().await.map_err(RunError::Handler);
        }
        let Some(key) = self
            .keys
            .idempotency_key(payload)
            .map_err(IdempotencyError::from)?
        else {
            return handler().await.map_err(RunError::Handler);
        };
        let payload_hash = self
            .keys
            .payload_hash(payload)
            .map_err(IdempotencyError::from)?;

        let mut claimed = DataRecord::new(key.clone(), INPROGRESS);
        claimed.payload_hash = payload_hash.clone();
        claimed.in_progress_expiry_timestamp = deadline_ms;
        claimed.claim = Some(uuid::Uuid::new_v4().simple().to_string());
        if deadline_ms.is_none() && !NO_DEADLINE_WARNED.swap(true, Ordering::Relaxed) {
            // once per process, as Python's warnings.warn shows it once per call site
            tracing::warn!("Couldn't determine the remaining time left: in-progress records without a deadline never time out before they expire");
        }
        let mut attempt = 0;
        loop {
            claimed.expiry_timestamp = Some(self.expiry_timestamp());
            match self.claim(&claimed).await {
                Ok(Claim::Run) => break,
                Ok(Claim::Replay(value)) => {
                    return serde_json::from_value(value).map_err(|source| {
                        RunError::Idempotency(IdempotencyError::Replay { key, source })
                    })
                }
                Err(IdempotencyError::InconsistentState(why)) if attempt < MAX_RETRIES => {
                    tracing::debug!(key, why, "retrying an inconsistent idempotency state");
                    attempt += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }

        let result = match handler().await {
            Ok(result) => result,
            Err(handler_error) => {
                self.delete(&key).await?;
                return Err(RunError::Handler(handler_error));
            }
        };
        // serialized before any await, so that T need not be Sync
        let value = serde_json::to_value(&result).map_err(IdempotencyError::Serialize)?;
        self.save_success(&claimed, value).await?;
        Ok(result)
    }

    fn expiry_timestamp(&self) -> i64 {
        let seconds = i64::try_from(self.config.expires_after_seconds).unwrap_or(i64::MAX);
        now_seconds().saturating_add(seconds)
    }

    /// Powertools' `save_inprogress` and what `_process_idempotency` does when it is refused.
    async fn claim(&self, claimed: &DataRecord) -> Result<Claim, IdempotencyError> {
        let key = &claimed.idempotency_key;
        let validation = self.keys.validation_enabled();
        let holder = match self.cache_get(key) {
            Some(cached) => {
                self.validate(claimed, &cached)?;
                cached
            }
            None => match self.store.put_record(claimed, validation).await {
                Ok(()) => return Ok(Claim::Run),
                Err(PersistenceError::AlreadyExists(Some(old))) => {
                    if is_own_claim(claimed, &old) {
                        return Ok(self.own_claim(key));
                    }
                    self.validate(claimed, &old)?;
                    self.cache_put(&old);
                    *old
                }
                // the emulator left the holding item out: read it
                Err(PersistenceError::AlreadyExists(None)) => {
                    let holder = self.read_holder(claimed).await?;
                    if is_own_claim(claimed, &holder) {
                        return Ok(self.own_claim(key));
                    }
                    holder
                }
                Err(e) => {
                    return Err(IdempotencyError::persistence(
                        "Failed to save in progress record to idempotency store",
                        e,
                    ))
                }
            },
        };
        self.handle_for_status(&holder)
    }

    /// The put was refused by the record this call's own put wrote: the SDK sent the put
    /// twice (a timeout, a broken or lost answer after DynamoDB had applied the first
    /// attempt: its retries are not idempotent for a conditional put), so the key is ours.
    /// Powertools would call it "already in progress" and fail the call, leaving its own
    /// record to block the key until the deadline passes.
    fn own_claim(&self, key: &str) -> Claim {
        tracing::info!(
            key,
            "the idempotency put was refused by this call's own claim (its first attempt was applied, then sent again): the key is ours"
        );
        Claim::Run
    }

    /// Powertools' `get_record` after a refused put: cache, then a consistent read.
    async fn read_holder(&self, claimed: &DataRecord) -> Result<DataRecord, IdempotencyError> {
        let key = &claimed.idempotency_key;
        if let Some(cached) = self.cache_get(key) {
            self.validate(claimed, &cached)?;
            return Ok(cached);
        }
        let record = self
            .store
            .get_record(key)
            .await
            .map_err(|e| {
                IdempotencyError::persistence("Failed to get record from idempotency store", e)
            })?
            .ok_or(IdempotencyError::InconsistentState(
                "save_inprogress and get_record return inconsistent results.",
            ))?;
        self.validate(claimed, &record)?;
        self.cache_put(&record);
        Ok(record)
    }

    fn validate(&self, claimed: &DataRecord, stored: &DataRecord) -> Result<(), IdempotencyError> {
        if self.keys.validation_enabled() && stored.payload_hash != claimed.payload_hash {
            return Err(IdempotencyError::Validation);
        }
        Ok(())
    }

    /// Powertools' `_handle_for_status`.
    fn handle_for_status(&self, record: &DataRecord) -> Result<Claim, IdempotencyError> {
        match record.status()? {
            Status::Expired => Err(IdempotencyError::InconsistentState(
                "save_inprogress and get_record return inconsistent results.",
            )),
            Status::InProgress => {
                if matches!(record.in_progress_expiry_timestamp, Some(ms) if ms < now_millis()) {
                    return Err(IdempotencyError::InconsistentState(
                        "item should have been expired in-progress because it already time-outed.",
                    ));
                }
                let mut message = format!(
                    "Execution already in progress with idempotency key: {}={}",
                    self.keys.event_key_jmespath(),
                    record.idempotency_key
                );
                if let Some(sk) = &record.sort_key {
                    message.push_str(&format!(" and sort key: {sk}"));
                }
                Err(IdempotencyError::AlreadyInProgress(message))
            }
            Status::Completed => {
                let stored = record
                    .response_json()
                    .map_err(|source| IdempotencyError::Replay {
                        key: record.idempotency_key.clone(),
                        source,
                    })?;
                // Python returns None for any falsy stored result ({}, [], 0, "", false),
                // not just null: `... if response_dict else None`. Matched, though it loses
                // falsy results on replay.
                let replayed = stored.filter(is_truthy).unwrap_or(Value::Null);
                let replayed = match &self.response_hook {
                    Some(hook) => hook(replayed, record),
                    None => replayed,
                };
                Ok(Claim::Replay(replayed))
            }
        }
    }

    /// Powertools' `save_success`, plus the 400 KB check: a result that cannot be stored
    /// removes its in-progress record instead of leaving it to time out.
    async fn save_success(
        &self,
        claimed: &DataRecord,
        value: Value,
    ) -> Result<(), IdempotencyError> {
        let key = &claimed.idempotency_key;
        let mut completed = DataRecord::new(key.clone(), COMPLETED);
        completed.expiry_timestamp = Some(self.expiry_timestamp());
        completed.response_data = json_dumps(&value, true);
        completed.payload_hash = claimed.payload_hash.clone();
        let validation = self.keys.validation_enabled();

        let size = self
            .store
            .completed_item_size(claimed, &completed, validation);
        if size > MAX_ITEM_SIZE {
            return Err(self.too_large(key, size).await);
        }
        match self.store.update_record(&completed, validation).await {
            Ok(()) => {}
            Err(ClientError::ItemTooLarge(_)) => return Err(self.too_large(key, size).await),
            Err(e) => {
                return Err(IdempotencyError::persistence(
                    "Failed to update record state to success in idempotency store",
                    e,
                ))
            }
        }
        self.cache_put(&completed);
        Ok(())
    }

    async fn too_large(&self, key: &str, size: usize) -> IdempotencyError {
        if let Err(e) = self.delete(key).await {
            return e;
        }
        IdempotencyError::ResultTooLarge {
            key: key.to_owned(),
            size,
            limit: MAX_ITEM_SIZE,
        }
    }

    async fn delete(&self, key: &str) -> Result<(), IdempotencyError> {
        self.store.delete_record(key).await.map_err(|e| {
            IdempotencyError::persistence("Failed to delete record from idempotency store", e)
        })?;
        if let Some(cache) = &self.cache {
            cache
                .lock()
                .expect("cache lock is not poisoned")
                .remove(key);
        }
        Ok(())
    }

    fn cache_get(&self, key: &str) -> Option<DataRecord> {
        let cache = self.cache.as_ref()?;
        cache.lock().expect("cache lock is not poisoned").get(key)
    }

    fn cache_put(&self, record: &DataRecord) {
        if let Some(cache) = &self.cache {
            cache
                .lock()
                .expect("cache lock is not poisoned")
                .put(record);
        }
    }

    /// Entries in the local cache (0 when it is off).
    pub fn cached_records(&self) -> usize {
        self.cache
            .as_ref()
            .map_or(0, |c| c.lock().expect("cache lock is not poisoned").len())
    }
}

/// Whether `holder` is the in-progress record `claimed` was written as: its claim token, which
/// no other call has (a record Powertools wrote has none).
fn is_own_claim(claimed: &DataRecord, holder: &DataRecord) -> bool {
    holder.raw_status == INPROGRESS && holder.claim.is_some() && holder.claim == claimed.claim
}

/// Python truthiness of a JSON value.
fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Powertools' `strtobool`.
fn disabled_by_env() -> bool {
    std::env::var(IDEMPOTENCY_DISABLED_ENV).is_ok_and(|v| {
        matches!(
            v.to_ascii_lowercase().as_str(),
            "1" | "y" | "yes" | "t" | "true" | "on"
        )
    })
}
