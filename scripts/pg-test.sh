#!/bin/bash
# pg-test.sh -- a throwaway PostgreSQL 15 cluster for tests and benchmarks
# (shared/spec/test-infra.md section 2).
#
#   scripts/pg-test.sh start DIR PORT   initdb DIR/data (trust auth, no fsync) and start it on
#                                       127.0.0.1:PORT; prints CP_TEST_PG_URL=postgresql://...
#   scripts/pg-test.sh stop DIR         stops it at once (-m immediate)
#   scripts/pg-test.sh url PORT         prints the URL only
#
# Idempotent: starting a cluster that already runs prints its URL again; stopping one that
# does not run does nothing. Works as root (the server runs as the postgres user through
# runuser) or as any other user, with no standard input (CI). Installs postgresql-15 only
# when it is missing, never upgrading what is there.
set -euo pipefail

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

usage() {
    echo "usage: $0 start DIR PORT | stop DIR | url PORT" >&2
    exit 2
}

# Runs a command as the cluster's owner: postgres when we are root, else ourselves.
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

ensure_installed() {
    if [ -x "$PGBIN/initdb" ] && [ -x "$PGBIN/pg_ctl" ]; then return 0; fi
    if [ "$(id -u)" != 0 ]; then
        echo "pg-test: $PGBIN/initdb missing and not root: install postgresql-15" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-upgrade postgresql-15 </dev/null >/dev/null 2>&1 ||
        { apt-get update </dev/null >/dev/null 2>&1 && apt-get install -y --no-upgrade postgresql-15 </dev/null >/dev/null; }
}

url() { echo "CP_TEST_PG_URL=postgresql://postgres@127.0.0.1:$1/postgres"; }

running() { [ -f "$1/data/postmaster.pid" ] && as_owner "$PGBIN/pg_ctl" -D "$1/data" status >/dev/null 2>&1; }

start() {
    local dir=$1 port=$2
    ensure_installed
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if running "$dir"; then
        url "$port"
        return 0
    fi
    if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        rm -rf "$dir/data"
        as_owner "$PGBIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
            >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    # speed over durability: the cluster is thrown away
    as_owner "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 -o "-c listen_addresses=127.0.0.1 -p $port \
-k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 \
-c shared_buffers=256MB -c max_wal_size=4GB -c checkpoint_timeout=30min -c max_locks_per_transaction=1024" \
        start >/dev/null || { tail -20 "$dir/log" >&2; exit 1; }
    url "$port"
}

stop() {
    local dir=$1
    [ -d "$dir/data" ] || return 0
    if running "$dir"; then
        as_owner "$PGBIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
    fi
}

[ $# -ge 1 ] || usage
case "$1" in
start) [ $# = 3 ] || usage; start "$2" "$3" ;;
stop) [ $# = 2 ] || usage; stop "$2" ;;
url) [ $# = 2 ] || usage; url "$2" ;;
*) usage ;;
esac
