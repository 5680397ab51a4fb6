#!/usr/bin/env bash
# The listing part of scripts/bench-scale.sh alone: what one listed page costs against the
# size of the executions table (M finished executions, default 1000 10000 100000).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
exec scripts/with-moto.sh cargo run -q -p harel-benches --bin bench_list -- "$@"
