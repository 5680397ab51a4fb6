"""harel Python's control plane on the same moto tables as the Rust worker: one command per
run, then the execution as harel loads it, as JSON on stdout.
    harel_control.py ENDPOINT PREFIX COMMAND ID [MACHINE]
COMMAND: cancel (MACHINE from machines/control.stm), terminate, suspend, resume, read."""

import json
import pathlib
import sys

import boto3
from harel.dsl.loader import definition_from_dsl_file
from harel.engine import control
from harel.engine.store.dynamodb import DynamoDBStore

MACHINES = (
    pathlib.Path(__file__).resolve().parents[2] / "shared" / "control" / "tests" / "machines" / "control.stm"
)


def main(endpoint, prefix, command, eid, machine=None):
    client = boto3.client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id="test", aws_secret_access_key="test",
    )
    store = DynamoDBStore(client, prefix=prefix, create_schema=False)
    if command == "cancel":
        control.cancel(store, definition_from_dsl_file(MACHINES, machine), eid)
    elif command in ("terminate", "suspend", "resume"):
        getattr(control, command)(store, eid)
    elif command != "read":
        raise SystemExit(f"unknown command {command}")
    exe = store.load(eid)
    print(json.dumps({
        "execution": json.loads(exe.model_dump_json()) if exe else None,
        "outbox": [{"seq": o.seq, "target_id": o.target_id, "kind": o.event.kind}
                   for o in store.pending_outbox()],
    }))


if __name__ == "__main__":
    main(*sys.argv[1:])
