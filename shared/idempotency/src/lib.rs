//! Powertools-compatible idempotency over DynamoDB.
//!
//! A port of Powertools for AWS Lambda's `DynamoDBPersistenceLayer` and idempotent handler:
//! same item schema, same keys (byte-for-byte the same hash of the same payload), same
//! conditional writes, so Python and Rust functions share one table. Wrap one payload with
//! [`Idempotency::run`], or a whole Lambda handler with [`idempotent`] (feature `lambda`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use harel_idempotency::{from_config, Idempotency, IdempotencyConfig};
//! let sdk = aws_config::load_from_env().await;
//! let store = from_config(&sdk, "idempotency");
//! let config = IdempotencyConfig::default().event_key_jmespath("messageId");
//! let idempotency = Idempotency::new(store, config, "process_record")?;
//! let record = serde_json::json!({"messageId": "m-1", "body": "{}"});
//! let out: u32 = idempotency
//!     .run(&record, None, || async { Ok::<_, std::io::Error>(42) })
//!     .await?;
//! # let _ = out; Ok(()) }
//! ```

pub mod cache;
pub mod client;
pub mod config;
pub mod error;
pub mod handler;
pub mod hashing;
pub mod jmes;
pub mod keys;
#[cfg(feature = "lambda")]
pub mod lambda;
pub mod memory;
pub mod persistence;
pub mod record;
pub mod sdk;
pub mod size;

pub use client::{Client, ClientError, Item};
pub use config::IdempotencyConfig;
pub use error::{IdempotencyError, RunError};
pub use handler::{Idempotency, ResponseHook};
pub use hashing::HashFunction;
pub use keys::{default_key_prefix, KeyMaker};
#[cfg(feature = "lambda")]
pub use lambda::{idempotent, IdempotencyLayer, Idempotent};
pub use memory::MemoryClient;
pub use persistence::{from_config, AttributeNames, DynamoDbPersistenceLayer};
pub use record::{DataRecord, Status};
