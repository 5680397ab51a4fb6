//! `POWERTOOLS_IDEMPOTENCY_DISABLED` (its own test binary: it sets a process-wide variable).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use harel_idempotency::{DynamoDbPersistenceLayer, Idempotency, IdempotencyConfig, MemoryClient};
use serde_json::json;

#[tokio::test]
async fn disabled_by_environment_runs_every_time_without_requests() {
    std::env::set_var("POWERTOOLS_IDEMPOTENCY_DISABLED", "true");
    let client = Arc::new(MemoryClient::new("id"));
    let store = DynamoDbPersistenceLayer::new(Arc::clone(&client), "fake");
    let idem = Idempotency::with_key_prefix(store, IdempotencyConfig::default(), "p").expect("c");
    let runs = AtomicUsize::new(0);
    for _ in 0..2 {
        let out = idem
            .run(&json!({"a": 1}), None, || async {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, std::io::Error>(json!(1))
            })
            .await;
        out.expect("runs");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(client.calls().total(), 0);
}
