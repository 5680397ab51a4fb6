//! The storm's executions: machines compiled into the functions and event scripts whose final
//! state the script decides, played in global phases (every execution's events of a phase,
//! then quiet, then the clock moves), and the same scripts through harel-runtime's in-memory
//! `DurableRunner`, the reference.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use harel_model::{Event, Execution, Object};
use harel_runtime::{Clock, DurableRunner, ManualClock, RuntimeError};
use harel_store::prelude::*;
use harel_store::{Commit, CommitHook, Hooked, MemoryStore, StoreResult};
use serde_json::{json, Value};
use std::sync::Mutex;

/// Phase 0 creates; phases 1.. deliver events.
pub const PHASES: usize = 7;
/// The manual clock's start (epoch seconds).
pub const EPOCH: f64 = 1_000_000.0;

/// How far the clock moves once phase `p` is quiet (the timers then due are fired).
pub fn advance_after(phase: usize) -> Option<f64> {
    match phase {
        1 => Some(6.0),       // Flow's `Waiting { timeout 5 }`
        4 => Some(1_000.0),   // Order's `Checkout { timeout 900 }`
        5 => Some(200_000.0), // Approval's `Manager { timeout 172800 }`
        _ => None,
    }
}

/// One execution of the storm and the events it gets, phase by phase.
#[derive(Clone, Debug)]
pub(crate) struct Script {
    /// `x{n}-{kind}`: the execution's id, also its SQS message group.
    pub(crate) execution_id: String,
    /// The machine it runs (`Flow`, `Order`, `Approval`, `Fulfilment`, `StormFan`).
    pub(crate) machine: &'static str,
    /// Its initial context.
    pub(crate) context: Object,
    /// `phases[p]`: the events sent in phase p (index 0 is empty: the create).
    pub(crate) phases: Vec<Vec<Event>>,
    /// Which of [`KINDS`] it is (the report counts them).
    pub(crate) kind: &'static str,
}

fn obj(v: Value) -> Object {
    match v {
        Value::Object(o) => o,
        _ => Object::new(),
    }
}

/// The kinds of script, each a path through a machine: emits, timers, forks and joins,
/// region broadcasts, cancel-on-failure, counters a double application would show.
pub const KINDS: [&str; 12] = [
    "fanout-ok",
    "fanout-review",
    "flow-full",
    "flow-fork",
    "flow-boom",
    "order-paid",
    "order-declined",
    "order-abandoned",
    "order-cancelled",
    "fulfilment-ok",
    "fulfilment-failed",
    "approval",
];

/// One execution's script: `kind` from [`KINDS`], `n` its number (ids and data vary by it).
pub(crate) fn script(kind: &'static str, n: usize) -> Script {
    let id = format!("x{n}-{kind}");
    let ev = |phase: usize, k: &str, data: Value| {
        Event::new(k)
            .with_id(format!("{id}-p{phase}-{k}"))
            .with_data(obj(data))
    };
    let mut phases: Vec<Vec<Event>> = vec![Vec::new(); PHASES];
    let (machine, context) = match kind {
        "flow-full" | "flow-fork" | "flow-boom" => ("Flow", json!({"amount": n as i64 % 97})),
        "approval" => ("Approval", json!({"limit": 1000.0})),
        "fanout-ok" => ("StormFan", json!({"items": [1, 2, n as i64 % 10]})),
        "fanout-review" => ("StormFan", json!({"items": [1, 50]})),
        k if k.starts_with("order") => ("Order", json!({"items": 1 + n as i64 % 5})),
        _ => ("Fulfilment", json!({})),
    };
    match kind {
        "flow-full" => {
            phases[1].push(ev(1, "Go", json!({})));
            phases[2].push(ev(2, "DoneA", json!({})));
            phases[3].push(ev(3, "DoneB", json!({})));
            phases[4].push(ev(4, "Ship", json!({"carrier": format!("c{n}")})));
        }
        "flow-fork" => {
            phases[1].push(ev(1, "Go", json!({})));
            phases[3].push(ev(3, "DoneB", json!({})));
        }
        "flow-boom" => phases[1].push(ev(1, "Boom", json!({}))),
        // the checks run and join during the create; the inline instances' timers fire
        // after phase 1
        "fanout-ok" => {}
        "fanout-review" => phases[2].push(ev(2, "Stop", json!({}))),
        "order-paid" => {
            phases[1].push(ev(1, "PlaceOrder", json!({})));
            phases[2].push(ev(
                2,
                "PaymentAuthorized",
                json!({"amount": n as f64 + 0.5}),
            ));
            phases[3].push(ev(3, "Shipped", json!({"carrier": "ups"})));
            phases[5].push(ev(5, "Delivered", json!({})));
        }
        "order-declined" => {
            phases[1].push(ev(1, "PlaceOrder", json!({})));
            // two events of one phase: the group keeps their order
            phases[2].push(ev(2, "PaymentDeclined", json!({"reason": "card"})));
            phases[2].push(ev(2, "PaymentDeclined", json!({})).with_id(format!("{id}-p2-again")));
            phases[3].push(ev(3, "PaymentDeclined", json!({"reason": "limit"})));
        }
        "order-abandoned" => phases[1].push(ev(1, "PlaceOrder", json!({}))),
        "order-cancelled" => phases[1].push(ev(1, "CancelOrder", json!({}))),
        "fulfilment-ok" => {
            phases[1].push(ev(1, "Picked", json!({})));
            phases[2].push(ev(2, "PaymentCaptured", json!({})));
            phases[3].push(ev(3, "Packed", json!({"parcel": format!("P-{n}")})));
            phases[5].push(ev(5, "Delivered", json!({})));
        }
        "fulfilment-failed" => {
            phases[1].push(ev(1, "Picked", json!({})));
            phases[2].push(ev(2, "PaymentFailed", json!({"reason": "declined"})));
        }
        _ => {
            // even: a director signs twice; odd: the manager's silence escalates it
            if n.is_multiple_of(2) {
                phases[1].push(ev(1, "Submit", json!({"amount": 5000.0})));
                phases[2].push(ev(2, "Approve", json!({"by": "bob"})));
                phases[3].push(ev(3, "Approve", json!({"by": "cho"})));
            } else {
                phases[1].push(ev(1, "Submit", json!({"amount": 250.0})));
                phases[6].push(ev(6, "Approve", json!({"by": "dan"})));
            }
        }
    }
    Script {
        execution_id: id,
        machine,
        context: obj(context),
        phases,
        kind,
    }
}

/// The app's machines, the tests' `Flow` (`harel_testkit::machines`) and the storm's own
/// (`storm.stm`: submachines and fan-out).
pub fn definitions() -> Vec<harel_model::Definition> {
    const STORM: &str = include_str!("storm.stm");
    let mut all = harel_app::machines::definitions().expect("the app's machines load");
    all.extend(harel_testkit::machines::flow());
    let program = harel_lang::parse(STORM, "storm.stm").expect("storm.stm parses");
    for name in program.machines.keys() {
        all.push(harel_lang::load_str(STORM, Some(name), "storm.stm").expect("storm.stm loads"));
    }
    all
}

/// The app's Rust actions and `Flow`'s.
pub fn actions() -> harel_runtime::ActionRegistry {
    let mut actions = harel_app::actions::actions();
    harel_testkit::machines::register_flow_actions(&mut actions);
    actions
}

/// `count` scripts: one of each kind first, then kinds drawn from `rng`.
pub(crate) fn scripts(count: usize, rng: &mut fastrand::Rng) -> Vec<Script> {
    (0..count)
        .map(|n| {
            let kind = KINDS.get(n).copied();
            script(kind.unwrap_or_else(|| KINDS[rng.usize(0..KINDS.len())]), n)
        })
        .collect()
}

/// The reference: the same scripts through the in-memory `DurableRunner`.
pub(crate) struct Reference {
    /// The runner, with the clock and the machines the storm used, after the last phase.
    pub(crate) runner: DurableRunner<MarkingStore>,
    /// Domain events a root broadcast to live regions: the worker commits the root's
    /// processed mark for each (harel's `route_flow`), the durable runner does not (`inject_flow`).
    pub(crate) broadcasts: HashMap<String, HashSet<String>>,
}

impl Reference {
    /// The in-memory store under the mark counting.
    pub(crate) fn store(&self) -> &MemoryStore {
        &self.runner.store().inner
    }

    /// How many processed marks each execution's commits wrote.
    pub(crate) fn marks(&self) -> HashMap<String, u64> {
        self.runner
            .store()
            .hook
            .marks
            .lock()
            .expect("marks lock")
            .clone()
    }

    /// Every execution the reference ended with, roots and children.
    pub(crate) async fn executions(&self) -> Vec<Execution> {
        self.store().executions()
    }
}

/// Runs `scripts` through the in-memory `DurableRunner`, phase for phase as the storm sends
/// them, the clock moved and the due timers fired as the storm does; a `RuntimeError` means
/// the scripts themselves are wrong (a storm cannot be judged against it).
pub(crate) async fn reference(scripts: &[Script]) -> Result<Reference, RuntimeError> {
    let clock = ManualClock::new(EPOCH);
    let runner = DurableRunner::new(Hooked::new(Box::default(), Marks::default()), definitions())
        .with_registry(actions())
        .with_clock(Arc::new(clock.clone()));
    let mut broadcasts: HashMap<String, HashSet<String>> = HashMap::new();
    for phase in 0..PHASES {
        for s in scripts {
            if phase == 0 {
                runner
                    .create(s.machine, Some(s.context.clone()), Some(&s.execution_id))
                    .await?;
                continue;
            }
            for event in &s.phases[phase] {
                let exe = runner
                    .get(&s.execution_id)
                    .await?
                    .expect("a scripted execution exists");
                if has_live_regions(&runner.store().inner, &exe).await
                    && !harel_runtime::CONTROL_EVENTS.contains(&event.kind.as_str())
                {
                    broadcasts
                        .entry(s.execution_id.clone())
                        .or_default()
                        .insert(event.id.to_string());
                }
                runner.process(&s.execution_id, event).await?;
            }
        }
        if let Some(dt) = advance_after(phase) {
            clock.advance(dt);
            while runner.fire_due_timers().await? > 0 {}
        }
    }
    let _ = clock.now();
    Ok(Reference { runner, broadcasts })
}

/// The worker's test for a broadcast: an unfinished region child that exists.
async fn has_live_regions(store: &MemoryStore, exe: &Execution) -> bool {
    for (cid, cs) in &exe.children {
        if !cs.finished && !cs.submachine && matches!(store.load(cid).await, Ok(Some(_))) {
            return true;
        }
    }
    false
}

/// The reference's store: the in-memory store, counting each execution's processed marks (the
/// engine's own events get random ids, so the marks are compared by number).
pub type MarkingStore = Hooked<Box<MemoryStore>, Marks>;

/// Processed marks written, per execution.
#[derive(Default)]
pub struct Marks {
    marks: Mutex<HashMap<String, u64>>,
}

impl CommitHook<MemoryStore> for Marks {
    async fn commit(
        &self,
        inner: &MemoryStore,
        exe: &mut Execution,
        commit: Commit,
    ) -> StoreResult<Vec<u64>> {
        let marks = commit.processed_event_id.is_some();
        let seqs = inner.commit(exe, commit).await?;
        if marks {
            *self
                .marks
                .lock()
                .expect("marks lock")
                .entry(exe.id.to_string())
                .or_default() += 1;
        }
        Ok(seqs)
    }
}
