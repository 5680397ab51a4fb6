#!/usr/bin/env bash
# What a page of `harel console` costs: requests to AWS (counted on the wire, by operation)
# and bytes served, for the first page, an execution page and the others, on a moto stack of
# N executions (default 20 and 400; give others as arguments). Prints a Markdown table
# (docs/src/console.md has one). The measuring is cli/examples/bench_console.rs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# the console runs as the operator runs it: the harel binary, beside the example
cargo build -q -p harel-cli --bin harel --example bench_console
exec scripts/with-moto.sh cargo run -q -p harel-cli --example bench_console -- "$@"
