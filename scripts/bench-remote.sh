#!/usr/bin/env bash
# The overhead a remote action adds to a step, against the same action compiled in, in one
# run: requests, bytes and latency per step on loopback (harel Python's handler(fn) serving
# the action over HTTP and over Lambda's Invoke API). Markdown on stdout. Needs harel's
# Python (scripts/python-env.sh makes .venv). Steps per variant: $1 (default 300).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
HAREL_PYTHON="${HAREL_PYTHON:-$("$root/scripts/python-env.sh")/bin/python}" \
  cargo run -q -p harel-remote --example bench_remote -- "$@"
