#!/usr/bin/env bash
# bench/hprof.sh -- the summary of a large heap dump (GET /api/v1/dumps/{id}/hprof) with
# the server's memory watched: a generated dump of ~MB megabytes of HPROF (bench/hprof_gen.c:
# 13 M objects, 2 000 classes, 200 000 symbols at 1024), zipped as diagtools sends it,
# uploaded chunked into `cloudprof serve`; the server is restarted (so the upload's memory
# is gone), then the summary is asked for. Reports the time, the server's RSS before and at
# its peak (VmHWM) and checks the answer against the generator's (top classes, counts);
# then asks again (the cache: "cached": true).
#
# usage: bench/hprof.sh [MB]          (default 1024)
# env:   CLOUDPROF_BIN    the binary (default build/cloudprof)
#        HPROF_GEN        the generator (default: bench_hprof_gen beside the binary's bench/)
#        BENCH_DIR        scratch directory (default a new one under /tmp; needs ~MB/2 free)
set -euo pipefail

mb=${1:-1024}
[[ $mb =~ ^[0-9]+$ ]] && ((mb > 0)) || { echo "usage: $0 [MB]" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${CLOUDPROF_BIN:-$root/build/cloudprof}
gen=${HPROF_GEN:-$(dirname "$bin")/bench/bench_hprof_gen}
[[ -x $bin ]] || { echo "hprof: $bin not built (set CLOUDPROF_BIN)" >&2; exit 1; }
[[ -x $gen ]] || { echo "hprof: $gen not built (set HPROF_GEN)" >&2; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null || { echo "hprof: curl and jq are needed" >&2; exit 1; }
dir=${BENCH_DIR:-$(mktemp -d /tmp/cloudprof-hprofbench-XXXXXX)}
pid=
cleanup() {
    [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

echo "hprof: generating a ${mb} MB heap dump in $dir" >&2
t0=$(date +%s.%N)
"$gen" "$dir/heap.hprof.zip" "$mb" >"$dir/expected.json"
t1=$(date +%s.%N)
echo "hprof: $(jq -c '{hprof_bytes, zip_bytes, classes, instances}' "$dir/expected.json") in $(printf %.1f "$(echo "$t1 - $t0" | bc -l)") s" >&2

start() {
    rm -f "$dir/ready"
    "$bin" serve --data "$dir/data" --agent-host 127.0.0.1 --agent-port auto --http-host 127.0.0.1 --http-port 0 \
        --compact-every 0 --ready-file "$dir/ready" 2>>"$dir/serve.log" &
    pid=$!
    for _ in $(seq 100); do [[ -s $dir/ready ]] && break; sleep 0.1; done
    [[ -s $dir/ready ]] || { cat "$dir/serve.log" >&2; exit 1; }
    port=$(sed -n 's/^http_port=//p' "$dir/ready")
}
stop() {
    kill "$pid"
    wait "$pid" || { echo "hprof: serve did not stop cleanly" >&2; exit 1; }
    pid=
}
kib() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$pid/status"; }

start
url="http://127.0.0.1:$port/diagnostic/bench/2023/12/19/06/18/00/app-5cbcd847d-l2t7t_1702966000000/20231219T061800.hprof.zip"
code=$(curl -sS -o "$dir/resp" -w '%{http_code}' -T - -H 'Content-Type: application/octet-stream' "$url" \
    <"$dir/heap.hprof.zip")
[[ $code == 201 ]] || { echo "hprof: upload HTTP $code: $(cat "$dir/resp")" >&2; exit 1; }
id=$(jq -r .id "$dir/resp")
stop

start # a fresh process: its peak is the summary's
rss0=$(kib VmRSS)
t0=$(date +%s.%N)
code=$(curl -sS -o "$dir/summary.json" -w '%{http_code}' "http://127.0.0.1:$port/api/v1/dumps/$id/hprof?top=5")
t1=$(date +%s.%N)
hwm=$(kib VmHWM)
[[ $code == 200 ]] || { echo "hprof: summary HTTP $code: $(cat "$dir/summary.json")" >&2; exit 1; }
code=$(curl -sS -o "$dir/again.json" -w '%{http_code}' "http://127.0.0.1:$port/api/v1/dumps/$id/hprof?top=5")
t2=$(date +%s.%N)
stop

# the answer is the generator's
want=$(jq -c '[.hprof_bytes, .classes, .instances, .top]' "$dir/expected.json")
got=$(jq -c '[.bytes, .class_count, .instances, .classes]' "$dir/summary.json")
[[ $want == "$got" ]] || { echo "hprof: summary differs from the generator's:"$'\n'"  want $want"$'\n'"  got  $got" >&2; exit 1; }
[[ $(jq .cached "$dir/again.json") == true && $(jq .cached "$dir/summary.json") == false ]] ||
    { echo "hprof: the second answer is not from the cache" >&2; exit 1; }
s=$(echo "$t1 - $t0" | bc -l)
printf 'hprof: %s HPROF bytes (%s zipped), summary in %.1f s (%.0f MB/s of HPROF; elapsed_ms %s), cached answer in %.0f ms\n' \
    "$(jq .bytes "$dir/summary.json")" "$(jq .file_bytes "$dir/summary.json")" "$s" \
    "$(echo "$(jq .bytes "$dir/summary.json") / 1048576 / $s" | bc -l)" "$(jq .elapsed_ms "$dir/summary.json")" \
    "$(echo "($t2 - $t1) * 1000" | bc -l)"
printf 'hprof: server RSS %d KiB before, peak %d KiB, growth %d KiB (goal < 65536)\n' "$rss0" "$hwm" $((hwm - rss0))
grep -o 'hprof: dump .*' "$dir/serve.log" | tail -n 1 >&2 || true
((hwm - rss0 < 65536)) || { echo "hprof: RSS grew by 64 MiB or more" >&2; exit 1; }
