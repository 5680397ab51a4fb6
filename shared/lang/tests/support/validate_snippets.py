"""For each snippet of a file (one a line, `⏎` for a newline), print one JSON line: null
when harel cannot parse it, else {machine: [issue, ...] | {"error": message}} with harel's
load (build) outcome and validation issues per machine."""
import json
import sys

from harel.definition.validate import validate
from harel.dsl import definition_from_dsl
from harel.dsl.parser import parse

for line in open(sys.argv[1], encoding="utf-8").read().splitlines():
    text = line.replace("⏎", "\n")
    try:
        machines = list(parse(text).machines)
    except Exception:
        print("null")
        continue
    out = {}
    for name in machines:
        try:
            out[name] = [str(i) for i in validate(definition_from_dsl(text, name))]
        except Exception as exc:  # noqa: BLE001 - any load failure counts as one
            out[name] = {"error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}
    print(json.dumps(out))
