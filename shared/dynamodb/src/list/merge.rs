//! The newest keys across the shards of the listing indexes, read lazily. Asking every shard
//! for a whole page (`limit + 1` keys) would read eight times the keys a page needs; the hash
//! spreads an index partition evenly over its shards, so each shard is first asked for its
//! share and one more, and only a shard that runs dry while it may hold newer keys than the
//! others' is asked again. Keys read stay about `limit` plus one a shard; the requests stay
//! one a shard unless the spread is uneven.

use std::collections::VecDeque;
use std::future::Future;

use futures_util::future::join_all;

/// One index key: (`list_sk`, id). `list_sk` orders newest last, so the merge takes the
/// greatest first.
pub(crate) type Key = (String, String);

/// One read of one partition: its keys, newest first, and where its next read starts (`None`:
/// nothing more).
pub(crate) struct Page<C> {
    pub(crate) keys: Vec<Key>,
    pub(crate) next: Option<C>,
}

/// How many keys each of `shards` shards is first asked for, for a merge of `want`: its share
/// and one more for an uneven spread.
pub(crate) fn first_ask(want: usize, shards: usize) -> usize {
    want.div_ceil(shards.max(1)) + 1
}

struct Stream<C> {
    buffer: VecDeque<Key>,
    next: Option<C>,
    asked: bool,
}

impl<C> Stream<C> {
    /// Its buffer is empty and the partition may hold more: the merge cannot go on without it.
    fn dry(&self) -> bool {
        self.buffer.is_empty() && (!self.asked || self.next.is_some())
    }
}

/// The newest `want` keys of `partitions` partitions merged, each key once (an execution
/// changing status can show in two partitions for a moment). `fetch(partition, start, limit)`
/// reads one page of at most `limit` keys; the first read of each asks for `first`, and
/// partitions are read at once whenever more than one runs dry.
pub(crate) async fn newest<C, F, Fut, E>(
    partitions: usize,
    want: usize,
    first: usize,
    fetch: F,
) -> Result<Vec<Key>, E>
where
    F: Fn(usize, Option<C>, usize) -> Fut,
    Fut: Future<Output = Result<Page<C>, E>>,
{
    let mut streams: Vec<Stream<C>> = (0..partitions)
        .map(|_| Stream {
            buffer: VecDeque::new(),
            next: None,
            asked: false,
        })
        .collect();
    let mut out: Vec<Key> = Vec::with_capacity(want);
    while out.len() < want {
        let remaining = want - out.len();
        let dry: Vec<usize> = (0..partitions).filter(|&i| streams[i].dry()).collect();
        let reads = dry.iter().map(|&i| {
            let stream = &mut streams[i];
            // a shard asked again has been giving the newest keys: it may give all that remain
            let limit = if stream.asked { remaining } else { first };
            stream.asked = true;
            fetch(i, stream.next.take(), limit.max(1))
        });
        for (i, page) in dry.iter().zip(join_all(reads).await) {
            let page = page?;
            streams[*i].buffer.extend(page.keys);
            streams[*i].next = page.next;
        }
        let newest = streams
            .iter_mut()
            .filter(|s| !s.buffer.is_empty())
            .max_by(|a, b| a.buffer[0].0.cmp(&b.buffer[0].0));
        let Some(stream) = newest else { break };
        let key = stream.buffer.pop_front().expect("a stream with keys");
        if out.last().is_none_or(|last| last.1 != key.1) {
            out.push(key);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Partitions of keys (each newest first) read as DynamoDB pages them: a page that fills
    /// its limit says there may be more.
    struct Index {
        partitions: Vec<Vec<Key>>,
        reads: AtomicUsize,
        keys_read: AtomicUsize,
    }

    impl Index {
        fn new(mut partitions: Vec<Vec<Key>>) -> Index {
            for p in &mut partitions {
                p.sort_by(|a, b| b.0.cmp(&a.0));
            }
            Index {
                partitions,
                reads: AtomicUsize::new(0),
                keys_read: AtomicUsize::new(0),
            }
        }

        async fn merge(&self, want: usize, shards: usize) -> Vec<Key> {
            newest(
                self.partitions.len(),
                want,
                first_ask(want, shards),
                |i, start, limit| {
                    let from: usize = start.unwrap_or(0);
                    let keys: Vec<Key> = self.partitions[i]
                        .iter()
                        .skip(from)
                        .take(limit)
                        .cloned()
                        .collect();
                    self.reads.fetch_add(1, Ordering::Relaxed);
                    self.keys_read.fetch_add(keys.len(), Ordering::Relaxed);
                    let next = (keys.len() == limit).then_some(from + limit);
                    async move { Ok::<_, ()>(Page { keys, next }) }
                },
            )
            .await
            .expect("no read fails")
        }

        /// What a merge must return: every key sorted newest first, each id once.
        fn expected(&self, want: usize) -> Vec<Key> {
            let mut all: Vec<Key> = self.partitions.concat();
            all.sort_by(|a, b| b.0.cmp(&a.0));
            all.dedup_by(|a, b| a.1 == b.1);
            all.truncate(want);
            all
        }
    }

    fn key(n: u64) -> Key {
        (format!("{n:016}#x{n}"), format!("x{n}"))
    }

    #[tokio::test]
    async fn an_even_spread_is_one_read_a_shard_of_its_share() {
        let mut partitions = vec![Vec::new(); 8];
        for n in 0..400 {
            partitions[(n % 8) as usize].push(key(n));
        }
        let index = Index::new(partitions);
        let page = index.merge(201, 8).await;
        assert_eq!(page, index.expected(201));
        assert_eq!(index.reads.load(Ordering::Relaxed), 8);
        // 27 a shard (201 / 8, rounded up, and one), where a whole page a shard is 201
        assert_eq!(index.keys_read.load(Ordering::Relaxed), 8 * 27);
    }

    #[tokio::test]
    async fn a_shard_holding_the_newest_is_read_again_until_the_page_is_full() {
        let mut partitions = vec![Vec::new(); 8];
        partitions[3] = (0..50).map(key).collect();
        partitions[5] = vec![key(1000)];
        let index = Index::new(partitions);
        let page = index.merge(11, 8).await;
        assert_eq!(page, index.expected(11));
        // 8 first reads of 3 keys; shard 3 ran dry after its three: read once more, for the
        // 7 the page still lacked
        assert_eq!(index.reads.load(Ordering::Relaxed), 9);
        assert_eq!(index.keys_read.load(Ordering::Relaxed), 3 + 1 + 7);
    }

    #[tokio::test]
    async fn an_id_in_two_partitions_is_listed_once_and_short_indexes_end() {
        let index = Index::new(vec![
            vec![key(7), key(5), key(3)],
            vec![key(6), key(5)],
            vec![],
        ]);
        let page = index.merge(10, 3).await;
        let ids: Vec<&str> = page.iter().map(|(_, id)| id.as_str()).collect();
        assert_eq!(ids, ["x7", "x6", "x5", "x3"]);
    }

    #[tokio::test]
    async fn any_spread_merges_as_a_sort_would() {
        // a fixed linear congruential sequence: the same cases every run
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |bound: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % bound
        };
        for case in 0..300 {
            let count = next(9) as usize + 1;
            let mut partitions = vec![Vec::new(); count];
            let mut n = 0;
            for _ in 0..next(120) {
                n += next(5) + 1;
                // skewed on purpose: low partitions take most keys
                let p = (next(count as u64) * next(count as u64)) as usize / count;
                partitions[p].push(key(n));
            }
            let index = Index::new(partitions);
            let want = next(40) as usize + 1;
            assert_eq!(
                index.merge(want, count).await,
                index.expected(want),
                "case {case}"
            );
        }
    }
}
