//! Each schedule's mark: the fire time up to which its fires are done (started, skipped or
//! caught up) and the execution its last start created. The tick reads every mark at once
//! and moves one forward only from the value it read (a conditional write), so of two ticks
//! that saw the same mark only one moves it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Where a schedule stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// Epoch seconds: the fires up to and including this time are done.
    pub through: i64,
    /// The execution the latest start created (what `overlap: skip` looks at).
    pub execution_id: Option<String>,
}

/// The marks' storage failed, or holds an item it cannot read; the text says which.
#[derive(Debug, thiserror::Error)]
#[error("schedule marks: {0}")]
pub struct MarkError(pub String);

/// The marks' storage.
pub trait Marks: Send + Sync {
    /// The marks of `names` (absent: never seen).
    fn read(
        &self,
        names: &[&str],
    ) -> impl Future<Output = Result<HashMap<String, Mark>, MarkError>> + Send;

    /// Set `name`'s mark to `next` if it still is `previous` (None: absent). `Ok(false)`: it
    /// moved meanwhile (another tick), nothing written.
    fn advance(
        &self,
        name: &str,
        previous: Option<&Mark>,
        next: &Mark,
    ) -> impl Future<Output = Result<bool, MarkError>> + Send;
}

/// The in-memory marks (tests, and the CLI's local use), counting reads and writes.
#[derive(Debug, Default)]
pub struct MemoryMarks {
    marks: Mutex<HashMap<String, Mark>>,
    reads: AtomicUsize,
    writes: AtomicUsize,
}

impl MemoryMarks {
    /// No marks: every schedule is seen for the first time.
    pub fn new() -> Self {
        Self::default()
    }

    /// `name`'s mark, if one was written (not counted as a read call).
    pub fn get(&self, name: &str) -> Option<Mark> {
        self.lock().get(name).cloned()
    }

    /// (read calls, write calls) so far.
    pub fn calls(&self) -> (usize, usize) {
        (
            self.reads.load(Ordering::Relaxed),
            self.writes.load(Ordering::Relaxed),
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Mark>> {
        self.marks.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Marks for MemoryMarks {
    async fn read(&self, names: &[&str]) -> Result<HashMap<String, Mark>, MarkError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let marks = self.lock();
        Ok(names
            .iter()
            .filter_map(|n| marks.get(*n).map(|m| (n.to_string(), m.clone())))
            .collect())
    }

    async fn advance(
        &self,
        name: &str,
        previous: Option<&Mark>,
        next: &Mark,
    ) -> Result<bool, MarkError> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        let mut marks = self.lock();
        // the same condition as DynamoDB's: the stored `through` is the one read
        let current = marks.get(name).map(|m| m.through);
        if current != previous.map(|m| m.through) {
            return Ok(false);
        }
        marks.insert(name.to_string(), next.clone());
        Ok(true)
    }
}
