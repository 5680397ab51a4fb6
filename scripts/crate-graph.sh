#!/usr/bin/env bash
# The workspace's crates with the harel crates each depends on (normal dependencies: what
# `cargo tree -e normal --workspace --depth 1` shows), as the rows of README's crate table.
# tests/tests/architecture.rs checks that table against the manifests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo metadata --format-version 1 --no-deps --offline | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    deps = sorted({d["name"][len("harel-"):] for d in p["dependencies"]
                   if d["kind"] is None and d["name"].startswith("harel-")})
    print("| `%s` | %s |" % (p["name"], ", ".join(deps) or "-"))
'
