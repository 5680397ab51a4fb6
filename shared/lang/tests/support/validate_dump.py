"""Print harel's validation issues for one machine of a .stm file, one per line."""
import sys
from pathlib import Path

from harel.definition.validate import validate
from harel.dsl import definition_from_dsl_file

for issue in validate(definition_from_dsl_file(Path(sys.argv[1]), sys.argv[2])):
    print(issue)
