//! Ids of the events the engine itself emits (`Finished`, `Cancel`, `Expired`): random
//! 128-bit values in `uuid4().hex`'s shape, like harel's, without a system call per id (the
//! OS randomness `uuid` asks for on every id dominated a region's `Finished`).
//!
//! Per thread, 128 bits of OS-seeded keys (drawn once, through std's `RandomState`) and a
//! counter: an id is the splitmix64 finaliser of counter+key, once per half. The finaliser
//! is a bijection, so ids never repeat within a thread, and the random keys make two
//! threads' or processes' streams as unlikely to meet as two uuid4s. Ids are dedupe keys,
//! not secrets (harel's uuid4 gives no more than uniqueness to rely on).

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use harel_model::SmolStr;

thread_local! {
    /// (key of the high half, key of the low half, counter).
    static STATE: (u64, u64, Cell<u64>) = {
        let seed = RandomState::new();
        (seed.hash_one(0u8), seed.hash_one(1u8), Cell::new(0))
    };
}

/// The splitmix64 output function (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A fresh id: 32 lowercase hex digits with uuid4's version and variant bits.
pub fn new_event_id() -> SmolStr {
    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;
    let (hi, lo) = STATE.with(|(k_hi, k_lo, counter)| {
        let n = counter.get().wrapping_add(1);
        counter.set(n);
        let step = n.wrapping_mul(GAMMA);
        (mix(step.wrapping_add(*k_hi)), mix(step ^ *k_lo))
    });
    format_id(hi, lo)
}

/// The id of the 128 bits `hi:lo`, as `uuid4().hex` shapes them.
fn format_id(hi: u64, lo: u64) -> SmolStr {
    // version 4, variant 10 (RFC 4122), as uuid4 sets them: bits 76..80 and 62..64 of the
    // 128-bit value, i.e. bits 12..16 of the high half and 62..64 of the low one
    let hi = (hi & !(0xf << 12)) | (0x4 << 12);
    let lo = (lo & !(0x3 << 62)) | (0x2 << 62);
    let mut digits = [0u8; 32];
    let (high, low) = digits.split_at_mut(16);
    write_hex(high, hi);
    write_hex(low, lo);
    // straight from the stack buffer into the string's one allocation
    SmolStr::from(std::str::from_utf8(&digits).expect("hex digits are ASCII"))
}

/// The 16 lowercase hex digits of `v`, most significant first, into `out` (a byte at a
/// time through a 256-entry table: half the steps of a digit at a time, no 128-bit shifts).
fn write_hex(out: &mut [u8], v: u64) {
    const fn pairs() -> [[u8; 2]; 256] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut t = [[0u8; 2]; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = [HEX[i >> 4], HEX[i & 0xf]];
            i += 1;
        }
        t
    }
    const PAIRS: [[u8; 2]; 256] = pairs();
    for (chunk, byte) in out.chunks_exact_mut(2).zip(v.to_be_bytes()) {
        chunk.copy_from_slice(&PAIRS[usize::from(byte)]);
    }
}

/// `Event::new(kind)` with an id from [`new_event_id`].
pub fn event(kind: &str) -> harel_model::Event {
    event_with(kind, harel_model::Object::new())
}

/// [`event`] carrying `data`, built in one go (a `Finished` per region, every join).
pub fn event_with(kind: &str, data: harel_model::Object) -> harel_model::Event {
    harel_model::Event {
        id: new_event_id(),
        kind: SmolStr::new(kind),
        created_time: None,
        received_time: None,
        data,
        extra: harel_model::Object::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_format_the_128_bits_as_uuid_does() {
        for (hi, lo) in [
            (0u64, 0u64),
            (u64::MAX, u64::MAX),
            (0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210),
            (mix(1), mix(2)),
        ] {
            let bits = (u128::from(hi) << 64) | u128::from(lo);
            let want = uuid_hex(bits);
            assert_eq!(format_id(hi, lo), want);
        }
    }

    /// The reference: uuid4's version and variant bits set on the 128-bit value, as hex.
    fn uuid_hex(bits: u128) -> String {
        let mut bits = (bits & !(0xf << 76)) | (0x4 << 76);
        bits = (bits & !(0x3 << 62)) | (0x2 << 62);
        format!("{bits:032x}")
    }

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
        // a thread's stream never repeats (the mixer is a bijection of the counter)
        let many: std::collections::HashSet<SmolStr> =
            (0..10_000).map(|_| new_event_id()).collect();
        assert_eq!(many.len(), 10_000);
        let e = event("Finished");
        assert_eq!(e.kind, "Finished");
        assert_eq!(e.id.len(), 32);
    }
}
