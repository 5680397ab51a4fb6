//! Ids of the events the engine itself emits (`Finished`, `Cancel`, `Expired`): random
//! 128-bit values in `uuid4().hex`'s shape, like harel's, without a system call per id (the
//! OS randomness `uuid` asks for on every id dominated a region's `Finished`).

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

thread_local! {
    /// Keys drawn once per thread from the OS (std's `RandomState`), and a counter they hash.
    static STATE: (RandomState, Cell<u64>) = (RandomState::new(), Cell::new(0));
}

/// A fresh id: 32 lowercase hex digits with uuid4's version and variant bits.
pub fn new_event_id() -> String {
    let (hi, lo) = STATE.with(|(keys, counter)| {
        let n = counter.get();
        counter.set(n.wrapping_add(1));
        (keys.hash_one((n, 0u8)), keys.hash_one((n, 1u8)))
    });
    let mut bits = (u128::from(hi) << 64) | u128::from(lo);
    // version 4, variant 10 (RFC 4122), as uuid4 sets them
    bits = (bits & !(0xf << 76)) | (0x4 << 76);
    bits = (bits & !(0x3 << 62)) | (0x2 << 62);
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(32);
    for shift in (0..32).rev() {
        out.push(char::from(HEX[((bits >> (shift * 4)) & 0xf) as usize]));
    }
    out
}

/// `Event::new(kind)` with an id from [`new_event_id`].
pub fn event(kind: &str) -> harel_model::Event {
    harel_model::Event {
        id: new_event_id(),
        kind: kind.to_string(),
        created_time: None,
        received_time: None,
        data: harel_model::Object::new(),
        extra: harel_model::Object::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_look_like_uuid4_hex_and_differ() {
        let a = new_event_id();
        let b = new_event_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_eq!(&a[12..13], "4");
        assert!(matches!(&a[16..17], "8" | "9" | "a" | "b"));
        let e = event("Finished");
        assert_eq!(e.kind, "Finished");
        assert_eq!(e.id.len(), 32);
    }
}
