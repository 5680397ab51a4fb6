#!/usr/bin/env bash
# What one event costs through the functions (the worker with its idempotency layer, the relay)
# next to harel Python's worker, in one run on a moto server: per event, DynamoDB requests and
# read/write units, SQS requests, Lambda invocations and billed duration (from measured CPU
# time), and dollars per million events at the list prices it prints, with ratios. A
# benchmark, not a test: CI does not run it. Built in release (CPU time is what it measures).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
exec scripts/with-moto.sh cargo run -q --release -p harel-benches --bin cost_table "$@"
