"""harel's formatter on each file named: one JSON string a line, its `format_text`."""

import json
import sys

from harel.fmt import format_text

for path in sys.argv[1:]:
    with open(path, encoding="utf-8", newline="") as f:
        print(json.dumps(format_text(f.read())))
