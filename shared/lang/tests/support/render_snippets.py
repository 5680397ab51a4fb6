"""For each snippet of a file (one a line, `⏎` for a newline), print one JSON line: null
when harel cannot load it, else {machine: {"plantuml": text|null, "mermaid": text|null}}
(null where harel's renderer fails an assertion)."""
import json
import sys

from harel.dsl import definition_from_dsl
from harel.dsl.parser import parse
from harel.viz import mermaid, plantuml

for line in open(sys.argv[1], encoding="utf-8").read().splitlines():
    text = line.replace("⏎", "\n")
    try:
        machines = list(parse(text).machines)
        defns = {name: definition_from_dsl(text, name) for name in machines}
    except Exception:
        print("null")
        continue
    out = {}
    for name, defn in defns.items():
        out[name] = {}
        for key, mod in (("plantuml", plantuml), ("mermaid", mermaid)):
            try:
                out[name][key] = mod.render(defn)
            except AssertionError:
                out[name][key] = None
    print(json.dumps(out))
