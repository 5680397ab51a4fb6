"""The harel Python half of the differential test.

Runs one machine through harel 0.9.0's `DurableRunner` over a `DictStore`, with the same
command line as our `harel run --json`, and prints the final root Execution as harel JSON
(one document on stdout, nothing else):

    run_harel.py FILE [NAME] [-e KIND[:JSON] | -e +30s ...] [--seed JSON]
                 [--selector NAME=VALUE ...] [--fail NAME ...] [--timers-by-fire-at]
                 [--children]
    run_harel.py --batch    < [[ARGS...], ...]     (many runs, one Python start-up)
    run_harel.py --serve    (one JSON argument list a line in, one result a line out)

It answers actions the way our CLI does: an action that does not import for real is a
no-op returning None, and `--selector NAME=VALUE` fixes what a selector returns (NAME: the
dotted path as written or bound, or the bare handler name; VALUE: JSON when it parses, else a
string; repeating the flag for one NAME gives successive values, an unconfigured selector
returns None). Real importable actions (`harel.lib.*`) stay real. `--fail NAME` makes that
action raise `RuntimeError("NAME failed")`, for the `on error` cases only harel can run.
`--children` prints a JSON list instead: the root, then every execution it spawned (regions,
submachines, fan-out instances), by id. `--timers-by-fire-at` sweeps due timers earliest first, as harel's DynamoDBStore does, where
its DictStore sweeps them in the order they were first armed.

The clock is ours: it starts at a fixed epoch and moves only on `-e +Ns` (also `m`, `h`),
after which due timers are swept once (`runner.fire_due_timers()`), as `harel run -e +30s`
does on our side. A rejected input (a typed event that does not fit, a context that breaks
its schema) prints `error: <harel's message>` on stderr and exits 1.
"""

from __future__ import annotations

import argparse
import copy
import logging
import importlib
import json
import re
import sys
from pathlib import Path

# any fixed point works: every wall-clock field is dropped before comparing
CLOCK_START = 1_700_000_000.0
_UNITS = {"s": 1, "m": 60, "h": 3600}


class Answers:
    """What the stand-in actions return: per-name queues of selector answers, and the set of
    actions told to fail."""

    def __init__(self, selectors: list[str], failing: list[str], bindings: dict[str, str]) -> None:
        self.queues: dict[str, list] = {}
        for spec in selectors:
            name, sep, raw = spec.partition("=")
            if not sep:
                raise SystemExit(f"error: --selector {spec!r} is not NAME=VALUE")
            try:
                value = json.loads(raw)
            except json.JSONDecodeError:
                value = raw
            self.queues.setdefault(self._canonical(name, bindings), []).append(value)
        self.failing = {self._canonical(name, bindings) for name in failing}

    @staticmethod
    def _canonical(name: str, bindings: dict[str, str]) -> str:
        # a bare handler name stands for the path its `bind` maps it to
        return bindings.get(name, name)

    def stand_in(self, path: str):
        def action(stm, event, **inputs):
            if path in self.failing:
                raise RuntimeError(f"{path} failed")
            queue = self.queues.get(path)
            if not queue:
                return None
            # successive calls take successive answers; the last one then repeats
            return queue.pop(0) if len(queue) > 1 else queue[0]

        action.__name__ = path.rsplit(".", 1)[-1]
        return action


def _importable(path: str) -> bool:
    module_name, _, name = path.rpartition(".")
    if not module_name:
        return False
    try:
        return hasattr(importlib.import_module(module_name), name)
    except ImportError:
        return False


def _action_refs(defn):
    """Every ActionRef of the Definition: hooks and selectors."""
    for node in defn.index.values():
        for ref in (node.on_enter, node.on_exit, node.on_activity):
            if ref is not None:
                yield ref
        for t in node.transitions:
            if t.selector is not None:
                yield t.selector.action


def _bind_stand_ins(defn, answers: Answers) -> None:
    for ref in _action_refs(defn):
        fn = ref.function
        if isinstance(fn, str) and (fn in answers.failing or fn in answers.queues or not _importable(fn)):
            ref.function = answers.stand_in(fn)


def _by_fire_at(store_class):
    """`store_class` sweeping due timers earliest first, as harel's DynamoDBStore does (its
    DictStore sweeps them in the order their keys were first armed). Ties go by path, the
    order of the durable stores' key (our contract, and our stores' order)."""

    class ByFireAt(store_class):
        def due_timers(self, now: float):
            return sorted(super().due_timers(now), key=lambda t: (t[2], t[1]))

    return ByFireAt


_LOADED: dict = {}


def _load(path: Path, name):
    """The file's bindings and a private copy of its Definition (stand-ins are bound into
    it). Parsing dominates a run, so a batch parses each (file, machine) once."""
    from harel.dsl import definition_from_dsl_file
    from harel.dsl.parser import parse

    key = (path.resolve(), name, path.stat().st_mtime_ns)
    if key not in _LOADED:
        import harel.dsl.loader as loader

        # the loader parses the text again: hand it this parse (Earley parsing dominates)
        text = path.read_text()
        program = parse(text)
        real_parse = loader.parse
        loader.parse = lambda t, *a, **k: program if t == text else real_parse(t, *a, **k)
        try:
            _LOADED[key] = (program.bindings, definition_from_dsl_file(path, name))
        finally:
            loader.parse = real_parse
    bindings, defn = _LOADED[key]
    return bindings, copy.deepcopy(defn)


def _duration(step: str) -> float | None:
    match = re.fullmatch(r"\+(\d+(?:\.\d+)?)([smh]?)", step)
    return None if match is None else float(match.group(1)) * _UNITS[match.group(2) or "s"]


def main(argv: list[str]) -> int:
    # harel logs an unhandled action error with its traceback; the JSON on stdout says it all
    logging.disable(logging.CRITICAL)
    from harel.definition.events import ContextError, EventError
    from harel.dsl import DslError
    from harel.engine.durable import DurableRunner
    from harel.engine.store import DictStore
    from harel.spec.states import Event

    p = argparse.ArgumentParser(prog="run_harel.py")
    p.add_argument("file")
    p.add_argument("name", nargs="?")
    p.add_argument("-e", "--event", action="append", default=[])
    p.add_argument("--seed")
    p.add_argument("--selector", action="append", default=[])
    p.add_argument("--fail", action="append", default=[])
    p.add_argument("--timers-by-fire-at", action="store_true")
    p.add_argument("--children", action="store_true")
    args = p.parse_args(argv)

    path = Path(args.file)
    try:
        bindings, defn = _load(path, args.name)
    except DslError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    answers = Answers(args.selector, args.fail, bindings)
    _bind_stand_ins(defn, answers)
    for sub in defn.submachines.values():  # inline and imported machines an `invoke` runs
        _bind_stand_ins(sub, answers)

    now = [CLOCK_START]
    store = _by_fire_at(DictStore)() if args.timers_by_fire_at else DictStore()
    runner = DurableRunner(store, {defn.id: defn}, clock=lambda: now[0], execution="inline")
    seed = json.loads(args.seed) if args.seed else None
    try:
        exe = runner.create(defn.id, context=seed)
        for step in args.event:
            delay = _duration(step)
            if delay is not None:
                now[0] += delay
                runner.fire_due_timers()
                exe = runner.store.load(exe.id)
                continue
            kind, sep, raw = step.partition(":")
            event = Event(kind=kind, data=json.loads(raw)) if sep else Event(kind=kind)
            exe = runner.process(exe.id, event)
    except (ContextError, EventError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.children:  # the root, then every execution it spawned, by id
        kids = [runner.store.load(i) for i in sorted(runner.store.ids_with_prefix(f"{exe.id}:"))]
        print(json.dumps([e.model_dump(mode="json") for e in [exe, *kids] if e is not None]))
        return 0
    print(json.dumps(exe.model_dump(mode="json")))
    return 0


def batch() -> int:
    """`--batch`: stdin holds a JSON list of argument lists; run each as above in this one
    process (harel's import dominates a run) and print a JSON list of
    `{"code", "stdout", "stderr"}`, one per run, in order."""
    import contextlib
    import io

    results = []
    for argv in json.load(sys.stdin):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
                if not isinstance(exc.code, int):
                    print(exc.code, file=sys.stderr)
            except Exception as exc:  # a crash of one run is that run's result, not the batch's
                import traceback

                traceback.print_exc()
                code = 3
        results.append({"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
    json.dump(results, sys.stdout)
    return 0


def _run_captured(argv: list[str]) -> dict:
    """One run with its stdout and stderr captured; a crash is that run's result (code 3)."""
    import contextlib
    import io
    import traceback

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
            if not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
        except Exception:
            traceback.print_exc()
            code = 3
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


class _Hung(BaseException):  # not caught as a crash of the run
    pass


def serve() -> int:
    """`--serve`: the generative test's long-lived harel. Each stdin line is a JSON argument
    list; each run's `{"code", "stdout", "stderr"}` is printed as one line and flushed. A run
    that spends more than `HAREL_SERVE_TIMEOUT` seconds (10) of CPU is cut off with code 4:
    harel loops for ever on some machines, and the rest of the cases must still run (CPU
    time, not wall time: on a loaded machine a run may wait long for a core)."""
    import os
    import signal

    limit = int(os.environ.get("HAREL_SERVE_TIMEOUT", "10"))

    def on_alarm(signum, frame):
        raise _Hung()

    signal.signal(signal.SIGVTALRM, on_alarm)
    for line in sys.stdin:
        if not line.strip():
            continue
        if len(_LOADED) > 32:  # every generated case is a new machine: keep memory flat
            _LOADED.clear()
        signal.setitimer(signal.ITIMER_VIRTUAL, limit)
        try:
            result = _run_captured(json.loads(line))
        except _Hung:
            result = {"code": 4, "stdout": "", "stderr": f"harel did not finish in {limit} s of CPU"}
        finally:
            signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        raise SystemExit(serve())
    raise SystemExit(batch() if sys.argv[1:] == ["--batch"] else main(sys.argv[1:]))
