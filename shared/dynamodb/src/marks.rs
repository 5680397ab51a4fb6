//! The lean commit mode's dedupe marks: a window of the last [`MARK_SLOTS`] events applied,
//! kept in the execution item itself instead of one `processed` item each.
//!
//! A commit at version `v` that applies an event writes its mark into slot `v % MARK_SLOTS`,
//! a top-level attribute of its own (`mark0` … `mark15`), so the write needs no knowledge of
//! the other slots: an `UpdateItem` sets one slot and leaves the rest, and no read comes
//! before it. The item is read and written whole, with its version, so a read that finds no
//! mark and a commit conditioned on the version it read decide together: a mark cannot be
//! missed the way a `BatchGetItem` of two items can tear.
//!
//! A mark is the first 8 bytes of the event id's SHA-256, so every slot has one size (the
//! item stays small enough to be one write unit) and no sender can choose event ids that
//! collide with another's.
//!
//! The window is bounded: an event is recognised as applied while fewer than
//! [`MARK_SLOTS`] later commits of its execution have taken its slot. What repeats an event
//! comes well inside that: SQS redelivers a message before any later message of its FIFO
//! group, the idempotency layer recognises the same message for its expiry, and FIFO
//! deduplication drops a resend of the same event within five minutes.

use aws_sdk_dynamodb::types::AttributeValue;
use sha2::{Digest, Sha256};

use crate::codec::Item;

/// Marks kept per execution (the slots `mark0` … `mark15`).
pub const MARK_SLOTS: u64 = 16;

/// The attribute holding slot `slot` (`mark3`).
pub fn slot_attr(slot: u64) -> String {
    format!("mark{slot}")
}

/// The slot a commit that moves its execution to `version` writes its mark into.
pub fn slot_of(version: u64) -> u64 {
    version % MARK_SLOTS
}

/// Every slot's attribute name, in slot order.
pub fn slot_attrs() -> impl Iterator<Item = String> {
    (0..MARK_SLOTS).map(slot_attr)
}

/// An event's mark: the first 8 bytes of its id's SHA-256.
pub fn mark_of(event_id: &str) -> [u8; 8] {
    let digest = Sha256::digest(event_id.as_bytes());
    let mut mark = [0u8; 8];
    mark.copy_from_slice(&digest[..8]);
    mark
}

/// The attribute value a mark is stored as (binary, 8 bytes).
pub fn mark_value(event_id: &str) -> AttributeValue {
    AttributeValue::B(mark_of(event_id).to_vec().into())
}

/// Whether an execution item (or its projection to the slots) holds `event_id`'s mark.
pub fn window_holds(item: &Item, event_id: &str) -> bool {
    let mark = mark_of(event_id);
    slot_attrs().any(|name| match item.get(&name) {
        Some(AttributeValue::B(bytes)) => bytes.as_ref() == mark,
        _ => false,
    })
}

/// The bytes a full window adds to an execution item, as DynamoDB sizes it: each slot's name
/// and its 8 bytes.
pub fn window_bytes() -> usize {
    slot_attrs().map(|name| name.len() + 8).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_is_found_in_any_slot_and_only_its_own() {
        let mut item = Item::new();
        assert!(!window_holds(&item, "ev-1"));
        item.insert(slot_attr(slot_of(35)), mark_value("ev-1"));
        assert_eq!(slot_attr(slot_of(35)), "mark3");
        assert!(window_holds(&item, "ev-1"));
        assert!(!window_holds(&item, "ev-2"));
        // another attribute holding the same bytes is not a slot
        item.clear();
        item.insert("data".into(), mark_value("ev-1"));
        assert!(!window_holds(&item, "ev-1"));
    }

    #[test]
    fn sixteen_commits_take_every_slot_once() {
        let slots: std::collections::BTreeSet<u64> = (17..17 + MARK_SLOTS).map(slot_of).collect();
        assert_eq!(slots.len() as u64, MARK_SLOTS);
        // names of 5 or 6 characters and 8 bytes each
        assert_eq!(window_bytes(), 10 * 13 + 6 * 14);
        assert_eq!(mark_of("ev").len(), 8);
        assert_ne!(mark_of("ev"), mark_of("ev "));
    }
}
