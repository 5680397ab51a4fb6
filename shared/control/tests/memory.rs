//! The control plane's rules on the in-memory store: redrive's checks, the retry on a
//! concurrent writer, the no-ops.

use std::sync::atomic::{AtomicUsize, Ordering};

use harel_control::{Command, ControlError, RETRIES};
use harel_model::{Definition, Event, Execution, Object, Status};
use harel_store::prelude::*;
use harel_store::{Commit, CommitHook, ExecutionStore, Hooked, MemoryStore, StoreResult};

const MACHINES: &str = include_str!("machines/control.stm");
const NOW: f64 = 1_700_000_000.0;

fn defn(name: &str) -> Definition {
    harel_lang::load_str(MACHINES, Some(name), "control.stm").expect(name)
}

async fn stored(store: &impl ExecutionStore, exe: Execution) -> Execution {
    let mut exe = exe;
    store
        .commit(&mut exe, Commit::default())
        .await
        .expect("insert");
    exe
}

fn failed_job(id: &str) -> Execution {
    let mut exe = Execution::new("Job").with_id(id);
    exe.status = Status::Failed;
    exe.error = Some("ValueError: boom".into());
    exe.active_path = Some("Working".into());
    exe.history.insert("".into(), "Working".into());
    exe
}

#[tokio::test]
async fn redrive_brings_a_dead_letter_back_at_the_chosen_leaf() {
    let store = MemoryStore::new();
    stored(&store, failed_job("f1")).await;
    let out = harel_control::redrive(&store, &defn("Job"), "f1", "Working", NOW)
        .await
        .expect("redrive");
    let step = out.own_step().expect("written");
    assert_eq!(step.command, Command::Redrive);
    assert_eq!(
        (step.from_status, step.to_status),
        (Status::Failed, Status::Running)
    );
    let exe = store.load("f1").await.expect("load").expect("exists");
    assert_eq!(exe.status, Status::Running);
    assert_eq!(exe.error, None);
    assert!(exe.history.is_empty(), "a partial history is discarded");
    assert_eq!(exe.updated_at, Some(NOW));
    // not FAILED any more: a second redrive is a no-op
    let again = harel_control::redrive(&store, &defn("Job"), "f1", "Working", NOW)
        .await
        .expect("no-op");
    assert!(!again.changed());
}

#[tokio::test]
async fn redrive_refuses_targets_harel_refuses_with_its_messages() {
    let store = MemoryStore::new();
    let mut split = Execution::new("Split").with_id("s1");
    split.status = Status::Failed;
    split.active_path = Some("Both".into());
    stored(&store, split).await;
    let split_defn = defn("Split");
    let cases = [
        ("Both", "redrive target must be a leaf state, got 'Both'"),
        (
            "Nowhere",
            "redrive target must be a leaf state, got 'Nowhere'",
        ),
        (
            "Both.Left.L1",
            "redrive target 'Both.Left.L1' is inside orthogonal state 'Both'",
        ),
    ];
    for (target, message) in cases {
        let err = harel_control::redrive(&store, &split_defn, "s1", target, NOW)
            .await
            .expect_err(target);
        assert!(matches!(err, ControlError::RedriveRefused(_)), "{err}");
        assert!(err.to_string().starts_with(message), "{target}: {err}");
    }
    let mut busy = failed_job("f2");
    busy.children.insert(
        "f2:x:0".into(),
        harel_model::ChildState {
            root_path: "x".into(),
            ..Default::default()
        },
    );
    stored(&store, busy).await;
    let err = harel_control::redrive(&store, &defn("Job"), "f2", "Working", NOW)
        .await
        .expect_err("unfinished child");
    assert!(err.to_string().contains("unfinished children"), "{err}");
    let exe = store.load("f2").await.expect("load").expect("exists");
    assert_eq!(exe.status, Status::Failed, "nothing written");
}

#[tokio::test]
async fn cancel_of_a_failed_execution_is_forceful_and_keeps_the_error() {
    let store = MemoryStore::new();
    stored(&store, failed_job("f3")).await;
    let out = harel_control::cancel(&store, &defn("Job"), "f3", NOW)
        .await
        .expect("cancel");
    assert_eq!(out.mode, Some(harel_control::CancelMode::Forceful));
    let exe = store.load("f3").await.expect("load").expect("exists");
    assert_eq!(exe.status, Status::Cancelled);
    assert_eq!(exe.error.as_deref(), Some("ValueError: boom"));
    assert_eq!(exe.finished_at, Some(NOW));
}

/// A store where another writer commits to the execution just before each of our first
/// `races` commits: ours then loses the version check.
#[derive(Default)]
struct Races {
    races: AtomicUsize,
}

type Racing = Hooked<Box<MemoryStore>, Races>;

impl CommitHook<MemoryStore> for Races {
    async fn commit(
        &self,
        inner: &MemoryStore,
        exe: &mut Execution,
        commit: Commit,
    ) -> StoreResult<Vec<u64>> {
        if self.races.load(Ordering::SeqCst) > 0 {
            self.races.fetch_sub(1, Ordering::SeqCst);
            let mut other = inner.load(&exe.id).await?.expect("exists");
            other.processed_events += 1;
            inner.commit(&mut other, Commit::default()).await?;
        }
        inner.commit(exe, commit).await
    }
}

fn running_job(id: &str) -> Execution {
    let mut exe = Execution::new("Job").with_id(id);
    exe.status = Status::Running;
    exe.active_path = Some("Working".into());
    exe
}

#[tokio::test]
async fn a_concurrent_writer_costs_a_retry_not_the_command() {
    let store = Racing::new(Box::default(), Races::default());
    stored(&store, running_job("r1")).await;
    store.hook.races.store(2, Ordering::SeqCst);
    let out = harel_control::cancel(&store, &defn("Job"), "r1", NOW)
        .await
        .expect("cancel");
    assert!(out.contended.is_empty());
    assert_eq!(
        out.enqueued.len(),
        1,
        "exactly one Cancel, from the winning attempt"
    );
    let exe = store.load("r1").await.expect("load").expect("exists");
    assert_eq!(exe.status, Status::Cancelling);
    assert_eq!(
        exe.processed_events, 2,
        "the other writer's commits are kept"
    );
    let pending = store.pending_outbox().await.expect("outbox");
    assert_eq!(pending.len(), 1, "the losing attempts enqueued nothing");
    assert_eq!(pending[0].event.kind, "Cancel");
}

#[tokio::test]
async fn after_every_retry_lost_the_command_gives_up_and_says_so() {
    let store = Racing::new(Box::default(), Races::default());
    stored(&store, running_job("r2")).await;
    store.hook.races.store(RETRIES, Ordering::SeqCst);
    let out = harel_control::suspend(&store, "r2", NOW)
        .await
        .expect("harel does not raise");
    assert!(!out.changed());
    assert_eq!(out.contended, vec!["r2".to_string()]);
    let exe = store.load("r2").await.expect("load").expect("exists");
    assert_eq!(exe.status, Status::Running);
}

#[tokio::test]
async fn the_cancel_reason_is_the_cancel_events_data() {
    let store = MemoryStore::new();
    stored(&store, running_job("c1")).await;
    let mut reason = Object::new();
    reason.insert("reason".into(), serde_json::json!("user_request"));
    let out = harel_control::cancel_with_reason(&store, &defn("Job"), "c1", reason.clone(), NOW)
        .await
        .expect("cancel");
    let event: &Event = &out.enqueued[0].event;
    assert_eq!(event.data, reason);
    assert_eq!(out.enqueued[0].target_id, "c1");
}
