"""Dump harel's parse of a .stm file as JSON (see dump_program_lib); with a machine name,
a second line holds the loader's resolved config for that machine."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dump_program_lib import conv, program_json  # noqa: E402

from harel.dsl.parser import parse  # noqa: E402

text = Path(sys.argv[1]).read_text()
print(json.dumps(program_json(parse(text))))

if len(sys.argv) > 2:
    # the loader's resolved config for one machine, as handed to the builder
    from harel.dsl.loader import _resolve_cfg

    # imports resolve against the file's directory, as `definition_from_dsl_file` does
    cfg, _name, _ = _resolve_cfg(text, sys.argv[2], Path(sys.argv[1]).parent, None, None)
    print(json.dumps(conv(cfg)))
