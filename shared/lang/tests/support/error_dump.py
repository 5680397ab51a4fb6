"""harel's verdict on each .stm file named on stdin (a JSON list of paths): a JSON line per
file, {"ok": true}, {"message", "line", "column", "context"} for a DslError, or {"crash":
type} for any other exception (harel's own bugs, e.g. a RecursionError)."""
import json
import sys
from pathlib import Path

from harel.dsl import DslError
from harel.dsl.loader import definition_from_dsl_file

for path in json.load(sys.stdin):
    try:
        definition_from_dsl_file(Path(path))
        out = {"ok": True}
    except DslError as e:
        out = {"message": e.args[0], "line": e.line, "column": e.column, "context": e.context}
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        out = {"crash": type(e).__name__}
    print(json.dumps(out))
