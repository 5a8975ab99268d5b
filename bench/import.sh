#!/usr/bin/env bash
# bench/import.sh -- import throughput of a large TPTP binary trace (issue 15), against a
# baseline measured in the same run on the same file.
#
#   1. bench_tptp gen writes FILE (default 1 GiB) unless it exists (--file reuses one)
#   2. baseline: bench_tptp walk FILE -- read the file and walk its message headers only
#   3. `cloudprof import --data TMP FILE` pinned to core 0 (taskset -c 0): the whole path,
#      decode, assembly into calls with their blobs, the hot tier (SQLite, durable commits)
#      -> events (messages) per second, MB/s, CPU seconds (user+sys of the process), its
#      peak RSS (/usr/bin/time -v)
#   4. `cloudprof serve` on a fresh data directory, pinned to core 0, and the same file
#      POSTed to /api/v1/import by curl (on core 1): the server's RSS before (VmRSS) and its
#      peak during the import (VmHWM) -> the growth the issue bounds (< 64 MB)
# The page cache is warmed by the generator / a first read, for all three alike.
#
# usage: bench/import.sh [--size BYTES] [--file FILE] [--keep] [--json]
#   BUILD_DIR (default build/) holds cloudprof and bench/bench_tptp
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
size=$((1 << 30))
file=""
keep=0
json=0
while (($#)); do
    case $1 in
    --size) size=$2; shift 2 ;;
    --file) file=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --json) json=1; shift ;;
    *) echo "usage: $0 [--size BYTES] [--file FILE] [--keep] [--json]" >&2; exit 2 ;;
    esac
done
cp=$build/cloudprof
gen=$build/bench/bench_tptp
for b in "$cp" "$gen"; do
    [[ -x $b ]] || { echo "import.sh: $b not built (cmake --build $build)" >&2; exit 1; }
done
for t in taskset curl /usr/bin/time; do
    command -v "$t" >/dev/null || { echo "import.sh: $t not found" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/cp-import-bench-XXXXXX")
server_pid=""
cleanup() {
    [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    if ((keep)); then echo "import.sh: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
log() { echo "import.sh: $*" >&2; }

if [[ -z $file ]]; then
    file=$work/bench.trcbin
    log "generating $size bytes"
    "$gen" gen --out "$file" --size "$size" >&2
fi
bytes=$(stat -c %s "$file")
cat "$file" >/dev/null # the page cache holds it for every run alike

log "baseline: walking the message headers"
walk=$(taskset -c 0 "$gen" walk "$file")
log "$walk"
messages=$(sed -E 's/^walk: ([0-9]+) messages.*/\1/' <<<"$walk")
walk_s=$(sed -E 's/.* ([0-9.]+) s,.*/\1/' <<<"$walk")

log "cloudprof import --data (core 0)"
tfile=$work/time.txt
t0=$(date +%s.%N)
taskset -c 0 /usr/bin/time -v -o "$tfile" "$cp" import --data "$work/data" --quiet --json "$file" >"$work/report.json"
t1=$(date +%s.%N)
imp_s=$(echo "$t1 - $t0" | bc -l)
user=$(sed -n 's/.*User time (seconds): //p' "$tfile")
sys=$(sed -n 's/.*System time (seconds): //p' "$tfile")
rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tfile")
calls=$(sed -E 's/.*"calls":([0-9]+).*/\1/' "$work/report.json")
log "$(cat "$work/report.json")"

log "cloudprof serve (core 0) + POST /api/v1/import by curl (core 1)"
taskset -c 0 "$cp" serve --data "$work/srv" --agent-port auto --http-port 0 \
    --ready-file "$work/ready" --log-level warn 2>"$work/serve.log" &
server_pid=$!
for _ in $(seq 1 100); do [[ -s $work/ready ]] && break; sleep 0.1; done
port=$(sed -n 's/^http_port=//p' "$work/ready")
rss_before=$(awk '/VmRSS/ {print $2}' "/proc/$server_pid/status")
h0=$(date +%s.%N)
taskset -c 1 curl -sS -o "$work/http.json" -w '%{http_code}' -H 'Content-Type: application/octet-stream' \
    -X POST -T "$file" "http://127.0.0.1:$port/api/v1/import?namespace=bench" >"$work/http.code"
h1=$(date +%s.%N)
http_s=$(echo "$h1 - $h0" | bc -l)
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status")
http_code=$(cat "$work/http.code")
kill "$server_pid"
wait "$server_pid" || true
server_pid=""

cpu=$(echo "$user + $sys" | bc -l)
ev_s=$(echo "$messages / $imp_s" | bc -l)
ev_cpu=$(echo "$messages / $cpu" | bc -l)
mb_s=$(echo "$bytes / 1000000 / $imp_s" | bc -l)
walk_ev=$(echo "$messages / $walk_s" | bc -l)
ratio=$(echo "$walk_s / $imp_s" | bc -l)
growth=$(((hwm - rss_before) / 1024))
if ((json)); then
    printf '{"bytes":%s,"messages":%s,"calls":%s,"walk_s":%s,"import_s":%.3f,"import_cpu_s":%s,"events_per_s":%.0f,"events_per_cpu_s":%.0f,"mb_per_s":%.1f,"import_rss_kb":%s,"http_status":%s,"http_s":%.3f,"server_rss_before_kb":%s,"server_hwm_kb":%s}\n' \
        "$bytes" "$messages" "$calls" "$walk_s" "$imp_s" "$cpu" "$ev_s" "$ev_cpu" "$mb_s" "$rss_kb" "$http_code" "$http_s" "$rss_before" "$hwm"
else
    printf 'file                %s bytes, %s messages, %s calls\n' "$bytes" "$messages" "$calls"
    printf 'baseline (walk)     %.3f s, %.0f messages/s\n' "$walk_s" "$walk_ev"
    printf 'cloudprof import    %.3f s wall, %.2f s CPU, %.0f events/s (%.0f per CPU second), %.1f MB/s, peak RSS %s MB\n' \
        "$imp_s" "$cpu" "$ev_s" "$ev_cpu" "$mb_s" "$((rss_kb / 1024))"
    printf 'import / baseline   %.3f of the walk'"'"'s speed\n' "$ratio"
    printf 'POST /api/v1/import HTTP %s in %.3f s; server RSS %s MB before, peak %s MB (+%s MB)\n' "$http_code" "$http_s" \
        "$((rss_before / 1024))" "$((hwm / 1024))" "$growth"
fi
