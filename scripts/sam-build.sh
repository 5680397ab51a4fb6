#!/usr/bin/env bash
# `sam build` of the functions (worker, relay, sweeper and the example action `charge`),
# offline: cargo-lambda and zig (and the SAM CLI) from the Python index
# (scripts/install-lambda-tools.sh), for the architecture the stack deploys:
#   scripts/sam-build.sh [--config-env ENV] [sam build arguments...]
# ENV is a samconfig.toml environment (default: `default`, arm64; `x86`: x86_64). The build
# installs the Rust target for ENV's architecture when it is missing (rustup target add), and
# refuses, before compiling anything, when ENV's build and deploy parameters name different
# architectures or when that target cannot be installed (no silent fallback: a binary for
# the other architecture fails every invocation), and after compiling, when a bootstrap is
# not an ELF for it (scripts/sam-arch.py). scripts/deploy.sh builds and deploys.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# --config-env ENV out of the arguments, and ENV's architecture: $config_env, $args, $arch
source "$root/scripts/config-env.sh"
target=$(python3 scripts/sam-arch.py target "$arch")
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  # the standard library for the deployed architecture, from the Rust distribution server
  # (cargo lambda would add it too, mid-build); no silent fallback when it cannot be had
  echo "sam-build: installing the Rust target $target (samconfig [$config_env] deploys $arch)" >&2
  if ! rustup target add "$target" >&2; then
    other=$([ "$arch" = arm64 ] && echo "--config-env x86 (x86_64)" || echo "--config-env default (arm64)")
    echo "sam-build: samconfig's [$config_env] deploys $arch, but the Rust target $target cannot be installed:" >&2
    echo "  rustup target add $target    or build and deploy the other architecture with $other" >&2
    exit 1
  fi
fi
echo "building for $arch ($target, samconfig [$config_env])" >&2
bins=$(scripts/install-lambda-tools.sh | paste -sd:)
export PATH="$bins:$PATH" SAM_CLI_TELEMETRY=0
# a target directory of its own: a release build must not hold the workspace's build lock for
# minutes (and SAM's cache would hash the whole source tree, target/ included: it is off)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target/sam}"
start=$SECONDS
sam build --config-env "$config_env" ${args[@]+"${args[@]}"}
echo "sam build took $((SECONDS - start)) s" >&2
python3 scripts/sam-arch.py binaries "$arch" .aws-sam/build >&2
ls -l .aws-sam/build/*/bootstrap >&2
