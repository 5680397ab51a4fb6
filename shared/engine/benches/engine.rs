//! Engine throughput: events per second through the pure engine (no store, no runtime) on
//! a flat machine and an orthogonal one, and heap allocations per event, counted by a
//! counting global allocator. `scripts/bench-engine.sh` runs it next to harel Python's
//! engine on the same machines and events (`benches/harel_bench.py`) and prints the table.
//!
//!     cargo bench -p harel-engine --bench engine [-- --events N]
//!
//! Prints one `RESULT rust-engine <machine> <events> <wall seconds> <CPU seconds> <engine
//! allocations> <all allocations>` line per machine (plus a readable summary on stderr): the engine's own
//! allocations are counted around its `start`/`process` calls, the bench driver's region
//! records and broadcast lists apart.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Instant;

use harel_engine::blocking::{self, Ready};
use harel_engine::{process, run_ready, start, ActionCall, ActionError, StepEffects};
use harel_model::{Definition, Event, Execution, Object, SmolStr, Status};
use serde_json::Value;

/// Counts every allocation (and reallocation, which may move) made through the global
/// allocator, so a run can report allocations per event.
struct Counting;

thread_local! {
    /// Per thread, so counting costs a plain add rather than a locked (atomic) one on every
    /// allocation: the bench measures on one thread, and the count should weigh as little
    /// as possible on what it measures. Const-initialised with no destructor, so reading it
    /// inside the allocator never allocates.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_allocation() {
    ALLOCATIONS.with(|n| n.set(n.get() + 1));
}

/// Allocations made on this thread so far.
fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_allocation();
        // SAFETY: forwarded unchanged to the system allocator, with the caller's guarantees
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through `alloc`/`realloc` above
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_allocation();
        // SAFETY: as above; `ptr`/`layout` describe a live block of ours
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Every action answers null at once, as harel's bench driver answers `ActionResult(None)`.
struct NullHost;

impl blocking::Host for NullHost {
    fn call(&mut self, _call: ActionCall<'_>) -> Result<Value, ActionError> {
        Ok(Value::Null)
    }

    fn now(&mut self) -> f64 {
        0.0
    }
}

/// The minimal driver around the engine (the same as `PureDriver` in harel_bench.py):
/// create the regions a fork spawns, broadcast a domain event to the live regions, deliver
/// `Finished` to the parent.
struct Driver<'d> {
    defn: &'d Definition,
    engine: Engine,
    /// The execution the bench feeds, kept apart so its per-event lookup is a string
    /// comparison rather than a hash of its id (Python's dict has the str's hash cached).
    root: Execution,
    /// The live regions (harel_bench.py keeps them in a dict by id; a fork has a handful,
    /// so a scan of their ids finds one faster than hashing its id would).
    regions: Vec<Execution>,
    host: Ready<NullHost>,
    /// Allocations made inside the engine's `start`/`process` calls (the driver's own
    /// bookkeeping excluded).
    engine_allocs: u64,
    /// Recycled buffers for the snapshot of live regions a broadcast goes to (harel_bench.py
    /// builds a list of the same ids; reusing the lists keeps the driver's own allocations
    /// out of the way of the engine's).
    spare: Vec<Vec<String>>,
}

/// Which of the crate's two compilations of the step rules a run drives.
#[derive(Clone, Copy, PartialEq)]
enum Engine {
    /// `harel_engine::blocking`: plain calls, for hosts whose actions answer at once.
    Blocking,
    /// `harel_engine::{start, process}`: the async engine the runtime drives, its ready
    /// futures polled once.
    Async,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Blocking => "rust-engine",
            Engine::Async => "rust-async",
        }
    }

    fn start(
        self,
        defn: &Definition,
        exe: &mut Execution,
        host: &mut Ready<NullHost>,
    ) -> StepEffects {
        let done = match self {
            Engine::Blocking => blocking::start(defn, exe, &mut host.0),
            Engine::Async => {
                run_ready(start(defn, exe, host)).expect("the null host answers at once")
            }
        };
        done.expect("the execution starts")
    }

    fn process(
        self,
        defn: &Definition,
        exe: &mut Execution,
        event: &Event,
        host: &mut Ready<NullHost>,
    ) -> StepEffects {
        let done = match self {
            Engine::Blocking => blocking::process(defn, exe, event, &mut host.0),
            Engine::Async => {
                run_ready(process(defn, exe, event, host)).expect("the null host answers at once")
            }
        };
        done.expect("the event is processed")
    }
}

/// harel's control events: never broadcast to regions (`_CONTROL` in harel_bench.py).
fn is_control(kind: &str) -> bool {
    matches!(
        kind,
        "Start" | "Reset" | "Cancel" | "SetState" | "Finished" | "Timeout"
    )
}

impl<'d> Driver<'d> {
    /// Creates and starts the root execution, as a runner does (the context schema's
    /// defaults filled in), and the regions it may fork.
    fn start(defn: &'d Definition, engine: Engine) -> Self {
        let mut root = Execution::new(defn.id.clone());
        root.context = harel_model::schema::with_defaults(&defn.context_schema, &Object::new());
        let mut driver = Driver {
            defn,
            engine,
            root,
            regions: Vec::new(),
            host: Ready(NullHost),
            engine_allocs: 0,
            spare: Vec::new(),
        };
        let fx = engine.start(defn, &mut driver.root, &mut driver.host);
        let id = driver.root.id.clone();
        driver.handle(&id, fx);
        driver
    }

    fn deliver(&mut self, exe_id: &str, event: &Event) {
        let mut live = self.spare.pop().unwrap_or_default();
        let regions = self.step(exe_id, event, &mut live);
        for child in &live[..regions] {
            self.deliver(child, event);
        }
        self.spare.push(live);
    }

    /// Processes `event` for `exe_id`, or, for a domain event while regions are live,
    /// writes their ids to `live` and returns how many to broadcast to.
    fn step(&mut self, exe_id: &str, event: &Event, live: &mut Vec<String>) -> usize {
        let at = if self.root.id == exe_id {
            None
        } else {
            match self.regions.iter().position(|r| r.id == exe_id) {
                Some(at) => Some(at),
                None => return 0,
            }
        };
        let exe = match at {
            None => &mut self.root,
            Some(at) => &mut self.regions[at],
        };
        if !is_control(&event.kind) && exe.children.values().any(|c| !c.finished) {
            // copied into the recycled buffers (a shared id's clone is an atomic count)
            let mut n = 0;
            for (id, _) in exe.children.iter().filter(|(_, cs)| !cs.finished) {
                match live.get_mut(n) {
                    Some(slot) => {
                        slot.clear();
                        slot.push_str(id);
                    }
                    None => live.push(id.to_string()),
                }
                n += 1;
            }
            return n;
        }
        let before = allocations();
        let fx = self.engine.process(self.defn, exe, event, &mut self.host);
        self.engine_allocs += allocations() - before;
        // the id (an atomic count to bump) only when the step spawned regions to parent
        let id = (!fx.spawns.is_empty()).then(|| exe.id.clone());
        if let (Some(at), true) = (at, exe.status == Status::Done) {
            // a finished region has reported (its `Finished` is in `fx`): forget it
            // dropped in place (swap_remove would move it out, and the last region in)
            self.regions.drain(at..=at);
        }
        match id {
            Some(id) => self.handle(&id, fx),
            None => self.deliver_emits(fx.emits),
        }
        0
    }

    fn handle(&mut self, parent_id: &SmolStr, fx: StepEffects) {
        for spec in fx.spawns {
            // built in its slot, not moved there after it starts
            self.regions.push(Execution::with_ids(
                spec.child_id,
                SmolStr::from(&self.defn.id),
            ));
            let child = self.regions.last_mut().expect("just pushed");
            child.root_path = spec.root_path;
            child.context = spec.context;
            child.parent_id = Some(parent_id.clone());
            child.child_id = Some(child.id.clone());
            let before = allocations();
            let child_fx = self.engine.start(self.defn, child, &mut self.host);
            self.engine_allocs += allocations() - before;
            if child_fx.spawns.is_empty() {
                self.deliver_emits(child_fx.emits);
            } else {
                let id = child.id.clone();
                self.handle(&id, child_fx);
            }
        }
        self.deliver_emits(fx.emits);
    }

    fn deliver_emits(&mut self, emits: Vec<(Option<SmolStr>, Event)>) {
        for (to, event) in &emits {
            if let Some(to) = to {
                self.deliver(to, event);
            }
        }
    }
}

struct Workload {
    machine: &'static str,
    source: &'static str,
    cycle: Vec<Event>,
}

fn workloads() -> Vec<Workload> {
    let mut n = Object::new();
    n.insert("n".into(), Value::from(1));
    vec![
        Workload {
            machine: "flat",
            source: include_str!("machines/flat.stm"),
            cycle: vec![Event::new("Next").with_data(n)],
        },
        Workload {
            machine: "orthogonal",
            source: include_str!("machines/orthogonal.stm"),
            cycle: vec![Event::new("Left"), Event::new("Right"), Event::new("Again")],
        },
    ]
}

/// The CPU time this thread has run, in seconds (the kernel's `sum_exec_runtime`, read
/// from `/proc/thread-self/schedstat`, as harel_bench.py reads it): on a shared machine the
/// wall clock also counts the time other processes held the core. None off Linux.
fn thread_cpu_secs() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

/// One measured run.
struct Run {
    wall_secs: f64,
    /// Falls back to the wall time where the thread's CPU time can't be read.
    cpu_secs: f64,
    engine_allocs: u64,
    allocs: u64,
}

/// Runs `events` events of the workload; returns the loop's wall and CPU seconds, the
/// allocations made inside the engine, and all allocations (the driver's bookkeeping too).
fn measure(defn: &Definition, work: &Workload, events: usize, engine: Engine) -> Run {
    let mut driver = Driver::start(defn, engine);
    let id = driver.root.id.clone();
    driver.engine_allocs = 0;
    let allocs_before = allocations();
    let cpu_started = thread_cpu_secs();
    let started = Instant::now();
    for i in 0..events {
        driver.deliver(&id, &work.cycle[i % work.cycle.len()]);
    }
    let wall_secs = started.elapsed().as_secs_f64();
    let cpu_secs = match (cpu_started, thread_cpu_secs()) {
        (Some(a), Some(b)) => b - a,
        _ => wall_secs,
    };
    let allocs = allocations() - allocs_before;
    check(work.machine, &driver.root, events);
    Run {
        wall_secs,
        cpu_secs,
        engine_allocs: driver.engine_allocs,
        allocs,
    }
}

/// The run did the work it claims (the same checks as harel_bench.py).
fn check(machine: &str, exe: &Execution, events: usize) {
    if machine == "flat" {
        // S3 -> S4 (every 4th event, from the 3rd) bumps the count
        let expected = (events as u64 + 2) / 4;
        assert_eq!(
            exe.context.get("count").and_then(Value::as_u64),
            Some(expected),
            "flat: the ring went round the wrong number of times"
        );
    } else {
        assert_eq!(
            exe.invoke_seq.get("Fork").copied(),
            // the join happens on each Right (every 3rd event, from the 2nd)
            Some((events as u64 + 1) / 3),
            "orthogonal: the fork joined the wrong number of times"
        );
    }
}

/// Measured runs per engine and machine (`--repeats` overrides); the fastest is reported.
const REPEATS: usize = 15;

fn main() {
    // `cargo bench` passes `--bench`; take only what is ours
    let args: Vec<String> = std::env::args().collect();
    let events = args
        .iter()
        .position(|a| a == "--events")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse::<usize>().expect("--events takes a count"))
        .unwrap_or(300_000);
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    // `--only flat`: one machine; `--engine async`: one engine (for a profiler)
    let only = flag("--only");
    let repeats = flag("--repeats").map_or(REPEATS, |n| {
        n.parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .expect("--repeats takes a positive count")
    });
    let engines = match flag("--engine").as_deref() {
        None => vec![Engine::Blocking, Engine::Async],
        Some("blocking") => vec![Engine::Blocking],
        Some("async") => vec![Engine::Async],
        Some(other) => panic!("--engine takes blocking or async, not {other:?}"),
    };
    for work in workloads() {
        if only.as_deref().is_some_and(|m| m != work.machine) {
            continue;
        }
        let defn = harel_lang::load_str(work.source, None, work.machine)
            .unwrap_or_else(|e| panic!("the {} bench machine loads: {e}", work.machine));
        // warm-up: caches, allocator pools
        for &engine in &engines {
            measure(&defn, &work, events / 10, engine);
        }
        // the best of many runs, the engines taking turns so they sample the same stretch of
        // a shared machine's noise (which only ever slows a run down)
        let mut runs: Vec<Vec<Run>> = engines.iter().map(|_| Vec::new()).collect();
        for _ in 0..repeats {
            for (i, &engine) in engines.iter().enumerate() {
                runs[i].push(measure(&defn, &work, events, engine));
            }
        }
        for (&engine, runs) in engines.iter().zip(&runs) {
            report(&work, events, engine, runs);
        }
    }
}

/// Prints one engine's best run on one machine, and its RESULT line.
fn report(work: &Workload, events: usize, engine: Engine, runs: &[Run]) {
    let n = runs.len();
    let wall = runs
        .iter()
        .map(|r| r.wall_secs)
        .fold(f64::INFINITY, f64::min);
    let cpu = runs
        .iter()
        .map(|r| r.cpu_secs)
        .fold(f64::INFINITY, f64::min);
    // the same work every run: the allocation counts agree
    let (engine_allocs, allocs) = (runs[0].engine_allocs, runs[0].allocs);
    eprintln!(
            "{:<11} {:<11} {:>9} events in {:.3}s wall, {:.3}s CPU (best of {n}): {:>12.0} events/CPU-s, \
             {:.1} allocations/event in the engine ({:.1} with the bench driver's)",
            engine.name(),
            work.machine,
            events,
            wall,
            cpu,
            events as f64 / cpu,
            engine_allocs as f64 / events as f64,
            allocs as f64 / events as f64
        );
    println!(
        "RESULT {} {} {events} {wall:.6} {cpu:.6} {engine_allocs} {allocs}",
        engine.name(),
        work.machine
    );
}
