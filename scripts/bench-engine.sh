#!/usr/bin/env bash
# The engine benchmark, ours next to harel Python's, in one run:
#   scripts/bench-engine.sh [RUST_EVENTS [PYTHON_EVENTS]]     (default 300000 and 30000)
# Measures events per second through the pure engine on a flat machine and an orthogonal
# one (shared/engine/benches/machines/), in Rust (cargo bench, release profile, with a
# counting allocator) and in harel 0.9.0 (its core.start/process generators driven the same
# way; and, for context, its DurableRunner over a DictStore). The ratio compares the two
# pure engines. Needs only cargo and the project venv ($HAREL_PYTHON, else
# scripts/python-env.sh creates it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rust_events=${1:-300000}
python_events=${2:-30000}
python=${HAREL_PYTHON:-"$("$root/scripts/python-env.sh")/bin/python"}
results=$(mktemp)
trap 'rm -f "$results"' EXIT

echo "building and running the Rust bench ($rust_events events per machine)..." >&2
cargo bench -q -p harel-engine --bench engine -- --events "$rust_events" | grep '^RESULT' >>"$results"
echo "running harel Python ($python_events events per machine and driver)..." >&2
"$python" shared/engine/benches/harel_bench.py --events "$python_events" | grep '^RESULT' >>"$results"

"$python" - "$results" <<'PY'
import sys

rows = {}
for line in open(sys.argv[1]):
    _, side, machine, events, secs, *allocs = line.split()
    rows[(side, machine)] = (int(events) / float(secs), [int(a) / int(events) for a in allocs])

print()
print("events/s through the pure engine (Rust: harel-engine; Python: harel 0.9.0 core.process)")
head = f"{'machine':<11} {'Rust ev/s':>12} {'Python ev/s':>12} {'ratio':>8} {'allocs/ev':>10} {'(+driver)':>10}   {'Python runner ev/s':>18}"
print(head)
print("-" * len(head))
for machine in ("flat", "orthogonal"):
    rust, allocs = rows[("rust-engine", machine)]
    py, _ = rows[("python-engine", machine)]
    runner, _ = rows[("python-runner", machine)]
    print(f"{machine:<11} {rust:>12,.0f} {py:>12,.0f} {rust / py:>7.1f}x {allocs[0]:>10.1f} {allocs[1]:>10.1f}   {runner:>18,.0f}")
print()
print("ratio = Rust pure engine / Python pure engine (same machines, same events, same minimal")
print("driver: null actions, regions created inline, domain events broadcast, Finished delivered).")
print("Python runner = harel's DurableRunner over a DictStore (store commits, dedupe, relay), for context.")
print("events/s: the fastest of 5 (Rust) / 3 (Python engine) runs. allocs/ev: Rust heap allocations")
print("per event inside the engine's start/process calls (+driver: with the bench driver's own).")
print("goal: ratio >= 100x")
PY
