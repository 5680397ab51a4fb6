//! The local LRU cache of completed records (Powertools' `LRUDict`).

use indexmap::IndexMap;

use crate::record::{DataRecord, Status};

/// Least recently used records are evicted first; reads refresh an entry.
#[derive(Debug)]
pub struct LruCache {
    max_items: usize,
    entries: IndexMap<String, DataRecord>,
}

impl LruCache {
    /// An empty cache holding at most `max_items` records
    /// (`IdempotencyConfig::local_cache_max_items`).
    pub fn new(max_items: usize) -> Self {
        Self {
            max_items,
            entries: IndexMap::new(),
        }
    }

    /// A live record for the key; an expired one is dropped.
    pub fn get(&mut self, key: &str) -> Option<DataRecord> {
        let record = self.entries.shift_remove(key)?;
        if record.is_expired() {
            tracing::debug!(key, "Removing expired local cache record");
            return None;
        }
        self.entries.insert(key.to_owned(), record.clone());
        Some(record)
    }

    /// Only completed records are kept: an in-progress one may change in another process.
    pub fn put(&mut self, record: &DataRecord) {
        if !matches!(record.status(), Ok(Status::Completed)) {
            return;
        }
        self.entries.shift_remove(&record.idempotency_key);
        self.entries
            .insert(record.idempotency_key.clone(), record.clone());
        while self.entries.len() > self.max_items {
            self.entries.shift_remove_index(0);
        }
    }

    /// Forgets the key's record, when its call failed and the stored record was deleted.
    pub fn remove(&mut self, key: &str) {
        self.entries.shift_remove(key);
    }

    /// How many records are cached, expired ones included until a read drops them.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no record is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{now_seconds, COMPLETED, INPROGRESS};

    fn completed(key: &str) -> DataRecord {
        let mut r = DataRecord::new(key, COMPLETED);
        r.expiry_timestamp = Some(now_seconds() + 60);
        r
    }

    #[test]
    fn evicts_least_recently_used() {
        let mut cache = LruCache::new(2);
        cache.put(&completed("a"));
        cache.put(&completed("b"));
        assert!(cache.get("a").is_some());
        cache.put(&completed("c"));
        assert!(cache.get("b").is_none());
        assert!(cache.get("a").is_some());
        assert!(cache.get("c").is_some());
        cache.put(&DataRecord::new("d", INPROGRESS));
        assert_eq!(cache.len(), 2);
    }
}
