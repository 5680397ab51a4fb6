#!/usr/bin/env bash
# The parsers' fuzzers, longer than the test suite runs them: every property of the fuzz
# tests (the .stm front end, the queue's inbound parser, the worker on fuzzed bodies, the
# action map, the hooks file, the schedules file, the HTTP API's request bodies) for up to
# SECONDS each (default 60), as many cases as fit (FUZZ_CASES, default
# a million, stops them earlier). Each prints "fuzz NAME: N cases in T s"; a failure prints
# the shrunk input. The suite's own run (scripts/test.sh) is a few hundred cases each.
#
#   scripts/fuzz.sh            # 60 s per property
#   scripts/fuzz.sh 600        # 10 minutes per property
#   FUZZ_CASES=5000 scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
export FUZZ_SECONDS="$seconds"
export FUZZ_CASES="${FUZZ_CASES:-1000000}"

status=0
run() {
  local crate="$1" test="$2"
  # one property at a time: each gets the time box to itself
  cargo test -q -p "$crate" --test "$test" -- --nocapture --test-threads 1 2>&1 \
    | grep -oE 'fuzz [^:]+: [0-9]+ cases in [0-9.]+ s|panicked.*|minimal input.*|test result.*|.*FAILED.*' || status=1
}
run harel-lang fuzz
run harel-queue fuzz
run harel-lambda fuzz_inbound
run harel-remote fuzz
run harel-hooks fuzz
run harel-schedule fuzz
run harel-api fuzz
exit "$status"
