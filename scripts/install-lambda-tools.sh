#!/usr/bin/env bash
# Installs (once) the serverless build tools from the Python index, each in its own venv so
# neither disturbs .venv (harel, moto):
#   .venv-lambda: cargo-lambda and ziglang (cargo-lambda cross-links with zig, found through
#                 `python3 -m ziglang`: put .venv-lambda/bin first on PATH)
#   .venv-sam:    aws-sam-cli (sam build / validate / deploy)
# Prints the two bin directories, lambda first. Timings go to stderr.
#   PATH="$(scripts/install-lambda-tools.sh | paste -sd:):$PATH" cargo lambda build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
install() { # venv, stamp, packages...
  local venv=$1 stamp=$2
  shift 2
  if [ ! -f "$venv/$stamp" ]; then
    local start=$SECONDS
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check "$@" >&2
    touch "$venv/$stamp"
    echo "installed $* into $venv in $((SECONDS - start)) s" >&2
  fi
}
install "$root/.venv-lambda" .lambda-tools-v1 'cargo-lambda>=1.9,<2' ziglang
install "$root/.venv-sam" .sam-v1 'aws-sam-cli>=1.170,<2'
echo "$root/.venv-lambda/bin"
echo "$root/.venv-sam/bin"
