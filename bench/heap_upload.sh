#!/usr/bin/env bash
# bench/heap_upload.sh -- a heap dump upload as diagtools sends it (PUT, Transfer-Encoding:
# chunked, no length) streamed into `cloudprof serve`, against a baseline measured in the
# same run on the same disk: copying the same bytes to a file and fsyncing it (the least
# any durable intake does). Reports MB/s of both, their ratio, the server's RSS before
# and at its peak (VmHWM), and checks that the stored object's SHA-256 equals the source.
#
# usage: bench/heap_upload.sh [MB]          (default 1024)
# env:   CLOUDPROF_BIN   the binary (default build/cloudprof)
#        BENCH_DIR       scratch directory (default a new one under /tmp; needs ~3x MB free)
set -euo pipefail

mb=${1:-1024}
[[ $mb =~ ^[0-9]+$ ]] && ((mb > 0)) || { echo "usage: $0 [MB]" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${CLOUDPROF_BIN:-$root/build/cloudprof}
[[ -x $bin ]] || { echo "heap_upload: $bin not built (set CLOUDPROF_BIN)" >&2; exit 1; }
command -v curl >/dev/null || { echo "heap_upload: curl is needed" >&2; exit 1; }
dir=${BENCH_DIR:-$(mktemp -d /tmp/cloudprof-heapbench-XXXXXX)}
pid=
cleanup() {
    [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

echo "heap_upload: generating $mb MB of random bytes in $dir" >&2
head -c "${mb}M" /dev/urandom >"$dir/heap.bin"
want=$(sha256sum "$dir/heap.bin" | cut -d' ' -f1)
sync

# baseline: copy + fsync on the same disk
t0=$(date +%s.%N)
dd if="$dir/heap.bin" of="$dir/copy.bin" bs=1M conv=fsync status=none
t1=$(date +%s.%N)
rm -f "$dir/copy.bin"
base_s=$(echo "$t1 - $t0" | bc -l)

# cloudprof serve on its embedded default (SQLite + local directory store)
"$bin" serve --data "$dir/data" --agent-host 127.0.0.1 --agent-port auto --http-host 127.0.0.1 --http-port 0 \
    --compact-every 0 --ready-file "$dir/ready" 2>"$dir/serve.log" &
pid=$!
for _ in $(seq 100); do [[ -s $dir/ready ]] && break; sleep 0.1; done
[[ -s $dir/ready ]] || { cat "$dir/serve.log" >&2; exit 1; }
port=$(sed -n 's/^http_port=//p' "$dir/ready")
rss0=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")

url="http://127.0.0.1:$port/diagnostic/bench/2024/01/01/00/00/00/app-5cbcd847d-l2t7t_1704067200000/20240101T000000.hprof.zip"
t0=$(date +%s.%N)
code=$(curl -sS -o "$dir/resp" -w '%{http_code}' -T - -H 'Content-Type: application/octet-stream' "$url" <"$dir/heap.bin")
t1=$(date +%s.%N)
up_s=$(echo "$t1 - $t0" | bc -l)
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
[[ $code == 201 ]] || { echo "heap_upload: HTTP $code: $(cat "$dir/resp")" >&2; exit 1; }
obj=$(find "$dir/data/cold" -name '20240101T000000.hprof.zip*' -type f | head -n 1)
got=$(sha256sum "$obj" | cut -d' ' -f1)
[[ $got == "$want" ]] || { echo "heap_upload: stored object differs from the source" >&2; exit 1; }

kill "$pid"
wait "$pid" || { echo "heap_upload: serve did not stop cleanly" >&2; exit 1; }
pid=

printf 'heap_upload: %d MB  upload %.1f s (%.0f MB/s)  baseline copy+fsync %.1f s (%.0f MB/s)  ratio %.2f\n' \
    "$mb" "$up_s" "$(echo "$mb / $up_s" | bc -l)" "$base_s" "$(echo "$mb / $base_s" | bc -l)" \
    "$(echo "$base_s / $up_s" | bc -l)"
printf 'heap_upload: server RSS %d KiB before, peak %d KiB, growth %d KiB (goal < 65536)\n' "$rss0" "$hwm" \
    $((hwm - rss0))
((hwm - rss0 < 65536)) || { echo "heap_upload: RSS grew by 64 MiB or more" >&2; exit 1; }
