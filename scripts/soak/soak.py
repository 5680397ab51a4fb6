"""The soak (scripts/soak.sh): one warm worker process, many events, its memory held flat.

This is a Lambda Runtime API emulator (the part of Lambda a custom runtime talks to: GET
.../invocation/next, POST .../invocation/{id}/response and /error, POST /runtime/init/error)
that is also the event source: it starts the worker binary once, hands it SQS batches as the
FIFO event source mapping would (10 records, each group's records in order, one message group
per execution), checks every answer, and every INTERVAL events reads the process's resident
memory (VmRSS, /proc/PID/status) and CPU time (utime + stime, /proc/PID/stat). At the end it
reads every execution back from the store table and checks that each applied every event it
was sent, once, so the run cannot pass by doing nothing.

The work is real: the worker runs as deployed (idempotency layer on, the DynamoDB store, the
FIFO queue and its DLQ on moto), on the `Toggle` machine of scripts/soak/toggle.stm, loaded
as a deploy-time machine (HAREL_DEFINITIONS_DIR), which flips between two states and counts:
every event is a transition and a commit, and no execution grows, however long the run.

The worker's configuration comes from the environment (HAREL_TABLE_PREFIX, HAREL_QUEUE_URL,
HAREL_DLQ_URL, IDEMPOTENCY_TABLE, AWS_ENDPOINT_URL, credentials); the tables and queues must
exist (the `local-setup` binary, or the tests' stack). Exit status: 0 when memory stayed under
the limit and flat past the warm-up, 1 when it did not or the run failed (the reason on
stderr), 2 for bad arguments.
"""

import argparse
import collections
import http.server
import json
import os
import queue
import subprocess
import sys
import threading
import time
import uuid

import boto3

API = "/2018-06-01/runtime"
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:soak-worker"
# how long the worker may take over one batch before the soak calls it stuck (the template's
# worker timeout is 30 s; moto under load is slower than DynamoDB)
BATCH_TIMEOUT_S = 120


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", required=True, help="the worker binary")
    p.add_argument("--machines", required=True, help="HAREL_DEFINITIONS_DIR (toggle.stm)")
    p.add_argument("--events", type=int, default=100_000, help="Flip events to hand over")
    p.add_argument("--interval", type=int, default=10_000, help="events between two samples")
    p.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="events of warm-up (default: one interval): memory is compared with the sample "
        "taken at its end",
    )
    p.add_argument("--executions", type=int, default=100, help="executions the events go to")
    p.add_argument(
        "--groups-per-batch",
        type=int,
        default=5,
        help="executions in one batch of 10 (each gets 10/this records, in order)",
    )
    p.add_argument("--limit-mb", type=float, default=64.0, help="resident memory ceiling")
    p.add_argument(
        "--tolerance-mb",
        type=float,
        default=2.0,
        help="growth allowed past the warm-up (allocator noise, not a leak)",
    )
    p.add_argument("--log", required=True, help="file for the worker's stdout and stderr")
    p.add_argument("--summary", help="also write the samples and verdict here, as JSON")
    args = p.parse_args(argv)
    if args.warmup is None:
        args.warmup = args.interval
    if args.events <= 0 or args.interval <= 0 or args.executions <= 0:
        p.error("--events, --interval and --executions must be positive")
    if 10 % args.groups_per_batch != 0:
        p.error("--groups-per-batch must divide 10")
    if args.events % 10 != 0 or args.interval % 10 != 0 or args.warmup % args.interval != 0:
        p.error("--events and --interval are whole batches (of 10), --warmup whole intervals")
    if args.warmup >= args.events:
        p.error("--warmup must leave samples after it (it is below --events)")
    if args.executions % args.groups_per_batch != 0:
        p.error("--executions must be a multiple of --groups-per-batch")
    return args


class Runtime:
    """The Runtime API's state: invocations waiting to be fetched and answers received."""

    def __init__(self):
        self.pending = queue.Queue()
        self.answers = queue.Queue()


def make_handler(runtime):
    class Handler(http.server.BaseHTTPRequestHandler):
        # keep-alive: the runtime client reuses its connection
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # one line per request would bury the table
            pass

        def body(self):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                out = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        # trailers, then the empty line
                        while self.rfile.readline().strip():
                            pass
                        return out
                    out += self.rfile.read(size)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length", 0)))

        def reply(self, status, payload=b"", headers=()):
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self):
            if self.path != f"{API}/invocation/next":
                return self.reply(404, b'{"errorMessage": "unknown path"}')
            request_id, payload = runtime.pending.get()  # blocks until the soak hands one
            deadline_ms = int(time.time() * 1000) + BATCH_TIMEOUT_S * 1000
            self.reply(
                200,
                payload,
                [
                    ("Lambda-Runtime-Aws-Request-Id", request_id),
                    ("Lambda-Runtime-Deadline-Ms", str(deadline_ms)),
                    ("Lambda-Runtime-Invoked-Function-Arn", FUNCTION_ARN),
                ],
            )

        def do_POST(self):
            body = self.body()
            parts = self.path[len(API) :].strip("/").split("/")
            if parts == ["init", "error"]:
                runtime.answers.put((None, "init-error", body))
            elif len(parts) == 3 and parts[0] == "invocation" and parts[2] in ("response", "error"):
                runtime.answers.put((parts[1], parts[2], body))
            else:
                return self.reply(404, b'{"errorMessage": "unknown path"}')
            self.reply(202, b'{"status": "OK"}')

    return Handler


class Failed(Exception):
    pass


class Worker:
    """The worker process and what /proc says of it."""

    def __init__(self, binary, env, log):
        self.log_path = log
        self.log = open(log, "wb")
        self.proc = subprocess.Popen([binary], env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.ticks = os.sysconf("SC_CLK_TCK")

    def status(self, field):
        """A /proc/PID/status figure in kB (VmRSS, VmHWM)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise Failed(f"no {field} in /proc/{self.proc.pid}/status")

    def cpu_seconds(self):
        """utime + stime: the CPU the process used, all its threads, in seconds."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            # the fields after the command name, which is in parentheses and may hold spaces
            fields = f.read().rsplit(")", 1)[1].split()
        utime, stime = int(fields[11]), int(fields[12])
        return (utime + stime) / self.ticks

    def threads(self):
        return self.status("Threads")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def tail(self, lines=20):
        with open(self.log_path, "rb") as f:
            return b"".join(collections.deque(f, lines)).decode("utf-8", "replace")


class Soak:
    def __init__(self, args, runtime, worker):
        self.args = args
        self.runtime = runtime
        self.worker = worker
        self.run = uuid.uuid4().hex[:8]
        self.executions = [f"soak-{self.run}-{i:05}" for i in range(args.executions)]
        self.sent = collections.Counter()  # Flips handed over, per execution
        self.sequence = 0
        self.next_group = 0

    def record(self, group, body):
        self.sequence += 1
        now = str(int(time.time() * 1000))
        message_id = str(uuid.uuid4())
        return {
            "messageId": message_id,
            "receiptHandle": f"soak-receipt-{message_id}",
            "body": json.dumps(body),
            "attributes": {
                "ApproximateReceiveCount": "1",
                "SentTimestamp": now,
                "SenderId": "AIDASOAK",
                "ApproximateFirstReceiveTimestamp": now,
                "MessageGroupId": group,
                "MessageDeduplicationId": body["id"],
                "SequenceNumber": f"{self.sequence:020}",
            },
            "messageAttributes": {},
            "md5OfBody": "",
            "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:soak.fifo",
            "awsRegion": "us-east-1",
        }

    def invoke(self, records):
        """One invocation: the batch handed over, the answer waited for and checked."""
        request_id = str(uuid.uuid4())
        self.runtime.pending.put((request_id, json.dumps({"Records": records}).encode()))
        waited = 0.0
        while True:
            try:
                got_id, kind, body = self.runtime.answers.get(timeout=1.0)
                break
            except queue.Empty:
                waited += 1.0
                if self.worker.proc.poll() is not None:
                    raise Failed(f"the worker exited ({self.worker.proc.returncode})")
                if waited > BATCH_TIMEOUT_S:
                    raise Failed(f"no answer to invocation {request_id} in {BATCH_TIMEOUT_S} s")
        text = body.decode("utf-8", "replace")
        if kind != "response" or got_id != request_id:
            raise Failed(f"invocation {request_id}: {kind} from the worker: {text}")
        failures = json.loads(body).get("batchItemFailures")
        if failures != []:
            raise Failed(f"invocation {request_id}: records failed: {text}")

    def creates(self):
        for at in range(0, len(self.executions), 10):
            self.invoke(
                [
                    self.record(
                        exe,
                        {
                            "id": f"create-{exe}",
                            "kind": "harel:create",
                            "data": {"definition_id": "Toggle", "execution_id": exe},
                        },
                    )
                    for exe in self.executions[at : at + 10]
                ]
            )

    def flips(self):
        """One batch of Flips: groups_per_batch executions in turn, 10/groups records each."""
        per_group = 10 // self.args.groups_per_batch
        records = []
        for _ in range(self.args.groups_per_batch):
            exe = self.executions[self.next_group]
            self.next_group = (self.next_group + 1) % len(self.executions)
            for _ in range(per_group):
                self.sent[exe] += 1
                body = {"id": f"{exe}-flip-{self.sent[exe]}", "kind": "Flip", "data": {}}
                records.append(self.record(exe, body))
        self.invoke(records)

    def read_back(self):
        """Every execution from the store's table: each applied every Flip it was sent."""
        endpoint = os.environ.get("AWS_ENDPOINT_URL")
        table = boto3.resource("dynamodb", endpoint_url=endpoint).Table(
            f"{os.environ['HAREL_TABLE_PREFIX']}_executions"
        )
        wrong = []
        for exe in self.executions:
            item = table.get_item(Key={"id": exe}, ConsistentRead=True).get("Item")
            if item is None:
                wrong.append(f"{exe}: not in the table")
                continue
            data = json.loads(item["data"])
            flips = self.sent[exe]
            state = "On" if flips % 2 else "Off"
            if (
                data.get("status") != "RUNNING"
                or data.get("context", {}).get("flips") != flips
                or not str(data.get("active_path", "")).endswith(state)
            ):
                wrong.append(
                    f"{exe}: sent {flips} Flips (expected {state}, flips {flips}), read "
                    f"status {data.get('status')}, active_path {data.get('active_path')}, "
                    f"context {data.get('context')}"
                )
        dlq = boto3.client("sqs", endpoint_url=endpoint).get_queue_attributes(
            QueueUrl=os.environ["HAREL_DLQ_URL"],
            AttributeNames=["ApproximateNumberOfMessages"],
        )
        dead = int(dlq["Attributes"]["ApproximateNumberOfMessages"])
        if dead:
            wrong.append(f"{dead} message(s) in the dead-letter queue")
        return wrong


def mb(kb):
    return kb / 1024


def main(argv):
    args = parse_args(argv)
    runtime = Runtime()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(runtime))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = dict(os.environ)
    env.update(
        {
            "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{server.server_address[1]}",
            "AWS_LAMBDA_FUNCTION_NAME": "soak-worker",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/soak-worker",
            "AWS_LAMBDA_LOG_STREAM_NAME": f"soak/{os.getpid()}",
            "HAREL_DEFINITIONS_DIR": args.machines,
            # as Lambda sets it from the Worker's Handler: the functions' one binary runs the
            # worker by it (the worker's own binary ignores it)
            "_HANDLER": "worker",
        }
    )
    worker = Worker(args.worker, env, args.log)
    soak = Soak(args, runtime, worker)
    started = time.monotonic()
    try:
        return drive(args, soak, worker, started)
    except Failed as e:
        print(
            f"soak: FAILED: {e}\nthe worker's last lines ({args.log}):\n{worker.tail()}",
            file=sys.stderr,
        )
        return 1
    finally:
        worker.stop()
        server.shutdown()


def drive(args, soak, worker, started):
    print(
        f"soak: worker {args.worker} (pid {worker.proc.pid}), {args.events:,} Flip events to "
        f"{args.executions} executions ({args.groups_per_batch} per batch of 10), a sample every "
        f"{args.interval:,}",
        flush=True,
    )
    header = f"{'events':>9} {'RSS MB':>8} {'CPU µs/event':>13} {'wall s':>8} {'events/s':>9}"
    cpu0, wall0 = worker.cpu_seconds(), time.monotonic()
    soak.creates()
    cpu1, wall1 = worker.cpu_seconds(), time.monotonic()
    print(
        f"warm-up: {args.executions} creates in {wall1 - wall0:.1f} s, "
        f"{(cpu1 - cpu0) * 1e6 / args.executions:.0f} µs CPU each (the process's start included)",
        flush=True,
    )
    print(header, flush=True)
    samples = []  # (events, rss kB)
    done = 0
    cpu, wall = cpu1, wall1
    while done < args.events:
        for _ in range(args.interval // 10):
            soak.flips()
        done += args.interval
        rss = worker.status("VmRSS")
        cpu_now, wall_now = worker.cpu_seconds(), time.monotonic()
        per_event = (cpu_now - cpu) * 1e6 / args.interval
        samples.append((done, rss, per_event))
        print(
            f"{done:>9,} {mb(rss):>8.1f} {per_event:>13.0f} "
            f"{wall_now - wall:>8.1f} {args.interval / (wall_now - wall):>9.0f}",
            flush=True,
        )
        cpu, wall = cpu_now, wall_now
    peak = worker.status("VmHWM")
    threads = worker.threads()
    elapsed = time.monotonic() - started
    total_cpu = worker.cpu_seconds() - cpu1
    wrong = soak.read_back()

    baseline = next(rss for events, rss, _ in samples if events == args.warmup)
    after = [rss for events, rss, _ in samples if events > args.warmup]
    growth = max(after) - baseline
    last_growth = samples[-1][1] - baseline
    print(
        f"{args.events:,} events in {elapsed:.0f} s ({args.events / elapsed:.0f}/s); worker CPU "
        f"{total_cpu:.1f} s ({total_cpu * 1e6 / args.events:.0f} µs/event); peak RSS (VmHWM) "
        f"{mb(peak):.1f} MB; {threads} threads; after the warm-up ({args.warmup:,} events, "
        f"{mb(baseline):.1f} MB): largest growth {mb(growth):+.2f} MB, at the end "
        f"{mb(last_growth):+.2f} MB (tolerance {args.tolerance_mb} MB, limit {args.limit_mb} MB)"
    )
    problems = list(wrong)
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump(
                {
                    "samples": [
                        {"events": e, "rss_kb": r, "cpu_us_per_event": c} for e, r, c in samples
                    ],
                    "baseline_kb": baseline,
                    "peak_kb": peak,
                    "executions": args.executions,
                    "flips_sent": sum(soak.sent.values()),
                    "read_back_problems": wrong,
                    "seconds": elapsed,
                },
                f,
                indent=2,
            )
    if mb(peak) >= args.limit_mb:
        problems.append(f"peak resident memory {mb(peak):.1f} MB is not under {args.limit_mb} MB")
    if mb(growth) > args.tolerance_mb:
        problems.append(
            f"resident memory grew {mb(growth):.2f} MB past the warm-up "
            f"(more than {args.tolerance_mb} MB)"
        )
    if problems:
        raise Failed("; ".join(problems))
    print(
        f"executions read back: {args.executions}, each with every Flip it was sent applied "
        f"once ({min(soak.sent.values()):,} to {max(soak.sent.values()):,} each); dead-letter "
        "queue empty"
    )
    print("soak: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
