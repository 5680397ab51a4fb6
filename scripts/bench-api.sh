#!/usr/bin/env bash
# The HTTP API's cost: AWS requests (and DynamoDB read units) per create, send, show, list,
# control, webhook and callback completion, beside what the worker spends on the same create
# or event (on moto, functions/api/examples/bench_api.rs); then the api binary's size and
# cold start beside the worker's (release builds: built here if missing, which takes minutes
# with the fat LTO profile; cold start: scripts/bench-cold-start.sh, to "ready" against moto).
#   scripts/bench-api.sh [N]      (N requests of each kind, default 20)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/with-moto.sh cargo run -q -p harel-api-function --example bench_api -- "${1:-20}"
target=${CARGO_TARGET_DIR:-$root/target}
if [ ! -x "$target/release/api" ] || [ ! -x "$target/release/worker" ]; then
  echo "building the release binaries (api, worker)..." >&2
  cargo build -q --release -p harel-api-function -p harel-worker
fi
api=$(stat -c %s "$target/release/api")
worker=$(stat -c %s "$target/release/worker")
printf '%-8s %10s\n' binary bytes
printf '%-8s %10d\n' api "$api" worker "$worker"
awk -v a="$api" -v w="$worker" 'BEGIN { printf "api/worker: %.2f\n", a / w }'
scripts/bench-cold-start.sh "$target/release/api" "$target/release/worker"
