#!/usr/bin/env bash
# The whole test suite: every crate's unit and integration tests, with a moto server for the
# DynamoDB/SQS parts and harel Python / Powertools Python in a venv for the compatibility and
# differential tests. Installs what it needs on first use (.venv).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
exec scripts/with-moto.sh cargo test --workspace "$@"
