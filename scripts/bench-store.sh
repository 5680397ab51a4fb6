#!/usr/bin/env bash
# The DynamoDB store's cost per kind of step next to harel Python's DynamoDBStore, in one run
# on a moto server: requests and computed capacity units, as a markdown table with ratios.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
exec scripts/with-moto.sh cargo run -q -p harel-benches --bin bench_store "$@"
