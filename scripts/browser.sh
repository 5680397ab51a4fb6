#!/usr/bin/env bash
# Ensure headless Chromium and its WebDriver (Debian's `chromium` and `chromium-driver`) for
# the console's browser test; installs them with apt-get when missing (CI is a fresh Debian
# machine as root). Prints the chromedriver path.
set -euo pipefail
if ! command -v chromedriver >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >&2
fi
command -v chromedriver
