#!/usr/bin/env bash
# Installs (once) schemathesis from the Python index in its own venv, .venv-schemathesis (its
# dependencies stay out of .venv, harel's and moto's). Prints the venv's bin directory.
#   "$(scripts/schemathesis.sh)/schemathesis" run http://127.0.0.1:8080/openapi.json
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv-schemathesis"
stamp="$venv/.schemathesis-v1"
if [ ! -f "$stamp" ]; then
  start=$SECONDS
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check 'schemathesis>=4.3,<5' >&2
  touch "$stamp"
  echo "installed schemathesis into $venv in $((SECONDS - start)) s" >&2
fi
echo "$venv/bin"
