//! What the tests that run the functions' logic share: a stack in miniature on the moto
//! server (`MotoStack`: tables, FIFO queue and DLQ, the worker's configuration), the one
//! stack fixture (`Deployed`: that stack with a worker, its event source and a reader), the
//! event source that feeds a worker (`source`: SQS on moto, or the in-memory twin), the test
//! machine the functions' tests add to the application (`machines`: `Flow`, its actions), and,
//! re-exported from `harel-testwire`, the wire recorder, the moto endpoint and the action
//! server.
//!
//! Panics are the point here: this crate is only ever a dev-dependency, and a harness that
//! cannot set up must fail the test with the reason.

pub mod client;
pub mod config;
pub mod fixture;
pub mod machines;
pub mod moto;
pub mod source;

pub use client::{relay, send};
pub use config::config_from;
pub use fixture::Deployed;
pub use harel_testwire::{actions, recorder, ActionServer, Recorder};
pub use harel_testwire::{endpoint, sdk_config, unique_prefix};
pub use moto::{MotoStack, MotoWorker};
pub use source::{memory_pump, pump, pump_once, records, Outcome};
