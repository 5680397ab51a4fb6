"""harel Python's own clients, `http_action` and `lambda_action` (boto3), calling our Rust
function-side handler (`harel_remote::function`) served on a loopback port (argv[1]): a call
that answers and one whose action fails. Prints what each saw as one JSON object."""

import json
import sys

from harel.faas import http_action, lambda_action
from harel.spec.states import Event


class Stm:
    """What harel gives an action: the execution's context and the step's key."""

    def __init__(self, ctx, key):
        self.execution_ctx = ctx
        self.idempotency_key = key


base = sys.argv[1]
out = {}
for name, stub in [
    ("http", http_action(base + "/fn/charge", timeout=5)),
    ("lambda", lambda_action("charge", endpoint_url=base)),
]:
    stm = Stm({"n": 1}, "e1:ev-1:0:billing.charge")
    result = stub(stm, Event(kind="Pay", data={"amount": 5}), currency="EUR")
    try:
        stub(Stm({}, "e1:ev-2:0:billing.charge"), Event(kind="Pay", data={}), currency="EUR")
        error = None
    except Exception as e:  # what harel's driver routes to `on error`, else FAILED
        error = f"{type(e).__name__}: {e}"
    out[name] = {"context": stm.execution_ctx, "result": result, "error": error}
print(json.dumps(out))
