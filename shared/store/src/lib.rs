//! The execution store port.
