//! Helpers shared by the cross-part tests.
