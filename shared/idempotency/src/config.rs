//! The options of Powertools' `IdempotencyConfig`, with its names and defaults.

use crate::hashing::HashFunction;

/// How a payload becomes a key and how long its record lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyConfig {
    /// JMESPath selecting the part of the payload that is hashed into the key; empty hashes
    /// the whole payload.
    pub event_key_jmespath: String,
    /// JMESPath selecting the part of the payload whose hash must match the stored record's
    /// `validation`; empty turns validation off.
    pub payload_validation_jmespath: String,
    /// Fail when the key selects nothing, instead of running the handler without idempotency.
    pub raise_on_no_idempotency_key: bool,
    /// Lifetime of a record, from its last write.
    pub expires_after_seconds: u64,
    /// Keep completed records in this process, so repeats cost no request.
    pub use_local_cache: bool,
    /// How many completed records the local cache holds before evicting the least recently used
    /// (Powertools' default, 256).
    pub local_cache_max_items: usize,
    /// The hashlib algorithm for keys and validation hashes (Powertools' default, md5).
    pub hash_function: HashFunction,
}

impl Default for IdempotencyConfig {
    fn default() -> Self {
        Self {
            event_key_jmespath: String::new(),
            payload_validation_jmespath: String::new(),
            raise_on_no_idempotency_key: false,
            expires_after_seconds: 60 * 60,
            use_local_cache: false,
            // Powertools' docstring says 1024; its default argument, which is what runs, is 256
            local_cache_max_items: 256,
            hash_function: HashFunction::Md5,
        }
    }
}

impl IdempotencyConfig {
    /// Sets the `event_key_jmespath` field, e.g. `"messageId"` or
    /// `"powertools_json(body).order_id"`.
    pub fn event_key_jmespath(mut self, expression: impl Into<String>) -> Self {
        self.event_key_jmespath = expression.into();
        self
    }

    /// Sets the `payload_validation_jmespath` field: a repeat whose selected part differs from the
    /// first call's fails with `IdempotencyError::Validation`.
    pub fn payload_validation_jmespath(mut self, expression: impl Into<String>) -> Self {
        self.payload_validation_jmespath = expression.into();
        self
    }

    /// Sets the `raise_on_no_idempotency_key` field: `true` makes a payload without a key an error
    /// instead of a run without idempotency.
    pub fn raise_on_no_idempotency_key(mut self, raise: bool) -> Self {
        self.raise_on_no_idempotency_key = raise;
        self
    }

    /// Sets how long a record lives, in seconds from its last write (Powertools' default, one
    /// hour).
    pub fn expires_after_seconds(mut self, seconds: u64) -> Self {
        self.expires_after_seconds = seconds;
        self
    }

    /// Turns the in-process cache of completed records on, holding at most `max_items` (at least 1,
    /// or `Idempotency::new` refuses the config).
    pub fn use_local_cache(mut self, max_items: usize) -> Self {
        self.use_local_cache = true;
        self.local_cache_max_items = max_items;
        self
    }

    /// Sets the hashlib algorithm; keys change with it, so Python and Rust functions sharing
    /// records must agree.
    pub fn hash_function(mut self, hash: HashFunction) -> Self {
        self.hash_function = hash;
        self
    }
}
