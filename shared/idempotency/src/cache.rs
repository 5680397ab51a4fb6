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

    pub fn remove(&mut self, key: &str) {
        self.entries.shift_remove(key);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

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
