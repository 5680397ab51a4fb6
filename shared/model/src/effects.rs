//! The deferred effects a step hands to its host, in the vocabulary the engine produces them
//! and the store commits them: one type each, so nothing converts between two copies.

use crate::{Object, SmolStr};

/// A durable-timer mutation of a step, applied atomically with its commit and keyed by
/// (execution, path).
#[derive(Clone, Debug, PartialEq)]
pub enum TimerOp {
    /// Arm (upsert) the timer for `path` to fire at `fire_at` (epoch seconds).
    Schedule { path: SmolStr, fire_at: f64 },
    /// Disarm the timer for `path`.
    Cancel { path: SmolStr },
}

/// A child execution a step asks for (an orthogonal region, an invoke or a fan-out child),
/// committed with the step; a relay creates it idempotently afterwards.
#[derive(Clone, Debug, PartialEq)]
pub struct Spawn {
    pub child_id: SmolStr,
    pub root_path: SmolStr,
    pub context: Object,
}
