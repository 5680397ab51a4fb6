#!/usr/bin/env bash
# The soak: one warm worker process (the `worker` Lambda binary, release profile as deployed)
# driven through EVENTS events on moto by a Lambda Runtime API emulator, its resident memory
# and CPU per event printed every SOAK_INTERVAL events; fails (exit 1) when the memory grows
# past the warm-up by more than SOAK_TOLERANCE_MB or reaches SOAK_LIMIT_MB. docs/src/soak.md.
#   scripts/soak.sh [EVENTS]                         default 100000
# Settings (environment): SOAK_INTERVAL (10000), SOAK_WARMUP (one interval), SOAK_EXECUTIONS
# (100), SOAK_TOLERANCE_MB (2), SOAK_LIMIT_MB (64), SOAK_WORKER (a worker binary to run
# instead of building one; then SOAK_SETUP names the local-setup binary of the same build),
# SOAK_LOG (where the worker's output goes; default a temporary file, kept when it fails).
# Without AWS_ENDPOINT_URL it starts a moto server of its own (scripts/with-moto.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${AWS_ENDPOINT_URL:-}" ]; then
  exec scripts/with-moto.sh "$0" "$@"
fi
events=${1:-100000}
venv=$(scripts/python-env.sh)

if [ -n "${SOAK_WORKER:-}" ]; then
  worker=$SOAK_WORKER
  setup=${SOAK_SETUP:?SOAK_SETUP: the local-setup binary built with SOAK_WORKER}
else
  target=${CARGO_TARGET_DIR:-$root/target}
  start=$SECONDS
  cargo build --release -p harel-worker --bin worker -p harel-app --bin local-setup >&2
  echo "soak: release build took $((SECONDS - start)) s" >&2
  worker=$target/release/worker
  setup=$target/release/local-setup
fi

# a stack of its own on the moto server: the seven tables, the idempotency table, the FIFO
# queue and its DLQ
prefix="soak$(od -An -N5 -tx1 /dev/urandom | tr -d ' \n')"
export HAREL_TABLE_PREFIX=$prefix
export HAREL_QUEUE_URL="$AWS_ENDPOINT_URL/123456789012/$prefix.fifo"
export HAREL_DLQ_URL="$AWS_ENDPOINT_URL/123456789012/$prefix-dlq.fifo"
export IDEMPOTENCY_TABLE="${prefix}_idempotency"
export AWS_REGION=${AWS_REGION:-us-east-1}
"$setup" >&2

log=${SOAK_LOG:-$(mktemp -t soak-worker.XXXXXX.log)}
status=0
"$venv/bin/python" scripts/soak/soak.py --worker "$worker" --machines scripts/soak \
  --events "$events" --interval "${SOAK_INTERVAL:-10000}" \
  ${SOAK_WARMUP:+--warmup "$SOAK_WARMUP"} --executions "${SOAK_EXECUTIONS:-100}" \
  --tolerance-mb "${SOAK_TOLERANCE_MB:-2}" --limit-mb "${SOAK_LIMIT_MB:-64}" \
  --log "$log" || status=$?
if [ "$status" = 0 ] && [ -z "${SOAK_LOG:-}" ]; then
  rm -f "$log"
fi
exit "$status"
