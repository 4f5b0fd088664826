#!/usr/bin/env bash
# Install PostgreSQL from Debian's package when its server programs are missing, then print the folder
# that holds pg_ctl and initdb (the Debian package keeps them off PATH, under /usr/lib/postgresql/N/bin).
#
# Usage: deploy/postgres/install.sh          # prints e.g. /usr/lib/postgresql/15/bin
#
# No systemd is needed or used: deploy/postgres/start_local.sh runs a server from a data folder of its own.
# The package's post-install step may try to create and start a default cluster on port 5432; nothing here
# relies on it.
set -euo pipefail

find_bin() {
  local candidate
  if candidate=$(command -v pg_ctl 2>/dev/null) && [ -x "$(dirname "$(readlink -f "$candidate")")/initdb" ]; then
    dirname "$(readlink -f "$candidate")"
    return 0
  fi
  # Newest major version first.
  for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$candidate/pg_ctl" ] && [ -x "$candidate/initdb" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if bin=$(find_bin); then
  echo "$bin"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "PostgreSQL is not installed and installing it needs root: sudo apt-get install -y postgresql" >&2
  exit 1
fi
echo "installing PostgreSQL (Debian package 'postgresql')" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
apt-get install -y -q postgresql >&2

if bin=$(find_bin); then
  echo "$bin"
else
  echo "apt-get installed 'postgresql' but no pg_ctl/initdb was found under /usr/lib/postgresql/*/bin" >&2
  exit 1
fi
