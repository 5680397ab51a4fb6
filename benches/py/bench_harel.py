"""harel Python's side of the store benchmark: the same steps as the Rust bench, through
harel 0.9.0's AsyncDynamoDBStore (the worker's store: `load_for_event` is one BatchGetItem),
recording every DynamoDB request and response on the wire with botocore's event hooks.

    bench_harel.py ENDPOINT PREFIX   -> JSON lines on stdout: {"step", "op", "request", "response"}
"""

import asyncio
import json
import sys

from harel.engine.aio_store.dynamodb import AsyncDynamoDBStore
from harel.engine.execution import Execution, Status
from harel.engine.store import StoreConflict, TimerOp
from harel.spec.states import Event

STEP = {"name": "setup"}
RECORDS = []
CAPACITY_OPS = ("GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan",
                "BatchGetItem", "BatchWriteItem", "TransactWriteItems")


def ask_capacity(params, **_):
    params.setdefault("ReturnConsumedCapacity", "TOTAL")


def before_send(request, **_):
    op = request.headers.get("X-Amz-Target", b"")
    op = op.decode() if isinstance(op, bytes) else op
    body = request.body
    body = body.decode() if isinstance(body, bytes) else body
    RECORDS.append({"step": STEP["name"], "op": op.rsplit(".", 1)[-1], "request": json.loads(body or "{}")})


def after_call(http_response, parsed, model, **_):
    if RECORDS and RECORDS[-1]["op"] == model.name and "response" not in RECORDS[-1]:
        resp = dict(parsed)
        resp.pop("ResponseMetadata", None)
        RECORDS[-1]["response"] = json.loads(json.dumps(resp, default=str))


def exe(eid):
    return Execution(id=eid, definition_id="bench", status=Status.RUNNING, active_path="A",
                     context={"n": 1, "pad": "x" * 300})


async def main():
    endpoint, prefix = sys.argv[1:3]
    store = await AsyncDynamoDBStore.create(endpoint_url=endpoint, prefix=prefix)
    events = store._db.meta.events
    for op in CAPACITY_OPS:
        events.register(f"provide-client-params.dynamodb.{op}", ask_capacity)
    events.register("before-send.dynamodb", before_send)
    events.register("after-call.dynamodb", after_call)

    async def step(name, eid, event_id, **commit):
        STEP["name"] = name
        e, done = await store.load_for_event(eid, event_id)
        assert e is not None and not done
        await store.commit(e, commit.pop("emits", []), processed_event_id=event_id, **commit)

    STEP["name"] = "create"
    e = exe("bench")
    await store.commit(e, [(e.id, Event(kind="Start"))])
    await step("state-only event", "bench", "ev1")
    await step("event + 1 emit", "bench", "ev2", emits=[("other", Event(kind="Ping", data={"k": 1}))])
    await step("event + timer", "bench", "ev3", timers=(TimerOp("schedule", "A", 1700000000.5),))
    await step("orthogonal fork (2 spawns)", "bench", "ev4",
               spawns=(("bench:R1:1", "R1", {"n": 1}), ("bench:R2:1", "R2", {"n": 1})))
    trace = {"event_kind": "Tick", "event_data": {}, "from_path": "A", "to_path": "A", "actions": [],
             "context_out": {"n": 1, "pad": "x" * 300}, "timestamp": 1700000000.5}
    await step("event, trace on", "bench", "ev5", trace=trace)
    await step("event, trace on (2nd)", "bench", "ev6", trace=trace)
    await step("emit + timer + trace", "bench", "ev7", emits=[("other", Event(kind="Ping"))],
               timers=(TimerOp("schedule", "B", 1700000001.5),), trace=trace)
    STEP["name"] = "setup"
    stale = await store.load("bench")
    STEP["name"] = "stale commit (CAS miss)"
    stale.version -= 1
    try:
        await store.commit(stale, [])
        raise SystemExit("the stale commit went through")
    except StoreConflict:
        pass
    await store.close()
    for r in RECORDS:
        print(json.dumps(r))


if __name__ == "__main__":
    asyncio.run(main())
