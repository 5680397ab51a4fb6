//! The pure statechart interpreter (harel `engine/core.py`).
