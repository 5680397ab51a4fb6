"""harel Python's side of the embedded runner's benchmark: harel 0.9.0's `DurableRunner` (the
embedding its README shows) over its `DynamoDBStore`, the machine bench_runner.stm, recording
every DynamoDB request and response on the wire with botocore's event hooks.

    bench_harel_runner.py ENDPOINT PREFIX   -> JSON lines on stdout: {"step", "op", "request", "response"}
"""

import json
import sys
from pathlib import Path

from harel.dsl import definition_from_dsl_file
from harel.engine.durable import DurableRunner
from harel.engine.store import DynamoDBStore
from harel.spec.states import Event

from bench_harel import CAPACITY_OPS, RECORDS, STEP, after_call, ask_capacity, before_send


def main():
    endpoint, prefix = sys.argv[1:3]
    store = DynamoDBStore.create(endpoint_url=endpoint, prefix=prefix)
    events = store._db.meta.events
    for op in CAPACITY_OPS:
        events.register(f"provide-client-params.dynamodb.{op}", ask_capacity)
    events.register("before-send.dynamodb", before_send)
    events.register("after-call.dynamodb", after_call)
    defn = definition_from_dsl_file(Path(__file__).with_name("bench_runner.stm"), "BenchRun")
    runner = DurableRunner(store, {defn.id: defn})
    STEP["name"] = "runner: first create of a version"
    runner.create("BenchRun", execution_id="run0")
    STEP["name"] = "runner: create"
    runner.create("BenchRun", execution_id="run1")
    STEP["name"] = "runner: state-only event"
    runner.process("run1", Event(kind="Go"))
    STEP["name"] = "runner: event + timer"
    exe = runner.process("run1", Event(kind="Wait"))
    assert exe.active_path == "C", exe.active_path
    for r in RECORDS:
        print(json.dumps(r))


main()
