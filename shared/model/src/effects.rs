//! The deferred effects a step hands to its host, in the vocabulary the engine produces them
//! and the store commits them: one type each, so nothing converts between two copies.

use crate::{Object, SmolStr};

/// A durable-timer mutation of a step, applied atomically with its commit and keyed by
/// (execution, path).
#[derive(Clone, Debug, PartialEq)]
pub enum TimerOp {
    /// Arm (upsert) the timer for `path`: its firing is delivered to the execution as an
    /// event then.
    Schedule {
        /// The full path of the state whose `timeout` this is, or the engine's `@ttl` for
        /// the machine's `ttl`: one timer per (execution, path).
        path: SmolStr,
        /// When it fires, in Unix seconds (the step's clock plus the delay).
        fire_at: f64,
    },
    /// Disarm the timer for `path` (its state was left); nothing when none is armed.
    Cancel {
        /// As [`TimerOp::Schedule`]'s `path`.
        path: SmolStr,
    },
}

/// A child execution a step asks for (an orthogonal region, an invoke or a fan-out child),
/// committed with the step; a relay creates it idempotently afterwards.
#[derive(Clone, Debug, PartialEq)]
pub struct Spawn {
    /// The child's execution id, deterministic (`{parent}:{path}:{seq}` for a region) so a
    /// retried step asks for the same child and the relay's create is idempotent.
    pub child_id: SmolStr,
    /// The region node the child runs from; "" for a submachine, which runs its own machine.
    pub root_path: SmolStr,
    /// The context the child starts with (its `invoke_with` keys from the parent's context;
    /// a submachine's also names the machine to run).
    pub context: Object,
}
