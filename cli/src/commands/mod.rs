//! One module per subcommand: its clap arguments and an `execute` that returns the exit code.

pub mod active;
pub mod callback;
pub mod clock;
pub mod console;
pub mod control;
pub mod create;
pub mod dlq;
pub mod exit;
pub mod fmt;
pub mod idempotency;
pub mod list;
pub mod lsp;
pub mod machines;
pub mod monitor;
pub mod new;
pub mod purge;
pub mod render;
pub mod run;
pub mod schedules;
pub mod send;
pub mod serve;
pub mod show;
pub mod stack;
pub mod trace;
pub mod validate;
pub mod versions;
