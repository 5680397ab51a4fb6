//! The tests' harness at the wire, with no harel crate below it, so that any crate's tests
//! may use it without building a higher layer (`tests/tests/architecture.rs` checks that
//! dependencies, dev ones included, point down): the one recorder of the AWS SDK's requests
//! (`recorder`: record, count per operation, items read and units consumed, inject faults),
//! the moto server as a test reaches it (`moto`) and the loopback action server that runs
//! harel Python's remote actions (`actions`). `harel-testkit` re-exports all of it beside
//! the stack fixture and the pumps, which need the Lambda crate.
//!
//! Panics are the point here: this crate is only ever a dev-dependency, and a harness that
//! cannot set up must fail the test with the reason.

pub mod actions;
pub mod moto;
pub mod recorder;
pub mod units;

pub use actions::ActionServer;
pub use moto::{endpoint, sdk_config, unique_prefix};
pub use recorder::{Call, Canned, Fault, Recorder, Tally, Verdict};
pub use units::Units;
