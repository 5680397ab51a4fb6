#!/usr/bin/env bash
# Costs that follow the work, not the data, on a moto server it starts, each size seeded on
# fresh tables:
# - timers: the sweeper's poll through the timers' by_due index next to the old full-table
#   Scan, a busy and an idle sweeper tick, for N armed timers; then what a month costs,
#   before and after, for an idle stack, 1 M events/month with 100 k armed timers and 100 M
#   events/month with 10 M armed timers;
# - listing: one `harel list --status RUNNING --limit 5` page (and by machine) through the
#   status indexes next to the Scan, for M finished executions.
# Sizes default to 1000 10000 100000 (give others as arguments). Markdown on stdout, progress
# on stderr.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${AWS_ENDPOINT_URL:-}" ]; then exec scripts/with-moto.sh "$0" "$@"; fi
cargo run -q -p harel-benches --bin bench_scale -- "$@"
cargo run -q -p harel-benches --bin bench_list -- "$@"
