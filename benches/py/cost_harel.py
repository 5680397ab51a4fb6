"""harel Python's side of scripts/cost-table.sh: harel 0.9.0's own worker (`harel.worker`'s
`AsyncWorker` over `AsyncDynamoDBStore` and the `AsyncSqsTransport` on an SQS FIFO queue, as
`python -m harel.worker` builds them) on tables and a queue of its own prefix, driven through
the same workloads as the Rust side (a busy queue: ten executions sent the event at once) with the same machine (cost.stm). Every DynamoDB and SQS
request is recorded with botocore's event hooks (request and answer bodies, so the Rust side
prices them with the same rules, `harel_testwire::units`); the process CPU time around each
message's handling is measured on a second pass whose requests the hooks let through unread
(`time.process_time`, the claim excluded: it is the event source's part on Lambda).

    cost_harel.py ENDPOINT PREFIX MACHINE_FILE RUNS
      -> one JSON line per workload: {"workload", "runs", "calls": [{"service", "op",
         "status", "request", "response"}], "cpu": [seconds per message handled]}
"""

import asyncio
import base64
import json
import sys
import time

from harel.dsl import definition_from_dsl_file
from harel.engine.aio.distributed import AsyncDistributedRunner, AsyncWorker
from harel.engine.aio_store import AsyncDynamoDBStore
from harel.engine.aio_transport import AsyncSqsTransport
from harel.spec.states import Event

STEP = {"name": "setup"}
CALLS = []


def _text(body):
    if body is None:
        return "{}"
    return body.decode() if isinstance(body, (bytes, bytearray)) else body


def before_send(request, event_name, **_):
    if STEP["name"] in ("setup", "quiet"):
        return
    service, op = event_name.split(".")[1:3]
    CALLS.append(
        {
            "service": service,
            "op": op,
            "step": STEP["name"],
            "request": json.loads(_text(request.body) or "{}"),
        }
    )


def _plain(v):
    return base64.b64encode(v).decode() if isinstance(v, (bytes, bytearray)) else str(v)


def response_received(response_dict=None, parsed=None, **_):
    if STEP["name"] in ("setup", "quiet") or not CALLS or "status" in CALLS[-1]:
        return
    call = CALLS[-1]
    call["status"] = (response_dict or {}).get("status_code", 200)
    body = (response_dict or {}).get("body")
    try:
        call["response"] = json.loads(_text(body) or "{}")
    except (ValueError, TypeError):
        answer = dict(parsed or {})
        answer.pop("ResponseMetadata", None)
        call["response"] = json.loads(json.dumps(answer, default=_plain))


def record(client, service):
    events = client.meta.events
    events.register(f"before-send.{service}", before_send)
    events.register(f"response-received.{service}", response_received)


async def drain(worker, cpu):
    """Handle messages until the queue is empty, one at a time as the worker's loop does,
    measuring the process CPU time of each handling."""
    while True:
        lease = await worker._claim()
        if lease is None:
            return
        start = time.process_time()
        await worker._handle(lease)
        cpu.append(time.process_time() - start)


async def main():
    endpoint, prefix, machine, runs = sys.argv[1:5]
    runs = int(runs)
    store = await AsyncDynamoDBStore.create(endpoint_url=endpoint, region="us-east-1", prefix=prefix)
    transport = await AsyncSqsTransport.create(
        endpoint_url=endpoint, queue_name=f"{prefix}-q", region="us-east-1", wait_seconds=0
    )
    record(store._db, "dynamodb")
    record(transport._sqs, "sqs")
    defn = definition_from_dsl_file(machine, "Cost", validate=True)
    definitions = {defn.id: defn}
    runner = AsyncDistributedRunner(store, transport, definitions)
    worker = AsyncWorker(store, transport, definitions, worker_id="cost")
    workloads = [
        ("state-only event", "Poke", 1),
        ("event arming a timer", "Arm", 1),
        ("fan-out of 10 children", "Fan", 1),
        ("state-only event, busy queue (10 a batch)", "Poke", 10),
    ]
    expected = {"Poke": "Moved", "Arm": "Armed", "Fan": "Fanned"}
    for w, (workload, kind, at_once) in enumerate(workloads):
        cpu = []
        for round_ in range(runs // at_once):
            # the requests, recorded; then the CPU time, on a pass the hooks let through
            for suffix, step, spent in [("", workload, []), ("q", "quiet", cpu)]:
                ids = [f"{kind.lower()}{w}-{suffix}{round_ * at_once + j}" for j in range(at_once)]
                STEP["name"] = "setup"
                for exe_id in ids:
                    await runner.create(defn.id, execution_id=exe_id)
                await drain(worker, [])
                for exe_id in ids:
                    await runner.send(exe_id, Event(kind=kind))
                STEP["name"] = step
                await drain(worker, spent)
                STEP["name"] = "setup"
                for exe_id in ids:
                    exe = await store.load(exe_id)
                    assert exe.active_path.startswith(expected[kind]), exe.active_path
        calls = [c for c in CALLS if c["step"] == workload]
        print(json.dumps({"workload": workload, "runs": runs, "calls": calls, "cpu": cpu}))
    await store.close()
    await transport.close()


asyncio.run(main())
