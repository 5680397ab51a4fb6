#!/usr/bin/env bash
# What one listed page costs against the size of the executions table: M finished executions
# (default 1000 10000 100000; pass others as arguments) beside a few running ones, on a moto
# server; requests and items read per page, through the status indexes and through the Scan,
# as a markdown table.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
exec scripts/with-moto.sh cargo run -q -p harel-dynamodb --example bench_list -- "$@"
