#!/usr/bin/env bash
# Install a headless browser for the review page's test: Debian's `chromium` and `chromium-driver`, when
# either program is missing. Prints the two paths (browser, then driver), one a line.
#
# Usage: deploy/browser/install.sh     # prints e.g. /usr/bin/chromium and /usr/bin/chromedriver
#
# Debian's packages, not a browser download: a test machine often cannot reach Google's or Playwright's
# download hosts, and the distribution's driver always matches its browser's version.
set -euo pipefail

find_programs() {
  local browser driver
  browser=$(command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null) || return 1
  driver=$(command -v chromedriver 2>/dev/null) || return 1
  printf '%s\n%s\n' "$browser" "$driver"
}

if find_programs; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "chromium is not installed and installing it needs root: sudo apt-get install -y chromium chromium-driver" >&2
  exit 1
fi
echo "installing Debian's chromium and chromium-driver" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
apt-get install -y -q --no-install-recommends chromium chromium-driver >&2

if ! find_programs; then
  echo "apt-get installed chromium and chromium-driver, but chromium or chromedriver is not on PATH" >&2
  exit 1
fi
