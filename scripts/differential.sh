#!/usr/bin/env bash
# The differential test on its own: every case of tests/differential/cases.json through
# harel 0.9.0 (Python) and through our `harel run --json`, final Executions compared.
#   scripts/differential.sh                 # all cases
#   scripts/differential.sh timer_          # the cases whose name contains `timer_`
#   DIFFERENTIAL_SEED=7 DIFFERENTIAL_RANDOM=30 scripts/differential.sh random_   # more random scripts
#   scripts/differential.sh --generate 2000 --seed 7   # generated machines and walks
#                                           # (tests/differential/README.md, "Generated cases")
# Uses $HAREL_PYTHON when set, else the venv scripts/python-env.sh creates.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${HAREL_PYTHON:-}" ]; then
  HAREL_PYTHON="$("$root/scripts/python-env.sh")/bin/python"
  export HAREL_PYTHON
fi
generate="" seed=""
filter=""
while [ $# -gt 0 ]; do
  case "$1" in
    --generate) generate="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    *) filter="$1"; shift ;;
  esac
done
cargo build -q -p harel-cli --bin harel
export HAREL_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/harel"
if [ -n "$generate" ]; then
  export HAREL_GEN_CASES="$generate"
  [ -z "$seed" ] || export HAREL_GEN_SEED="$seed"
  exec cargo test -q -p harel-tests --test generated_differential -- --include-ignored --nocapture --test-threads 1
fi
export DIFFERENTIAL_ONLY="$filter"
exec cargo test -q -p harel-tests --test differential -- --include-ignored --nocapture --test-threads 1
