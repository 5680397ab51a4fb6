//! The application the worker, relay and sweeper run. To add a machine, put its `.stm` file in
//! `functions/app/machines/` and add it to [`machines::SOURCES`]; to add Rust actions, register
//! them in [`actions::actions`] under the names the machines `bind`. Both are checked at cold
//! start: a machine that does not load, or an action no Rust code is bound to, stops the
//! function before it takes any event.

pub mod actions;
pub mod application;
pub mod aws;
pub mod cold_start;
pub mod machines;
pub mod shop;
pub mod sweeper;

pub use application::Application;
pub use aws::{boot, init_tracing, BootError, Services};
pub use cold_start::{cold_start, serve, Refused, Started};
