#!/usr/bin/env bash
# Costs that follow the work, not the data: the sweeper's poll through the timers' by_due
# index next to the old full-table Scan, and an idle sweeper tick, for N armed timers
# (default 1000 10000 100000; give others as arguments), on a moto server it starts.
# Prints markdown tables (progress on stderr).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
exec scripts/with-moto.sh cargo run -q -p harel-dynamodb --example bench_scale -- "$@"
