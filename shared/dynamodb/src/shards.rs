//! Stable shard numbers for the sparse indexes' partition keys. A partition of a DynamoDB
//! index takes about 1,000 writes a second; an index keyed on a value shared by every busy
//! item (a status, a due second) would throttle there, and GSI throttling holds back the base
//! table's writes. So the timers' `by_due` and the executions' listing indexes spread their
//! items over `S` partitions by a hash of the item's key, and a read asks each of them.
//!
//! The hash is FNV-1a (64 bit), not a keyed SipHash: every process, build and language that
//! wants to index its rows computes the same number.

use harel_model::Status;
use harel_store::listing::{machine_status_key, status_key};

/// Shards of each status partition of the listing indexes (`by_status`,
/// `by_machine_status`). Fixed, so every writer and reader agrees without configuration:
/// eight partitions take about 8,000 index writes a second per status, and a status change
/// writes two (the old partition's delete, the new one's put). A listing page asks every
/// shard (one Query each, concurrently): changing this number needs `harel reindex`.
pub const LIST_SHARDS: u32 = 8;

/// FNV-1a (64 bit) of the parts joined by a 0 byte.
fn fnv1a(parts: &[&str]) -> u64 {
    let separated = parts.iter().enumerate().flat_map(|(i, part)| {
        let separator = (i > 0).then_some(0u8);
        separator.into_iter().chain(part.bytes())
    });
    separated.fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The shard of the parts' hash among `shards` (at least one).
pub fn shard_of(parts: &[&str], shards: u32) -> u32 {
    (fnv1a(parts) % u64::from(shards.max(1))) as u32
}

/// The listing shard of an execution: by its id, so it never moves between shards (a status
/// change moves it between partitions of the same shard number).
pub fn list_shard(execution_id: &str) -> u32 {
    shard_of(&[execution_id], LIST_SHARDS)
}

/// A logical partition (`RUNNING`, `RUNNING#child`, `order#DONE`) and a shard: `RUNNING#3`.
/// An unsharded key written by an earlier release ends in a status or `child`, never in
/// digits, so the two forms are told apart (`harel reindex` rewrites the old one).
pub fn sharded(partition: &str, shard: u32) -> String {
    format!("{partition}#{shard}")
}

/// The `by_status` partition key of an execution (`list_pk`).
pub fn status_partition(execution_id: &str, status: Status, child: bool) -> String {
    sharded(&status_key(status, child), list_shard(execution_id))
}

/// The `by_machine_status` partition key of an execution (`list_mpk`).
pub fn machine_status_partition(
    execution_id: &str,
    definition_id: &str,
    status: Status,
    child: bool,
) -> String {
    sharded(
        &machine_status_key(definition_id, status, child),
        list_shard(execution_id),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv1a_with_a_zero_byte_between_parts() {
        // FNV-1a's published test vectors
        assert_eq!(fnv1a(&[""]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(&["a"]), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(&["foobar"]), 0x8594_4171_f739_67e8);
        assert_ne!(fnv1a(&["ab", "c"]), fnv1a(&["a", "bc"]));
    }

    #[test]
    fn executions_spread_over_every_shard() {
        let mut counts = [0usize; LIST_SHARDS as usize];
        for i in 0..800 {
            counts[list_shard(&format!("order-{i}")) as usize] += 1;
        }
        // 100 each on average; a stable hash of sequential ids keeps each within half of it
        assert!(
            counts.iter().all(|&c| (50..=150).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn keys_carry_the_partition_then_the_shard() {
        let shard = list_shard("x1");
        assert_eq!(
            status_partition("x1", Status::Running, true),
            format!("RUNNING#child#{shard}")
        );
        assert_eq!(
            machine_status_partition("x1", "order", Status::Done, false),
            format!("order#DONE#{shard}")
        );
    }
}
