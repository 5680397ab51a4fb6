"""Print harel's PlantUML and Mermaid renderings of one machine, as one JSON line
({"plantuml": text | null, "mermaid": text | null}; null when harel fails to render)."""
import json
import sys
from pathlib import Path

from harel.dsl import definition_from_dsl_file
from harel.viz import mermaid, plantuml

defn = definition_from_dsl_file(Path(sys.argv[1]), sys.argv[2])
out = {}
for key, mod in (("plantuml", plantuml), ("mermaid", mermaid)):
    try:
        out[key] = mod.render(defn)
    except AssertionError:
        out[key] = None
print(json.dumps(out))
