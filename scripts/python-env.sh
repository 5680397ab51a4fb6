#!/usr/bin/env bash
# Creates (once) the project's Python venv in .venv with the other side of every
# compatibility test: harel[dynamodb] 0.9.0, moto[server], aws-lambda-powertools.
# harel's aiobotocore pins botocore; installing everything in one resolver run can spin for
# many minutes, so harel goes first and the rest is constrained to the botocore it accepted.
# moto is pinned: scripts/moto-server.py patches its FIFO receive (checked by a test).
# Prints the venv's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
stamp="$venv/.harel-env-v1"
if [ ! -f "$stamp" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check 'harel[dynamodb]==0.9.0' >&2
  botocore=$("$venv/bin/pip" freeze | grep -i '^botocore==')
  "$venv/bin/pip" install -q --disable-pip-version-check 'moto[server]==5.2.5' 'aws-lambda-powertools>=3,<4' "$botocore" >&2
  touch "$stamp"
fi
echo "$venv"
