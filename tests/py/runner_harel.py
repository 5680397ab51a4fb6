"""harel Python's side of tests/runner_requests.rs: harel 0.9.0's DurableRunner over its
DynamoDBStore on the same steps (a create with an id, then the events the Rust test sends),
every DynamoDB request and its answer recorded on the wire with botocore's hooks, so the
test prices both sides with the same rules (harel_testwire::units).

    runner_harel.py ENDPOINT PREFIX MACHINE_FILE [STEP=EVENT ...]
      -> one JSON line: {"create": [{"op", "status", "request", "response"}, ...], STEP: [...]}
"""

import json
import sys

from harel.dsl import definition_from_dsl_file
from harel.engine.durable import DurableRunner
from harel.engine.store.dynamodb import DynamoDBStore
from harel.spec.states import Event

STEP = {"name": "setup"}
CALLS = {}


def before_send(request, **_):
    op = request.headers.get("X-Amz-Target", b"")
    op = op.decode() if isinstance(op, bytes) else op
    body = request.body
    body = body.decode() if isinstance(body, bytes) else body
    CALLS.setdefault(STEP["name"], []).append(
        {"op": op.rsplit(".", 1)[-1], "request": json.loads(body or "{}")}
    )


def response_received(response_dict, **_):
    calls = CALLS.get(STEP["name"]) or []
    if not calls or "status" in calls[-1] or response_dict is None:
        return
    body = response_dict.get("body") or b"{}"
    body = body.decode() if isinstance(body, bytes) else body
    calls[-1]["status"] = response_dict["status_code"]
    calls[-1]["response"] = json.loads(body or "{}")


def main():
    endpoint, prefix, machine = sys.argv[1:4]
    steps = [arg.split("=", 1) for arg in sys.argv[4:]]
    store = DynamoDBStore.create(endpoint_url=endpoint, prefix=prefix)
    events = store._db.meta.events
    events.register("before-send.dynamodb", before_send)
    events.register("response-received.dynamodb", response_received)
    defn = definition_from_dsl_file(machine)
    runner = DurableRunner(store, {defn.id: defn}, execution="inline")
    STEP["name"] = "create"
    runner.create(defn.id, execution_id="r-1")
    for name, kind in steps:
        STEP["name"] = name
        runner.process("r-1", Event(kind=kind))
    STEP["name"] = "setup"
    exe = store.load("r-1")
    assert exe.status.value == "DONE", exe.status
    CALLS.pop("setup", None)
    print(json.dumps(CALLS))


main()
