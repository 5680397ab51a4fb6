#!/usr/bin/env bash
# Runs a command with a moto server (DynamoDB + SQS emulator) on a free loopback port:
#   scripts/with-moto.sh cargo test --workspace
# Exports AWS_ENDPOINT_URL (and MOTO_ENDPOINT) plus test credentials, and stops the server
# when the command ends, whatever its outcome. Tests isolate themselves with unique table
# prefixes and queue names, so one server serves a whole parallel run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$("$root/scripts/python-env.sh")
py="$venv/bin/python"
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
log=$(mktemp -t moto.XXXXXX.log)
# moto with its FIFO receive order fixed (scripts/moto-server.py says what and why)
"$py" "$root/scripts/moto-server.py" -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
moto_pid=$!
trap 'kill $moto_pid 2>/dev/null || true; wait $moto_pid 2>/dev/null || true; rm -f "$log"' EXIT INT TERM
ready=0
for _ in $(seq 1 150); do
  if "$py" -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/moto-api/', timeout=1)" 2>/dev/null; then
    ready=1; break
  fi
  if ! kill -0 $moto_pid 2>/dev/null; then break; fi
  sleep 0.2
done
if [ "$ready" != 1 ]; then echo "moto server did not start on port $port:" >&2; cat "$log" >&2; exit 1; fi
export AWS_ENDPOINT_URL="http://127.0.0.1:$port"
export MOTO_ENDPOINT="$AWS_ENDPOINT_URL"
export AWS_REGION="${AWS_REGION:-us-east-1}" AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-testing}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-testing}"
export AWS_EC2_METADATA_DISABLED=true
export HAREL_PYTHON="$py"
"$@"
