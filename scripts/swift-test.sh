#!/usr/bin/env bash
# scripts/swift-test.sh -- a throwaway OpenStack Swift "all in one" with the S3 API (s3api +
# tempauth) on 127.0.0.1, for the object-store tests (tests/integration/ostore_test.c).
#
# usage: scripts/swift-test.sh start DIR PORT   prints S3_ENDPOINT=http://127.0.0.1:PORT
#                                               once the S3 API answers, then exits
#        scripts/swift-test.sh stop DIR         kills it and removes DIR
#
# The proxy listens on PORT; the account, container and object servers on PORT+1..PORT+3.
# Everything (configuration, rings, data, logs, pid files) lives in DIR; the only thing
# outside it is /etc/swift/swift.conf (the hash prefix/suffix), which the Debian package
# installs. Credentials: access key "test:tester", secret "testing", region "us-east-1",
# path-style URLs http://127.0.0.1:PORT/bucket/key.
#
# Missing Debian packages are installed (apt-get, --no-install-recommends; needs root).
# Both commands are idempotent: "start" on a healthy instance with the same port just
# prints the endpoint again; "stop" on nothing does nothing. No standard input is read.
#
# Example (the tests' S3 cases):
#   eval "$(scripts/swift-test.sh start /tmp/swift-os 18080)"
#   CP_S3_ENDPOINT=$S3_ENDPOINT build/tests/integration_ostore_test
#   scripts/swift-test.sh stop /tmp/swift-os
set -euo pipefail

PKGS=(swift swift-proxy swift-object swift-container swift-account)
SERVERS=(account container object proxy)
MARKER=.cloudprof-swift-test

die() { echo "swift-test: $*" >&2; exit 1; }

usage() {
    echo "usage: $0 start DIR PORT | stop DIR" >&2
    exit 2
}

# Port of server $1 given the proxy port $2.
port_of() {
    case $1 in
        proxy) echo "$2" ;;
        account) echo $(($2 + 1)) ;;
        container) echo $(($2 + 2)) ;;
        object) echo $(($2 + 3)) ;;
    esac
}

# 0 if something accepts TCP connections on 127.0.0.1:$1.
port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# 0 if the pid in file $1 is alive.
pid_alive() {
    [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

# An authenticated S3 request (ListBuckets): succeeds only once the proxy, tempauth,
# s3api and the account server all work.
s3_ready() {
    curl -sf -o /dev/null --max-time 5 --aws-sigv4 "aws:amz:us-east-1:s3" \
        -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
        "http://test%3Atester:testing@127.0.0.1:$1/" </dev/null
}

install_packages() {
    local missing=() p
    for p in "${PKGS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    ((${#missing[@]} == 0)) && return 0
    [[ $(id -u) == 0 ]] || die "missing packages (${missing[*]}): run as root or install them"
    echo "swift-test: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    # a stale package list makes the install fail: update once and try again
    if ! apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null >&2; then
        apt-get update -q </dev/null >&2
        apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null >&2
    fi
}

# Kills every server whose pid file is in $1 (SIGTERM, then SIGKILL after 5 s). Each
# server runs in its own session (setsid), so its pid is also its process group: the
# group kill takes its workers too.
kill_servers() {
    local dir=$1 n f pid _
    for n in "${SERVERS[@]}"; do
        f=$dir/$n.pid
        [[ -s $f ]] || continue
        pid=$(cat "$f")
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    done
    for n in "${SERVERS[@]}"; do
        f=$dir/$n.pid
        [[ -s $f ]] || continue
        pid=$(cat "$f")
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
        rm -f "$f"
    done
}

write_config() {
    local dir=$1 port=$2 user n p
    user=$(id -un)
    mkdir -p "$dir/etc" "$dir/node/d1" "$dir/log"
    [[ -f /etc/swift/swift.conf ]] || {
        # the package ships this file; recreate a test-only one if it was removed
        mkdir -p /etc/swift
        printf '[swift-hash]\nswift_hash_path_suffix = changeme\nswift_hash_path_prefix = changeme\n[storage-policy:0]\nname = Policy-0\ndefault = yes\n' \
            >/etc/swift/swift.conf
    }
    for n in account container object; do
        p=$(port_of "$n" "$port")
        swift-ring-builder "$dir/etc/$n.builder" create 10 1 1 >/dev/null
        swift-ring-builder "$dir/etc/$n.builder" add "r1z1-127.0.0.1:$p/d1" 1 >/dev/null
        swift-ring-builder "$dir/etc/$n.builder" rebalance >/dev/null || true
        cat >"$dir/etc/$n-server.conf" <<EOC
[DEFAULT]
devices = $dir/node
mount_check = false
bind_ip = 127.0.0.1
bind_port = $p
workers = 1
swift_dir = $dir/etc
user = $user
log_level = WARNING
[pipeline:main]
pipeline = $n-server
[app:$n-server]
use = egg:swift#$n
[$n-replicator]
[$n-updater]
[$n-auditor]
EOC
    done
    cat >"$dir/etc/proxy-server.conf" <<EOC
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $port
workers = 1
swift_dir = $dir/etc
user = $user
log_level = WARNING
[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats bulk s3api tempauth copy slo dlo proxy-logging proxy-server
[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true
[filter:s3api]
use = egg:swift#s3api
location = us-east-1
[filter:tempauth]
use = egg:swift#tempauth
user_test_tester = testing .admin
[filter:cache]
use = egg:swift#memcache
[filter:catch_errors]
use = egg:swift#catch_errors
[filter:gatekeeper]
use = egg:swift#gatekeeper
[filter:healthcheck]
use = egg:swift#healthcheck
[filter:proxy-logging]
use = egg:swift#proxy_logging
[filter:listing_formats]
use = egg:swift#listing_formats
[filter:bulk]
use = egg:swift#bulk
[filter:copy]
use = egg:swift#copy
[filter:slo]
use = egg:swift#slo
[filter:dlo]
use = egg:swift#dlo
EOC
}

start_servers() {
    local dir=$1 n
    for n in "${SERVERS[@]}"; do
        # own session: survives the caller's job control, and stop can kill the group;
        # no inherited stdin/stdout, so "$(swift-test.sh start ...)" returns
        # shellcheck disable=SC2016 # $$ is the inner shell's pid, on purpose
        setsid bash -c 'echo $$ >"$1"; exec "$2" "$3"' _ "$dir/$n.pid" "swift-$n-server" \
            "$dir/etc/$n-server.conf" </dev/null >"$dir/log/$n.log" 2>&1 &
    done
}

wait_ready() {
    local dir=$1 port=$2 n _
    for _ in $(seq 1 1200); do # 120 s (a loaded 2-core machine needs 30)
        if s3_ready "$port"; then
            return 0
        fi
        for n in "${SERVERS[@]}"; do
            [[ ! -s $dir/$n.pid ]] || pid_alive "$dir/$n.pid" || {
                tail -n 20 "$dir/log/$n.log" >&2 || true
                die "swift-$n-server exited (log: $dir/log/$n.log)"
            }
        done
        sleep 0.1
    done
    for n in "${SERVERS[@]}"; do tail -n 5 "$dir/log/$n.log" >&2 || true; done
    die "the S3 API on 127.0.0.1:$port did not answer within 120 s (logs: $dir/log)"
}

healthy() {
    local dir=$1 port=$2 n
    [[ -f $dir/$MARKER && $(cat "$dir/$MARKER") == "$port" ]] || return 1
    for n in "${SERVERS[@]}"; do pid_alive "$dir/$n.pid" || return 1; done
    s3_ready "$port"
}

# Refuses to take over (and later delete) a directory this script did not create.
check_dir() {
    local dir=$1
    [[ $dir == /* ]] || die "DIR must be an absolute path: $dir"
    [[ $dir != / ]] || die "DIR must not be /"
    if [[ -d $dir && ! -f $dir/$MARKER && -n $(ls -A "$dir") ]]; then
        die "$dir exists, is not empty and was not made by this script"
    fi
}

cmd_start() {
    local dir=$1 port=$2 n
    if ! [[ $port =~ ^[0-9]+$ ]] || ((port < 1 || port > 65532)); then die "bad port: $port"; fi
    check_dir "$dir"
    if healthy "$dir" "$port"; then
        echo "S3_ENDPOINT=http://127.0.0.1:$port"
        return 0
    fi
    [[ ! -d $dir ]] || cmd_stop "$dir"
    for n in "${SERVERS[@]}"; do
        ! port_open "$(port_of "$n" "$port")" || die "port $(port_of "$n" "$port") is in use (the servers use PORT..PORT+3)"
    done
    install_packages
    mkdir -p "$dir"
    echo "$port" >"$dir/$MARKER"
    write_config "$dir" "$port"
    start_servers "$dir"
    wait_ready "$dir" "$port"
    echo "S3_ENDPOINT=http://127.0.0.1:$port"
}

cmd_stop() {
    local dir=$1
    check_dir "$dir"
    [[ -d $dir ]] || return 0
    kill_servers "$dir"
    rm -rf "$dir"
}

case ${1:-} in
    start) (($# == 3)) || usage; cmd_start "$2" "$3" ;;
    stop) (($# == 2)) || usage; cmd_stop "$2" ;;
    *) usage ;;
esac
