# Record what harel 0.9.0 (Python) does with each engine spec: the golden files of
# tests/golden.rs. Regenerate with:
#   for f in shared/engine/tests/specs/*.json; do .venv/bin/python shared/engine/tests/harel_trace.py $f > ${f%.json}.harel.jsonl; done
import json, sys
from harel.definition.builder import build_definition
from harel import engine
from harel.engine.execution import Execution
from harel.spec.states import Event
spec = json.load(open(sys.argv[1]))
d = build_definition(spec["machine"], None, "m")
exe = Execution(id="e1", definition_id="m", context=spec.get("context", {}),
                parent_id=spec.get("parent_id"), child_id=spec.get("child_id"), root_path=spec.get("root_path", ""))
sel = {k: list(v) for k, v in spec.get("selector", {}).items()}
fail = spec.get("fail", {})
state = {"now": spec.get("now", 0.0)}
class Boom(Exception): pass
def drive(gen):
    out = []; tail = []
    try:
        eff = next(gen)
        while True:
            if isinstance(eff, (engine.RunSelector, engine.RunAction)):
                sel_ = isinstance(eff, engine.RunSelector)
                f = (eff.selector.action if sel_ else eff.action).function
                out.append(["call", f, "selector" if sel_ else eff.hook.value])
                if f in fail:
                    gen.close(); out.append(["error", fail[f], "boom"]); return out
                v = (sel[f].pop(0) if sel.get(f) else None) if sel_ else None
                eff = gen.send(engine.ActionResult(value=v))
            elif isinstance(eff, engine.ScheduleTimer):
                delay = eff.delay if eff.delay is not None else float(exe.context.get(eff.context_key, 0.0))
                tail.append(["schedule", eff.path, state["now"] + delay])
                eff = gen.send(state["now"] + delay)
            elif isinstance(eff, engine.CancelTimer):
                tail.append(["cancel", eff.path]); eff = gen.send(None)
            elif isinstance(eff, engine.Emit):
                tail.append(["emit", eff.to, eff.event.kind, eff.event.data]); eff = gen.send(None)
            elif isinstance(eff, engine.SpawnChildren):
                tail.append(["spawn", [[s.child_id, s.root_path, s.context] for s in eff.specs]]); eff = gen.send(None)
            else:
                eff = gen.send(None)
    except StopIteration:
        pass
    except Exception as e:
        out.append(["error", type(e).__name__, str(e)]); return out
    # the Rust engine collects deferred effects as data: timers, then emits, then spawns
    order = {"schedule": 0, "cancel": 0, "emit": 1, "spawn": 2}
    tail.sort(key=lambda x: order[x[0]])
    return out + tail
print(json.dumps(["start", drive(engine.start(d, exe))]))
for step in spec.get("events", []):
    kind, data = step[0], step[1]
    ev = Event(kind=kind, data=data, **({"id": step[2]} if len(step) > 2 and step[2] else {}))
    if len(step) > 3: state["now"] = step[3]
    print(json.dumps([kind, drive(engine.process(d, exe, ev))]))
dump = json.loads(exe.model_dump_json())
for k in ("created_at", "updated_at"): dump.pop(k, None)
for e in dump["deferred"]:
    pass
print(json.dumps(dump))
