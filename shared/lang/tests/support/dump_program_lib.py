"""harel's Program in the JSON shape harel-lang's Program uses (ActionSpec ->
{"__action__", "ref", "inputs"}, tuples -> lists)."""
from harel.dsl.parser import ActionSpec


def conv(v):
    if isinstance(v, ActionSpec):
        return {"__action__": v.kind, "ref": v.ref, "inputs": conv(v.inputs)}
    if isinstance(v, dict):
        return {k: conv(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [conv(x) for x in v]
    return v


def program_json(prog):
    return {
        "bindings": prog.bindings,
        "guards": conv(prog.guards),
        "events": conv(prog.events),
        "machines": conv(prog.machines),
        "fragments": conv(prog.fragments),
    }
