#!/usr/bin/env bash
# A long fault storm over the functions' worker, relay and sweeper on a moto server:
#   scripts/storm.sh [EXECUTIONS] [SEED]          (defaults: 2000, a random seed)
# Prints the seed first, one line per round of 150 executions (fresh tables each), then the
# figures: executions by kind, invocations, faults injected by kind, invariant violations,
# duration. HAREL_STORM_SEED=S HAREL_STORM_EXECUTIONS=N reproduces a run (or one round: its
# own seed and size); HAREL_STORM_LANES (default 4) sets the concurrent pollers,
# HAREL_STORM_LOG=FILE appends one line per record handled (every round).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
executions="${1:-2000}"
seed="${2:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
export HAREL_STORM_EXECUTIONS="$executions" HAREL_STORM_SEED="$seed"
export HAREL_STORM_LANES="${HAREL_STORM_LANES:-4}"
# this script has a moto server of its own: emptied between rounds, it stays fast
export HAREL_STORM_RESET_MOTO=1
exec scripts/with-moto.sh cargo test -p harel-tests --test fault_storm -- \
  --exact the_storm_loses_nothing_and_applies_nothing_twice --include-ignored --nocapture
