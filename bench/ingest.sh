#!/usr/bin/env bash
# bench/ingest.sh -- end-to-end ingest benchmark: `cloudprof emulate` agents -> TCP ->
# `cloudprof serve` (raw log + decoders + catalog), against a baseline: the same agents
# talking to bench_nullsink, a collector that answers the protocol and stores nothing.
#
# The collector under test is pinned to core 0 (taskset -c 0), the emulator to core 1.
# Every load runs against cloudprof (fresh data directory) and then, as the baseline,
# against bench_nullsink with the same emulator settings:
#   max     emulator as fast as the collector acks (--calls-per-sec 0), many agents ->
#           calls/s, MB/s, the ratio cloudprof ÷ nullsink, collector CPU seconds per
#           100 000 calls, ack p50/p99, peak RSS
#   half    half of the max calls/s measured against cloudprof, same agents -> ack p50/p99
#           (goal p99 <= 5 ms; the nullsink run shows the emulator's own latency floor)
#           and CPU per 100 000 calls at a sustainable load
#   fixed   exactly 100 000 calls/s in total (if max allows) -> collector CPU % of one core
#           while keeping up (the "≥ 100 000 calls/s on one core" evidence)
#   tls     (--tls) the max load once more against cloudprof over TLS (--agent-tls-port,
#           the emulator's --tls; an EC P-256 test CA and server certificate made with
#           openssl) -> calls/s over TLS ÷ calls/s of the plain max run of the same
#           invocation (goal >= 0.8); then the pair run: a plain and a TLS collector side
#           by side on core 0, each with its own max-rate emulator on core 1, at the same
#           time -> the same ratio with both under the same load (on a machine shared with
#           other work, the sequential ratio mostly measures the neighbours)
# After each cloudprof run the server is stopped with SIGTERM (exit status checked) and
# the sum of the file sizes under DATA/raw is compared with the emulator's bytes_sent.
#
# Figures: calls/s and MB/s = acknowledged calls and payload bytes (emulator's calls_sent,
# bytes_sent) ÷ the emulator's duration_s (streaming plus connecting and the final flush
# cycles); MB = 10^6 bytes. The fixed run also gets a steady rate: the mean of the
# emulator's progress intervals after the first (connecting) one. Collector CPU =
# utime+stime of the whole process (all threads) from /proc/PID/stat around the emulator
# run; emu% = the emulator's own CPU. Peak RSS = VmHWM before the stop. When neither side
# uses a whole core, the rate is bound by latency (acks the emulator waits for), which the
# notes say.
#
# usage: bench/ingest.sh [options]
#   --json                  print one JSON object on stdout (the progress goes to stderr)
#   --quick                 5 s runs, for smoke testing
#   --duration S            seconds per run (default 20; env CP_INGEST_DURATION)
#   --agents N              agents per run (default 100; env CP_INGEST_AGENTS)
#   --max-rate R            per-agent calls/s of the max run, 0 = as fast as acked
#                           (default 0; env CP_INGEST_MAX_RATE)
#   --fixed-rate R          total calls/s of the fixed run (default 100000; env CP_INGEST_FIXED_RATE)
#   --flush-interval MS     emulator flush interval (default 5000; env CP_INGEST_FLUSH_MS)
#   --protocol-version V    handshake reply of both collectors (default 100705; env CP_INGEST_PROTOCOL)
#   --runs LIST             comma list of max,half,fixed,tls (default max,half,fixed; half,
#                           fixed and tls need the max run against cloudprof, which always
#                           runs; 'none' with --perf runs only the perf run)
#   --tls                   add the tls run (the same as adding tls to --runs); e.g.
#                           --tls --runs tls: the plain and the TLS max runs only
#   --perf S                one more max-rate run with `perf record -g` (cpu-clock) on the
#                           collector for S seconds; prints CPU by binary, by activity (raw
#                           log writes, socket I/O, fsync, decoders) and the top symbols
#                           (not used for the figures)
#   --emulate-arg ARG       extra argument for every emulator run (repeatable), e.g.
#                           --emulate-arg=--trace-depth --emulate-arg=20
#   --build DIR             build directory (default build-bench; env CP_BENCH_BUILD)
#   --no-build              do not (re)build, use what is in DIR
#   --no-baseline           no nullsink runs at half and fixed rate (max always has one)
#   --no-pin                pin nothing: collector and emulators share every core (a
#                           multi-CPU host; `serve --ingest-writer auto` then runs its
#                           catalog writer thread, which pinned to one core it does not)
#   --keep                  keep the temporary data directories and logs
#   --pg URL                the cloudprof runs use a PostgreSQL catalog (serve --catalog):
#                           a fresh database cp_ingest_<run>_<pid> is created next to URL's
#                           for each run (CREATE DATABASE rights needed) and dropped after;
#                           the PostgreSQL server's CPU is not in the collector's figures
# env: CP_INGEST_EMULATOR   a command to use instead of `DIR/cloudprof emulate` (same flags)
#      TMPDIR               where the data directories go (default /tmp; its filesystem is
#                           printed: fsync cost depends on it)
# Total runtime with the defaults: about 2.5 minutes (6 runs of 20 s + starts and stops).
# Exit status: 0 when every run succeeded (no emulator errors, clean stops, raw bytes match).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

duration=${CP_INGEST_DURATION:-20}
agents=${CP_INGEST_AGENTS:-100}
max_rate=${CP_INGEST_MAX_RATE:-0}
fixed_total=${CP_INGEST_FIXED_RATE:-100000}
flush_ms=${CP_INGEST_FLUSH_MS:-5000}
proto=${CP_INGEST_PROTOCOL:-100705}
build=${CP_BENCH_BUILD:-$root/build-bench}
runs="max,half,fixed"
json=0 do_build=1 keep=0 perf_s=0 baseline=1 tls=0 pg_url=""
emu_extra=()

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; }
need() { (($# >= 2)) || { echo "ingest: $1 needs a value" >&2; exit 2; }; }
no_pin=0
while (($#)); do
    case $1 in
    --json) json=1 ;;
    --no-pin) no_pin=1 ;;
    --quick) duration=5 ;;
    --duration) need "$@"; duration=$2; shift ;;
    --agents) need "$@"; agents=$2; shift ;;
    --max-rate) need "$@"; max_rate=$2; shift ;;
    --fixed-rate) need "$@"; fixed_total=$2; shift ;;
    --flush-interval) need "$@"; flush_ms=$2; shift ;;
    --protocol-version) need "$@"; proto=$2; shift ;;
    --runs) need "$@"; runs=$2; shift ;;
    --tls) tls=1 ;;
    --perf) need "$@"; perf_s=$2; shift ;;
    --pg) need "$@"; pg_url=$2; shift ;;
    --emulate-arg) need "$@"; emu_extra+=("$2"); shift ;;
    --emulate-arg=*) emu_extra+=("${1#--emulate-arg=}") ;;
    --build) need "$@"; build=$(cd "$2" 2>/dev/null && pwd || echo "$2"); shift ;;
    --no-build) do_build=0 ;;
    --keep) keep=1 ;;
    --no-baseline) baseline=0 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "ingest: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
for v in duration agents max_rate fixed_total flush_ms proto perf_s; do
    [[ ${!v} =~ ^[0-9]+$ ]] || { echo "ingest: $v must be a non-negative integer, got '${!v}'" >&2; exit 2; }
done
((agents > 0 && duration > 0)) || { echo "ingest: --agents and --duration must be > 0" >&2; exit 2; }
((tls)) && [[ ",$runs," != *",tls,"* ]] && runs="$runs,tls"
run_on() { [[ ",$runs," == *",$1,"* ]]; }

# In --json mode stdout carries only the JSON object.
if ((json)); then exec 3>&1 1>&2; else exec 3>&1; fi
say() { printf '%s\n' "$*"; }

# ---- build ---------------------------------------------------------------------------------
cloudprof=$build/cloudprof
nullsink=$build/bench/bench_nullsink
if ((do_build)); then
    mkdir -p "$build"
    if [[ ! -f $build/CMakeCache.txt ]]; then
        fixtures=${CP_FIXTURES_DIR:-$root/../shared/fixtures}
        cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
            -DCP_TESTS=OFF -DCP_FIXTURES_DIR="$fixtures" >"$build/configure.log" 2>&1 ||
            { cat "$build/configure.log"; exit 1; }
    fi
    cmake --build "$build" -j"$(nproc)" --target cloudprof bench_nullsink >"$build/ingest-build.log" 2>&1 ||
        { tail -n 60 "$build/ingest-build.log"; exit 1; }
fi
[[ -x $cloudprof && -x $nullsink ]] || { echo "ingest: $cloudprof or $nullsink missing (build first)" >&2; exit 1; }
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)

if [[ -n ${CP_INGEST_EMULATOR:-} ]]; then
    read -r -a emulator <<<"$CP_INGEST_EMULATOR"
else
    emulator=("$cloudprof" emulate)
    if ! "$cloudprof" emulate --help >/dev/null 2>&1; then
        echo "ingest: '$cloudprof emulate' is not available (is src/cli/emulate.c built?);" \
            "set CP_INGEST_EMULATOR to another client with the same flags" >&2
        exit 1
    fi
fi

# ---- pinning, scratch space, cleanup -------------------------------------------------------
ncpu=$(nproc)
pin_srv=() pin_emu=() pinning="none (taskset unavailable)"
if ((no_pin)); then
    pinning="none (--no-pin)"
elif command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then
    pin_srv=(taskset -c 0)
    if ((ncpu > 1)) && taskset -c 1 true 2>/dev/null; then
        pin_emu=(taskset -c 1)
        pinning="collector on core 0, emulator on core 1"
    else
        pinning="collector on core 0, emulator unpinned (one core only: they share it)"
    fi
fi
clk_tck=$(getconf CLK_TCK)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cloudprof-ingest.XXXXXX")
tmp_fs=$(df -T "$tmp" 2>/dev/null | awk 'NR == 2 { print $2 }')
live_pids=()
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    local p
    for p in "${live_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${live_pids[@]}"; do wait "$p" 2>/dev/null || true; done
    if ((keep)); then echo "ingest: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- helpers -------------------------------------------------------------------------------

# The value of a numeric key of a one-line JSON object (first occurrence), or "" if absent.
json_num() {
    awk -v k="\"$2\":" '{ i = index($0, k); if (!i) exit
        s = substr($0, i + length(k)); sub(/^[ \t]*/, "", s)
        if (match(s, /^-?[0-9][0-9.eE+-]*/)) print substr(s, 1, RLENGTH); exit }' <<<"$1"
}
# awk arithmetic: calc FORMAT EXPR (variables a b c d are $3..$6)
calc() { awk -v a="${3:-0}" -v b="${4:-0}" -v c="${5:-0}" -v d="${6:-0}" "BEGIN { printf \"$1\", ($2) }"; }
proc_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }   # utime + stime
proc_hwm() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }                   # KiB

# The tls run's certificates: a test CA and a server certificate (EC P-256), made once.
tls_dir=$tmp/tls
make_tls_certs() {
    [[ -s $tls_dir/srv.pem ]] && return
    command -v openssl >/dev/null || { echo "ingest: --tls needs the openssl command" >&2; exit 1; }
    mkdir -p "$tls_dir"
    (
        cd "$tls_dir"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem \
            -days 2 -subj "/CN=ingest bench CA" -addext basicConstraints=critical,CA:TRUE
        openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key -out srv.csr \
            -subj "/CN=ingest bench collector"
        openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2
    ) >"$tmp/openssl.log" 2>&1 || { echo "ingest: openssl failed:" >&2; cat "$tmp/openssl.log" >&2; exit 1; }
}

# Starts a collector (cloudprof|cloudprof-tls|nullsink) pinned to core 0; sets srv_pid,
# srv_port (the TLS port for cloudprof-tls), srv_dir, srv_log.
start_collector() {
    local kind=$1 name=$2
    srv_dir=$tmp/$name.data srv_log=$tmp/$name.server.log
    local ready=$tmp/$name.ready port_key=agent_port
    rm -f "$ready"
    if [[ $kind == cloudprof-tls ]]; then
        make_tls_certs
        port_key=agent_tls_port
        "${pin_srv[@]}" "$cloudprof" serve --agent-port 0 --agent-tls-port auto --tls-cert "$tls_dir/srv.pem" \
            --tls-key "$tls_dir/srv.key" --agent-host 127.0.0.1 --http-port 0 --http-host 127.0.0.1 --data "$srv_dir" \
            --ready-file "$ready" --log-level warn --protocol-version "$proto" >"$srv_log" 2>&1 &
    elif [[ $kind == cloudprof ]]; then
        local catalog=()
        if [[ -n $pg_url ]]; then
            pg_db=cp_ingest_${name//[^a-z0-9_]/_}_$$
            psql -q "$pg_url" -c "DROP DATABASE IF EXISTS $pg_db" -c "CREATE DATABASE $pg_db" >/dev/null
            catalog=(--catalog "${pg_url%/*}/$pg_db")
        fi
        "${pin_srv[@]}" "$cloudprof" serve --agent-port auto --agent-host 127.0.0.1 --http-port 0 --http-host 127.0.0.1 --data "$srv_dir" \
            "${catalog[@]}" --ready-file "$ready" --log-level warn --protocol-version "$proto" >"$srv_log" 2>&1 &
    else
        # the server's default rotation, so that agents rotate the same way against both
        "${pin_srv[@]}" "$nullsink" --port 0 --host 127.0.0.1 --ready-file "$ready" --protocol-version "$proto" \
            --rotation all=3600000:2097152,dictionary=0:0,posDictionary=0:0,params=0:0 >"$srv_log" 2>&1 &
    fi
    srv_pid=$!
    live_pids+=("$srv_pid")
    local i
    for ((i = 0; i < 200; i++)); do
        [[ -s $ready ]] && break
        kill -0 "$srv_pid" 2>/dev/null || { echo "ingest: $kind exited at start:" >&2; cat "$srv_log" >&2; exit 1; }
        sleep 0.05
    done
    srv_port=$(sed -n "s/^$port_key=//p" "$ready")
    [[ -n $srv_port ]] || { echo "ingest: $kind did not become ready in 10 s" >&2; cat "$srv_log" >&2; exit 1; }
}

# SIGTERM, wait (≤ 120 s, then SIGKILL); sets stop_rc.
stop_collector() {
    kill -TERM "$srv_pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 1200; i++)); do
        kill -0 "$srv_pid" 2>/dev/null || break
        [[ $(awk '{ print $3 }' "/proc/$srv_pid/stat" 2>/dev/null) == Z ]] && break
        sleep 0.1
    done
    if kill -0 "$srv_pid" 2>/dev/null && [[ $(awk '{ print $3 }' "/proc/$srv_pid/stat" 2>/dev/null) != Z ]]; then
        echo "ingest: collector $srv_pid did not stop within 120 s of SIGTERM; killing it" >&2
        kill -KILL "$srv_pid" 2>/dev/null || true
    fi
    stop_rc=0
    wait "$srv_pid" || stop_rc=$?
    local p keep_pids=()
    for p in "${live_pids[@]}"; do [[ $p == "$srv_pid" ]] || keep_pids+=("$p"); done
    live_pids=("${keep_pids[@]}")
    if [[ -n $pg_url && -n ${pg_db:-} ]]; then
        psql -q "$pg_url" -c "DROP DATABASE IF EXISTS $pg_db" >/dev/null 2>&1 || true
        pg_db=""
    fi
}

# Runs the emulator pinned to core 1 against srv_port; sets emu_json, emu_rc, emu_cpu_s.
run_emulator() {
    local name=$1 rate=$2 n=$3 secs=$4
    local out=$tmp/$name.emu.out err=$tmp/$name.emu.err cpu=$tmp/$name.emu.cpu
    local tls_args=()
    [[ ${5:-} == cloudprof-tls ]] && tls_args=(--tls --ca "$tls_dir/ca.pem")
    emu_rc=0
    # bash -c reads its own cutime+cstime after the emulator exits: the emulator's CPU time
    bash -c '"$@"; rc=$?; cat /proc/$$/stat >&3; exit $rc' emulate "${pin_emu[@]}" "${emulator[@]}" \
        --target "127.0.0.1:$srv_port" --agents "$n" --duration "$secs" --calls-per-sec "$rate" \
        --flush-interval "$flush_ms" "${tls_args[@]}" "${emu_extra[@]}" --json >"$out" 2>"$err" 3>"$cpu" || emu_rc=$?
    emu_json=$(grep '^[[:space:]]*{' "$out" | tail -n 1 || true)
    # steady rate: the mean of the emulator's progress intervals ("[  4.0s] ... N calls/s
    # [acknowledged], ...": acknowledged calls per interval) after the first one (connecting, INITs) and up to
    # --duration (not the final flushes)
    emu_steady=$(awk -v end="$secs" '/^\[ *[0-9.]+s\]/ {
            t = $0; sub(/^\[ */, "", t); sub(/s\].*/, "", t)
            if (t + 0 > end + 0.5) next
            for (i = 2; i <= NF; i++) if ($i ~ /^calls\/s/ && $(i - 1) ~ /^[0-9.]+$/) { r[++n] = $(i - 1) + 0; break }
        }
        END { if (n < 2) exit; for (i = 2; i <= n; i++) sum += r[i]; printf "%.0f", sum / (n - 1) }' "$err")
    emu_cpu_s=$(sed 's/^.*) //' "$cpu" 2>/dev/null | awk -v t="$clk_tck" '{ printf "%.2f", ($14 + $15) / t }')
    if ((emu_rc != 0)) || [[ -z $emu_json ]]; then
        echo "ingest: emulator ($name) exited with $emu_rc; last lines of its output:" >&2
        tail -n 15 "$err" >&2
        tail -n 3 "$out" >&2
    fi
}

# The pair run: a plain and a TLS collector at once, each under its own max-rate emulator
# (both collectors pinned to core 0, both emulators to core 1): whatever else loads the
# machine loads both alike. Sets R[pair.*].
run_pair() {
    local n=$1 secs=$2 rate=$3
    say "-- pair: cloudprof plain and over TLS at the same time, $n agents each × max calls/s, ${secs} s"
    start_collector cloudprof pair_plain
    local p_pid=$srv_pid p_port=$srv_port p_dir=$srv_dir
    start_collector cloudprof-tls pair_tls
    local t_pid=$srv_pid t_port=$srv_port t_dir=$srv_dir
    local p0 t0 p1 t1
    p0=$(proc_ticks "$p_pid") t0=$(proc_ticks "$t_pid")
    srv_port=$p_port run_emulator pair_plain "$rate" "$n" "$secs" cloudprof &
    local e1=$!
    srv_port=$t_port run_emulator pair_tls "$rate" "$n" "$secs" cloudprof-tls &
    local e2=$!
    wait "$e1" || true
    wait "$e2" || true
    p1=$(proc_ticks "$p_pid") t1=$(proc_ticks "$t_pid")
    srv_pid=$p_pid; stop_collector; local p_rc=$stop_rc
    srv_pid=$t_pid; stop_collector; local t_rc=$stop_rc
    local side j d c raw ok=1
    for side in plain tls; do
        j=$(grep '^[[:space:]]*{' "$tmp/pair_$side.emu.out" | tail -n 1 || true)
        c=$(json_num "$j" calls_sent) d=$(json_num "$j" duration_s)
        [[ -n $c && -n $d && $(json_num "$j" errors) == 0 ]] || { ok=0; c=0 d=$secs; }
        R[pair.$side.calls_per_s]=$(calc "%.0f" "a / b" "$c" "$d")
        if [[ $side == plain ]]; then
            R[pair.$side.cpu_per_100k]=$(calc "%.3f" "a > 0 ? (c - b) / d / a * 100000 : 0" "$c" "$p0" "$p1" "$clk_tck")
            raw=$(find "$p_dir/raw" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }')
        else
            R[pair.$side.cpu_per_100k]=$(calc "%.3f" "a > 0 ? (c - b) / d / a * 100000 : 0" "$c" "$t0" "$t1" "$clk_tck")
            raw=$(find "$t_dir/raw" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }')
        fi
        [[ $raw == "$(json_num "$j" bytes_sent)" ]] || { ok=0; echo "ingest: pair $side: raw bytes $raw != bytes_sent" >&2; }
        say "   $side: ${R[pair.$side.calls_per_s]} calls/s, collector CPU ${R[pair.$side.cpu_per_100k]} s / 100k calls," \
            "ack p99 $(json_num "$j" ack_p99_ms) ms, errors $(json_num "$j" errors)"
    done
    ((p_rc == 0 && t_rc == 0)) || ok=0
    R[pair.ok]=$ok
    ((ok)) || status=1
    R[pair.ratio]=$(calc "%.3f" "b > 0 ? a / b : 0" "${R[pair.tls.calls_per_s]}" "${R[pair.plain.calls_per_s]}")
    ((keep)) || rm -rf "$p_dir" "$t_dir"
}

# Results: R[run.key]
declare -A R
status=0
run_names=()

# One measured run: run_one NAME KIND PER_AGENT_RATE AGENTS SECONDS
run_one() {
    local name=$1 kind=$2 rate=$3 n=$4 secs=$5
    local label=$rate
    ((rate == 0)) && label="max"
    say "-- $name: $kind, $n agents × $label calls/s, ${secs} s"
    start_collector "$kind" "$name"
    local t0 t1
    t0=$(proc_ticks "$srv_pid")
    run_emulator "$name" "$rate" "$n" "$secs" "$kind"
    t1=$(proc_ticks "$srv_pid")
    local hwm
    hwm=$(proc_hwm "$srv_pid")
    stop_collector

    run_names+=("$name")
    R[$name.kind]=$kind R[$name.agents]=$n R[$name.rate]=$rate R[$name.emu_rc]=$emu_rc
    R[$name.stop_rc]=$stop_rc R[$name.rss_kb]=$hwm R[$name.emu_cpu_s]=${emu_cpu_s:-0} R[$name.steady_calls_per_s]=$emu_steady
    R[$name.cpu_s]=$(calc "%.2f" "(b - a) / c" "$t0" "$t1" "$clk_tck")
    local k
    for k in calls_sent bytes_sent acks errors ack_p50_ms ack_p99_ms ack_data_p50_ms ack_data_p99_ms ack_flush_p50_ms \
        ack_flush_p99_ms duration_s wire_bytes; do
        R[$name.$k]=$(json_num "$emu_json" "$k")
    done
    local ok=1
    if [[ -z $emu_json || -z ${R[$name.calls_sent]} || -z ${R[$name.duration_s]} ]]; then
        ok=0
        R[$name.calls_sent]=0 R[$name.bytes_sent]=0 R[$name.duration_s]=$secs
    fi
    local d=${R[$name.duration_s]}
    R[$name.calls_per_s]=$(calc "%.0f" "a / b" "${R[$name.calls_sent]}" "$d")
    R[$name.mb_per_s]=$(calc "%.1f" "a / b / 1e6" "${R[$name.bytes_sent]}" "$d")
    R[$name.cpu_pct]=$(calc "%.1f" "a / b * 100" "${R[$name.cpu_s]}" "$d")
    R[$name.emu_cpu_pct]=$(calc "%.1f" "a / b * 100" "${R[$name.emu_cpu_s]}" "$d")
    R[$name.cpu_per_100k]=$(calc "%.3f" "a > 0 ? b / a * 100000 : 0" "${R[$name.calls_sent]}" "${R[$name.cpu_s]}")
    R[$name.bytes_per_call]=$(calc "%.0f" "a > 0 ? b / a : 0" "${R[$name.calls_sent]}" "${R[$name.bytes_sent]}")

    if [[ $kind == cloudprof* ]]; then
        local raw
        raw=$(find "$srv_dir/raw" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }')
        R[$name.raw_bytes]=$raw
        if [[ $raw == "${R[$name.bytes_sent]}" ]]; then R[$name.raw_check]=OK; else R[$name.raw_check]=MISMATCH; fi
        ((stop_rc == 0)) || { echo "ingest: cloudprof exited with $stop_rc after SIGTERM; log:" >&2; tail -n 20 "$srv_log" >&2; }
        if [[ ${R[$name.raw_check]} != OK ]]; then
            echo "ingest: $name: stored raw bytes $raw != emulator bytes_sent ${R[$name.bytes_sent]}" >&2
        fi
        [[ ${R[$name.raw_check]} == OK && $stop_rc == 0 ]] || ok=0
    else
        R[$name.raw_bytes]="" R[$name.raw_check]="-"
        ((stop_rc == 0)) || { echo "ingest: nullsink exited with $stop_rc" >&2; ok=0; }
        R[$name.sink_summary]=$(grep '^bench_nullsink: .*received' "$srv_log" | tail -n 1 || true)
    fi
    ((emu_rc == 0)) && [[ ${R[$name.errors]:-1} == 0 ]] || ok=0
    R[$name.ok]=$ok
    ((ok)) || status=1
    ((keep)) || rm -rf "$srv_dir"
    say "   ${R[$name.calls_per_s]} calls/s, ${R[$name.mb_per_s]} MB/s, ack p50 ${R[$name.ack_p50_ms]:-?} ms" \
        "p99 ${R[$name.ack_p99_ms]:-?} ms (RCV_DATA p99 ${R[$name.ack_data_p99_ms]:-?} ms, 0x11 p99" \
        "${R[$name.ack_flush_p99_ms]:-?} ms), collector CPU ${R[$name.cpu_pct]}%, emulator CPU" \
        "${R[$name.emu_cpu_pct]}%, errors ${R[$name.errors]:-?}$([[ $kind == cloudprof* ]] &&
            echo ", raw ${R[$name.raw_bytes]} bytes stored: ${R[$name.raw_check]}")"
}

# ---- header ----------------------------------------------------------------------------------
model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
model=${model:-$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)}
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | head -n 1)
[[ -n $dirty ]] && commit="$commit+changes"
date_utc=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
ccver=$([[ -n $cc ]] && "$cc" --version 2>/dev/null | head -n 1 || echo unknown)

say "ingest benchmark"
say "machine:   ${model:-unknown CPU}, $ncpu cores; $(uname -sr)"
say "build:     ${build_type:-?} ($build), $ccver; commit $commit"
say "date:      $date_utc"
say "pinning:   $pinning"
say "data dir:  $tmp (${tmp_fs:-?})"
say "emulator:  ${emulator[*]}${emu_extra[*]:+ ${emu_extra[*]}}"
say "runs:      $runs; $agents agents, ${duration} s each, flush interval $flush_ms ms, protocol $proto"
say

# ---- the runs --------------------------------------------------------------------------------
# Each load runs against cloudprof, then the same load against bench_nullsink (the baseline:
# what the emulator and the loopback manage with a collector that does nothing).
notes=()
if run_on max || run_on half || run_on fixed || run_on tls; then
    run_one max_cloudprof cloudprof "$max_rate" "$agents" "$duration"
    if [[ $max_rate == 0 && ${R[max_cloudprof.emu_rc]} != 0 && ${R[max_cloudprof.calls_sent]} == 0 ]]; then
        max_rate=${CP_INGEST_FALLBACK_RATE:-20000}
        notes+=("--calls-per-sec 0 failed; the max runs use $max_rate calls/s per agent instead")
        say "   (--calls-per-sec 0 failed: retrying at $max_rate calls/s per agent)"
        run_names=()
        run_one max_cloudprof cloudprof "$max_rate" "$agents" "$duration"
    fi
    if run_on max; then run_one max_nullsink nullsink "$max_rate" "$agents" "$duration"; fi
fi
max_cps=${R[max_cloudprof.calls_per_s]:-0}
# right after the plain max run, at the same settings: the two share the machine's state
if run_on tls; then
    run_one max_tls cloudprof-tls "$max_rate" "$agents" "$duration"
    run_pair "$agents" "$duration" "$max_rate"
fi

if run_on half; then
    half_rate=$(calc "%.0f" "a / 2 / b" "$max_cps" "$agents")
    if ((half_rate < 1)); then
        notes+=("half rate skipped: the max run gave $max_cps calls/s")
    else
        run_one half_cloudprof cloudprof "$half_rate" "$agents" "$duration"
        if ((baseline)); then run_one half_nullsink nullsink "$half_rate" "$agents" "$duration"; fi
    fi
fi

if run_on fixed; then
    fixed_rate=$(calc "%.0f" "a / b" "$fixed_total" "$agents")
    if ((max_cps < fixed_total)); then
        notes+=("fixed ${fixed_total} calls/s run skipped: the max run reached only $max_cps calls/s")
    elif ((fixed_rate * agents != fixed_total)); then
        notes+=("fixed run skipped: $fixed_total calls/s does not divide over $agents agents")
    else
        run_one fixed_cloudprof cloudprof "$fixed_rate" "$agents" "$duration"
        if ((baseline)); then run_one fixed_nullsink nullsink "$fixed_rate" "$agents" "$duration"; fi
    fi
fi

perf_top=""
if ((perf_s > 0)); then
    if command -v perf >/dev/null; then
        say "-- perf: cloudprof at max rate, perf record -g on the server for $perf_s s (not in the figures)"
        start_collector cloudprof perf
        run_emulator perf "$max_rate" "$agents" "$((perf_s + 4))" &
        emu_bg=$!
        sleep 2
        perf record -g -p "$srv_pid" -o "$tmp/perf.record.data" -- sleep "$perf_s" >"$tmp/perf.record.log" 2>&1 ||
            { echo "ingest: perf record failed:" >&2; tail -n 5 "$tmp/perf.record.log" >&2; }
        wait "$emu_bg" || true
        stop_collector
        ((keep)) || rm -rf "$srv_dir"
        if [[ -s $tmp/perf.record.data ]]; then
            perf_rep() {
                perf report -i "$tmp/perf.record.data" --stdio -g none "$@" 2>/dev/null |
                    grep -v -e '^#' -e '^[[:space:]]*$' | sed 's/\([[:space:]]\+-\)\{2\}[[:space:]]*$//' || true
            }
            # inclusive time of a few landmarks (the call chains come from -g): where the
            # collector's CPU goes, by activity
            perf_act=$(perf_rep --children --sort symbol | awk '
                BEGIN { n = split("ext4_buffered_write_iter:raw log write(2) into the page cache (ext4)," \
                                  "sock_write_iter:ack write(2) to sockets,sock_read_iter:socket reads," \
                                  "do_fsync:fdatasync/fsync (sync worker),__x64_sys_syncfs:syncfs (sync worker)," \
                                  "do_epoll_wait:epoll_wait", kv, ",")
                        for (i = 1; i <= n; i++) { split(kv[i], p, ":"); label[p[1]] = p[2]; order[i] = p[1] } }
                { sym = $NF; self = $2; sub(/%/, "", self)
                  if (sym in label) incl[sym] = $1
                  if (sym ~ /^cp_dec_/) dec += self }
                END { for (i = 1; i <= n; i++) if (order[i] in incl) printf "    %8s  %s\n", incl[order[i]], label[order[i]]
                      printf "    %7.2f%%  stream decoders (cp_dec_*, self)\n", dec }')
            perf_top="by binary (self):"$'\n'$(perf_rep --no-children --sort dso --percent-limit 0.5 | head -n 8)
            perf_top+=$'\n'"by activity (inclusive):"$'\n'$perf_act
            perf_top+=$'\n'"top symbols (self):"$'\n'$(perf_rep --no-children --sort dso,symbol --percent-limit 0.7 | head -n 25)
            ((keep)) && perf_top+=$'\n'"(perf data: $tmp/perf.record.data)"
        fi
    else
        notes+=("--perf: perf is not installed")
    fi
fi

# ---- derived figures ------------------------------------------------------------------------
has() { [[ -n ${R[$1.calls_per_s]:-} ]]; }
ratio="" cpu_ratio="" projected=""
if has max_cloudprof && has max_nullsink; then
    ratio=$(calc "%.3f" "b > 0 ? a / b : 0" "${R[max_cloudprof.mb_per_s]}" "${R[max_nullsink.mb_per_s]}")
    cpu_ratio=$(calc "%.1f" "b > 0 ? a / b : 0" "${R[max_cloudprof.cpu_per_100k]}" "${R[max_nullsink.cpu_per_100k]}")
fi
tls_ratio=""
if has max_cloudprof && has max_tls; then
    tls_ratio=$(calc "%.3f" "b > 0 ? a / b : 0" "${R[max_tls.calls_per_s]}" "${R[max_cloudprof.calls_per_s]}")
fi
if has max_cloudprof; then
    projected=$(calc "%.0f" "b > 0 ? 100000 / b : 0" 0 "${R[max_cloudprof.cpu_per_100k]}")
fi
for n in max_cloudprof max_tls max_nullsink; do
    has "$n" || continue
    e=${R[$n.emu_cpu_pct]} c=${R[$n.cpu_pct]}
    if awk -v c="$c" 'BEGIN { exit !(c >= 90) }'; then
        notes+=("$n: collector-bound (${R[$n.kind]} ${c}% of its core, emulator ${e}%)")
    elif awk -v e="$e" 'BEGIN { exit !(e >= 90) }'; then
        notes+=("$n: emulator-bound (emulator ${e}% of its core, ${R[$n.kind]} ${c}%): the ${R[$n.kind]} figure is a lower bound")
    else
        why="the emulator's ack window, flush-cycle ack drains"
        [[ ${R[$n.kind]} == cloudprof* ]] && why+=", fsync before flush and rotation acks"
        notes+=("$n: neither side used a whole core (emulator ${e}%, ${R[$n.kind]} ${c}%): the rate is also bound by latency ($why)")
    fi
done
goal_p99=""
if [[ -n ${R[half_cloudprof.ack_data_p99_ms]:-} ]]; then
    # issue 18: RCV_DATA acks p99 <= 5 ms, flush acks (they include an fsync) p99 <= 25 ms
    goal_p99=$(awk -v d="${R[half_cloudprof.ack_data_p99_ms]}" -v f="${R[half_cloudprof.ack_flush_p99_ms]}" \
        'BEGIN { print (d <= 5 && f <= 25 ? "met" : "NOT met") }')
fi
goal_100k=""
if has fixed_cloudprof; then
    # kept up: the calls due during --duration were all sent and acknowledged (the run time
    # also holds the final flush cycles and CLOSE, so calls/s is a little lower than the rate)
    # (connecting 100 agents and their INITs costs the first second or so: the steady rate
    # from the emulator's progress lines is the figure that says whether it keeps up)
    for n in fixed_cloudprof fixed_nullsink; do
        has "$n" || continue
        R[$n.kept_pct]=$(calc "%.1f" "a / (b * c) * 100" "${R[$n.calls_sent]}" "$fixed_total" "$duration")
        R[$n.steady_pct]=""
        [[ -n ${R[$n.steady_calls_per_s]} ]] &&
            R[$n.steady_pct]=$(calc "%.1f" "a / b * 100" "${R[$n.steady_calls_per_s]}" "$fixed_total")
    done
    goal_100k=$(awk -v k="${R[fixed_cloudprof.steady_pct]:-${R[fixed_cloudprof.kept_pct]}}" \
        -v u="${R[fixed_cloudprof.cpu_pct]}" -v e="${R[fixed_cloudprof.errors]:-1}" -v ok="${R[fixed_cloudprof.ok]}" \
        'BEGIN { print ((k >= 98 && u < 100 && e == 0 && ok) ? "met" : "NOT met") }')
fi

# ---- report ----------------------------------------------------------------------------------
title() {
    case $1 in
    max_cloudprof) echo "max rate" ;;
    max_tls) echo "max rate TLS" ;;
    half_cloudprof) echo "half rate" ;;
    fixed_cloudprof) echo "fixed ${fixed_total}/s" ;;
    *_nullsink) echo "" ;;
    *) echo "$1" ;;
    esac
}
if ((${#run_names[@]})); then
    say
    fmt="%-16s %-13s %6s %6s %6s %8s %6s %8s %8s %6s %8s %6s %5s %8s %6s %-8s\n"
    # shellcheck disable=SC2059
    {
        printf "$fmt" run collector agents "rate/a" "wall s" "calls/s" "MB/s" "p50 ms" "p99 ms" "CPU s" "CPU/100k" "CPU%" "emu%" "peak RSS" errors raw
        for n in "${run_names[@]}"; do
            rate=${R[$n.rate]}
            ((rate == 0)) && rate=max
            rss=$(calc "%.1fMB" "a / 1024" "${R[$n.rss_kb]:-0}")
            printf "$fmt" "$(title "$n")" "${R[$n.kind]}" "${R[$n.agents]}" "$rate" "${R[$n.duration_s]}" "${R[$n.calls_per_s]}" \
                "${R[$n.mb_per_s]}" "${R[$n.ack_p50_ms]:-?}" "${R[$n.ack_p99_ms]:-?}" "${R[$n.cpu_s]}" \
                "${R[$n.cpu_per_100k]}" "${R[$n.cpu_pct]}" "${R[$n.emu_cpu_pct]}" "$rss" "${R[$n.errors]:-?}" \
                "${R[$n.raw_check]}"
        done
    }
    say
    say "calls/s, MB/s: acknowledged calls and stream bytes ÷ wall s (MB = 10^6 B; ${R[max_cloudprof.bytes_per_call]:-?} B per call);"
    say "  wall s = the emulator's run: ${duration} s of streaming + connecting + the final flush cycles and CLOSE"
    say "  rate/a = calls/s per agent (max = --calls-per-sec 0); p50/p99 = ack latency seen by the emulator"
    say "CPU s, CPU/100k, CPU%: collector process CPU (all threads) during the run, per 100 000 calls, % of one core;"
    say "  emu% = the emulator's core; peak RSS = collector VmHWM"
    say "raw: sum of file sizes under DATA/raw after SIGTERM == emulator bytes_sent (OK/MISMATCH)"
    say
fi
if [[ -n $ratio ]]; then
    say "throughput cloudprof ÷ nullsink (MB/s at max rate):   $ratio"
    say "CPU per call cloudprof ÷ nullsink (at max rate):      ${cpu_ratio}×"
fi
if [[ -n $tls_ratio ]]; then
    say "calls/s over TLS ÷ plain (max rate, this invocation): $tls_ratio (goal ≥ 0.8: $(awk -v r="$tls_ratio" \
        'BEGIN { print (r >= 0.8 ? "met" : "NOT met") }')); collector CPU/100k calls TLS ${R[max_tls.cpu_per_100k]} s," \
        "plain ${R[max_cloudprof.cpu_per_100k]} s"
fi
if [[ -n ${R[pair.ratio]:-} ]]; then
    say "calls/s over TLS ÷ plain, side by side at the same time (pair run): ${R[pair.ratio]} (goal ≥ 0.8:" \
        "$(awk -v r="${R[pair.ratio]}" 'BEGIN { print (r >= 0.8 ? "met" : "NOT met") }')); TLS ${R[pair.tls.calls_per_s]}," \
        "plain ${R[pair.plain.calls_per_s]} calls/s; collector CPU/100k calls TLS ${R[pair.tls.cpu_per_100k]} s," \
        "plain ${R[pair.plain.cpu_per_100k]} s"
fi
[[ -n $projected ]] &&
    say "cloudprof calls/s per core if CPU-bound (100 000 ÷ CPU/100k at max rate, an extrapolation): $projected"
if [[ -n $goal_p99 ]]; then
    base=""
    has half_nullsink && base="; nullsink at the same load: RCV_DATA ${R[half_nullsink.ack_data_p99_ms]} ms, 0x11 ${R[half_nullsink.ack_flush_p99_ms]} ms, the emulator's own floor"
    say "goal ack p99 ≤ 5 ms (RCV_DATA) and ≤ 25 ms (0x11) at half rate: $goal_p99 (cloudprof RCV_DATA ${R[half_cloudprof.ack_data_p99_ms]} ms, 0x11 ${R[half_cloudprof.ack_flush_p99_ms]} ms$base)"
fi
if [[ -n $goal_100k ]]; then
    base=""
    steady=""
    [[ -n ${R[fixed_cloudprof.steady_calls_per_s]} ]] &&
        steady="steady ${R[fixed_cloudprof.steady_calls_per_s]} calls/s (${R[fixed_cloudprof.steady_pct]}% of the rate), "
    has fixed_nullsink && base="; nullsink at the same load: ${R[fixed_nullsink.steady_calls_per_s]:-?} calls/s steady, ${R[fixed_nullsink.kept_pct]}% of the calls due"
    say "goal ≥ $fixed_total calls/s on one core: $goal_100k (${steady}${R[fixed_cloudprof.kept_pct]}% of the" \
        "$((fixed_total * duration)) calls due in ${duration} s acknowledged, collector at ${R[fixed_cloudprof.cpu_pct]}% of" \
        "core 0, errors ${R[fixed_cloudprof.errors]:-?}$base)"
fi
[[ -n ${R[max_nullsink.sink_summary]:-} ]] && say "${R[max_nullsink.sink_summary]}"
for n in "${notes[@]}"; do say "note: $n"; done
if [[ -n $perf_top ]]; then
    say
    say "perf (cpu-clock, collector process, max rate, ${perf_s} s):"
    say "$perf_top"
fi

if ((json)); then
    js() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
    num() { [[ -n $1 ]] && printf '%s' "$1" || printf null; }
    {
        printf '{"bench":"ingest","machine":%s,"cores":%s,"date":%s,"commit":%s,"build":%s,' \
            "$(js "$model")" "$ncpu" "$(js "$date_utc")" "$(js "$commit")" "$(js "${build_type:-}")"
        printf '"pinning":%s,"data_fs":%s,"agents":%s,"duration_s":%s,"flush_interval_ms":%s,"protocol":%s,' \
            "$(js "$pinning")" "$(js "${tmp_fs:-}")" "$agents" "$duration" "$flush_ms" "$proto"
        printf '"runs":{'
        sep=""
        for n in "${run_names[@]}"; do
            printf '%s"%s":{"collector":%s,"agents":%s,"rate_per_agent":%s' "$sep" "$n" "$(js "${R[$n.kind]}")" \
                "${R[$n.agents]}" "${R[$n.rate]}"
            for k in calls_sent bytes_sent acks errors duration_s wire_bytes calls_per_s mb_per_s ack_p50_ms \
                ack_p99_ms ack_data_p50_ms ack_data_p99_ms ack_flush_p50_ms ack_flush_p99_ms cpu_s cpu_per_100k cpu_pct emu_cpu_s emu_cpu_pct rss_kb stop_rc emu_rc raw_bytes kept_pct steady_calls_per_s steady_pct; do
                printf ',"%s":%s' "$k" "$(num "${R[$n.$k]:-}")"
            done
            printf ',"raw_check":%s,"ok":%s}' "$(js "${R[$n.raw_check]}")" \
                "$( ((R[$n.ok])) && echo true || echo false)"
            sep=","
        done
        printf '},"ratio_mb_s":%s,"cpu_per_call_ratio":%s,"projected_calls_per_core":%s,"tls_ratio_calls_s":%s,' \
            "$(num "$ratio")" "$(num "$cpu_ratio")" "$(num "$projected")" "$(num "$tls_ratio")"
        printf '"tls_pair":{"ratio_calls_s":%s,"plain_calls_per_s":%s,"tls_calls_per_s":%s,"plain_cpu_per_100k":%s,"tls_cpu_per_100k":%s},' \
            "$(num "${R[pair.ratio]:-}")" "$(num "${R[pair.plain.calls_per_s]:-}")" "$(num "${R[pair.tls.calls_per_s]:-}")" \
            "$(num "${R[pair.plain.cpu_per_100k]:-}")" "$(num "${R[pair.tls.cpu_per_100k]:-}")"
        printf '"goal_half_rate_p99_le_5ms":%s,"goal_fixed_rate_one_core":%s,"notes":[' \
            "$(js "$goal_p99")" "$(js "$goal_100k")"
        sep=""
        for n in "${notes[@]}"; do printf '%s%s' "$sep" "$(js "$n")"; sep=","; done
        printf '],"ok":%s}\n' "$( ((status == 0)) && echo true || echo false)"
    } >&3
fi
exit $status
