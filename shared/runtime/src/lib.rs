//! Drives the engine.
