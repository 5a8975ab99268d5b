#!/usr/bin/env bash
# bench/ingest_latency.sh -- query-side latency under ingest load, for two acceptance points of
# issue 18 (figures against `cloudprof serve` on the embedded default: SQLite catalog, local
# directory, a fresh temporary data directory per part, --auth none, loopback):
#
#   visibility  "a call is listed by /api/v1/calls within 2 s of its flush ack at 100 000
#               calls/s": background load (`cloudprof emulate`, --agents agents sharing
#               --rate-visibility calls/s in total, namespace emulated-0) while K probes run,
#               one at a time, at least 1 s apart. A probe is `cloudprof emulate --agents 2
#               --namespaces 2 --max-calls N --calls-per-flush N --seed 1000+k`: its agent 1 is
#               the only agent of namespace emulated-1 (agent 0 lands among the load), and its
#               pod name is new (seed). When the probe process exits, the final flush ack of its
#               N calls has arrived; from then GET /api/v1/calls?namespace=emulated-1 (window:
#               probe start - 4 s .. exit + 1 s, limit 1000) is polled (every 20 ms, back to
#               back when a poll takes longer) until the new pod's N calls are all listed.
#               latency = exit -> the answer of the first poll that lists all N (what a client
#               sees); "visible by" = exit -> the start of that poll (the call was committed by
#               then; the difference is the query's own time). A probe that fails (errors, or
#               not all its calls sent and acknowledged within its 120 s) or is not listed 30 s
#               after its exit fails the run. Also: the load's achieved calls/s (emulator
#               --json summary and the steady rate of its progress lines), collector CPU %,
#               probe run times (bound by the collector's flush acks).
#   tree        "/api/v1/calls/{id}/tree for a hot call: p99 <= 50 ms while ingest runs at half
#               the max rate": background load at --rate-tree calls/s in total; after a warm-up,
#               T trees are fetched one after the other, ids taken from the newest calls
#               (GET /api/v1/calls?sort=-ts&limit=1000, trace_available only, the list renewed
#               every 50 trees so the calls stay recent), each timed with curl's
#               %{time_total}: p50/p95/p99/max, non-200 answers (must be 0) and the answers'
#               sizes. Then, once the load has stopped (same server, same data), the same T ids
#               again: the no-load baseline and the ratio loaded / idle.
# The collector is pinned to core 0 (taskset -c 0), every emulator (load and probes) to core 1,
# as in bench/ingest.sh; curl runs unpinned. Load rates are split evenly over the agents
# (calls/s per agent = rate / agents, rounded).
#
# usage: bench/ingest_latency.sh [options]
#   --rate-visibility R     total calls/s of the visibility load (default 100000)
#   --rate-tree R           total calls/s of the tree load (default 50000, i.e. half of the
#                           100 000 goal; issue 18 asks for half the *measured* max rate:
#                           bench/ingest.sh gives it)
#   --duration S            seconds of load per part (default 0 = per part: visibility
#                           6 + 6 s per probe + 10, at least 40; tree 40); probes or trees
#                           not done when the load ends are skipped and reported
#   --agents N              load agents (default 100)
#   --probes K              visibility probes (default 20)
#   --probe-calls N         calls per probe (default 20)
#   --trees T               tree requests (default 300)
#   --parts LIST            visibility,tree (default both)
#   --pg URL                catalog in PostgreSQL (serve --catalog URL) instead of SQLite; the
#                           database should be empty (serve creates the schema; calls of
#                           earlier runs would add to the listings) -- untested
#   --json                  one JSON object on stdout (progress on stderr)
#   --quick                 5 probes, 60 trees, 30 s of load per part: a smoke test
#   --build DIR             build directory (default build-bench; env CP_BENCH_BUILD)
#   --no-build              do not (re)build, use what is in DIR
#   --no-pin                pin nothing: collector and emulators share every core (a
#                           multi-CPU host; `serve --ingest-writer auto` then runs its
#                           catalog writer thread, which pinned to one core it does not)
#   --keep                  keep the temporary data directories and logs
# env: TMPDIR               where the data directories go (default /tmp)
# Exit status: 0 when every probe that ran finished without errors and was listed within 30 s of
# its exit, every tree answered 200 and the servers stopped cleanly; 1 otherwise; 2 on usage
# errors. Errors of the load emulators (e.g. acks still missing 30 s after the end when the
# collector is overloaded) are reported as notes, not failures.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

rate_vis=100000 rate_tree=50000 duration=0 agents=100 probes=20 probe_calls=20 trees=300
parts="visibility,tree" pg="" json=0 do_build=1 keep=0 quick=0
build=${CP_BENCH_BUILD:-$root/build-bench}
proto=100705 warmup=6 vis_timeout_ms=30000

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; }
need() { (($# >= 2)) || { echo "ingest_latency: $1 needs a value" >&2; exit 2; }; }
no_pin=0
while (($#)); do
    case $1 in
    --rate-visibility) need "$@"; rate_vis=$2; shift ;;
    --rate-tree) need "$@"; rate_tree=$2; shift ;;
    --duration) need "$@"; duration=$2; shift ;;
    --agents) need "$@"; agents=$2; shift ;;
    --probes) need "$@"; probes=$2; shift ;;
    --probe-calls) need "$@"; probe_calls=$2; shift ;;
    --trees) need "$@"; trees=$2; shift ;;
    --parts) need "$@"; parts=$2; shift ;;
    --pg) need "$@"; pg=$2; shift ;;
    --json) json=1 ;;
    --no-pin) no_pin=1 ;;
    --quick) quick=1 ;;
    --build) need "$@"; build=$(cd "$2" 2>/dev/null && pwd || echo "$2"); shift ;;
    --no-build) do_build=0 ;;
    --keep) keep=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "ingest_latency: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if ((quick)); then
    probes=5 trees=60
    ((duration)) || duration=30
fi
for v in rate_vis rate_tree duration agents probes probe_calls trees; do
    [[ ${!v} =~ ^[0-9]+$ ]] || { echo "ingest_latency: $v must be a non-negative integer, got '${!v}'" >&2; exit 2; }
done
((agents > 0 && rate_vis > 0 && rate_tree > 0)) || { echo "ingest_latency: --agents and the rates must be > 0" >&2; exit 2; }
((probe_calls > 0 && probe_calls <= 1000)) || { echo "ingest_latency: --probe-calls must be 1..1000" >&2; exit 2; }
part_on() { [[ ",$parts," == *",$1,"* ]]; }
for p in ${parts//,/ }; do
    [[ $p == visibility || $p == tree ]] || { echo "ingest_latency: unknown part '$p'" >&2; exit 2; }
done
command -v curl >/dev/null || { echo "ingest_latency: needs curl" >&2; exit 1; }

if ((json)); then exec 3>&1 1>&2; else exec 3>&1; fi
say() { printf '%s\n' "$*"; }

# ---- build -----------------------------------------------------------------------------------
cloudprof=$build/cloudprof
if ((do_build)); then
    mkdir -p "$build"
    if [[ ! -f $build/CMakeCache.txt ]]; then
        fixtures=${CP_FIXTURES_DIR:-$root/../shared/fixtures}
        cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
            -DCP_TESTS=OFF -DCP_FIXTURES_DIR="$fixtures" >"$build/configure.log" 2>&1 ||
            { cat "$build/configure.log"; exit 1; }
    fi
    cmake --build "$build" -j2 --target cloudprof >"$build/latency-build.log" 2>&1 ||
        { tail -n 60 "$build/latency-build.log"; exit 1; }
fi
[[ -x $cloudprof ]] || { echo "ingest_latency: $cloudprof missing (build first)" >&2; exit 1; }
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)

# ---- pinning, scratch space, cleanup ---------------------------------------------------------
ncpu=$(nproc)
pin_srv=() pin_emu=() pinning="none (taskset unavailable)"
if ((no_pin)); then
    pinning="none (--no-pin)"
elif command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then
    pin_srv=(taskset -c 0)
    if ((ncpu > 1)) && taskset -c 1 true 2>/dev/null; then
        pin_emu=(taskset -c 1)
        pinning="collector on core 0, emulators on core 1, curl unpinned"
    else
        pinning="collector on core 0, emulators unpinned (one core only)"
    fi
fi
clk_tck=$(getconf CLK_TCK)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cloudprof-latency.XXXXXX")
tmp_fs=$(df -T "$tmp" 2>/dev/null | awk 'NR == 2 { print $2 }')
live_pids=()
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    local p
    for p in "${live_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${live_pids[@]}"; do wait "$p" 2>/dev/null || true; done
    if ((keep)); then echo "ingest_latency: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- helpers ---------------------------------------------------------------------------------
json_num() {
    awk -v k="\"$2\":" '{ i = index($0, k); if (!i) exit
        s = substr($0, i + length(k)); sub(/^[ \t]*/, "", s)
        if (match(s, /^-?[0-9][0-9.eE+-]*/)) print substr(s, 1, RLENGTH); exit }' <<<"$1"
}
calc() { awk -v a="${3:-0}" -v b="${4:-0}" -v c="${5:-0}" -v d="${6:-0}" "BEGIN { printf \"$1\", ($2) }"; }
proc_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }   # bash 5: no fork
# "p50 p95 p99 max n" (nearest rank) of the numbers in FILE, one a line
pcts() {
    sort -g "$1" | awk '{ v[++n] = $1 }
        function r(p,  k) { k = int(p * n + 0.999999); if (k < 1) k = 1; if (k > n) k = n; return v[k] }
        END { if (!n) { print "- - - - 0"; exit } printf "%s %s %s %s %d\n", r(.50), r(.95), r(.99), v[n], n }'
}
in_list() { local x=$1; shift; local y; for y; do [[ $x == "$y" ]] && return 0; done; return 1; }

# Starts cloudprof serve pinned to core 0 on a fresh data directory; sets srv_pid, agent_port,
# http_port, srv_dir, srv_log, api.
start_server() {
    local name=$1
    srv_dir=$tmp/$name.data srv_log=$tmp/$name.server.log
    local ready=$tmp/$name.ready cat_args=()
    [[ -n $pg ]] && cat_args=(--catalog "$pg")
    "${pin_srv[@]}" "$cloudprof" serve --agent-port auto --agent-host 127.0.0.1 --http-port 0 --http-host 127.0.0.1 \
        --data "$srv_dir" "${cat_args[@]}" --auth none --ready-file "$ready" --log-level warn \
        --protocol-version "$proto" >"$srv_log" 2>&1 &
    srv_pid=$!
    live_pids+=("$srv_pid")
    local i
    for ((i = 0; i < 200; i++)); do
        [[ -s $ready ]] && break
        kill -0 "$srv_pid" 2>/dev/null || { echo "ingest_latency: serve exited at start:" >&2; cat "$srv_log" >&2; exit 1; }
        sleep 0.05
    done
    agent_port=$(sed -n 's/^agent_port=//p' "$ready")
    http_port=$(sed -n 's/^http_port=//p' "$ready")
    [[ -n $agent_port && -n $http_port ]] || { echo "ingest_latency: serve not ready in 10 s" >&2; cat "$srv_log" >&2; exit 1; }
    api=http://127.0.0.1:$http_port/api/v1
}

stop_server() {
    kill -TERM "$srv_pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 1200; i++)); do
        kill -0 "$srv_pid" 2>/dev/null || break
        [[ $(awk '{ print $3 }' "/proc/$srv_pid/stat" 2>/dev/null) == Z ]] && break
        sleep 0.1
    done
    if kill -0 "$srv_pid" 2>/dev/null && [[ $(awk '{ print $3 }' "/proc/$srv_pid/stat" 2>/dev/null) != Z ]]; then
        echo "ingest_latency: serve $srv_pid did not stop within 120 s of SIGTERM; killing it" >&2
        kill -KILL "$srv_pid" 2>/dev/null || true
    fi
    stop_rc=0
    wait "$srv_pid" || stop_rc=$?
    local p keep_pids=()
    for p in "${live_pids[@]}"; do [[ $p == "$srv_pid" ]] || keep_pids+=("$p"); done
    live_pids=("${keep_pids[@]}")
    ((stop_rc == 0)) || { echo "ingest_latency: serve exited with $stop_rc after SIGTERM; log:" >&2; tail -n 20 "$srv_log" >&2; }
}

# Background load pinned to core 1: start_load NAME TOTAL_RATE SECONDS; sets load_pid, load_rate
# (per agent), load_t0 (collector CPU ticks at the start).
start_load() {
    local name=$1 total=$2 secs=$3
    load_rate=$(((total + agents / 2) / agents))
    ((load_rate > 0)) || load_rate=1
    load_out=$tmp/$name.load.out load_err=$tmp/$name.load.err
    load_t0=$(proc_ticks "$srv_pid")
    load_start_ms=$(now_ms)
    "${pin_emu[@]}" "$cloudprof" emulate --target "127.0.0.1:$agent_port" --agents "$agents" --duration "$secs" \
        --calls-per-sec "$load_rate" --json >"$load_out" 2>"$load_err" &
    load_pid=$!
    live_pids+=("$load_pid")
    load_secs=$secs
}
load_running() { kill -0 "$load_pid" 2>/dev/null; }
# Waits for the load; sets L[prefix.*]: calls_per_s, steady_calls_per_s, errors, ack_p50/p99,
# cpu_pct; adds a note when the rate was not sustained.
finish_load() {
    local pfx=$1 total=$2
    local rc=0
    wait "$load_pid" || rc=$?
    local p keep_pids=()
    for p in "${live_pids[@]}"; do [[ $p == "$load_pid" ]] || keep_pids+=("$p"); done
    live_pids=("${keep_pids[@]}")
    local t1 j
    t1=$(proc_ticks "$srv_pid")
    j=$(grep '^[[:space:]]*{' "$load_out" | tail -n 1 || true)
    local d c
    d=$(json_num "$j" duration_s) c=$(json_num "$j" calls_sent)
    L[$pfx.requested]=$total L[$pfx.per_agent]=$load_rate L[$pfx.emu_rc]=$rc
    L[$pfx.errors]=$(json_num "$j" errors)
    L[$pfx.ack_p50_ms]=$(json_num "$j" ack_p50_ms) L[$pfx.ack_p99_ms]=$(json_num "$j" ack_p99_ms)
    L[$pfx.calls_sent]=${c:-0}
    L[$pfx.calls_per_s]=$( [[ -n $c && -n $d ]] && calc "%.0f" "a / b" "$c" "$d" || echo 0)
    L[$pfx.cpu_pct]=$(calc "%.1f" "(b - a) / c / d * 100" "$load_t0" "$t1" "$clk_tck" "${d:-$load_secs}")
    L[$pfx.steady_calls_per_s]=$(awk -v end="$load_secs" '/^\[ *[0-9.]+s\]/ {
            t = $0; sub(/^\[ */, "", t); sub(/s\].*/, "", t)
            if (t + 0 > end + 0.5) next
            for (i = 2; i <= NF; i++) if ($i ~ /^calls\/s/ && $(i - 1) ~ /^[0-9.]+$/) { r[++n] = $(i - 1) + 0; break }
        }
        END { if (n < 2) exit; for (i = 2; i <= n; i++) sum += r[i]; printf "%.0f", sum / (n - 1) }' "$load_err")
    if ((rc != 0)) || [[ -z $j || ${L[$pfx.errors]:-1} != 0 ]]; then
        # the server's doing (acks missing under overload), not the probes': a note, not a failure
        echo "ingest_latency: $pfx load emulator exited with $rc; last lines:" >&2
        tail -n 3 "$load_err" >&2
        notes+=("$pfx: the load emulator reported ${L[$pfx.errors]:-?} errors (exit $rc): $(sed -n 's/^errors: *//p' "$load_err" | tail -n 1)")
    fi
    local s=${L[$pfx.steady_calls_per_s]:-${L[$pfx.calls_per_s]}}
    if awk -v s="$s" -v r="$total" 'BEGIN { exit !(s < 0.98 * r) }'; then
        notes+=("$pfx: the machine did not sustain the requested load: $s calls/s steady (${L[$pfx.calls_per_s]} overall) of $total requested (collector ${L[$pfx.cpu_pct]}% of core 0)")
        L[$pfx.sustained]=false
    else
        L[$pfx.sustained]=true
    fi
    say "   load: requested $total calls/s ($agents agents × $load_rate), achieved ${L[$pfx.calls_per_s]} calls/s" \
        "(steady ${L[$pfx.steady_calls_per_s]:-?}), ack p50 ${L[$pfx.ack_p50_ms]:-?} ms p99 ${L[$pfx.ack_p99_ms]:-?} ms," \
        "collector CPU ${L[$pfx.cpu_pct]}%, errors ${L[$pfx.errors]:-?}"
}

declare -A L
status=0
notes=()

# ---- header ----------------------------------------------------------------------------------
model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
model=${model:-$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)}
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | head -n 1)
[[ -n $dirty ]] && commit="$commit+changes"
date_utc=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
ccver=$([[ -n $cc ]] && "$cc" --version 2>/dev/null | head -n 1 || echo unknown)
say "ingest latency benchmark (issue 18: visibility of new calls, tree latency under load)"
say "machine:   ${model:-unknown CPU}, $ncpu cores; $(uname -sr)"
say "build:     ${build_type:-?} ($build), $ccver; commit $commit"
say "date:      $date_utc"
say "pinning:   $pinning"
say "data dir:  $tmp (${tmp_fs:-?}); catalog ${pg:+PostgreSQL $pg}${pg:-SQLite}"
say "parts:     $parts; $agents load agents"
say

# ---- part a: visibility ----------------------------------------------------------------------
vis_lat=$tmp/vis.latency vis_start=$tmp/vis.visible vis_q=$tmp/vis.query vis_run=$tmp/vis.probe
: >"$vis_lat"; : >"$vis_start"; : >"$vis_q"; : >"$vis_run"
probes_done=0 probes_failed=0 probes_over2=0
if part_on visibility; then
    vsecs=$duration
    ((vsecs)) || { vsecs=$((warmup + probes * 6 + 10)); ((vsecs >= 40)) || vsecs=40; }
    say "-- visibility: load $rate_vis calls/s for ${vsecs} s, $probes probes of $probe_calls calls each"
    start_server visibility
    start_load visibility "$rate_vis" "$vsecs"
    sleep "$warmup"
    known_pods=()
    probe_fail=0
    for ((k = 0; k < probes; k++)); do
        t_launch=$(now_ms)
        # leave the probe and its polls time before the load ends
        if ! load_running || ((t_launch - load_start_ms > (vsecs - 3) * 1000)); then
            notes+=("visibility: only $k of $probes probes ran before the load ended (--duration)")
            break
        fi
        pout=$tmp/probe.$k.out perr=$tmp/probe.$k.err prc=0
        "${pin_emu[@]}" "$cloudprof" emulate --target "127.0.0.1:$agent_port" --agents 2 --namespaces 2 \
            --max-calls "$probe_calls" --calls-per-flush "$probe_calls" --flush-interval 200 --duration 120 \
            --seed $((1000 + k)) --quiet --json >"$pout" 2>"$perr" || prc=$?
        t_exit=$(now_ms)
        pj=$(grep '^[[:space:]]*{' "$pout" | tail -n 1 || true)
        if ((prc != 0)) || [[ $(json_num "$pj" errors) != 0 || $(json_num "$pj" calls_sent) != $((2 * probe_calls)) ]]; then
            echo "ingest_latency: probe $k failed after $((t_exit - t_launch)) ms (exit $prc): ${pj:-no summary}" >&2
            probes_failed=$((probes_failed + 1)) probe_fail=1
            continue
        fi
        echo "$((t_exit - t_launch))" >>"$vis_run"
        url="$api/calls?namespace=emulated-1&from=$((t_launch - 4000))&to=$((t_exit + 1000))&limit=1000"
        found=0 new_pod=""
        while :; do
            q0=$(now_ms)
            code=$(curl -s -o "$tmp/poll.json" -w '%{http_code}' "$url" || echo 000)
            q1=$(now_ms)
            echo "$((q1 - q0))" >>"$vis_q"
            if [[ $code == 200 ]]; then
                n=0
                while read -r c pod; do
                    in_list "$pod" "${known_pods[@]}" && continue
                    n=$((n + c)) new_pod=$pod
                done < <(grep -o '"pod":"[^"]*"' "$tmp/poll.json" | cut -d'"' -f4 | sort | uniq -c)
                if ((n >= probe_calls)); then
                    found=1
                    ((n > probe_calls)) && notes+=("visibility: probe $k: $n calls listed for its new pod, $probe_calls sent")
                    break
                fi
            fi
            ((q1 - t_exit > vis_timeout_ms)) && break
            sleep 0.02
        done
        if ((found)); then
            known_pods+=("$new_pod")
            probes_done=$((probes_done + 1))
            echo "$((q1 - t_exit))" >>"$vis_lat"
            echo "$((q0 - t_exit))" >>"$vis_start"
            ((q1 - t_exit > 2000)) && probes_over2=$((probes_over2 + 1))
            say "   probe $k: ran $((t_exit - t_launch)) ms; listed $((q1 - t_exit)) ms after its exit" \
                "(by the poll started at +$((q0 - t_exit)) ms, which took $((q1 - q0)) ms)"
        else
            echo "ingest_latency: probe $k: its $probe_calls calls were not all listed within $((vis_timeout_ms / 1000)) s of its exit (last answer $code)" >&2
            probes_failed=$((probes_failed + 1)) probe_fail=1
            # do not let a late listing of this probe count for the next one
            [[ -n $new_pod ]] && known_pods+=("$new_pod")
        fi
        # one probe per second at most
        while (($(now_ms) - t_launch < 1000)); do sleep 0.05; done
    done
    say "   waiting for the load to end"
    finish_load visibility "$rate_vis"
    stop_server
    L[visibility.stop_rc]=$stop_rc
    ((stop_rc == 0 && !probe_fail)) || status=1
    ((keep)) || rm -rf "$srv_dir"
    read -r V_p50 V_p95 _ V_max _ < <(pcts "$vis_lat")
    read -r S_p50 S_p95 _ S_max _ < <(pcts "$vis_start")
    read -r Q_p50 Q_p95 _ Q_max Q_n < <(pcts "$vis_q")
    read -r R_p50 R_p95 _ R_max _ < <(pcts "$vis_run")
    say
fi

# ---- part b: trees ---------------------------------------------------------------------------
tree_load=$tmp/tree.load.times tree_idle=$tmp/tree.idle.times ids_file=$tmp/tree.ids
: >"$tree_load"; : >"$tree_idle"; : >"$ids_file"
tree_bad_load=0 tree_bad_idle=0 trees_done=0
# ids of the newest calls with a trace, one a line
fresh_ids() {
    curl -s "$api/calls?sort=-ts&limit=1000" | sed 's/{"id":"/\n/g' | tail -n +2 |
        awk -F'"' '/"trace_available":true/ { print $1 }'
}
# one tree request; appends the time (ms) to $2; returns 1 on a non-200 answer
fetch_tree() {
    local r code t
    local size
    r=$(curl -s -o /dev/null -w '%{http_code} %{time_total} %{size_download}' "$api/calls/$1/tree" || echo "000 0 0")
    read -r code t size <<<"$r"
    calc "%.3f\n" "a * 1000" "$t" >>"$2"
    echo "$size" >>"$2.bytes"
    if [[ $code != 200 ]]; then
        echo "ingest_latency: tree $1: HTTP $code" >&2
        return 1
    fi
}
if part_on tree; then
    tsecs=$duration
    ((tsecs)) || tsecs=40
    say "-- tree: load $rate_tree calls/s for ${tsecs} s, $trees tree requests during the load, then the same with no load"
    start_server tree
    start_load tree "$rate_tree" "$tsecs"
    sleep "$warmup"
    ids=()
    for ((k = 0; k < trees; k++)); do
        if ! load_running || (($(now_ms) - load_start_ms > (tsecs - 1) * 1000)); then
            notes+=("tree: only $k of $trees trees were fetched before the load ended (--duration)")
            break
        fi
        if ((k % 50 == 0)) || ((${#ids[@]} == 0)); then
            mapfile -t ids < <(fresh_ids)
            ((${#ids[@]})) || { echo "ingest_latency: no call with a trace listed" >&2; status=1; break; }
        fi
        # spread over the page, but recent: every 3rd of the first 150
        id=${ids[(k % 50) * 3 % ${#ids[@]}]}
        echo "$id" >>"$ids_file"
        fetch_tree "$id" "$tree_load" || tree_bad_load=$((tree_bad_load + 1))
        trees_done=$((trees_done + 1))
    done
    say "   $trees_done trees fetched under load; waiting for the load to end"
    finish_load tree "$rate_tree"
    sleep 2   # let the last assembly / transactions settle
    while read -r id; do
        fetch_tree "$id" "$tree_idle" || tree_bad_idle=$((tree_bad_idle + 1))
    done <"$ids_file"
    stop_server
    L[tree.stop_rc]=$stop_rc
    ((stop_rc == 0 && tree_bad_load == 0 && tree_bad_idle == 0)) || status=1
    ((keep)) || rm -rf "$srv_dir"
    read -r T_p50 T_p95 T_p99 T_max T_n < <(pcts "$tree_load")
    read -r I_p50 I_p95 I_p99 I_max I_n < <(pcts "$tree_idle")
    read -r B_p50 _ _ B_max _ < <(pcts "$tree_load.bytes")
    T_ratio50=$(calc "%.2f" "b > 0 ? a / b : 0" "$T_p50" "$I_p50")
    T_ratio99=$(calc "%.2f" "b > 0 ? a / b : 0" "$T_p99" "$I_p99")
    say
fi

# ---- report ----------------------------------------------------------------------------------
goal_vis="" goal_tree=""
if part_on visibility; then
    goal_vis=$( ((probes_done > 0 && probes_failed == 0 && probes_over2 == 0)) && echo met || echo "NOT met")
    [[ ${L[visibility.sustained]} == true ]] || goal_vis="$goal_vis (load not sustained)"
    say "visibility at ${L[visibility.calls_per_s]} calls/s achieved (${rate_vis} requested, steady" \
        "${L[visibility.steady_calls_per_s]:-?}; collector ${L[visibility.cpu_pct]}% of core 0):"
    say "  probes listed $probes_done of $probes (failed $probes_failed), $probe_calls calls each"
    say "  exit -> listed (answer received):  p50 $V_p50 ms, p95 $V_p95 ms, max $V_max ms; over 2 s: $probes_over2"
    say "  exit -> start of the listing poll: p50 $S_p50 ms, p95 $S_p95 ms, max $S_max ms"
    say "  /calls poll time ($Q_n polls):      p50 $Q_p50 ms, p95 $Q_p95 ms, max $Q_max ms"
    say "  probe run time (flush-ack bound):  p50 $R_p50 ms, p95 $R_p95 ms, max $R_max ms"
    say "  goal: listed within 2 s of the flush ack: $goal_vis"
    say
fi
if part_on tree; then
    goal_tree=$(awk -v p="$T_p99" -v b="$tree_bad_load" 'BEGIN { print ((p != "-" && p <= 50 && b == 0) ? "met" : "NOT met") }')
    [[ ${L[tree.sustained]} == true ]] || goal_tree="$goal_tree (load not sustained)"
    say "trees at ${L[tree.calls_per_s]} calls/s achieved (${rate_tree} requested, steady ${L[tree.steady_calls_per_s]:-?};" \
        "collector ${L[tree.cpu_pct]}% of core 0):"
    say "  under load: $T_n trees, p50 $T_p50 ms, p95 $T_p95 ms, p99 $T_p99 ms, max $T_max ms; non-200: $tree_bad_load"
    say "  no load:    $I_n trees, p50 $I_p50 ms, p95 $I_p95 ms, p99 $I_p99 ms, max $I_max ms; non-200: $tree_bad_idle"
    say "  loaded ÷ idle: p50 ${T_ratio50}×, p99 ${T_ratio99}×; tree answers p50 $B_p50 bytes, max $B_max bytes"
    say "  goal: tree p99 ≤ 50 ms under load, no errors: $goal_tree"
    say
fi
for n in "${notes[@]}"; do say "note: $n"; done

if ((json)); then
    js() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
    num() { [[ -n $1 && $1 != - ]] && printf '%s' "$1" || printf null; }
    load_js() {
        local p=$1 k sep=""
        printf '{'
        for k in requested per_agent calls_per_s steady_calls_per_s cpu_pct ack_p50_ms ack_p99_ms errors calls_sent; do
            printf '%s"%s":%s' "$sep" "$k" "$(num "${L[$p.$k]:-}")"; sep=","
        done
        printf ',"sustained":%s}' "${L[$p.sustained]:-null}"
    }
    {
        printf '{"bench":"ingest_latency","machine":%s,"cores":%s,"date":%s,"commit":%s,"build":%s,"pinning":%s,' \
            "$(js "$model")" "$ncpu" "$(js "$date_utc")" "$(js "$commit")" "$(js "${build_type:-}")" "$(js "$pinning")"
        printf '"data_fs":%s,"catalog":%s,"agents":%s,' "$(js "${tmp_fs:-}")" "$(js "${pg:+postgresql}${pg:-sqlite}")" "$agents"
        if part_on visibility; then
            printf '"visibility":{"load":%s,"probes":%s,"probe_calls":%s,"listed":%s,"failed":%s,"over_2s":%s,' \
                "$(load_js visibility)" "$probes" "$probe_calls" "$probes_done" "$probes_failed" "$probes_over2"
            printf '"listed_ms":{"p50":%s,"p95":%s,"max":%s},"visible_by_ms":{"p50":%s,"p95":%s,"max":%s},' \
                "$(num "$V_p50")" "$(num "$V_p95")" "$(num "$V_max")" "$(num "$S_p50")" "$(num "$S_p95")" "$(num "$S_max")"
            printf '"poll_ms":{"p50":%s,"p95":%s,"max":%s,"n":%s},"probe_run_ms":{"p50":%s,"p95":%s,"max":%s},"goal":%s},' \
                "$(num "$Q_p50")" "$(num "$Q_p95")" "$(num "$Q_max")" "$Q_n" "$(num "$R_p50")" "$(num "$R_p95")" \
                "$(num "$R_max")" "$(js "$goal_vis")"
        fi
        if part_on tree; then
            printf '"tree":{"load":%s,"loaded_ms":{"p50":%s,"p95":%s,"p99":%s,"max":%s,"n":%s,"non_200":%s},' \
                "$(load_js tree)" "$(num "$T_p50")" "$(num "$T_p95")" "$(num "$T_p99")" "$(num "$T_max")" "$T_n" "$tree_bad_load"
            printf '"idle_ms":{"p50":%s,"p95":%s,"p99":%s,"max":%s,"n":%s,"non_200":%s},"ratio_p50":%s,"ratio_p99":%s,"goal":%s,' \
                "$(num "$I_p50")" "$(num "$I_p95")" "$(num "$I_p99")" "$(num "$I_max")" "$I_n" "$tree_bad_idle" \
                "$(num "$T_ratio50")" "$(num "$T_ratio99")" "$(js "$goal_tree")"
            printf '"tree_bytes":{"p50":%s,"max":%s}},' "$(num "$B_p50")" "$(num "$B_max")"
        fi
        printf '"notes":['
        sep=""
        for n in "${notes[@]}"; do printf '%s%s' "$sep" "$(js "$n")"; sep=","; done
        printf '],"ok":%s}\n' "$( ((status == 0)) && echo true || echo false)"
    } >&3
fi
exit $status
