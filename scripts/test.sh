#!/usr/bin/env bash
# The whole test suite: every crate's unit and integration tests, with a moto server for the
# DynamoDB/SQS parts and harel Python / Powertools Python in a venv for the compatibility and
# differential tests. Installs what it needs on first use (.venv). A Docker engine, for the
# `sam local` tests, is started when one can be (scripts/ci-docker.sh: Debian's docker.io,
# through apt-get and a passwordless sudo); without one those tests say why and skip.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/ci-docker.sh || echo "test.sh: no Docker engine here; the sam local tests will skip" >&2
# Plain `cargo test` is the fast tier (engine, language, memory adapters, contracts): the tests
# that need moto, harel Python, Docker or a browser are #[ignore]d there, with the reason, and
# run here. Cargo's arguments come first, the test binaries' after a `--`.
cargo_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do cargo_args+=("$1"); shift; done
[ $# -gt 0 ] && shift
exec scripts/with-moto.sh cargo test --workspace "${cargo_args[@]}" -- --include-ignored "$@"
