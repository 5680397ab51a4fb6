#!/usr/bin/env bash
# The functions' binary built for arm64 (aarch64-unknown-linux-gnu, cross-linked by cargo
# lambda with zig: functions/bootstrap, the one binary every function deploys), run as the
# worker (_HANDLER=worker) under qemu-user on this x86_64 machine: its `file` output, then one
# real invocation. A Lambda Runtime API of its own (a few lines of Python) hands the bootstrap
# events/worker-create.json; the worker creates the execution in DynamoDB (moto) and answers
# with an empty partial-batch response; the script reads the execution back.
#   scripts/arm64-smoke.sh [--release]
#   ARM64_BOOTSTRAP=.aws-sam/build/Worker/bootstrap scripts/arm64-smoke.sh   (what sam build made)
# Installs what it needs: the Rust target (rustup target add), qemu-user-static (apt-get, as
# root or through `sudo -n`) with the aarch64 C library, cargo lambda and zig (scripts/install-lambda-tools.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${AWS_ENDPOINT_URL:-}" ]; then exec scripts/with-moto.sh "$0" "$@"; fi
profile=()
[ "${1:-}" = --release ] && profile=(--release)
target=aarch64-unknown-linux-gnu
rustup target list --installed | grep -qx "$target" || rustup target add "$target" >&2
# qemu-user, and the aarch64 glibc the bootstrap is linked against (Lambda's provided.al2023
# has it; here Debian's cross package, found through QEMU_LD_PREFIX)
if ! command -v qemu-aarch64-static >/dev/null 2>&1 || [ ! -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]; then
  sudo=$([ "$(id -u)" = 0 ] && echo "" || echo "sudo -n")
  packages=(qemu-user-static libc6-arm64-cross)
  $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >&2 \
    || { $sudo apt-get update -qq >&2 && $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >&2; }
fi
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu
bins=$(scripts/install-lambda-tools.sh | paste -sd:)
export PATH="$bins:$PATH"
# the aarch64 build in a directory of its own (ARM64_TARGET_DIR), beside the host's target
arm_target="${ARM64_TARGET_DIR:-${CARGO_TARGET_DIR:-$root/target}/arm64}"
if [ -n "${ARM64_BOOTSTRAP:-}" ]; then
  bootstrap=$ARM64_BOOTSTRAP
else
  start=$SECONDS
  CARGO_TARGET_DIR="$arm_target" cargo lambda build --arm64 ${profile[@]+"${profile[@]}"} -p harel-bootstrap --bin bootstrap >&2
  echo "cargo lambda build --arm64 took $((SECONDS - start)) s" >&2
  # cargo lambda puts each binary where `sam build` expects it: lambda/NAME/bootstrap
  bootstrap=$(ls "$arm_target/lambda/bootstrap/bootstrap")
fi
file -L "$bootstrap"
prefix=arm$RANDOM
export HAREL_TABLE_PREFIX=$prefix IDEMPOTENCY_TABLE=${prefix}_idempotency
export HAREL_QUEUE_URL=$AWS_ENDPOINT_URL/123456789012/$prefix.fifo HAREL_DLQ_URL=$AWS_ENDPOINT_URL/123456789012/$prefix-dlq.fifo
cargo run -q -p harel-app --bin local-setup >/dev/null
"$HAREL_PYTHON" - "$bootstrap" events/worker-create.json <<'PY'
import http.server, json, os, subprocess, sys, threading, time
import boto3

bootstrap, event_file = sys.argv[1], sys.argv[2]
event = open(event_file, "rb").read()
answers, served = [], threading.Event()

class RuntimeApi(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):  # /2018-06-01/runtime/invocation/next: one event, then nothing
        if served.is_set():
            time.sleep(30)
            return
        served.set()
        self.send_response(200)
        for k, v in {"Lambda-Runtime-Aws-Request-Id": "arm64-1",
                     "Lambda-Runtime-Deadline-Ms": str(int(time.time() * 1000) + 60_000),
                     "Lambda-Runtime-Invoked-Function-Arn": "arn:aws:lambda:us-east-1:123456789012:function:worker",
                     "Content-Type": "application/json"}.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(event)))
        self.end_headers()
        self.wfile.write(event)

    def do_POST(self):  # .../response or .../error
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        answers.append((self.path, body.decode()))
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RuntimeApi)
threading.Thread(target=server.serve_forever, daemon=True).start()
env = dict(os.environ, AWS_LAMBDA_RUNTIME_API=f"127.0.0.1:{server.server_address[1]}",
           AWS_LAMBDA_FUNCTION_NAME="worker", AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256",
           AWS_LAMBDA_FUNCTION_VERSION="1", AWS_LAMBDA_LOG_STREAM_NAME="arm64",
           AWS_LAMBDA_LOG_GROUP_NAME="arm64", _HANDLER="worker")
start = time.perf_counter()
proc = subprocess.Popen(["qemu-aarch64-static", bootstrap], env=env,
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
deadline = time.time() + 120
while not answers and time.time() < deadline and proc.poll() is None:
    time.sleep(0.05)
elapsed = time.perf_counter() - start
proc.kill()
logs = proc.communicate()[0]
if not answers:
    sys.exit(f"the arm64 worker answered nothing in 120 s; its output:\n{logs}")
path, body = answers[0]
print(f"invocation answered in {elapsed:.2f} s under qemu: POST {path} {body}")
if not path.endswith("/response") or json.loads(body) != {"batchItemFailures": []}:
    sys.exit(f"the arm64 worker failed the batch; its output:\n{logs}")
table = boto3.resource("dynamodb").Table(f"{os.environ['HAREL_TABLE_PREFIX']}_executions")
item = table.get_item(Key={"id": "order-1"}, ConsistentRead=True).get("Item")
if not item:
    sys.exit(f"order-1 was not stored; the worker's output:\n{logs}")
exe = json.loads(item["data"])
print(f"order-1 stored by the arm64 worker: status {exe['status']}, active {exe.get('active_path')}")
if exe["status"] != "RUNNING" or exe.get("active_path") != "Cart":
    sys.exit("order-1 is not RUNNING in Cart")
PY
