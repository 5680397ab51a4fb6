//! Putting the committed events on the bus ([`harel_store::events`]): the relay's last part,
//! after spawns and outbox. Pending rows go out in requests of [`MAX_ENTRIES`] (EventBridge's
//! `PutEvents` limit); an entry the bus refuses for a passing reason (throttling, an internal
//! error) is tried again at once, a few times, then left for the next run with its attempt
//! counted; one it refuses for good (too large, malformed), or that failed [`MAX_ATTEMPTS`]
//! runs, is dead-lettered with the reason and acknowledged, so nothing is lost silently and
//! nothing blocks the rest. A row is acknowledged only after its put (a request's rows in one
//! batch delete): a crash between the two puts it again, with the same `event_id`.

use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use harel_store::{BusEvent, Outbox, StoreError};

/// Entries per `PutEvents` request.
pub const MAX_ENTRIES: usize = 10;
/// Runs an entry may fail (with a passing reason) before it is dead-lettered.
pub const MAX_ATTEMPTS: u32 = 5;
/// Immediate re-puts of the entries a request refused for a passing reason.
const RETRIES_PER_RUN: u32 = 3;

/// Why the bus refused one entry (EventBridge's `ErrorCode` and `ErrorMessage`).
#[derive(Clone, Debug, PartialEq)]
pub struct EntryFailure {
    /// EventBridge's `ErrorCode` (e.g. `ThrottlingException`, `InternalFailure`).
    pub code: String,
    /// EventBridge's `ErrorMessage`.
    pub message: String,
}

impl EntryFailure {
    /// A passing reason: the same entry may be put later.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.code.as_str(),
            "ThrottlingException"
                | "InternalFailure"
                | "InternalException"
                | "ServiceUnavailable"
                | "ServiceUnavailableException"
        )
    }

    fn reason(&self) -> String {
        format!("{}: {}", self.code, self.message)
    }
}

/// Why a bus call failed as a whole (not one entry of it: that is an [`EntryFailure`]).
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    /// The request as a whole failed (network, credentials, the bus missing): every entry
    /// stays pending.
    #[error("putting events on the bus: {0}")]
    Put(String),
    /// Keeping an event that cannot be put failed: it stays pending, and is tried again.
    #[error("dead-lettering event {event_id}: {message}")]
    DeadLetter {
        /// The event's `event_id`.
        event_id: String,
        /// What went wrong.
        message: String,
    },
}

/// The bus port: EventBridge, or [`MemoryBus`].
pub trait EventBus: Send + Sync {
    /// Put up to [`MAX_ENTRIES`] events in one request: per entry, in order, `None` when it
    /// was put, or why not.
    fn put(
        &self,
        events: &[BusEvent],
    ) -> impl Future<Output = Result<Vec<Option<EntryFailure>>, BusError>> + Send;

    /// Keep an event that cannot be put, with the reason, for an operator.
    fn dead_letter(
        &self,
        event: &BusEvent,
        reason: &str,
    ) -> impl Future<Output = Result<(), BusError>> + Send;
}

/// Why [`publish_events`] stopped: what was put before is acknowledged, the rest stays
/// pending for the next run.
#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    /// Reading or acknowledging the pending rows failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A put or a dead-lettering failed as a whole.
    #[error(transparent)]
    Bus(#[from] BusError),
}

/// What one run put.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventsReport {
    /// Events the bus took (and whose rows were acknowledged).
    pub put: usize,
    /// Events given up on, with their reason, and acknowledged.
    pub dead_lettered: usize,
    /// Entries left for the next run.
    pub deferred: usize,
    /// `PutEvents` requests sent.
    pub requests: usize,
    /// The deadline came before every pending event was tried: the next run continues.
    pub out_of_time: bool,
}

/// Put every pending event, oldest first, until none is left or `deadline` is reached.
pub async fn publish_events<S: Outbox, B: EventBus>(
    store: &S,
    bus: &B,
    deadline: Instant,
) -> Result<EventsReport, EventsError> {
    let mut report = EventsReport::default();
    let pending = store.pending_published().await?;
    for chunk in pending.chunks(MAX_ENTRIES) {
        if Instant::now() >= deadline {
            report.out_of_time = true;
            break;
        }
        let mut waiting: Vec<&BusEvent> = chunk.iter().collect();
        let mut refused: Vec<(&BusEvent, EntryFailure)> = Vec::new();
        for attempt in 0..=RETRIES_PER_RUN {
            if waiting.is_empty() {
                break;
            }
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
            let batch: Vec<BusEvent> = waiting.iter().map(|e| (*e).clone()).collect();
            report.requests += 1;
            let answers = bus.put(&batch).await?;
            let mut again = Vec::new();
            let mut put: Vec<&str> = Vec::new();
            for (event, answer) in waiting.into_iter().zip(answers) {
                match answer {
                    None => put.push(&event.event_id),
                    Some(failure) if failure.is_transient() && attempt < RETRIES_PER_RUN => {
                        again.push(event)
                    }
                    Some(failure) => refused.push((event, failure)),
                }
            }
            // one delete request for what this put took: a crash before it puts them again
            store.ack_published(&put).await?;
            report.put += put.len();
            waiting = again;
        }
        for (event, failure) in refused {
            let attempts = event.attempts + 1;
            if failure.is_transient() && attempts < MAX_ATTEMPTS {
                store.retry_published(&event.event_id, attempts).await?;
                report.deferred += 1;
                continue;
            }
            let reason = if failure.is_transient() {
                format!("{} (after {attempts} runs)", failure.reason())
            } else {
                failure.reason()
            };
            tracing::error!(event_id = %event.event_id, execution = %event.execution_id, %reason, "event dead-lettered");
            bus.dead_letter(event, &reason).await?;
            store.ack_published(&[&event.event_id]).await?;
            report.dead_lettered += 1;
        }
    }
    Ok(report)
}

/// The bus in memory: what was put, in order, with failures to inject (tests, `harel run`).
#[derive(Default)]
pub struct MemoryBus {
    put: Mutex<Vec<BusEvent>>,
    dead: Mutex<Vec<(BusEvent, String)>>,
    /// Answers for the next entries put, first first (None: put it).
    script: Mutex<Vec<Option<EntryFailure>>>,
}

impl MemoryBus {
    /// A bus that has taken nothing and will take everything.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next entries put get these answers instead of being put.
    pub fn answer_next(&self, answers: Vec<Option<EntryFailure>>) {
        self.script
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(answers);
    }

    /// Every event put, in order (a republished one twice).
    pub fn events(&self) -> Vec<BusEvent> {
        self.put.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Every event dead-lettered, with its reason, in order.
    pub fn dead_letters(&self) -> Vec<(BusEvent, String)> {
        self.dead.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl EventBus for MemoryBus {
    async fn put(&self, events: &[BusEvent]) -> Result<Vec<Option<EntryFailure>>, BusError> {
        let mut script = self.script.lock().unwrap_or_else(|e| e.into_inner());
        let mut put = self.put.lock().unwrap_or_else(|e| e.into_inner());
        Ok(events
            .iter()
            .map(|event| {
                let answer = if script.is_empty() {
                    None
                } else {
                    script.remove(0)
                };
                if answer.is_none() {
                    put.push(event.clone());
                }
                answer
            })
            .collect())
    }

    async fn dead_letter(&self, event: &BusEvent, reason: &str) -> Result<(), BusError> {
        self.dead
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((event.clone(), reason.to_string()));
        Ok(())
    }
}
