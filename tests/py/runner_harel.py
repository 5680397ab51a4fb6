"""harel Python's side of tests/runner_requests.rs: harel 0.9.0's DurableRunner over its
DynamoDBStore on the same steps (a create with an id, two state-only events), every DynamoDB
request counted on the wire with botocore's before-send hook.

    runner_harel.py ENDPOINT PREFIX MACHINE_FILE   -> one JSON line: {"create": [ops], ...}
"""

import json
import sys

from harel.dsl import definition_from_dsl_file
from harel.engine.durable import DurableRunner
from harel.engine.store.dynamodb import DynamoDBStore
from harel.spec.states import Event

STEP = {"name": "setup"}
OPS = {}


def before_send(request, **_):
    op = request.headers.get("X-Amz-Target", b"")
    op = op.decode() if isinstance(op, bytes) else op
    OPS.setdefault(STEP["name"], []).append(op.rsplit(".", 1)[-1])


def main():
    endpoint, prefix, machine = sys.argv[1:4]
    store = DynamoDBStore.create(endpoint_url=endpoint, prefix=prefix)
    store._db.meta.events.register("before-send.dynamodb", before_send)
    defn = definition_from_dsl_file(machine)
    runner = DurableRunner(store, {defn.id: defn}, execution="inline")
    STEP["name"] = "create"
    runner.create(defn.id, execution_id="r-1")
    STEP["name"] = "event"
    runner.process("r-1", Event(kind="Go"))
    STEP["name"] = "finish"
    exe = runner.process("r-1", Event(kind="Done"))
    assert exe.status.value == "DONE", exe.status
    OPS.pop("setup", None)
    print(json.dumps(OPS))


main()
