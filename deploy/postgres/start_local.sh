#!/usr/bin/env bash
# Start a private PostgreSQL server from DATA_DIR on 127.0.0.1:PORT, without systemd, and create DBNAME.
#
# Usage: deploy/postgres/start_local.sh DATA_DIR PORT [DBNAME]      (DBNAME defaults to "formwork")
#   then: postgresql+psycopg://postgres@127.0.0.1:PORT/DBNAME      (printed as the last line)
#   stop: runuser -u postgres -- "$(deploy/postgres/install.sh)/pg_ctl" -D DATA_DIR stop -m fast
#
# - initdb runs once (skipped when DATA_DIR already holds a cluster); root cannot run initdb or the
#   server, so as root both run as the `postgres` user, which must be able to reach DATA_DIR's parent.
# - Authentication is `trust`, and the server listens on 127.0.0.1 only: for tests and local work, never
#   for a shared host. Its Unix socket lives in DATA_DIR, so /var/run/postgresql is not needed.
# - Extra server settings can be passed in POSTGRES_OPTS, e.g. "-c fsync=off" for throwaway test data.
# - The server log is DATA_DIR/server.log; on failure its tail is printed.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 DATA_DIR PORT [DBNAME]" >&2
  exit 2
fi
DATA_DIR=$(readlink -m "$1")
PORT=$2
DBNAME=${3:-formwork}
LOG="$DATA_DIR/server.log"
BIN=$("$(dirname "$0")/install.sh")

as_owner() {
  # Run a command as the user that owns the cluster: `postgres` when we are root, else ourselves.
  if [ "$(id -u)" -eq 0 ]; then
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

mkdir -p "$DATA_DIR"
if [ "$(id -u)" -eq 0 ]; then
  chown postgres:postgres "$DATA_DIR"
fi
chmod 700 "$DATA_DIR"
if ! as_owner test -w "$DATA_DIR"; then
  echo "the postgres user cannot write $DATA_DIR: every folder above it must be searchable (chmod o+x)" >&2
  exit 1
fi

if [ ! -s "$DATA_DIR/PG_VERSION" ]; then
  as_owner "$BIN/initdb" -D "$DATA_DIR" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
    >"$DATA_DIR.initdb.log" 2>&1 || {
    cat "$DATA_DIR.initdb.log" >&2
    exit 1
  }
fi

if ! as_owner "$BIN/pg_ctl" -D "$DATA_DIR" status >/dev/null 2>&1; then
  # shellcheck disable=SC2086  # POSTGRES_OPTS is a list of server options, split on purpose
  if ! as_owner "$BIN/pg_ctl" -D "$DATA_DIR" -l "$LOG" -w -t 60 \
    -o "-h 127.0.0.1 -p $PORT -k $DATA_DIR ${POSTGRES_OPTS:-}" start >&2; then
    echo "PostgreSQL did not start; the end of $LOG:" >&2
    tail -n 40 "$LOG" >&2 || true
    exit 1
  fi
fi

PSQL=("$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -qtA)
if [ "$(as_owner "${PSQL[@]}" -c "SELECT 1 FROM pg_database WHERE datname = '$DBNAME'")" != "1" ]; then
  as_owner "${PSQL[@]}" -c "CREATE DATABASE \"$DBNAME\"" >&2
fi
echo "postgresql+psycopg://postgres@127.0.0.1:$PORT/$DBNAME"
