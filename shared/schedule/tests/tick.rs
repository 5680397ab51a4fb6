//! The tick with an injected clock: the in-memory marks, store and queue (SQS FIFO's twin,
//! which drops a second message with the same deduplication id as SQS does).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use harel_model::{Execution, Status};
use harel_queue::{Inbound, MemoryTransport};
use harel_schedule::{parse, tick, Mark, MarkError, Marks, MemoryMarks, Schedules, TickReport};
use harel_store::prelude::*;
use harel_store::MemoryStore;

fn at(rfc3339: &str) -> f64 {
    DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .with_timezone(&Utc)
        .timestamp() as f64
}

fn schedules(yaml: &str) -> Schedules {
    parse("schedules.yaml", yaml, None).expect("a valid file")
}

/// The executions the queue's creates would start, in send order (and the queue emptied).
fn creates(queue: &MemoryTransport) -> Vec<String> {
    queue
        .take_all()
        .into_iter()
        .map(
            |m| match harel_queue::inbound::parse(Some(&m.group_id), &m.body).expect("a create") {
                (group, Inbound::Create(c)) => {
                    assert_eq!(group, c.execution_id, "the id is the group");
                    c.execution_id.to_string()
                }
                other => panic!("not a create: {other:?}"),
            },
        )
        .collect()
}

struct Harness {
    schedules: Schedules,
    marks: MemoryMarks,
    store: MemoryStore,
    queue: MemoryTransport,
}

impl Harness {
    fn new(yaml: &str) -> Self {
        Harness {
            schedules: schedules(yaml),
            marks: MemoryMarks::new(),
            store: MemoryStore::new(),
            queue: MemoryTransport::new(),
        }
    }

    async fn tick(&self, now: &str) -> TickReport {
        tick(
            &self.schedules,
            &self.marks,
            &self.store,
            &self.queue,
            at(now),
        )
        .await
        .expect("the tick")
    }

    /// Tick once a minute (at second 5) from `from` to `to`; every start sent.
    async fn tick_minutes(&self, from: &str, to: &str) -> Vec<String> {
        let mut now = at(from);
        let mut started = Vec::new();
        while now <= at(to) {
            let r = tick(&self.schedules, &self.marks, &self.store, &self.queue, now)
                .await
                .expect("the tick");
            started.extend(r.started);
            now += 60.0;
        }
        started
    }
}

#[tokio::test]
async fn a_cron_entry_fires_at_its_minute() {
    let h = Harness::new(
        "nightly:\n  machine: Report\n  cron: \"0 3 * * *\"\n  context: {kind: nightly}\n",
    );
    // first sight: the mark is written, nothing before the tick's minute is started
    let first = h.tick("2026-12-06T02:58:05Z").await;
    assert_eq!((first.started.len(), first.marks_written), (0, 1));
    assert_eq!(h.marks.calls(), (1, 1));
    // an idle tick: one read, no write, nothing sent
    let idle = h.tick("2026-12-06T02:59:05Z").await;
    assert_eq!(idle, TickReport::default());
    assert_eq!(h.marks.calls(), (2, 1));
    assert_eq!(h.queue.publish_calls(), 0);
    // the fire's minute
    let fired = h.tick("2026-12-06T03:00:05Z").await;
    assert_eq!(fired.started, vec!["nightly-20261206T0300Z"]);
    assert_eq!(creates(&h.queue), vec!["nightly-20261206T0300Z"]);
    let body = h.queue.take_all();
    assert!(body.is_empty());
    assert_eq!(
        h.marks.get("nightly"),
        Some(Mark {
            through: at("2026-12-06T03:00:00Z") as i64,
            execution_id: Some("nightly-20261206T0300Z".into())
        })
    );
    // the next minute: nothing
    assert_eq!(h.tick("2026-12-06T03:01:05Z").await, TickReport::default());
    // and the next day, the next one
    let started = h
        .tick_minutes("2026-12-07T02:55:05Z", "2026-12-07T03:05:05Z")
        .await;
    assert_eq!(started, vec!["nightly-20261207T0300Z"]);
}

#[tokio::test]
async fn the_create_carries_the_entry_s_machine_and_context() {
    let h = Harness::new(
        "nightly:\n  machine: Report\n  cron: \"* * * * *\"\n  context: {kind: nightly, n: 2}\n  id: \"n-{date}-{time}\"\n  timezone: Europe/Madrid\n",
    );
    h.tick("2026-12-06T02:00:05Z").await;
    let sent = h.queue.take_all();
    assert_eq!(sent.len(), 1);
    match harel_queue::inbound::parse(Some(&sent[0].group_id), &sent[0].body).unwrap() {
        (_, Inbound::Create(c)) => {
            assert_eq!(c.definition_id, "Report");
            assert_eq!(c.execution_id, "n-2026-12-06-0300", "Madrid's wall clock");
            assert_eq!(
                serde_json::Value::Object(c.context),
                serde_json::json!({"kind": "nightly", "n": 2})
            );
        }
        other => panic!("{other:?}"),
    }
}

/// Marks whose reads wait for each other: two ticks both read the mark before either writes
/// it, the race a retried or doubled tick runs.
struct RacingMarks {
    inner: MemoryMarks,
    barrier: tokio::sync::Barrier,
}

impl Marks for RacingMarks {
    async fn read(&self, names: &[&str]) -> Result<HashMap<String, Mark>, MarkError> {
        let read = self.inner.read(names).await;
        self.barrier.wait().await;
        read
    }

    async fn advance(
        &self,
        name: &str,
        previous: Option<&Mark>,
        next: &Mark,
    ) -> Result<bool, MarkError> {
        self.inner.advance(name, previous, next).await
    }
}

#[tokio::test]
async fn two_concurrent_ticks_create_a_fire_once() {
    let schedules = schedules("every:\n  machine: Report\n  rate: 15 minutes\n");
    let marks = RacingMarks {
        inner: MemoryMarks::new(),
        barrier: tokio::sync::Barrier::new(2),
    };
    let store = MemoryStore::new();
    let queue = MemoryTransport::new();
    // both at the fire's minute, both after the first-sight mark of 10:14
    marks
        .inner
        .advance(
            "every",
            None,
            &Mark {
                through: at("2026-12-06T10:14:05Z") as i64,
                execution_id: None,
            },
        )
        .await
        .unwrap();
    let (a, b) = tokio::join!(
        tick(
            &schedules,
            &marks,
            &store,
            &queue,
            at("2026-12-06T10:15:02Z")
        ),
        tick(
            &schedules,
            &marks,
            &store,
            &queue,
            at("2026-12-06T10:15:40Z")
        ),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    // both sent it (neither knew of the other) ...
    assert_eq!(a.started, vec!["every-20261206T1015Z"]);
    assert_eq!(b.started, vec!["every-20261206T1015Z"]);
    // ... SQS keeps one (same deduplication id), one mark write wins, the other changes nothing
    assert_eq!(creates(&queue), vec!["every-20261206T1015Z"]);
    assert_eq!(a.marks_written + b.marks_written, 1);
    assert_eq!(a.raced + b.raced, 1);
    assert_eq!(
        marks.inner.get("every").map(|m| m.through),
        Some(at("2026-12-06T10:15:00Z") as i64)
    );
}

#[tokio::test]
async fn a_retried_tick_sends_the_same_create() {
    // a tick that sent its create and died before its mark: the retry sends the same message
    let h = Harness::new("every:\n  machine: Report\n  rate: 15 minutes\n");
    h.tick("2026-12-06T10:14:05Z").await;
    let before = h.marks.get("every");
    h.tick("2026-12-06T10:15:05Z").await;
    // roll the mark back, as if the first tick's write had never happened
    let after = h.marks.get("every");
    h.marks
        .advance("every", after.as_ref(), before.as_ref().unwrap())
        .await
        .unwrap();
    let retried = h.tick("2026-12-06T10:15:30Z").await;
    assert_eq!(retried.started, vec!["every-20261206T1015Z"]);
    assert_eq!(
        creates(&h.queue),
        vec!["every-20261206T1015Z"],
        "deduplicated"
    );
}

#[tokio::test]
async fn a_missed_hour_catches_up_once() {
    let h = Harness::new("every:\n  machine: Report\n  rate: 15 minutes\n  catch_up: once\n");
    h.tick("2026-12-06T10:00:05Z").await;
    creates(&h.queue);
    // the sweeper is down from 10:01 to 11:09: 10:15, 10:30, 10:45 and 11:00 were missed
    let back = h.tick("2026-12-06T11:10:05Z").await;
    assert_eq!(
        back.started,
        vec!["every-20261206T1100Z"],
        "one start, the latest fire's"
    );
    assert_eq!(back.caught_up, 3);
    assert_eq!(creates(&h.queue), vec!["every-20261206T1100Z"]);
    // and then on time again
    let started = h
        .tick_minutes("2026-12-06T11:11:05Z", "2026-12-06T11:31:05Z")
        .await;
    assert_eq!(
        started,
        vec!["every-20261206T1115Z", "every-20261206T1130Z"]
    );
}

#[tokio::test]
async fn a_missed_hour_is_skipped() {
    let h = Harness::new("hourly:\n  machine: Report\n  cron: \"0 * * * *\"\n  catch_up: skip\n");
    h.tick("2026-12-06T09:59:05Z").await;
    // down from 10:00 to 11:09: the 10:00 and 11:00 fires are more than two minutes old
    let back = h.tick("2026-12-06T11:10:05Z").await;
    assert_eq!(back.started, Vec::<String>::new());
    assert_eq!(back.skipped_missed, 1);
    assert_eq!(back.marks_written, 1, "the missed fires are marked done");
    // the next fire starts as usual
    let started = h
        .tick_minutes("2026-12-06T11:11:05Z", "2026-12-06T12:01:05Z")
        .await;
    assert_eq!(started, vec!["hourly-20261206T1200Z"]);
    // a tick a minute late is not a missed one
    let late = h.tick("2026-12-06T13:01:30Z").await;
    assert_eq!(late.started, vec!["hourly-20261206T1300Z"]);
}

#[tokio::test]
async fn a_daily_time_in_the_spring_forward_gap_fires_once_right_after_it() {
    // Europe/Madrid, 2026-03-29: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist
    let h = Harness::new(
        "madrid:\n  machine: Report\n  cron: \"30 2 * * *\"\n  timezone: Europe/Madrid\n  id: \"madrid-{date}-{time}\"\n",
    );
    let started = h
        .tick_minutes("2026-03-28T23:00:05Z", "2026-03-29T04:00:05Z")
        .await;
    // 03:00 CEST = 01:00 UTC, the first minute after the gap
    assert_eq!(started, vec!["madrid-2026-03-29-0300"]);
    assert_eq!(
        h.marks.get("madrid").unwrap().through,
        at("2026-03-29T01:00:00Z") as i64
    );
}

#[tokio::test]
async fn a_daily_time_the_fall_back_repeats_fires_once_at_its_first_pass() {
    // Europe/Madrid, 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice
    let h = Harness::new(
        "madrid:\n  machine: Report\n  cron: \"30 2 * * *\"\n  timezone: Europe/Madrid\n",
    );
    let started = h
        .tick_minutes("2026-10-24T22:00:05Z", "2026-10-25T03:00:05Z")
        .await;
    // 02:30 CEST = 00:30 UTC; the second 02:30 (CET, 01:30 UTC) does not fire
    assert_eq!(started, vec!["madrid-20261025T0030Z"]);
}

#[tokio::test]
async fn overlap_skip_holds_fires_back_while_the_previous_start_runs() {
    let h = Harness::new("every:\n  machine: Report\n  rate: 1 minute\n  overlap: skip\n");
    let first = h.tick("2026-12-06T10:00:05Z").await;
    assert_eq!(first.started, vec!["every-20261206T1000Z"]);
    // the worker created it; it is still running
    let mut exe = Execution::new("Report").with_id("every-20261206T1000Z");
    exe.status = Status::Running;
    h.store.save(&mut exe).await.unwrap();
    let held = h.tick("2026-12-06T10:01:05Z").await;
    assert_eq!((held.started.len(), held.skipped_overlap), (0, 1));
    assert_eq!(held.status_reads, 1, "one read of the previous start");
    // it finishes: the next fire starts
    exe.status = Status::Done;
    h.store.save(&mut exe).await.unwrap();
    let next = h.tick("2026-12-06T10:02:05Z").await;
    assert_eq!(next.started, vec!["every-20261206T1002Z"]);

    // overlap: allow never looks
    let allow = Harness::new("every:\n  machine: Report\n  rate: 1 minute\n  overlap: allow\n");
    allow.tick("2026-12-06T10:00:05Z").await;
    let mut exe = Execution::new("Report").with_id("every-20261206T1000Z");
    exe.status = Status::Running;
    allow.store.save(&mut exe).await.unwrap();
    let r = allow.tick("2026-12-06T10:01:05Z").await;
    assert_eq!((r.started.len(), r.status_reads), (1, 0));
}

#[tokio::test]
async fn a_tick_costs_one_read_of_all_marks() {
    let yaml: String = (0..30)
        .map(|i| format!("s{i}:\n  machine: Report\n  cron: \"{i} 3 * * *\"\n"))
        .collect();
    let h = Harness::new(&yaml);
    h.tick("2026-12-06T02:00:05Z").await; // first sight: 30 marks
    assert_eq!(h.marks.calls(), (1, 30));
    for minute in 1..10 {
        h.tick(&format!("2026-12-06T02:0{minute}:05Z")).await;
    }
    assert_eq!(
        h.marks.calls(),
        (10, 30),
        "idle ticks: one read each, no write"
    );
    let due = h.tick("2026-12-06T03:00:05Z").await;
    assert_eq!(due.started, vec!["s0-20261206T0300Z"]);
    assert_eq!(h.marks.calls(), (11, 31));
}
