"""Remote actions served by harel 0.9.0's own `harel.faas.handler(fn)`, on a loopback port,
two ways at once:

* HTTP function endpoints (what `http_action` calls): `POST /fn/{name}` with the payload;
  the answer is `handler(fn)`'s dict, 200; an exception is a 500 (as a web framework
  answers an unhandled error).
* Lambda's Invoke API (what `lambda_action` and the AWS SDK call):
  `POST /2015-03-31/functions/{name}/invocations`; an exception is a 200 with
  `X-Amz-Function-Error: Unhandled` and Lambda's `{"errorMessage", "errorType"}` body.

`GET /calls` lists every call received (name, transport, idempotency_key), for the test to
check what was sent. Prints the port on its first line, then serves until killed.
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harel.faas import handler

CALLS = []
LOCK = threading.Lock()
SEEN_KEYS = {}  # (name, key) -> times seen


class Transient(Exception):
    """Answered as a transient failure: HTTP 503, Lambda's 429 TooManyRequestsException."""


def seen(name, stm):
    with LOCK:
        k = (name, stm.idempotency_key)
        SEEN_KEYS[k] = SEEN_KEYS.get(k, 0) + 1
        return SEEN_KEYS[k]


# --- the actions: ordinary harel actions `(stm, event, **inputs)` ------------------------


def charge(stm, event, currency="USD", **_):
    """A context change: the amount charged, the currency, the key the charge carried."""
    stm.execution_ctx["charged"] = event.data.get("amount", 0)
    stm.execution_ctx["currency"] = currency
    stm.execution_ctx["charge_key"] = stm.idempotency_key
    return None


def route(stm, event, **_):
    """A selector: its result routes the transition."""
    return "approve" if event.data.get("amount", 0) < 100 else "review"


def boom(stm, event, **_):
    raise ValueError("card declined")


def slow(stm, event, seconds=3.0, **_):
    time.sleep(float(seconds))
    stm.execution_ctx["slept"] = True
    return None


def big(stm, event, **_):
    """An answer past Lambda's 6 MB."""
    stm.execution_ctx["blob"] = "x" * (7 * 1024 * 1024)
    return None


def fat(stm, event, **_):
    """An answer the transport carries but an execution's 400 KB item cannot hold."""
    stm.execution_ctx["blob"] = "x" * (500 * 1024)
    return None


def flaky(stm, event, **_):
    """Fails transiently on the first attempt of a key, answers on the next."""
    if seen("flaky", stm) == 1:
        raise Transient("try again")
    stm.execution_ctx["flaky_key"] = stm.idempotency_key
    return "ok"


def fragile(stm, event, **_):
    """Fails for real on the first call of a key (the step fails, nothing is committed),
    answers when the same step is retried."""
    if seen("fragile", stm) == 1:
        raise RuntimeError("first time fails")
    stm.execution_ctx["fragile_key"] = stm.idempotency_key
    return None


def count(stm, event, **_):
    """The benchmark's action: one counter up."""
    stm.execution_ctx["n"] = stm.execution_ctx.get("n", 0) + 1
    return None


def echo(stm, event, **inputs):
    """What the function was sent, kept in the context (the payload's shape, checked by the test)."""
    sent = {"event": {"kind": event.kind, "data": event.data}, "inputs": inputs,
            "idempotency_key": stm.idempotency_key, "context": dict(stm.execution_ctx)}
    stm.execution_ctx["seen"] = sent
    return "seen"


FUNCTIONS = {f.__name__: handler(f) for f in [charge, route, boom, slow, big, fat, flaky, fragile, echo, count]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # the headers and the body are two writes: with Nagle, the body waits for the client's
    # delayed ACK of the headers (40 ms on Linux), as no production server lets it
    disable_nagle_algorithm = True

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status, body, headers=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)

    def do_GET(self):
        if self.path == "/calls":
            with LOCK:
                self._send(200, list(CALLS))
        else:
            self._send(404, {"message": "not found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        payload = json.loads(self.rfile.read(length) or b"{}")
        parts = self.path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "fn":
            transport, name = "http", parts[1]
        elif len(parts) == 4 and parts[:2] == ["2015-03-31", "functions"] and parts[3] == "invocations":
            transport, name = "lambda", parts[2]
        else:
            self._send(404, {"message": f"no route {self.path}"})
            return
        with LOCK:
            CALLS.append({"name": name, "transport": transport,
                          "idempotency_key": payload.get("idempotency_key"),
                          "authorization": self.headers.get("Authorization")})
        fn = FUNCTIONS.get(name)
        if fn is None:
            if transport == "lambda":
                self._send(404, {"Type": "User", "message": f"Function not found: {name}"},
                           [("x-amzn-ErrorType", "ResourceNotFoundException")])
            else:
                self._send(404, {"message": f"no function {name}"})
            return
        try:
            answer = fn(payload)
        except Transient as e:
            if transport == "lambda":
                self._send(429, {"Type": "User", "message": str(e), "Reason": "ConcurrentInvocationLimitExceeded"},
                           [("x-amzn-ErrorType", "TooManyRequestsException")])
            else:
                self._send(503, {"message": str(e)})
            return
        except Exception as e:  # the function's own failure
            body = {"errorMessage": str(e), "errorType": type(e).__name__}
            if transport == "lambda":
                self._send(200, body, [("X-Amz-Function-Error", "Unhandled")])
            else:
                self._send(500, body)
            return
        self._send(200, answer)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
