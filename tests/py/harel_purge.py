"""harel Python's purge beside ours, on the same moto server:
    harel_purge.py ENDPOINT PREFIX purge ARCHIVE NOW OLDER_THAN
        harel's own `purge_finished` with its `JsonlArchive`; the report as JSON.
    harel_purge.py - - read ARCHIVE
        reads an archive (ours): each line parsed, every execution validated as harel's
        Execution, and whether `json.dumps` of the parsed line gives the line back."""

import json
import sys

import boto3
from harel.archive import JsonlArchive
from harel.engine import control
from harel.engine.execution import Execution
from harel.engine.store.dynamodb import DynamoDBStore


def purge(endpoint, prefix, archive, now, older_than):
    client = boto3.client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id="test", aws_secret_access_key="test",
    )
    store = DynamoDBStore(client, prefix=prefix, create_schema=False)
    report = control.purge_finished(store, older_than=float(older_than), now=float(now),
                                    archive=JsonlArchive(archive))
    return {"purged": report.purged, "skipped_undated": report.skipped_undated,
            "refused": report.refused}


def read(archive):
    lines = open(archive, encoding="utf-8").read().splitlines()
    out = []
    for line in lines:
        bundle = json.loads(line)
        ids = [Execution.model_validate(e).id for e in bundle["executions"]]
        same = json.dumps(bundle, separators=(",", ":"), ensure_ascii=False) == line
        out.append({"root_id": bundle["root_id"], "ids": ids, "same_bytes": same,
                    "traces": {k: len(v) for k, v in bundle["traces"].items()}})
    return out


if __name__ == "__main__":
    endpoint, prefix, command, *args = sys.argv[1:]
    result = purge(endpoint, prefix, *args) if command == "purge" else read(*args)
    print(json.dumps(result))
