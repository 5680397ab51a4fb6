//! One module per subcommand: its clap arguments and an `execute` that returns the exit code.

pub mod idempotency;
pub mod list;
pub mod new;
pub mod render;
pub mod run;
pub mod show;
pub mod validate;
