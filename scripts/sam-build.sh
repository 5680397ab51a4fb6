#!/usr/bin/env bash
# `sam build` of the functions (worker, relay, sweeper and the example action `charge`), offline: cargo-lambda and zig (and the SAM CLI) from the
# Python index (scripts/install-lambda-tools.sh). Builds for arm64, the template's default,
# when the aarch64 standard library is installed (rustup target add aarch64-unknown-linux-gnu),
# else for x86_64 (samconfig.toml's `x86` environment). Extra arguments go to `sam build`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bins=$(scripts/install-lambda-tools.sh | paste -sd:)
export PATH="$bins:$PATH" SAM_CLI_TELEMETRY=0
# a target directory of its own: a release build must not hold the workspace's build lock for
# minutes (and SAM's cache would hash the whole source tree, target/ included: it is off)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target/sam}"
env_args=()
if ! rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
  echo "aarch64-unknown-linux-gnu is not installed: building for x86_64" >&2
  env_args=(--config-env x86)
fi
start=$SECONDS
sam build "${env_args[@]}" "$@"
echo "sam build took $((SECONDS - start)) s" >&2
ls -l .aws-sam/build/*/bootstrap >&2
