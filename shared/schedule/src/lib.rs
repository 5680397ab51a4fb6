//! Scheduled starts (`HAREL_SCHEDULES_FILE`): machines started on a cron or a rate by the
//! sweeper's minute tick. See docs/src/schedules.md.
//!
//! - [`file`](mod@file): the schedules file, read and checked once (cold start, `harel schedules`);
//! - [`timing`]: when an entry fires, in its time zone (daylight saving included);
//! - [`ids`]: the deterministic execution id of a fire;
//! - [`marks`]: where each schedule stands (the port, and its in-memory twin), [`dynamodb`]
//!   its DynamoDB adapter (items of the store's counters table);
//! - [`tick`](mod@tick): what one tick starts, exactly once per fire.
//!
//! Nothing here reads a clock: every time is passed in, so the tests move time by hand.

pub mod dynamodb;
pub mod file;
pub mod ids;
pub mod marks;
pub mod tick;
pub mod timing;

pub use dynamodb::DynamoDbMarks;
pub use file::{load, parse, CatchUp, FileError, Machines, Overlap, Schedule, Schedules};
pub use ids::IdTemplate;
pub use marks::{Mark, MarkError, Marks, MemoryMarks};
pub use tick::{tick, TickError, TickReport};
pub use timing::{Fires, When};
