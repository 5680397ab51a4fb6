"""harel Python's side of the engine benchmark (scripts/bench-engine.sh runs it next to ours).

Two measurements on the same machines and events as `benches/engine.rs`:

- `engine`: harel's pure engine, `harel.engine.core.start/process` generators driven
  directly by a minimal in-memory driver (answer every action with None, create the regions
  a fork spawns, broadcast a domain event to the live regions, deliver `Finished` to the
  parent). This is what the Rust bench does with our engine: the like-for-like comparison.
- `runner`: `DurableRunner` over a `DictStore` (inline execution), the way an application
  drives harel: a store commit per step, dedupe, the outbox relay. Shown for context.

Prints one `RESULT <side> <machine> <events> <wall seconds> <CPU seconds>` line per
measurement (the engine's: the fastest of `--repeats` runs; the runner's: one run). CPU
seconds are the thread's own run time (`/proc/thread-self/schedstat`, as engine.rs reads
it): on a shared machine the wall clock also counts the time other processes held the core.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harel import engine
from harel.definition.events import with_defaults
from harel.dsl import definition_from_dsl_file
from harel.engine.durable import DurableRunner
from harel.engine.execution import Execution
from harel.engine.store import DictStore
from harel.spec.states import Event

HERE = Path(__file__).resolve().parent
_CONTROL = {"Start", "Reset", "Cancel", "SetState", "Finished", "Timeout"}
_NONE = engine.ActionResult(None)


def _noop(stm, event, **inputs):
    return None


def _load(name: str):
    defn = definition_from_dsl_file(HERE / "machines" / f"{name}.stm")
    # the runner resolves actions by path; bind every hook to a no-op, as our bench's host is
    for node in defn.index.values():
        for hook in ("on_enter", "on_exit", "on_activity"):
            ref = getattr(node, hook)
            if ref is not None:
                ref.function = _noop
    return defn


class PureDriver:
    """The minimal driver around harel's generators (mirrors `Driver` in engine.rs)."""

    def __init__(self, defn) -> None:
        self.defn = defn
        self.table: dict[str, Execution] = {}

    def _drive(self, exe: Execution, gen) -> None:
        spawns, emits = [], []
        try:
            effect = next(gen)
            while True:
                if isinstance(effect, (engine.RunAction, engine.RunSelector)):
                    effect = gen.send(_NONE)
                elif isinstance(effect, engine.ScheduleTimer):
                    effect = gen.send(0.0)
                elif isinstance(effect, engine.SpawnChildren):
                    spawns.extend(effect.specs)
                    effect = gen.send(None)
                elif isinstance(effect, engine.Emit):
                    emits.append(effect)
                    effect = gen.send(None)
                else:
                    effect = gen.send(None)
        except StopIteration:
            pass
        for spec in spawns:
            child = Execution(
                id=spec.child_id,
                definition_id=self.defn.id,
                root_path=spec.root_path,
                context=dict(spec.context),
                parent_id=exe.id,
                child_id=spec.child_id,
            )
            self.table[child.id] = child
            self._drive(child, engine.start(self.defn, child))
        for emit in emits:
            if emit.to is not None:
                self.deliver(emit.to, emit.event)

    def create(self) -> Execution:
        # as a runner creates it: the context schema's defaults filled in
        exe = Execution(definition_id=self.defn.id, context=with_defaults(self.defn.context_schema, {}))
        self.table[exe.id] = exe
        self._drive(exe, engine.start(self.defn, exe))
        return exe

    def deliver(self, exe_id: str, event: Event) -> None:
        exe = self.table[exe_id]
        if event.kind not in _CONTROL:
            live = [cid for cid, cs in exe.children.items() if not cs.finished and cid in self.table]
            if live:
                for cid in live:
                    self.deliver(cid, event)
                return
        self._drive(exe, engine.process(self.defn, exe, event))
        if exe.parent_id is not None and exe.status.value == "DONE":
            self.table.pop(exe.id, None)  # a finished region has reported: forget it


WORKLOADS = {
    "flat": ("flat", [Event(kind="Next", data={"n": 1})]),
    "orthogonal": ("orthogonal", [Event(kind="Left"), Event(kind="Right"), Event(kind="Again")]),
}


def _cpu() -> float | None:
    """This thread's CPU time in seconds (the kernel's `sum_exec_runtime`), None off Linux."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


class _Clock:
    """Wall and CPU time of a measured loop (CPU falls back to wall where unreadable)."""

    def __enter__(self) -> "_Clock":
        self._cpu = _cpu()
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self._wall
        cpu = _cpu()
        self.cpu = cpu - self._cpu if cpu is not None and self._cpu is not None else self.wall


def bench_engine(machine: str, events: int) -> tuple[float, float]:
    name, cycle = WORKLOADS[machine]
    driver = PureDriver(_load(name))
    exe = driver.create()
    with _Clock() as clock:
        for i in range(events):
            driver.deliver(exe.id, cycle[i % len(cycle)])
    _check(machine, exe, events)
    return clock.wall, clock.cpu


def bench_runner(machine: str, events: int) -> tuple[float, float]:
    name, cycle = WORKLOADS[machine]
    defn = _load(name)
    runner = DurableRunner(DictStore(), {defn.id: defn}, execution="inline")
    exe = runner.create(defn.id)
    with _Clock() as clock:
        for i in range(events):
            # a runner dedupes by event id: each delivery is a new event, as in production
            template = cycle[i % len(cycle)]
            exe = runner.process(exe.id, Event(kind=template.kind, data=dict(template.data)))
    _check(machine, exe, events)
    return clock.wall, clock.cpu


def _check(machine: str, exe: Execution, events: int) -> None:
    """The run did the work it claims: the machine went round as many times as it should."""
    if machine == "flat":
        expected = (events + 2) // 4  # S3 -> S4 (every 4th event, from the 3rd) bumps the count
        if exe.context.get("count") != expected:
            raise SystemExit(f"flat: count {exe.context.get('count')} after {events} events, expected {expected}")
    elif exe.invoke_seq.get("Fork") != (events + 1) // 3:
        raise SystemExit(f"orthogonal: {exe.invoke_seq.get('Fork')} joins after {events} events")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="harel_bench.py")
    p.add_argument("--events", type=int, default=30_000, help="events per measurement")
    p.add_argument("--repeats", type=int, default=5, help="pure-engine runs; the fastest counts")
    p.add_argument("--only", choices=sorted(WORKLOADS), help="one machine")
    p.add_argument("--engine-only", action="store_true", help="skip the DurableRunner measurement")
    args = p.parse_args(argv)
    sides = [("engine", bench_engine, args.repeats)]
    if not args.engine_only:
        sides.append(("runner", bench_runner, 1))
    for machine in [args.only] if args.only else ["flat", "orthogonal"]:
        for side, fn, repeats in sides:
            # a small warm-up run (imports, caches), then the best of the measured ones: a
            # shared machine's noise only ever slows a run down
            fn(machine, 300)
            runs = [fn(machine, args.events) for _ in range(repeats)]
            wall = min(r[0] for r in runs)
            cpu = min(r[1] for r in runs)
            print(f"RESULT python-{side} {machine} {args.events} {wall:.6f} {cpu:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
