#!/usr/bin/env bash
# Ensure headless Chromium and its WebDriver (Debian's `chromium` and `chromium-driver`) for
# the console's browser test (cli/tests/console_browser.rs runs this first, so a fresh CI
# machine needs nothing else); installs them with apt-get when missing: as root, else through
# `sudo -n`. Prints the chromedriver path on stdout; apt's output goes to stderr.
set -euo pipefail
if ! command -v chromedriver >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "browser.sh: chromium or chromedriver missing, and no apt-get to install them" >&2
    exit 1
  fi
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
  export DEBIAN_FRONTEND=noninteractive
  install="$sudo apt-get install -y -qq --no-install-recommends chromium chromium-driver"
  # the package lists are refreshed only when the install cannot find the packages (a fresh
  # image has none)
  $install >&2 || { $sudo apt-get update -qq >&2 && $install >&2; }
fi
command -v chromedriver
