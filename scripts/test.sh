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
exec scripts/with-moto.sh cargo test --workspace "$@"
