"""The Powertools Python side of the interoperability tests and the benchmark.

Commands (JSON in on stdin where noted, one JSON document out on stdout):
  keys --prefix P [--jmespath E] [--validation E] [--hash H]   stdin: a list of payloads
      -> [{"key": ..., "validation": ...}, ...] as Powertools computes them
  run --table T --prefix P [--jmespath E] [--validation E] [--sort-key A] [--static-pk V]
      [--result JSON] [--fail] [--sleep S] [--remaining-ms N]   stdin: the payload
      -> {"ran": bool, "result": ..., "error": null | {"type": ..., "message": ...},
          "calls": {...}, "write_units": N}
      calls are counted with botocore event hooks; write units are DynamoDB's 1 KB units of
      the larger of the item before and after each write (sizes read by an uncounted client).
"""

import argparse
import json
import math
import sys
import time

import boto3
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)


def config_from(args):
    return IdempotencyConfig(
        event_key_jmespath=args.jmespath or "",
        payload_validation_jmespath=args.validation or "",
        hash_function=args.hash,
    )


def cmd_keys(args):
    layer = DynamoDBPersistenceLayer(table_name="unused")
    layer.configure(config_from(args), key_prefix=args.prefix)
    out = []
    for payload in json.load(sys.stdin):
        try:
            out.append({
                "key": layer._get_hashed_idempotency_key(payload),
                "validation": layer._get_hashed_payload(payload),
            })
        except Exception as exc:  # the Rust side must fail on the same payloads
            out.append({"error": f"{type(exc).__name__}: {exc}"})
    print(json.dumps(out))


def number_size(text):
    digits = "".join(c for c in text.split("e")[0].split("E")[0] if c.isdigit())
    significant = len(digits.strip("0"))
    return (significant + 1) // 2 + 1


def value_size(v):
    (kind, val), = v.items()
    if kind == "S":
        return len(val.encode())
    if kind == "N":
        return number_size(val)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "B":
        return len(val)
    raise ValueError(kind)


def item_size(item):
    if not item:
        return 0
    return sum(len(k.encode()) + value_size(v) for k, v in item.items())


class Counter:
    """Counts DynamoDB requests through botocore's event hooks, and their write units."""

    WRITES = {"PutItem", "UpdateItem", "DeleteItem"}

    def __init__(self, client, table, raw):
        self.calls = {"GetItem": 0, "PutItem": 0, "UpdateItem": 0, "DeleteItem": 0}
        self.write_units = 0
        self.table = table
        self.raw = raw
        self.before = 0
        client.meta.events.register("before-parameter-build.dynamodb.*", self.before_call)
        client.meta.events.register("after-call.dynamodb.*", self.after_call)

    def size_of(self, key):
        return item_size(self.raw.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item"))

    def key_of(self, params):
        if "Key" in params:
            return params["Key"]
        item = params["Item"]
        names = [k["AttributeName"] for k in self.raw.describe_table(TableName=self.table)["Table"]["KeySchema"]]
        return {n: item[n] for n in names}

    def before_call(self, model, params, **kwargs):
        self.calls[model.name] = self.calls.get(model.name, 0) + 1
        if model.name in self.WRITES:
            self.pending_key = self.key_of(params)
            self.before = self.size_of(self.pending_key)

    def after_call(self, model, **kwargs):
        if model.name in self.WRITES:
            after = self.size_of(self.pending_key)
            self.write_units += max(1, math.ceil(max(self.before, after) / 1024))


class Context:
    def __init__(self, remaining_ms):
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self):
        return self.remaining_ms


def cmd_run(args):
    payload = json.load(sys.stdin)
    client = boto3.client("dynamodb")
    raw = boto3.client("dynamodb")
    counter = Counter(client, args.table, raw)
    layer = DynamoDBPersistenceLayer(
        table_name=args.table,
        key_attr=args.key_attr,
        sort_key_attr=args.sort_key,
        static_pk_value=args.static_pk,
        boto3_client=client,
    )
    config = config_from(args)
    if args.remaining_ms is not None:
        config.register_lambda_context(Context(args.remaining_ms))
    state = {"ran": False}

    @idempotent_function(
        data_keyword_argument="event",
        persistence_store=layer,
        config=config,
        key_prefix=args.prefix,
    )
    def handler(event):
        state["ran"] = True
        if args.sleep:
            time.sleep(args.sleep)
        if args.fail:
            raise RuntimeError("handler failed")
        return json.loads(args.result)

    out = {"ran": False, "result": None, "error": None}
    try:
        out["result"] = handler(event=payload)
    except Exception as exc:  # reported, not raised: the test reads the outcome
        out["error"] = {"type": type(exc).__name__, "message": str(exc)}
    out["ran"] = state["ran"]
    out["calls"] = counter.calls
    out["write_units"] = counter.write_units
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("keys", "run"):
        p = sub.add_parser(name)
        p.add_argument("--prefix", required=True)
        p.add_argument("--jmespath")
        p.add_argument("--validation")
        p.add_argument("--hash", default="md5")
        if name == "run":
            p.add_argument("--table", required=True)
            p.add_argument("--key-attr", default="id")
            p.add_argument("--sort-key")
            p.add_argument("--static-pk")
            p.add_argument("--result", default="null")
            p.add_argument("--fail", action="store_true")
            p.add_argument("--sleep", type=float, default=0)
            p.add_argument("--remaining-ms", type=int)
    args = parser.parse_args()
    {"keys": cmd_keys, "run": cmd_run}[args.cmd](args)


if __name__ == "__main__":
    main()
