//! Powertools-compatible idempotency.
