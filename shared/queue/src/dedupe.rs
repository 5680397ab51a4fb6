//! Deterministic `MessageDeduplicationId`s. harel sends a fresh uuid with every message, so a
//! relay that crashes after sending and sends again delivers twice; here the id is derived
//! from what is being delivered, so SQS drops the second send within its five-minute window.
//! Every key includes the target group, so one event fanned out to many groups reaches each.

use sha2::{Digest, Sha256};

use crate::message::MAX_ID_LEN;

/// What makes one delivery unique.
#[derive(Clone, Debug, PartialEq)]
pub enum DedupeKey {
    /// An outbox entry, by its store seq (the relay and the worker's inline delivery of the
    /// same entry share it).
    Outbox {
        /// The entry's `OutboxEntry::seq` in the store (a store-wide counter, never reused).
        seq: u64,
    },
    /// A due timer: its `Timeout` event id is already stable per (execution, path, fire_at).
    Timer,
    /// Any other delivery of an event: its id plus the group.
    Event,
    /// A caller-chosen id (used as-is when short and valid, hashed otherwise).
    Explicit(String),
}

impl DedupeKey {
    /// The id for delivering the event `event_id` to `group_id`.
    pub fn dedupe_id(&self, group_id: &str, event_id: &str) -> String {
        match self {
            DedupeKey::Outbox { seq } => compose("o", &[&seq.to_string(), group_id, event_id]),
            DedupeKey::Timer => compose("t", &[group_id, event_id]),
            DedupeKey::Event => compose("e", &[group_id, event_id]),
            DedupeKey::Explicit(id) => compose("x", &[id]),
        }
    }
}

/// `tag:part:part…` when that fits SQS's rules and reads unambiguously (no part holds the
/// separator); otherwise `tag#` + the SHA-256 of the length-prefixed parts. The two forms
/// cannot collide: `#` never appears in the readable form's tag position.
fn compose(tag: &str, parts: &[&str]) -> String {
    let readable = parts
        .iter()
        .all(|p| p.bytes().all(|b| b.is_ascii_graphic() && b != b':'));
    if readable {
        let text = std::iter::once(tag)
            .chain(parts.iter().copied())
            .collect::<Vec<_>>()
            .join(":");
        if text.len() <= MAX_ID_LEN {
            return text;
        }
    }
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{tag}#{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_ids_read_as_their_parts() {
        assert_eq!(
            DedupeKey::Outbox { seq: 7 }.dedupe_id("exe-1", "ev-9"),
            "o:7:exe-1:ev-9"
        );
        assert_eq!(DedupeKey::Event.dedupe_id("g", "e"), "e:g:e");
    }

    #[test]
    fn fan_out_gets_one_id_per_group() {
        let a = DedupeKey::Event.dedupe_id("root/a", "ev");
        let b = DedupeKey::Event.dedupe_id("root/b", "ev");
        assert_ne!(a, b);
    }

    #[test]
    fn long_or_ambiguous_ids_are_hashed_and_bounded() {
        let long = "x".repeat(200);
        let id = DedupeKey::Event.dedupe_id(&long, "ev");
        assert!(id.len() <= MAX_ID_LEN, "{id}");
        assert!(id.starts_with("e#"));
        // a timer id holds ':' separators: hashed, and still deterministic
        let t1 = DedupeKey::Timer.dedupe_id("exe", "timeout:exe:/a:12.5");
        let t2 = DedupeKey::Timer.dedupe_id("exe", "timeout:exe:/a:12.5");
        assert_eq!(t1, t2);
        assert!(t1.starts_with("t#"));
        // the length prefix keeps ("ab","c") and ("a","bc") apart
        assert_ne!(compose("e", &["a:b", "c"]), compose("e", &["a", "b:c"]));
    }

    #[test]
    fn explicit_ids_pass_through() {
        assert_eq!(
            DedupeKey::Explicit("create-42".into()).dedupe_id("g", "e"),
            "x:create-42"
        );
    }
}
