//! Helpers shared by the cross-part tests.

pub mod differential;
pub mod fault;
pub mod generate;
pub mod textdiff;
