"""For each snippet of a file (one a line, `⏎` for a newline), print harel's parse as
one JSON line: the Program (as dump_program.py shapes it), null if harel refuses it, or
"crash" if harel fails on it with something other than a DslError."""
import json
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from dump_program_lib import program_json  # noqa: E402

from harel.dsl.parser import DslError, parse  # noqa: E402

for line in open(sys.argv[1], encoding="utf-8").read().splitlines():
    text = line.replace("⏎", "\n")
    try:
        print(json.dumps(program_json(parse(text))))
    except DslError:
        print("null")
    except Exception:  # harel crashes (e.g. `f()`): a file it cannot load either
        print('"crash"')
