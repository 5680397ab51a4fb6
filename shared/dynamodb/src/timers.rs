//! Timers by time: each timer row this store writes also carries `due_shard`, so the sparse
//! GSI `by_due` (HASH `due_shard`, RANGE `fire_at`, keys only) answers "what is due" with one
//! Query per shard that reads only the due rows. Rows written by harel Python carry no
//! `due_shard` (its Put replaces ours on a re-arm), are absent from the index, and are found
//! by the compatibility Scan (`legacy_due_timers`).
//!
//! Why shards: all timers due in the same second would otherwise share one GSI partition key,
//! and a partition takes about 1000 writes a second; `S` shards spread a burst over `S`
//! partitions, for `S` Queries per look (each at least 0.5 RCU, eventually consistent).

use harel_store::{DueTimer, StoreError, StoreResult};

use crate::codec::{get_f64, get_s, Item};
use crate::errors;

/// The index on the timers table.
pub const DUE_INDEX: &str = "by_due";
/// The index's partition key on timer rows (a decimal string, "0".."S-1").
pub const DUE_SHARD_ATTR: &str = "due_shard";
/// Shards of the index unless the store is told otherwise (`with_due_shards`).
pub const DEFAULT_DUE_SHARDS: u32 = 8;
/// `IN` takes at most 100 operands; the compatibility Scan lists every shard.
pub const MAX_DUE_SHARDS: u32 = 100;

/// The shard of a timer: FNV-1a (64 bit) of `execution_id \0 path`, mod `shards`. Stable
/// across processes, builds and languages (a keyed SipHash would not be), so any writer
/// that wants to index its rows can compute the same number.
pub fn due_shard(execution_id: &str, path: &str, shards: u32) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in execution_id
        .bytes()
        .chain(std::iter::once(0))
        .chain(path.bytes())
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash % u64::from(shards.max(1))) as u32
}

/// A timer row as both reads return it (index keys or a full row: the same attributes).
pub fn due_timer_of(table: &str, item: &Item) -> StoreResult<DueTimer> {
    let corrupt = |e| errors::corrupt(table, e);
    Ok(DueTimer {
        execution_id: get_s(item, "execution_id").map_err(corrupt)?.to_string(),
        path: get_s(item, "path").map_err(corrupt)?.to_string(),
        fire_at: get_f64(item, "fire_at").map_err(corrupt)?,
    })
}

pub fn check_shards(shards: u32) -> Result<u32, StoreError> {
    if (1..=MAX_DUE_SHARDS).contains(&shards) {
        Ok(shards)
    } else {
        Err(StoreError::other(format!(
            "due shards must be 1..={MAX_DUE_SHARDS}, got {shards}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_stable_and_spread() {
        // pinned (computed independently): a changed hash would strand every row indexed
        // before it in a shard no sweeper reads
        assert_eq!(due_shard("order-1", "Checkout.Wait", 8), 6);
        assert_eq!(due_shard("a", "b", 1000), 754);
        assert_eq!(due_shard("", "", 1000), 455);
        let mut seen = [0usize; 8];
        for i in 0..800 {
            seen[due_shard(&format!("exe-{i}"), "A.B", 8) as usize] += 1;
        }
        assert!(
            seen.iter().all(|&n| n > 60),
            "800 keys over 8 shards: {seen:?}"
        );
        assert_eq!(due_shard("x", "y", 1), 0);
    }
}
