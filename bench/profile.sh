#!/usr/bin/env bash
# bench/profile.sh -- the aggregate profile (GET /api/v1/profile, issue 19) against its
# baseline: reading the same calls' trees one by one through /api/v1/calls/{id}/tree.
#
# A fresh `cloudprof serve` (SQLite catalog, local directory, loopback) is filled by
# `cloudprof emulate` (--agents agents, --calls root calls each, then it stops), so every call
# is in the hot tier. Then, with nothing else running:
#   profile   GET /api/v1/profile?max_calls=N over the whole window (N = --profile-calls):
#             wall time (curl's time_total), the answer's size, merged calls and nodes
#   baseline  the ids of the same N newest calls (GET /calls, sort -ts, paged), then their
#             trees one by one over one kept-alive connection (curl reading a list of URLs):
#             wall time; ratio = profile / baseline
# Each is run --runs times (default 3); the figures are the medians. Nothing is pinned.
#
# --cold: after the fill, `cloudprof compact --until <an hour ahead>` moves every call into
# Parquet files of the cold tier (local directory) before anything is timed, so both the
# profile and the trees read Parquet.
# --ui: also the time to the first flame graph of the same profile in the web UI
# (bench/profile_ui.mjs: headless chromium, /profile?…&view=flame, from the navigation to
# the first frames on screen; needs a build with the UI embedded and tests/tools' npm).
# --baseline-sample N: time the trees of N of the calls only (evenly spread over them) and
# scale the time to all of them (for 100 000 cold trees, whose one-by-one reading takes
# minutes); the output says so.
#
# usage: bench/profile.sh [--agents N] [--calls N] [--profile-calls N] [--runs K] [--cold]
#                         [--baseline-sample N] [--ui] [--build DIR] [--no-build] [--json] [--keep]
# Exit status: 0 when every request answered 200.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
agents=20 calls=600 pcalls=10000 runs=3 build=$root/build-bench do_build=1 json=0 keep=0 cold=0 sample=0 ui=0
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; }
need() { (($# >= 2)) || { echo "profile: $1 needs a value" >&2; exit 2; }; }
while (($#)); do
    case $1 in
    --agents) need "$@"; agents=$2; shift ;;
    --calls) need "$@"; calls=$2; shift ;;
    --profile-calls) need "$@"; pcalls=$2; shift ;;
    --runs) need "$@"; runs=$2; shift ;;
    --cold) cold=1 ;;
    --ui) ui=1 ;;
    --baseline-sample) need "$@"; sample=$2; shift ;;
    --build) need "$@"; build=$2; shift ;;
    --no-build) do_build=0 ;;
    --json) json=1 ;;
    --keep) keep=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "profile: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
log() { echo "$@" >&2; }

if ((do_build)); then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build" -j"$(nproc)" --target cloudprof >/dev/null
fi
bin=$build/cloudprof
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cloudprof-profile.XXXXXX")
srv_pid=
cleanup() {
    [[ -n $srv_pid ]] && kill -TERM "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null || true
    ((keep)) || rm -rf "$tmp"
}
trap cleanup EXIT

"$bin" serve --agent-host 127.0.0.1 --agent-port auto --http-host 127.0.0.1 --http-port 0 --data "$tmp/data" \
    --compact-every 0 --ready-file "$tmp/ready" --log-level warn >"$tmp/server.log" 2>&1 &
srv_pid=$!
for ((i = 0; i < 200; i++)); do [[ -s $tmp/ready ]] && break; sleep 0.05; done
port=$(sed -n 's/^agent_port=//p' "$tmp/ready")
http=$(sed -n 's/^http_port=//p' "$tmp/ready")
[[ -n $port && -n $http ]] || { echo "profile: the server did not start" >&2; cat "$tmp/server.log" >&2; exit 1; }
api=http://127.0.0.1:$http/api/v1
log "profile: filling: $agents agents x $calls calls"
"$bin" emulate --target "127.0.0.1:$port" --agents "$agents" --max-calls "$calls" --calls-per-sec 0 --quiet \
    >"$tmp/emulate.log" 2>&1 || { echo "profile: the emulator failed" >&2; cat "$tmp/emulate.log" >&2; exit 1; }
now_ms=$(( $(date +%s) * 1000 ))
win="from=$(( now_ms - 7200000 ))&to=$(( now_ms + 3600000 ))"
# every call stored (the last commit follows the last flush within a moment)
total=0
for ((i = 0; i < 300; i++)); do
    total=$(curl -s "$api/calls/stats?$win&duration=%3E%3D0ms" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("total",0))')
    ((total >= agents * calls)) && break
    sleep 0.2
done
log "profile: $total calls stored"
if ((cold)); then
    log "profile: compacting every window into the cold tier"
    "$bin" compact --data "$tmp/data" --until $(( now_ms + 3600000 )) --quiet >"$tmp/compact.log" 2>&1 ||
        { echo "profile: compact failed" >&2; cat "$tmp/compact.log" >&2; exit 1; }
    files=$(find "$tmp/data/cold" -name '*.parquet' | wc -l)
    log "profile: $files Parquet files, $(du -sh "$tmp/data/cold" | cut -f1)"
    ((files > 0)) || { echo "profile: no Parquet file after compact" >&2; exit 1; }
fi

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# the ids of the newest pcalls calls, as URLs of their trees
: >"$tmp/urls"
cursor=
while :; do
    url="$api/calls?$win&duration=%3E%3D0ms&limit=1000&sort=-ts"
    [[ -n $cursor ]] && url="$url&cursor=$cursor"
    curl -s "$url" >"$tmp/page.json"
    cursor=$(python3 - "$tmp/page.json" "$tmp/urls" "$api" "$pcalls" <<'EOF'
import json, sys
page = json.load(open(sys.argv[1]))
have = sum(1 for l in open(sys.argv[2]) if l.startswith("url"))
want = int(sys.argv[4])
with open(sys.argv[2], "a") as out:
    for c in page["calls"]:
        if have >= want:
            break
        out.write('url = "%s/calls/%s/tree"\noutput = "/dev/null"\n' % (sys.argv[3], c["id"]))
        have += 1
print((page["next_cursor"] or "") if have < want else "")
EOF
)
    [[ -z $cursor ]] && break
done
log "profile: $(grep -c '^url' "$tmp/urls") tree URLs (last page: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["calls"]), d["partial"], d["partial_reasons"])' "$tmp/page.json"))"
ntrees=$(grep -c '^url' "$tmp/urls")
scale=1
if ((sample > 0 && sample < ntrees)); then
    # every k-th tree URL (a url line and its output line each)
    step=$(( ntrees / sample ))
    awk -v k="$step" -v n="$sample" '/^url/ { i++; keep = ((i - 1) % k == 0 && ++taken <= n) } keep' "$tmp/urls" >"$tmp/urls.s"
    mv "$tmp/urls.s" "$tmp/urls"
    nsample=$(grep -c '^url' "$tmp/urls")
    scale=$(echo "scale=6; $ntrees / $nsample" | bc)
    log "profile: the baseline times $nsample of the $ntrees trees and scales by $scale"
fi
nurls=$(grep -c '^url' "$tmp/urls")

p_times=() b_times=()
for ((r = 0; r < runs; r++)); do
    t=$(curl -s -o "$tmp/profile.json" -w '%{http_code} %{time_total}' "$api/profile?$win&duration=%3E%3D0ms&max_calls=$pcalls")
    [[ ${t%% *} == 200 ]] || { echo "profile: /profile answered ${t%% *}" >&2; cat "$tmp/profile.json" >&2; exit 1; }
    p_times+=("${t#* }")
    s=$(date +%s.%N)
    codes=$(curl -s -K "$tmp/urls" -w '%{http_code}\n' | sort | uniq -c | tr '\n' ' ')
    e=$(date +%s.%N)
    [[ $codes =~ ^\ *$nurls\ 200\ $ ]] || { echo "profile: the trees answered: $codes" >&2; exit 1; }
    b_times+=("$(echo "($e - $s) * $scale" | bc)")
done
ui_ms=null
if ((ui)); then
    ui_json=$(NODE_PATH=$root/tests/tools/node_modules node "$root/bench/profile_ui.mjs" "http://127.0.0.1:$http" \
        "$win&duration=%3E%3D0ms&max_calls=$pcalls" "$runs") || { echo "profile: the UI timing failed" >&2; exit 1; }
    ui_ms=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["median_ms"])' "$ui_json")
    log "profile: first flame paint in the UI: $ui_json"
fi
pt=$(printf '%s\n' "${p_times[@]}" | median)
bt=$(printf '%s\n' "${b_times[@]}" | median)
read -r merged nodes bytes < <(python3 -c '
import json,sys,os
d=json.load(open(sys.argv[1])); print(d["profile"]["merged"], d["nodes"], os.path.getsize(sys.argv[1]))' "$tmp/profile.json")
ratio=$(echo "scale=3; $pt / $bt" | bc)
machine=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
if ((json)); then
    printf '{"bench":"profile","machine":"%s","cores":%d,"date":"%s","commit":"%s","calls_stored":%d,"tier":"%s","profile_calls":%d,"merged":%d,"nodes":%d,"bytes":%d,"profile_s":%s,"trees":%d,"trees_timed":%d,"trees_s":%s,"ratio":%s,"ui_first_flame_ms":%s}\n' \
        "$machine" "$(nproc)" "$(date -u '+%F %T UTC')" "$(git -C "$root" rev-parse --short HEAD)" "$total" "$( ((cold)) && echo cold || echo hot)" "$pcalls" \
        "$merged" "$nodes" "$bytes" "$pt" "$ntrees" "$nurls" "$bt" "$ratio" "$ui_ms"
else
    echo "machine: $machine, $(nproc) cores; commit $(git -C "$root" rev-parse --short HEAD)"
    echo "stored: $total calls; profile of $pcalls: $merged merged, $nodes nodes, $bytes bytes"
    echo "profile:  $pt s (median of $runs)"
    echo "tier:     $( ((cold)) && echo 'cold (Parquet)' || echo hot)"
    echo "baseline: $bt s for $ntrees trees one by one (median of $runs; $nurls timed)"
    echo "ratio:    $ratio"
    if ((ui)); then echo "UI:       first flame paint $ui_ms ms (median of $runs, from the navigation)"; fi
fi
