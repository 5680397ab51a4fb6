#!/usr/bin/env bash
# Requests and DynamoDB write units of the idempotency layer, Rust (harel-idempotency) beside
# Powertools Python, on the same moto table in the same run: a first call, a replay and a
# failure. Python's requests are counted with botocore event hooks, ours by wrapping the
# store's Client; write units are DynamoDB's 1 KB units of the larger of the item before and
# after each write (read by an uncounted client), the same rule on both sides.
#   scripts/bench-idempotency.sh [RESULT_BYTES]   (size of the handler's result, default 2000)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bytes="${1:-2000}"
if [ -z "${AWS_ENDPOINT_URL:-}" ]; then
  exec "$root/scripts/with-moto.sh" "$0" "$@"
fi
cd "$root"
result=$(printf '{"ok": true, "blob": "%s"}' "$(head -c "$bytes" /dev/zero | tr '\0' x)")
cargo build -q -p harel-idempotency --example bench
rust=$(target/debug/examples/bench "$result")
table=$("$HAREL_PYTHON" -c 'import json,sys; print(json.loads(sys.argv[1])["table"])' "$rust")
side="$root/shared/idempotency/tests/powertools_side.py"
export AWS_DEFAULT_REGION="${AWS_REGION:-us-east-1}"
py_run() { echo "$1" | "$HAREL_PYTHON" -W ignore "$side" run --table "$table" --prefix bench-python \
  --jmespath order --remaining-ms 30000 --result "$result" "${@:2}"; }
py_first=$(py_run '{"order": "bench-1"}')
py_replay=$(py_run '{"order": "bench-1"}')
py_failure=$(py_run '{"order": "bench-2"}' --fail)
"$HAREL_PYTHON" - "$rust" "$py_first" "$py_replay" "$py_failure" "$bytes" <<'PY'
import json, sys
rust = json.loads(sys.argv[1])
py = dict(zip(["first", "replay", "failure"], map(json.loads, sys.argv[2:5])))
assert py["first"]["ran"] and not py["replay"]["ran"] and py["failure"]["error"], py
print(f"idempotency requests and write units, handler result of {sys.argv[5]} bytes (moto)")
header = f"{'path':<8} {'side':<7} {'Get':>4} {'Put':>4} {'Upd':>4} {'Del':>4} {'requests':>9} {'WCU':>5}"
print(header)
print("-" * len(header))
ratios = []
for path in ["first", "replay", "failure"]:
    rows = {}
    for side, data in [("rust", rust[path]), ("python", py[path])]:
        c = data["calls"]
        total = sum(c.values())
        rows[side] = (total, data["write_units"])
        print(f"{path:<8} {side:<7} {c.get('GetItem', 0):>4} {c.get('PutItem', 0):>4} "
              f"{c.get('UpdateItem', 0):>4} {c.get('DeleteItem', 0):>4} {total:>9} {data['write_units']:>5}")
    r, p = rows["rust"], rows["python"]
    ratios.append((path, r[0] / p[0], r[1] / p[1] if p[1] else float("nan")))
print()
for path, req, wcu in ratios:
    print(f"{path:<8} rust/python requests {req:.2f}  write units {wcu:.2f}")
worse = [p for p, req, _ in ratios if req > 1]
replay_reads = rust["replay"]["calls"]["GetItem"]
print()
print("goal: no more requests than Powertools on any path:", "met" if not worse else f"NOT met on {worse}")
print("goal: no read on a replay:", "met" if replay_reads == 0 else f"NOT met ({replay_reads} reads)")
PY
