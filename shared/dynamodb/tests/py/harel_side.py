"""harel Python's side of the compatibility test: harel 0.9.0's own DynamoDBStore on the
same moto server and table prefix as the Rust store. One action per run, a JSON answer on
stdout:  harel_side.py ENDPOINT PREFIX ACTION ID [ARGS...]"""

import json
import sys

import boto3
from harel.engine.execution import Execution, Status
from harel.engine.store import StoreConflict, TimerOp
from harel.engine.store.dynamodb import DynamoDBStore
from harel.spec.states import Event


def store(endpoint, prefix, create_schema=False):
    client = boto3.client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id="test", aws_secret_access_key="test",
    )
    return DynamoDBStore(client, prefix=prefix, create_schema=create_schema)


def schema(s, eid):
    """The tables as harel creates them (no listing indexes, no TTL)."""
    return {"created": True}


def listed(s, eid, status):
    """harel's own listing of one status (it scans, so it sees every row)."""
    page = s.list_executions(status=[Status(status)], limit=1000)
    return {"ids": sorted(x.id for x in page.items)}


def arm(s, eid, path, fire_at):
    """(Re-)arm one timer of `eid` with harel's own commit (a Put of the whole row)."""
    exe = s.load(eid)
    s.commit(exe, [], timers=(TimerOp("schedule", path, float(fire_at)),))
    return {"version": exe.version}


def write(s, eid):
    exe = Execution(id=eid, definition_id="compat", status=Status.RUNNING, active_path="A",
                    context={"n": 1, "f": 0.1, "s": "é"})
    seqs = s.commit(
        exe,
        [(eid, Event(kind="FromPy", data={"n": 1.5})), (None, Event(kind="Untargeted"))],
        processed_event_id="py-ev",
        timers=(TimerOp("schedule", "A", 1700000000.25), TimerOp("schedule", "B", 1e16)),
        spawns=((f"{eid}:R:1", "R", {"k": [1, "é"]}),),
        trace={"event_kind": "Start", "to_path": "A"},
    )
    s.commit(exe, [], trace={"event_kind": "Go", "to_path": "B"})
    return {"seqs": seqs, "version": exe.version}


def read(s, eid):
    exe = s.load(eid)
    return {
        "execution": json.loads(exe.model_dump_json()) if exe else None,
        "outbox": [{"seq": o.seq, "target_id": o.target_id, "kind": o.event.kind, "data": o.event.data}
                   for o in s.pending_outbox()],
        "spawns": [{"seq": p.seq, "parent_id": p.parent_id, "child_id": p.child_id,
                    "root_path": p.root_path, "context": p.context} for p in s.pending_spawns()],
        "processed_rs": s.is_processed(eid, "rs-ev"),
        "timers": [list(t) for t in s.due_timers(2e16)],
        "trace": s.read_trace(eid),
    }


def drain(s, eid):
    """Ack everything pending and fire (delete) every due timer of `eid`, as the relay does."""
    acked = []
    for o in s.pending_outbox():
        s.ack_outbox(o.seq)
        acked.append(o.seq)
    for p in s.pending_spawns():
        s.ack_spawn(p.seq)
        acked.append(p.seq)
    for e, path, fire_at in s.due_timers(2e16):
        s.delete_timer(e, path, fire_at)
    return {"acked": acked, "left_timers": [list(t) for t in s.due_timers(2e16)]}


def update(s, eid):
    exe = s.load(eid)
    exe.context["py"] = True
    seqs = s.commit(exe, [(eid, Event(kind="PyStep"))], processed_event_id="py-ev-2",
                    trace={"event_kind": "PyStep"})
    return {"seqs": seqs, "version": exe.version}


def stale(s, eid, version):
    exe = s.load(eid)
    exe.version = int(version)
    try:
        s.commit(exe, [(eid, Event(kind="Stale"))], trace={"event_kind": "Stale"})
    except StoreConflict as c:
        return {"conflict": True, "expected": c.expected, "found": c.found}
    return {"conflict": False}


def main():
    endpoint, prefix, action, eid, *args = sys.argv[1:]
    s = store(endpoint, prefix, create_schema=action == "schema")
    actions = {"write": write, "read": read, "drain": drain, "update": update, "stale": stale,
               "schema": schema, "listed": listed, "arm": arm}
    out = actions[action](s, eid, *args)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
