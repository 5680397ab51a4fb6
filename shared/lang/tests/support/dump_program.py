"""Dump harel's parse of a .stm file as JSON, in the shape harel-lang's Program uses
(ActionSpec -> {"__action__", "ref", "inputs"}, tuples -> lists)."""
import json
import sys
from pathlib import Path

from harel.dsl.parser import ActionSpec, parse


def conv(v):
    if isinstance(v, ActionSpec):
        return {"__action__": v.kind, "ref": v.ref, "inputs": conv(v.inputs)}
    if isinstance(v, dict):
        return {k: conv(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [conv(x) for x in v]
    return v


prog = parse(Path(sys.argv[1]).read_text())
print(json.dumps({
    "bindings": prog.bindings,
    "guards": conv(prog.guards),
    "events": conv(prog.events),
    "machines": conv(prog.machines),
    "fragments": conv(prog.fragments),
}))

if len(sys.argv) > 2:
    # the loader's resolved config for one machine, as handed to the builder
    from harel.dsl.loader import _resolve_cfg

    cfg, _name, _ = _resolve_cfg(Path(sys.argv[1]).read_text(), sys.argv[2], None, None, None)
    print(json.dumps(conv(cfg)))
