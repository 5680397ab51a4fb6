#!/usr/bin/env bash
# The differential test on its own: every case of tests/differential/cases.json through
# harel 0.9.0 (Python) and through our `harel run --json`, final Executions compared.
#   scripts/differential.sh                 # all cases
#   scripts/differential.sh timer_          # the cases whose name contains `timer_`
#   DIFFERENTIAL_SEED=7 DIFFERENTIAL_RANDOM=30 scripts/differential.sh random_   # more random scripts
# Uses $HAREL_PYTHON when set, else the venv scripts/python-env.sh creates.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${HAREL_PYTHON:-}" ]; then
  HAREL_PYTHON="$("$root/scripts/python-env.sh")/bin/python"
  export HAREL_PYTHON
fi
cargo build -q -p harel-cli --bin harel
export HAREL_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/harel"
export DIFFERENTIAL_ONLY="${1:-}"
exec cargo test -q -p harel-tests --test differential -- --nocapture --test-threads 1
