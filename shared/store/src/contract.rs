//! The behaviour every `ExecutionStore` owes, written once and run against each backend
//! (`contract_tests!(make)` expands to one test per case). `make(trace_max)` must return a
//! fresh, empty, isolated store: the relay reads (`pending_*`, `due_timers`) see everything.
//!
//! Test support: failures panic with a message naming the broken promise.

use std::collections::HashSet;

use harel_model::{Event, Execution, Object, Status};
use serde_json::json;

use crate::{
    Commit, DomainEvent, ExecutionStore, ListQuery, Spawn, StoreError, StoreResult, TimerOp,
};

/// One test per contract case, each on a fresh store from `$make(trace_max).await`.
/// `contract_tests!(make, ignore = "why")` marks every case `#[ignore]` with the reason, for a
/// backend that needs something plain `cargo test` does not start (an emulator).
#[macro_export]
macro_rules! contract_tests {
    ($make:path) => {
        // `cfg(all())` is always true: no attribute, with the arm below taking one
        $crate::contract_tests!($make; [cfg(all())]);
    };
    ($make:path, ignore = $why:literal) => {
        $crate::contract_tests!($make; [ignore = $why]);
    };
    ($make:path; $attr:tt) => {
        $crate::contract_tests!(@cases $make; $attr;
            insert_then_load, insert_of_existing_id_conflicts, stale_update_conflicts,
            commit_writes_every_part, racing_writers_exactly_one_wins, acks_remove_exactly_one,
            timers_schedule_cancel_and_guarded_delete, load_for_event_reports_the_dedupe_mark,
            list_filters_and_pages, list_is_newest_first_by_status_machine_and_roots,
            list_rejects_a_foreign_cursor, trace_ring_keeps_the_last_n,
            append_trace_uses_the_given_index, ids_with_prefix_finds_a_tree, descendant_ids_cover_a_tree, purge_removes_a_tree_node,
            save_is_a_bare_commit, floats_round_trip_exactly,
            a_timer_cancelled_and_rearmed_in_one_commit_stays_armed,
            a_commit_for_a_processed_event_writes_nothing,
            next_timer_due_is_the_earliest_within_the_horizon,
            due_and_next_is_the_due_timers_and_the_next_after_them,
            machine_versions_are_kept_once_and_pins_round_trip,
            status_changes_and_domain_events_are_written_with_their_commit);
    };
    (@cases $make:path; $attr:tt; $($case:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #$attr
            async fn $case() {
                $crate::contract::$case(|tm| $make(tm)).await;
            }
        )*
    };
}

fn ok<T>(r: StoreResult<T>, what: &str) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{what}: unexpected store error: {e}"),
    }
}

fn exe(id: &str) -> Execution {
    let mut e = Execution::new("contract-def").with_id(id);
    e.status = Status::Running;
    e.active_path = Some("A".into());
    e.context = obj(json!({"n": 1, "f": 0.5, "s": "é"}));
    e
}

fn obj(v: serde_json::Value) -> Object {
    match v {
        serde_json::Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

fn unique(tag: &str) -> String {
    format!("{tag}-{}", uuid::Uuid::new_v4().simple())
}

fn assert_conflict(r: StoreResult<Vec<u64>>, id: &str, expected: u64, found: Option<u64>) {
    match r {
        Err(StoreError::Conflict {
            execution_id,
            expected: e,
            found: f,
        }) => {
            assert_eq!(execution_id, id, "conflict names the execution");
            assert_eq!(
                (e, f),
                (expected, found),
                "conflict expected/found versions"
            );
        }
        other => panic!("expected a Conflict(expected {expected}, found {found:?}), got {other:?}"),
    }
}

/// A commit at version 0 inserts (version 1, no outbox seqs), a load returns exactly what was
/// committed, and a commit of the loaded copy updates it to version 2.
pub async fn insert_then_load<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("ins");
    assert!(ok(store.load(&id).await, "load absent").is_none());
    let mut e = exe(&id);
    let seqs = ok(store.commit(&mut e, Commit::default()).await, "insert");
    assert!(seqs.is_empty(), "a commit without emits returns no seqs");
    assert_eq!(e.version, 1, "insert bumps version 0 -> 1");
    let loaded = ok(store.load(&id).await, "load").expect("inserted execution loads");
    assert_eq!(loaded, e, "load returns what was committed");
    let mut again = loaded;
    again.context.insert("n".into(), json!(2));
    ok(store.commit(&mut again, Commit::default()).await, "update");
    assert_eq!(again.version, 2);
    assert_eq!(
        ok(store.load(&id).await, "reload").map(|l| l.version),
        Some(2)
    );
}

/// Inserting an id that is stored is a `Conflict` (expected 0, found 1), and the loser's
/// version stays 0.
pub async fn insert_of_existing_id_conflicts<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("dup");
    ok(
        store.commit(&mut exe(&id), Commit::default()).await,
        "insert",
    );
    let mut twin = exe(&id);
    assert_conflict(
        store.commit(&mut twin, Commit::default()).await,
        &id,
        0,
        Some(1),
    );
    assert_eq!(
        twin.version, 0,
        "a failed commit leaves the version as it was"
    );
}

/// Of two writers holding the same version the second is a `Conflict` and writes nothing (its
/// emit is not in the outbox, its version not bumped); an update of an id never stored is a
/// `Conflict` with `found` None, and creates nothing.
pub async fn stale_update_conflicts<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("stale");
    ok(
        store.commit(&mut exe(&id), Commit::default()).await,
        "insert",
    );
    let mut a = ok(store.load(&id).await, "load a").expect("present");
    let mut b = ok(store.load(&id).await, "load b").expect("present");
    ok(
        store.commit(&mut a, Commit::default()).await,
        "first writer",
    );
    let r = store
        .commit(
            &mut b,
            Commit {
                emits: vec![(Some(id.as_str().into()), Event::new("Leak"))],
                ..Commit::default()
            },
        )
        .await;
    assert_conflict(r, &id, 1, Some(2));
    assert_eq!(b.version, 1, "the loser's version is not bumped");
    assert!(
        ok(store.pending_outbox().await, "outbox").is_empty(),
        "a stale write leaks no emit"
    );
    // an update of an execution that is not there at all
    let ghost = unique("ghost");
    let mut g = exe(&ghost);
    g.version = 3;
    assert_conflict(
        store.commit(&mut g, Commit::default()).await,
        &ghost,
        3,
        None,
    );
    assert!(ok(store.load(&ghost).await, "load ghost").is_none());
}

/// One commit writes every part: outbox entries in emit order with increasing seqs (targets,
/// untargeted ones and event data kept), spawn intents with their parent, the dedupe mark,
/// timers (due soonest first) and the trace step at index 0.
pub async fn commit_writes_every_part<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("all");
    let mut e = exe(&id);
    let first = Event::new("First").with_data(obj(json!({"k": [1, 2.5, "x"]})));
    let commit = Commit {
        emits: vec![
            (Some(id.as_str().into()), first.clone()),
            (None, Event::new("Untargeted")),
            (Some("other".into()), Event::new("Third")),
        ],
        processed_event_id: Some("ev-1".into()),
        timers: vec![
            TimerOp::Schedule {
                path: "A".into(),
                fire_at: 100.5,
            },
            TimerOp::Schedule {
                path: "B".into(),
                fire_at: 50.25,
            },
        ],
        spawns: vec![
            Spawn {
                child_id: format!("{id}:R1:1").into(),
                root_path: "R1".into(),
                context: obj(json!({"x": 1})),
            },
            Spawn {
                child_id: format!("{id}:R2:1").into(),
                root_path: "R2".into(),
                context: obj(json!({"y": [true, null]})),
            },
        ],
        trace: Some(obj(json!({"event_kind": "Start", "to_path": "A"}))),
        published: Vec::new(),
    };
    let seqs = ok(store.commit(&mut e, commit).await, "commit");
    assert_eq!(seqs.len(), 3);
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "seqs increase in emit order"
    );
    let outbox = ok(store.pending_outbox().await, "outbox");
    assert_eq!(
        outbox.iter().map(|o| o.seq).collect::<Vec<_>>(),
        seqs,
        "outbox in seq order"
    );
    assert_eq!(outbox[0].event, first, "the event round-trips");
    assert_eq!(outbox[0].target_id.as_deref(), Some(id.as_str()));
    assert_eq!(
        outbox[1].target_id, None,
        "an untargeted emit stays untargeted"
    );
    let spawns = ok(store.pending_spawns().await, "spawns");
    assert_eq!(spawns.len(), 2);
    assert!(spawns[0].seq < spawns[1].seq);
    assert_eq!(spawns[0].parent_id, id);
    assert_eq!(spawns[0].child_id, format!("{id}:R1:1"));
    assert_eq!(spawns[1].root_path, "R2");
    assert_eq!(spawns[1].context, obj(json!({"y": [true, null]})));
    assert!(ok(store.is_processed(&id, "ev-1").await, "processed"));
    assert!(!ok(store.is_processed(&id, "ev-2").await, "not processed"));
    let due = ok(store.due_timers(1000.0).await, "due");
    assert_eq!(
        due.iter()
            .map(|t| (t.path.as_str(), t.fire_at))
            .collect::<Vec<_>>(),
        vec![("B", 50.25), ("A", 100.5)],
        "due timers, soonest first"
    );
    let trace = ok(store.read_trace(&id).await, "trace");
    assert_eq!(trace.len(), 1);
    assert_eq!(trace[0]["event_kind"], json!("Start"));
    assert_eq!(
        trace[0]["index"],
        json!(0),
        "the first step of a new execution is index 0"
    );
}

/// Two writers committing from the same version: exactly one wins, and only the winner's
/// context, emit, spawn, timer, dedupe mark and trace step are stored.
pub async fn racing_writers_exactly_one_wins<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("race");
    ok(
        store.commit(&mut exe(&id), Commit::default()).await,
        "insert",
    );
    let mut a = ok(store.load(&id).await, "load").expect("present");
    let mut b = a.clone();
    a.context.insert("who".into(), json!("a"));
    b.context.insert("who".into(), json!("b"));
    let side = |tag: &str| Commit {
        emits: vec![(Some(id.as_str().into()), Event::new(format!("Emit{tag}")))],
        processed_event_id: Some(format!("ev-{tag}").into()),
        timers: vec![TimerOp::Schedule {
            path: format!("T{tag}").into(),
            fire_at: 10.0,
        }],
        spawns: vec![Spawn {
            child_id: format!("{id}:{tag}").into(),
            root_path: tag.into(),
            context: Object::new(),
        }],
        trace: Some(obj(json!({"who": tag}))),
        published: Vec::new(),
    };
    // both writers hold version 1; they commit one after the other rather than truly at once,
    // because moto (the DynamoDB emulator these run on) does not isolate concurrent
    // transactions: a cancelled one restores a snapshot of whole tables, undoing the winner
    let ra = store.commit(&mut a, side("a")).await;
    let rb = store.commit(&mut b, side("b")).await;
    let (winner, loser, wr, lr) = match (&ra, &rb) {
        (Ok(_), Err(_)) => ("a", "b", &a, rb),
        (Err(_), Ok(_)) => ("b", "a", &b, ra),
        _ => panic!("exactly one racing writer must win: {ra:?} / {rb:?}"),
    };
    assert_conflict(lr, &id, 1, Some(2));
    assert_eq!(wr.version, 2);
    let stored = ok(store.load(&id).await, "load").expect("present");
    assert_eq!(stored.context["who"], json!(winner));
    let kinds: Vec<harel_model::SmolStr> = ok(store.pending_outbox().await, "outbox")
        .into_iter()
        .map(|o| o.event.kind)
        .collect();
    assert_eq!(
        kinds,
        vec![format!("Emit{winner}")],
        "only the winner's emit"
    );
    let spawns = ok(store.pending_spawns().await, "spawns");
    assert_eq!(spawns.len(), 1);
    assert_eq!(spawns[0].root_path, winner);
    let timers: Vec<String> = ok(store.due_timers(100.0).await, "timers")
        .into_iter()
        .map(|t| t.path)
        .collect();
    assert_eq!(timers, vec![format!("T{winner}")]);
    assert!(!ok(
        store.is_processed(&id, &format!("ev-{loser}")).await,
        "dedupe"
    ));
    let trace = ok(store.read_trace(&id).await, "trace");
    assert_eq!(trace.len(), 1);
    assert_eq!(trace[0]["who"], json!(winner));
}

/// `ack_outbox` and `ack_spawn` remove the one entry named, leave the rest in order, and are
/// no-ops when repeated.
pub async fn acks_remove_exactly_one<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("ack");
    let mut e = exe(&id);
    let seqs = ok(
        store
            .commit(
                &mut e,
                Commit {
                    emits: (0..3)
                        .map(|i| (Some(id.as_str().into()), Event::new(format!("E{i}"))))
                        .collect(),
                    spawns: (0..2)
                        .map(|i| Spawn {
                            child_id: format!("{id}:{i}").into(),
                            root_path: format!("R{i}").into(),
                            context: Object::new(),
                        })
                        .collect(),
                    ..Commit::default()
                },
            )
            .await,
        "commit",
    );
    ok(store.ack_outbox(seqs[1]).await, "ack");
    let left: Vec<u64> = ok(store.pending_outbox().await, "outbox")
        .iter()
        .map(|o| o.seq)
        .collect();
    assert_eq!(left, vec![seqs[0], seqs[2]]);
    ok(store.ack_outbox(seqs[1]).await, "acking twice is a no-op");
    ok(store.ack_outbox(seqs[0]).await, "ack");
    ok(store.ack_outbox(seqs[2]).await, "ack");
    assert!(ok(store.pending_outbox().await, "outbox").is_empty());
    let spawns = ok(store.pending_spawns().await, "spawns");
    ok(store.ack_spawn(spawns[0].seq).await, "ack spawn");
    let left = ok(store.pending_spawns().await, "spawns");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].seq, spawns[1].seq);
    ok(
        store.ack_spawn(spawns[0].seq).await,
        "acking a spawn twice is a no-op",
    );
}

/// Timers: due when `fire_at <= now`, soonest first; re-armed and cancelled by later commits;
/// `armed_timers` returns one execution's own; `delete_timer` with a stale `fire_at` leaves a
/// re-armed timer alone, and deleting an absent timer is a no-op.
pub async fn timers_schedule_cancel_and_guarded_delete<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("tim");
    let mut e = exe(&id);
    let sched = |path: &str, fire_at: f64| TimerOp::Schedule {
        path: path.into(),
        fire_at,
    };
    let c = Commit {
        timers: vec![sched("A", 10.0), sched("B", 20.0), sched("C", 30.0)],
        ..Commit::default()
    };
    ok(store.commit(&mut e, c).await, "schedule");
    let due = |now| due_list(&store, now);
    assert_eq!(
        due(20.0).await,
        vec![
            (id.clone(), "A".into(), 10.0),
            (id.clone(), "B".into(), 20.0)
        ],
        "fire_at <= now"
    );
    assert!(due(9.99).await.is_empty());
    // re-arm A later and cancel C, atomically with a commit
    let c = Commit {
        timers: vec![sched("A", 40.0), TimerOp::Cancel { path: "C".into() }],
        ..Commit::default()
    };
    ok(store.commit(&mut e, c).await, "re-arm");
    assert_eq!(
        due(100.0).await,
        vec![
            (id.clone(), "B".into(), 20.0),
            (id.clone(), "A".into(), 40.0)
        ]
    );
    // one execution's armed timers, whatever is due, and only its own
    let other = unique("tim-other");
    let c = Commit {
        timers: vec![sched("A", 5.0)],
        ..Commit::default()
    };
    ok(store.commit(&mut exe(&other), c).await, "another's timer");
    let armed: Vec<(String, f64)> = ok(store.armed_timers(&id).await, "armed")
        .into_iter()
        .map(|t| {
            assert_eq!(t.execution_id, id);
            (t.path, t.fire_at)
        })
        .collect();
    assert_eq!(
        armed,
        vec![("B".to_string(), 20.0), ("A".to_string(), 40.0)]
    );
    let theirs = ok(store.armed_timers(&other).await, "armed");
    assert_eq!(theirs.len(), 1);
    ok(store.delete_timer(&other, "A", 5.0).await, "their delete");
    // a stale sweep (the old fire_at) leaves the re-armed timer alone
    ok(store.delete_timer(&id, "A", 10.0).await, "stale delete");
    assert_eq!(due(100.0).await.len(), 2, "a failed guard is a no-op");
    ok(store.delete_timer(&id, "A", 40.0).await, "delete");
    ok(
        store.delete_timer(&id, "missing", 1.0).await,
        "deleting an absent timer is a no-op",
    );
    assert_eq!(due(100.0).await, vec![(id.clone(), "B".into(), 20.0)]);
}

async fn due_list<S: ExecutionStore>(store: &S, now: f64) -> Vec<(String, String, f64)> {
    ok(store.due_timers(now).await, "due")
        .into_iter()
        .map(|t| (t.execution_id, t.path, t.fire_at))
        .collect()
}

async fn list_all<S: ExecutionStore>(
    store: &S,
    mut q: ListQuery,
) -> Vec<harel_model::ExecutionSummary> {
    let mut seen = Vec::new();
    for _ in 0..20 {
        let page = ok(store.list_executions(&q).await, "list");
        assert!(page.items.len() <= q.limit, "a page holds at most limit");
        seen.extend(page.items);
        match page.next_cursor {
            Some(c) => q.cursor = Some(c),
            None => return seen,
        }
    }
    panic!("listing did not end")
}

/// `load_for_event` returns the execution (None when absent) and whether that event's dedupe
/// mark is written, for that event only.
pub async fn load_for_event_reports_the_dedupe_mark<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("lfe");
    let (none, done) = ok(store.load_for_event(&id, "ev").await, "absent");
    assert!(none.is_none() && !done);
    let mut e = exe(&id);
    ok(store.commit(&mut e, Commit::default()).await, "insert");
    let (loaded, done) = ok(store.load_for_event(&id, "ev").await, "present");
    assert_eq!(loaded.as_ref(), Some(&e));
    assert!(!done);
    let c = Commit {
        processed_event_id: Some("ev".into()),
        ..Commit::default()
    };
    ok(store.commit(&mut e, c).await, "process");
    let (loaded, done) = ok(store.load_for_event(&id, "ev").await, "processed");
    assert_eq!(loaded.map(|l| l.version), Some(2));
    assert!(done, "the dedupe mark is reported");
    assert!(!ok(store.load_for_event(&id, "other").await, "other").1);
}

/// The dedupe is part of the commit: a writer that read the execution after another one
/// committed an event, but its mark from before (a torn read), is refused by the mark itself.
pub async fn a_commit_for_a_processed_event_writes_nothing<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("dup");
    let mut e = exe(&id);
    ok(store.commit(&mut e, Commit::default()).await, "insert");
    let first = Commit {
        processed_event_id: Some("ev".into()),
        ..Commit::default()
    };
    ok(store.commit(&mut e, first).await, "process ev");
    // the same event again, on the current version: everything it carries is refused
    let mut again = ok(store.load(&id).await, "load").expect("present");
    again.context.insert("twice".into(), json!(true));
    let everything = |tag: &str| Commit {
        emits: vec![(Some(id.as_str().into()), Event::new(format!("Emit{tag}")))],
        processed_event_id: Some("ev".into()),
        timers: vec![TimerOp::Schedule {
            path: format!("T{tag}").into(),
            fire_at: 10.0,
        }],
        spawns: vec![Spawn {
            child_id: format!("{id}:{tag}").into(),
            root_path: tag.into(),
            context: Object::new(),
        }],
        published: Vec::new(),
        trace: Some(obj(json!({"who": tag}))),
    };
    match store.commit(&mut again, everything("a")).await {
        Err(StoreError::AlreadyProcessed {
            execution_id,
            event_id,
        }) => {
            assert_eq!(execution_id, id);
            assert_eq!(event_id, "ev");
        }
        other => panic!("a processed event's commit must be refused as such: {other:?}"),
    }
    assert_eq!(again.version, 2, "the version is left as it was");
    // a stale writer of the same event (version moved and mark present): already processed
    let mut stale = again.clone();
    stale.version = 1;
    let r = store.commit(&mut stale, everything("b")).await;
    assert!(
        matches!(r, Err(StoreError::AlreadyProcessed { .. })),
        "mark present and version moved: already processed, got {r:?}"
    );
    // a stale writer of another event: the version check, as ever
    let mut other = again.clone();
    other.version = 1;
    let r = store
        .commit(
            &mut other,
            Commit {
                processed_event_id: Some("ev-2".into()),
                ..Commit::default()
            },
        )
        .await;
    assert_conflict(r, &id, 1, Some(2));
    let stored = ok(store.load(&id).await, "load").expect("present");
    assert_eq!(stored.version, 2);
    assert!(
        stored.context.get("twice").is_none(),
        "nothing applied twice"
    );
    assert!(ok(store.pending_outbox().await, "outbox").is_empty());
    assert!(ok(store.pending_spawns().await, "spawns").is_empty());
    assert!(ok(store.due_timers(100.0).await, "timers").is_empty());
    assert!(ok(store.read_trace(&id).await, "trace").is_empty());
    assert!(!ok(store.is_processed(&id, "ev-2").await, "ev-2"));
    // and the execution goes on with other events
    let next = Commit {
        processed_event_id: Some("ev-2".into()),
        ..Commit::default()
    };
    ok(store.commit(&mut e, next).await, "process ev-2");
    assert_eq!(e.version, 3);
}

/// `list_executions` pages cover every execution once (at most `limit` each, no cursor after
/// the last), and the machine, status and roots-only filters select what they name.
pub async fn list_filters_and_pages<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let ns = unique("ls");
    let mut made = Vec::new();
    for i in 0..7 {
        let mut e = exe(&format!("{ns}-{i}"));
        e.definition_id = if i % 2 == 0 {
            "even".into()
        } else {
            "odd".into()
        };
        if i == 3 {
            e.status = Status::Done;
        }
        if i >= 5 {
            e.parent_id = Some(format!("{ns}-0").into());
        }
        ok(store.commit(&mut e, Commit::default()).await, "insert");
        made.push(e);
    }
    let all = |q: ListQuery| list_all(&store, q);
    let everything = all(ListQuery {
        limit: 2,
        ..ListQuery::default()
    })
    .await;
    let ids: HashSet<String> = everything.iter().map(|s| s.id.clone()).collect();
    assert_eq!(everything.len(), 7, "pages cover every execution once");
    assert_eq!(ids.len(), 7);
    assert!(everything.iter().all(|s| s.version == 1));
    let even = all(ListQuery {
        definition_id: Some("even".into()),
        limit: 3,
        ..ListQuery::default()
    })
    .await;
    assert_eq!(even.len(), 4);
    let done = all(ListQuery {
        status: Some(vec![Status::Done, Status::Cancelled]),
        ..ListQuery::default()
    })
    .await;
    assert_eq!(
        done.iter().map(|s| s.id.clone()).collect::<Vec<_>>(),
        vec![format!("{ns}-3")]
    );
    assert_eq!(done[0].status, Status::Done);
    let roots = all(ListQuery {
        roots_only: true,
        limit: 4,
        ..ListQuery::default()
    })
    .await;
    assert_eq!(roots.len(), 5);
    let first = ok(
        store
            .list_executions(&ListQuery {
                limit: 7,
                ..ListQuery::default()
            })
            .await,
        "exact page",
    );
    assert_eq!(first.items.len(), 7);
    assert!(
        first.next_cursor.is_none(),
        "no cursor when nothing is left"
    );
}

/// The listing order and filters the indexed listing serves, and the `scan` listing alike:
/// newest first (ties by id), pages stitched by cursor equal one big page, status / machine /
/// roots filters, a status change moving the execution between listings.
pub async fn list_is_newest_first_by_status_machine_and_roots<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let ns = unique("nf");
    let statuses = [
        Status::Running,
        Status::Done,
        Status::Running,
        Status::Failed,
    ];
    let mut made = Vec::new();
    for i in 0..12usize {
        let mut e = exe(&format!("{ns}-{i:02}"));
        e.definition_id = if i % 3 == 0 { "m1".into() } else { "m2".into() };
        e.status = statuses[i % 4];
        // two pairs share a creation time: the id breaks the tie
        e.created_at = Some(1_700_000_000.25 + (i / 2 * 2 + (i % 2) * (i % 4 / 2)) as f64);
        if i % 5 == 4 {
            e.parent_id = Some(format!("{ns}-00").into());
        }
        ok(store.commit(&mut e, Commit::default()).await, "insert");
        made.push(e);
    }
    let expect = |f: &dyn Fn(&Execution) -> bool| -> Vec<String> {
        let mut v: Vec<&Execution> = made.iter().filter(|e| f(e)).collect();
        v.sort_by(|a, b| {
            b.created_at
                .partial_cmp(&a.created_at)
                .expect("finite")
                .then(b.id.cmp(&a.id))
        });
        v.into_iter().map(|e| e.id.to_string()).collect()
    };
    let ids = |v: Vec<harel_model::ExecutionSummary>| -> Vec<String> {
        v.into_iter().map(|s| s.id).collect()
    };
    for scan in [false, true] {
        let q =
            |status: Option<Vec<Status>>, machine: Option<&str>, roots: bool, limit| ListQuery {
                status,
                definition_id: machine.map(str::to_string),
                roots_only: roots,
                limit,
                cursor: None,
                scan,
            };
        let all = ids(list_all(&store, q(None, None, false, 5)).await);
        assert_eq!(
            all,
            expect(&|_| true),
            "newest first, by id on a tie (scan {scan})"
        );
        let one_page = ids(ok(
            store.list_executions(&q(None, None, false, 50)).await,
            "one page",
        )
        .items);
        assert_eq!(
            all, one_page,
            "pages stitched by cursor are one page (scan {scan})"
        );
        let running_roots =
            ids(list_all(&store, q(Some(vec![Status::Running]), None, true, 2)).await);
        assert_eq!(
            running_roots,
            expect(&|e| e.status == Status::Running && e.parent_id.is_none()),
            "RUNNING roots (scan {scan})"
        );
        let running = ids(list_all(&store, q(Some(vec![Status::Running]), None, false, 2)).await);
        assert_eq!(
            running,
            expect(&|e| e.status == Status::Running),
            "RUNNING roots and children merged (scan {scan})"
        );
        let m2_done_or_failed = ids(list_all(
            &store,
            q(
                Some(vec![Status::Done, Status::Failed]),
                Some("m2"),
                false,
                2,
            ),
        )
        .await);
        assert_eq!(
            m2_done_or_failed,
            expect(
                &|e| e.definition_id == "m2" && matches!(e.status, Status::Done | Status::Failed)
            ),
            "two statuses of one machine merged (scan {scan})"
        );
        let m1 = ids(list_all(&store, q(None, Some("m1"), true, 3)).await);
        assert_eq!(
            m1,
            expect(&|e| e.definition_id == "m1" && e.parent_id.is_none())
        );
        let none = ok(
            store
                .list_executions(&q(Some(vec![Status::Cancelling]), None, false, 3))
                .await,
            "nothing matches",
        );
        assert!(none.items.is_empty() && none.next_cursor.is_none());
    }
    // a status change moves the execution from one listing to the other
    let mut moved = made[0].clone();
    moved.status = Status::Done;
    ok(store.commit(&mut moved, Commit::default()).await, "finish");
    let running = |scan| ListQuery {
        status: Some(vec![Status::Running]),
        scan,
        ..ListQuery::default()
    };
    let done = |scan| ListQuery {
        status: Some(vec![Status::Done]),
        scan,
        ..ListQuery::default()
    };
    for scan in [false, true] {
        let r = ids(list_all(&store, running(scan)).await);
        assert!(
            !r.contains(&moved.id.to_string()),
            "left RUNNING (scan {scan})"
        );
        let d = list_all(&store, done(scan)).await;
        let row = d
            .iter()
            .find(|s| s.id == moved.id.as_str())
            .unwrap_or_else(|| panic!("now DONE (scan {scan})"));
        assert_eq!(
            (row.status, row.version),
            (Status::Done, 2),
            "the current row"
        );
    }
}

/// A cursor the store did not hand out is refused with an `Other` error that says "cursor",
/// rather than restarting the listing.
pub async fn list_rejects_a_foreign_cursor<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let r = store
        .list_executions(&ListQuery {
            cursor: Some("not a cursor!".into()),
            ..ListQuery::default()
        })
        .await;
    match r {
        Err(StoreError::Other { message, .. }) => assert!(message.contains("cursor"), "{message}"),
        other => panic!("a garbage cursor must be refused clearly, got {other:?}"),
    }
}

/// The trace is a ring of `trace_max` steps: the last ones are kept, their indexes contiguous
/// across untraced commits; an unknown execution's trace is empty.
pub async fn trace_ring_keeps_the_last_n<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(3).await;
    let id = unique("ring");
    let mut e = exe(&id);
    for i in 0..5 {
        let c = Commit {
            trace: Some(obj(json!({"step": i}))),
            ..Commit::default()
        };
        ok(store.commit(&mut e, c).await, "traced commit");
    }
    // an untraced commit in between must not disturb the numbering
    ok(store.commit(&mut e, Commit::default()).await, "untraced");
    let c = Commit {
        trace: Some(obj(json!({"step": 5}))),
        ..Commit::default()
    };
    ok(store.commit(&mut e, c).await, "traced commit");
    let trace = ok(store.read_trace(&id).await, "trace");
    let got: Vec<(serde_json::Value, serde_json::Value)> = trace
        .iter()
        .map(|t| (t["index"].clone(), t["step"].clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (json!(3), json!(3)),
            (json!(4), json!(4)),
            (json!(5), json!(5))
        ],
        "the ring keeps the last 3 steps, indexes contiguous"
    );
    assert!(ok(store.read_trace("nobody").await, "empty").is_empty());
}

/// `append_trace` numbers steps on from the last (or takes the `index` given), and a later
/// commit's trace step continues after them.
pub async fn append_trace_uses_the_given_index<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("app");
    ok(
        store.append_trace(&id, obj(json!({"a": 1}))).await,
        "append",
    );
    ok(
        store.append_trace(&id, obj(json!({"a": 2}))).await,
        "append",
    );
    ok(
        store
            .append_trace(&id, obj(json!({"a": 3, "index": 10})))
            .await,
        "append at 10",
    );
    // a commit after a standalone append continues after it
    let mut e = exe(&id);
    ok(store.commit(&mut e, Commit::default()).await, "insert");
    let c = Commit {
        trace: Some(obj(json!({"a": 4}))),
        ..Commit::default()
    };
    ok(store.commit(&mut e, c).await, "traced");
    let idx: Vec<serde_json::Value> = ok(store.read_trace(&id).await, "trace")
        .iter()
        .map(|t| t["index"].clone())
        .collect();
    assert_eq!(idx, vec![json!(0), json!(1), json!(10), json!(11)]);
}

/// `ids_with_prefix` returns every stored id under the prefix and nothing else.
pub async fn ids_with_prefix_finds_a_tree<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let root = unique("tree");
    for id in [
        root.clone(),
        format!("{root}:R:1"),
        format!("{root}:R:1:S:1"),
        unique("else"),
    ] {
        ok(
            store.commit(&mut exe(&id), Commit::default()).await,
            "insert",
        );
    }
    let mut got = ok(store.ids_with_prefix(&format!("{root}:")).await, "prefix");
    got.sort();
    assert_eq!(got, vec![format!("{root}:R:1"), format!("{root}:R:1:S:1")]);
    assert_eq!(ok(store.ids_with_prefix(&root).await, "prefix").len(), 3);
    assert!(ok(store.ids_with_prefix("zzz-none").await, "none").is_empty());
}

/// Every stored descendant of a root (children of children too), by its parent links or its
/// id; nothing above or beside the tree that a caller could mistake for a member is left in
/// once the `parent_id` chain is checked (extra ids are allowed, missing ones are not).
pub async fn descendant_ids_cover_a_tree<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let root = unique("desc");
    let tree = [
        (format!("{root}:R:1"), root.clone()),
        (format!("{root}:R:2"), root.clone()),
        (format!("{root}:R:1:S:1"), format!("{root}:R:1")),
    ];
    ok(
        store.commit(&mut exe(&root), Commit::default()).await,
        "root",
    );
    for (id, parent) in &tree {
        let mut e = exe(id);
        e.parent_id = Some(parent.as_str().into());
        ok(store.commit(&mut e, Commit::default()).await, "child");
    }
    ok(
        store
            .commit(&mut exe(&unique("other")), Commit::default())
            .await,
        "unrelated",
    );
    let got: HashSet<String> = ok(store.descendant_ids(&root).await, "descendants")
        .into_iter()
        .collect();
    for (id, _) in &tree {
        assert!(got.contains(id), "{id} missing from {got:?}");
    }
    assert!(!got.contains(&root), "the root is not its own descendant");
    let leaf = ok(store.descendant_ids(&tree[2].0).await, "a leaf");
    assert!(leaf.is_empty(), "{leaf:?}");
    assert!(ok(store.descendant_ids("no-such-root").await, "absent").is_empty());
}

/// `purge` at a moved-on version touches nothing; at the stored version it removes the
/// execution with its dedupe marks, trace, timers, outbox and spawn entries, and nothing of
/// another execution. A stale copy cannot bring it back, a fresh insert may reuse the id, and
/// purging an absent id is `false`.
pub async fn purge_removes_a_tree_node<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("purge");
    let keep = unique("keep");
    let mut e = exe(&id);
    let mut k = exe(&keep);
    let c = |target: &str, owner: &str| Commit {
        emits: vec![(Some(target.into()), Event::new("ToTarget"))],
        processed_event_id: Some("ev".into()),
        timers: vec![TimerOp::Schedule {
            path: "A".into(),
            fire_at: 5.0,
        }],
        spawns: vec![Spawn {
            child_id: format!("{owner}:c").into(),
            root_path: "R".into(),
            context: Object::new(),
        }],
        trace: Some(obj(json!({"t": 1}))),
        published: Vec::new(),
    };
    ok(store.commit(&mut e, c(&id, &id)).await, "commit");
    ok(store.commit(&mut k, c(&keep, &keep)).await, "commit other");
    assert!(
        !ok(store.purge(&id, 7).await, "wrong version"),
        "a moved-on row is not purged"
    );
    assert!(
        ok(store.load(&id).await, "load").is_some(),
        "and nothing was touched"
    );
    assert!(ok(store.is_processed(&id, "ev").await, "dedupe kept"));
    assert!(ok(store.purge(&id, 1).await, "purge"));
    assert!(ok(store.load(&id).await, "load").is_none());
    assert!(!ok(store.is_processed(&id, "ev").await, "dedupe gone"));
    assert!(ok(store.read_trace(&id).await, "trace").is_empty());
    let timers = ok(store.due_timers(10.0).await, "timers");
    assert_eq!(
        timers
            .iter()
            .map(|t| t.execution_id.clone())
            .collect::<Vec<_>>(),
        vec![keep.clone()]
    );
    let outbox = ok(store.pending_outbox().await, "outbox");
    assert_eq!(
        outbox
            .iter()
            .map(|o| o.target_id.clone())
            .collect::<Vec<_>>(),
        vec![Some(keep.as_str().into())]
    );
    let spawns = ok(store.pending_spawns().await, "spawns");
    assert_eq!(
        spawns
            .iter()
            .map(|s| s.parent_id.clone())
            .collect::<Vec<_>>(),
        vec![keep.clone()]
    );
    assert!(ok(
        store.is_processed(&keep, "ev").await,
        "the other execution is untouched"
    ));
    // a stale copy cannot resurrect it; a brand-new execution may reuse the id
    assert_conflict(store.commit(&mut e, Commit::default()).await, &id, 1, None);
    ok(
        store.commit(&mut exe(&id), Commit::default()).await,
        "reuse the id at version 0",
    );
    assert!(
        !ok(store.purge(&unique("never"), 0).await, "purging nothing"),
        "absent: false"
    );
}

/// `save` is a version-checked commit with nothing else: it bumps the version, and a stale
/// save is a `Conflict`.
pub async fn save_is_a_bare_commit<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("save");
    let mut e = exe(&id);
    ok(store.save(&mut e).await, "save");
    ok(store.save(&mut e).await, "save again");
    assert_eq!(e.version, 2);
    let mut stale = e.clone();
    stale.version = 1;
    match store.save(&mut stale).await {
        Err(StoreError::Conflict {
            expected: 1,
            found: Some(2),
            ..
        }) => {}
        other => panic!("a stale save must conflict, got {other:?}"),
    }
}

/// A timer's `fire_at` comes back bit for bit (fractions, 0.1 + 0.2, 1e16, 1e-7), so a guarded
/// delete with the armed value matches.
pub async fn floats_round_trip_exactly<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("float");
    let mut e = exe(&id);
    let times = [1_700_000_000.123_456_7, 0.1 + 0.2, 1e16, 1e-7, 12345.0];
    let c = Commit {
        timers: times
            .iter()
            .enumerate()
            .map(|(i, t)| TimerOp::Schedule {
                path: format!("P{i}").into(),
                fire_at: *t,
            })
            .collect(),
        ..Commit::default()
    };
    ok(store.commit(&mut e, c).await, "schedule");
    let mut got: Vec<f64> = ok(store.due_timers(1e17).await, "due")
        .iter()
        .map(|t| t.fire_at)
        .collect();
    got.sort_by(f64::total_cmp);
    let mut want = times.to_vec();
    want.sort_by(f64::total_cmp);
    assert_eq!(got, want, "fire_at survives the store bit for bit");
    for (i, t) in times.iter().enumerate() {
        ok(
            store.delete_timer(&id, &format!("P{i}"), *t).await,
            "guarded delete",
        );
    }
    assert!(
        ok(store.due_timers(1e17).await, "due").is_empty(),
        "each guard matched its own value"
    );
}

/// A commit's timer ops apply in order: cancel then re-arm (a self-transition on a timed state)
/// leaves the new timer armed, arm then cancel leaves none.
pub async fn a_timer_cancelled_and_rearmed_in_one_commit_stays_armed<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("rearm");
    let mut e = exe(&id);
    let arm = |fire_at| TimerOp::Schedule {
        path: "S".into(),
        fire_at,
    };
    let c = Commit {
        timers: vec![arm(10.0)],
        ..Commit::default()
    };
    ok(store.commit(&mut e, c).await, "arm");
    // a self-transition on a timed state: exit cancels, re-entry re-arms, in one step
    let c = Commit {
        timers: vec![TimerOp::Cancel { path: "S".into() }, arm(20.0)],
        ..Commit::default()
    };
    ok(store.commit(&mut e, c).await, "cancel + re-arm");
    assert_eq!(
        due_list(&store, 100.0).await,
        vec![(id.clone(), "S".into(), 20.0)]
    );
    // and the other way round: armed then cancelled in one step is disarmed
    let c = Commit {
        timers: vec![arm(30.0), TimerOp::Cancel { path: "S".into() }],
        ..Commit::default()
    };
    ok(store.commit(&mut e, c).await, "arm + cancel");
    assert!(due_list(&store, 100.0).await.is_empty());
}

/// The sweeper's look-ahead: the earliest armed `fire_at` not after the horizon, whatever the
/// execution; the timers the store armed itself are all indexed, none is legacy.
pub async fn next_timer_due_is_the_earliest_within_the_horizon<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    assert_eq!(ok(store.next_timer_due(1e17).await, "next"), None, "empty");
    let (a, b) = (unique("next-a"), unique("next-b"));
    let (mut ea, mut eb) = (exe(&a), exe(&b));
    let arm = |path: &str, fire_at: f64| TimerOp::Schedule {
        path: path.into(),
        fire_at,
    };
    let c = Commit {
        timers: vec![arm("X", 50.5), arm("Y", 70.0)],
        ..Commit::default()
    };
    ok(store.commit(&mut ea, c).await, "arm a");
    let c = Commit {
        timers: vec![arm("X", 30.25)],
        ..Commit::default()
    };
    ok(store.commit(&mut eb, c).await, "arm b");
    assert_eq!(
        ok(store.next_timer_due(30.0).await, "next"),
        None,
        "before the first"
    );
    assert_eq!(
        ok(store.next_timer_due(30.25).await, "next"),
        Some(30.25),
        "inclusive"
    );
    assert_eq!(
        ok(store.next_timer_due(1e17).await, "next"),
        Some(30.25),
        "across executions"
    );
    ok(store.delete_timer(&b, "X", 30.25).await, "fire b");
    assert_eq!(ok(store.next_timer_due(60.0).await, "next"), Some(50.5));
    // re-armed earlier: the look-ahead follows the row, not the first value it saw
    let c = Commit {
        timers: vec![arm("Y", 20.0)],
        ..Commit::default()
    };
    ok(store.commit(&mut ea, c).await, "re-arm a.Y");
    assert_eq!(ok(store.next_timer_due(60.0).await, "next"), Some(20.0));
    assert!(
        ok(store.legacy_due_timers(1e17).await, "legacy").is_empty(),
        "timers the store armed are indexed: none is legacy"
    );
    assert_eq!(
        due_list(&store, 1e17).await.len(),
        2,
        "due_timers sees them"
    );
}

/// The sweeper's one-pass look: every timer due at `now` (several per execution and many
/// executions, so an indexed store reads some of its partitions on past their first rows),
/// soonest first, and once nothing is due, the next `fire_at` within the horizon.
pub async fn due_and_next_is_the_due_timers_and_the_next_after_them<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let look = |now: f64, horizon: f64| {
        let store = &store;
        async move { ok(store.due_and_next(now, horizon).await, "due_and_next") }
    };
    assert_eq!(
        look(100.0, 1e17).await,
        crate::DueAndNext::default(),
        "empty"
    );
    let mut expected = Vec::new();
    for i in 0..20 {
        let id = unique(&format!("look-{i}"));
        let mut e = exe(&id);
        let timers = vec![
            TimerOp::Schedule {
                path: "A".into(),
                fire_at: 10.0 + i as f64,
            },
            TimerOp::Schedule {
                path: "B".into(),
                fire_at: 60.5 + i as f64,
            },
        ];
        let c = Commit {
            timers,
            ..Commit::default()
        };
        ok(store.commit(&mut e, c).await, "arm");
        expected.push((id.clone(), "A".to_string(), 10.0 + i as f64));
        expected.push((id, "B".to_string(), 60.5 + i as f64));
    }
    let (late, mut e) = {
        let id = unique("look-late");
        let e = exe(&id);
        (id, e)
    };
    let c = Commit {
        timers: vec![TimerOp::Schedule {
            path: "L".into(),
            fire_at: 500.0,
        }],
        ..Commit::default()
    };
    ok(store.commit(&mut e, c).await, "arm late");
    expected.sort_by(|a, b| a.2.total_cmp(&b.2));

    let pass = look(100.0, 1000.0).await;
    let due: Vec<(String, String, f64)> = pass
        .due
        .iter()
        .map(|t| (t.execution_id.clone(), t.path.clone(), t.fire_at))
        .collect();
    assert_eq!(due, expected, "every due timer, soonest first");
    assert!(
        matches!(pass.next, None | Some(500.0)),
        "with timers due, the next is the one after them or not known yet: {:?}",
        pass.next
    );
    let before = look(5.0, 1000.0).await;
    assert!(before.due.is_empty());
    assert_eq!(before.next, Some(10.0), "nothing due: the first to come");
    assert_eq!(
        look(5.0, 8.0).await,
        crate::DueAndNext::default(),
        "nothing by the horizon"
    );
    for (id, path, fire_at) in &expected {
        ok(store.delete_timer(id, path, *fire_at).await, "fire");
    }
    let after = look(100.0, 1000.0).await;
    assert!(after.due.is_empty(), "{:?}", after.due);
    assert_eq!(after.next, Some(500.0), "the late one, past the fired");
    assert_eq!(
        look(100.0, 400.0).await,
        crate::DueAndNext::default(),
        "beyond the horizon"
    );
    ok(store.delete_timer(&late, "L", 500.0).await, "fire late");
}

/// A machine version is kept by its first put (a second put is `false` and changes nothing),
/// and `commit_keeping` stores the version with the execution pinned to it.
pub async fn machine_versions_are_kept_once_and_pins_round_trip<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let version = unique("v");
    let doc = crate::DefinitionDoc {
        version: version.clone(),
        machine: "contract-def".into(),
        created_at: 1_700_000_000.5,
        document: json!({"format": "any", "config": {"states": {"A": {}}}}),
    };
    assert!(ok(store.get_definition(&version).await, "get absent").is_none());
    assert!(ok(store.put_definition(&doc).await, "first put"));
    let mut later = doc.clone();
    later.created_at += 10.0;
    assert!(
        !ok(store.put_definition(&later).await, "second put"),
        "a version is kept once"
    );
    assert_eq!(
        ok(store.get_definition(&version).await, "get"),
        Some(doc.clone()),
        "the first put stands"
    );

    // kept with the commit of the first execution pinned to it
    let other = crate::DefinitionDoc {
        version: unique("v"),
        ..doc
    };
    let id = unique("pin");
    let mut e = exe(&id);
    e.pin_version(&other.version);
    ok(
        store
            .commit_keeping(&mut e, Commit::default(), &other)
            .await,
        "commit keeping",
    );
    let loaded = ok(store.load(&id).await, "load").expect("committed");
    assert_eq!(loaded.pinned_version(), Some(other.version.as_str()));
    assert_eq!(loaded, e);
    assert_eq!(
        ok(store.get_definition(&other.version).await, "get kept"),
        Some(other)
    );
}

/// Events for the bus (`crate::events`; `make` gives a store that writes them): a commit
/// that changes the status writes one status change, and only a commit that is written
/// does; a step's domain events follow it; an ack removes exactly one; a failed attempt is
/// counted. The status compared with is the one the copy was read at.
pub async fn status_changes_and_domain_events_are_written_with_their_commit<S, F, Fut>(make: F)
where
    S: ExecutionStore,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let store = make(200).await;
    let id = unique("events");
    let mine = |store_events: Vec<crate::BusEvent>| -> Vec<crate::BusEvent> {
        store_events
            .into_iter()
            .filter(|e| e.execution_id == id)
            .collect()
    };
    let mut e = exe(&id);
    e.stamp(10.0);
    ok(store.commit(&mut e, Commit::default()).await, "create");
    let created = mine(ok(store.pending_published().await, "pending"));
    assert_eq!(created.len(), 1, "creating writes one status change");
    assert_eq!(created[0].detail_type, crate::events::STATUS_CHANGE);
    assert_eq!(created[0].detail["status"], json!("RUNNING"));
    assert_eq!(created[0].detail["previous_status"], json!(null));
    assert_eq!(created[0].detail["execution_id"], json!(id));
    assert_eq!(created[0].detail["machine"], json!("contract-def"));
    assert_eq!(created[0].detail["event_id"], json!(created[0].event_id));

    // the same status again: nothing; a stale copy's commit (refused): nothing
    let mut stale = ok(store.load(&id).await, "load").expect("stored");
    e.stamp(11.0);
    ok(store.commit(&mut e, Commit::default()).await, "same status");
    stale.status = Status::Failed;
    assert!(store.commit(&mut stale, Commit::default()).await.is_err());
    assert_eq!(
        mine(ok(store.pending_published().await, "pending")).len(),
        1,
        "neither an unchanged status nor a refused commit writes an event"
    );

    // a loaded copy remembers its status: DONE after RUNNING, with a domain event after it
    let mut fresh = ok(store.load(&id).await, "load").expect("stored");
    fresh.status = Status::Done;
    fresh.outcome = Some("success".into());
    fresh.stamp(12.0);
    let commit = Commit {
        published: vec![DomainEvent {
            detail_type: "OrderShipped".into(),
            detail: obj(json!({"order_id": "o-1"})),
        }],
        ..Commit::default()
    };
    ok(store.commit(&mut fresh, commit).await, "done");
    let all = mine(ok(store.pending_published().await, "pending"));
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(all[0].event_id, created[0].event_id, "oldest first");
    assert_eq!(all[1].detail["status"], json!("DONE"));
    assert_eq!(all[1].detail["previous_status"], json!("RUNNING"));
    assert_eq!(all[1].detail["outcome"], json!("success"));
    assert_eq!(all[2].detail_type, "OrderShipped");
    assert_eq!(all[2].detail["order_id"], json!("o-1"));
    let ids: HashSet<&str> = all.iter().map(|e| e.event_id.as_str()).collect();
    assert_eq!(ids.len(), 3, "every event has an id of its own");

    ok(store.retry_published(&all[1].event_id, 2).await, "retry");
    ok(store.ack_published(&[&all[0].event_id]).await, "ack");
    let left = mine(ok(store.pending_published().await, "pending"));
    assert_eq!(left.len(), 2, "an ack removes exactly one");
    assert_eq!(left[0].event_id, all[1].event_id);
    assert_eq!(left[0].attempts, 2, "a failed attempt is counted");
    let both: Vec<&str> = left.iter().map(|e| e.event_id.as_str()).collect();
    ok(store.ack_published(&both).await, "ack both");
    ok(store.ack_published(&both).await, "an ack of what is gone");
    assert!(
        mine(ok(store.pending_published().await, "pending")).is_empty(),
        "one ack removes a batch"
    );
}
