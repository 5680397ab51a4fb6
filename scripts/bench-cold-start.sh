#!/usr/bin/env bash
# Cold start of each function binary: its size, and the time from process start to "ready"
# (configuration read, machines loaded and checked, SDK clients built), median of 7 runs,
# against a moto server. Binaries: .aws-sam/build/*/bootstrap (scripts/sam-build.sh) unless
# given as arguments. Each runs with `_HANDLER` as Lambda sets it from the template's Handler:
# a `bootstrap` the name of its folder (.aws-sam/build/Worker/bootstrap: worker, the one binary
# of every function then runs the worker), any other binary its own name (target/release/relay:
# relay, which its own binary ignores).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${AWS_ENDPOINT_URL:-}" ]; then exec scripts/with-moto.sh "$0" "$@"; fi
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then bins=(.aws-sam/build/Worker/bootstrap .aws-sam/build/Relay/bootstrap .aws-sam/build/Sweeper/bootstrap .aws-sam/build/Api/bootstrap); fi
prefix=cs$RANDOM
export HAREL_TABLE_PREFIX=$prefix IDEMPOTENCY_TABLE=${prefix}_idempotency
export HAREL_QUEUE_URL=$AWS_ENDPOINT_URL/123456789012/$prefix.fifo HAREL_DLQ_URL=$AWS_ENDPOINT_URL/123456789012/$prefix-dlq.fifo
cargo run -q -p harel-app --bin local-setup >/dev/null
"$HAREL_PYTHON" - "${bins[@]}" <<'PY'
import os, statistics, subprocess, sys, time
env = dict(os.environ, AWS_LAMBDA_RUNTIME_API="127.0.0.1:9", AWS_LAMBDA_FUNCTION_NAME="bench",
           AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256", AWS_LAMBDA_FUNCTION_VERSION="1",
           AWS_LAMBDA_LOG_STREAM_NAME="bench", AWS_LAMBDA_LOG_GROUP_NAME="bench")
print(f"{'binary':40} {'size':>9} {'ready (median of 7)':>20}")
for path in sys.argv[1:]:
    name = os.path.basename(path)
    if name == "bootstrap":
        name = os.path.basename(os.path.dirname(os.path.abspath(path)))
    handler = dict(env, _HANDLER=name.lower())
    times = []
    for _ in range(7):
        start = time.perf_counter()
        p = subprocess.Popen([path], env=handler, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in p.stdout:
            if " ready" in line:
                times.append(time.perf_counter() - start)
                break
        else:
            sys.exit(f"{path} never became ready")
        p.kill(); p.wait()
    size = os.path.getsize(path)
    print(f"{path:40} {size/1e6:7.1f}MB {statistics.median(times)*1000:17.1f} ms")
PY
