//! The store contract on the in-memory store.

use harel_store::MemoryStore;

async fn make(trace_max: usize) -> MemoryStore {
    MemoryStore::with_trace_max(trace_max).with_events(harel_store::EventsConfig::default())
}

harel_store::contract_tests!(make);
