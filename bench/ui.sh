#!/usr/bin/env bash
# bench/ui.sh -- the web UI at the issue 7 sizes: a call tree of 100 000 nodes and a calls
# list of 100 000 rows, in headless Debian chromium driven by bench/ui_bench.mjs
# (playwright-core from tests/tools/node_modules), against the UI that `cloudprof serve`
# serves from its own binary. The API answers are synthetic data of those sizes in the
# docs/API.md shapes (page.route), so the figures are the browser's work, not the catalog's.
# Every figure has a baseline measured in the same run, in the same browser:
#   tree open    navigation -> first tree row   vs  fetch + JSON.parse of the same body
#                (also: flame view, search; the app's own JSON -> first paint)
#   calls list   frame times while scrolling 100 000 loaded rows (+400 px per frame, and
#                random jumps), main-thread task ms per frame  vs  the same loops on a
#                static page of 100 rows of similar markup; JS heap; sort click -> new first row
# Each measurement is repeated N times (default 5) and the median reported. Headless
# chromium with --disable-gpu renders in software: absolute frame times are those of a
# CPU rasteriser on this VM, the ratios are the figures to compare.
#
# usage: bench/ui.sh [N]                 (repetitions, default 5; ~2-3 minutes at 5)
# env:   BUILD_DIR      build directory holding cloudprof with the UI embedded (default build/)
#        CLOUDPROF_BIN  the binary itself (default $BUILD_DIR/cloudprof)
#        UI_BENCH_ARGS  more ui_bench.mjs options (--nodes N --rows N --frames N --jumps N)
#        UI_BENCH_RAW   file to keep the raw "UI ..." result lines in
set -euo pipefail

reps=${1:-5}
[[ $reps =~ ^[0-9]+$ ]] && ((reps > 0)) || { echo "usage: $0 [N]" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
[[ $build = /* ]] || build=$root/$build
bin=${CLOUDPROF_BIN:-$build/cloudprof}
[[ -x $bin ]] || { echo "ui: $bin not built (set BUILD_DIR or CLOUDPROF_BIN)" >&2; exit 1; }
tools=$root/tests/tools/node_modules
[[ -d $tools/playwright-core ]] || { echo "ui: $tools/playwright-core missing (run scripts/node-tools.sh)" >&2; exit 1; }
[[ -x /usr/bin/chromium ]] || { echo "ui: /usr/bin/chromium missing (apt-get install chromium)" >&2; exit 1; }
command -v node >/dev/null || { echo "ui: node is needed" >&2; exit 1; }

dir=$(mktemp -d /tmp/cloudprof-uibench-XXXXXX)
pid=
cleanup() {
    [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

# cloudprof serve on an empty data directory: it serves the UI; the data comes from routes
"$bin" serve --data "$dir/data" --agent-host 127.0.0.1 --agent-port auto --http-host 127.0.0.1 --http-port 0 \
    --compact-every 0 --ready-file "$dir/ready" 2>"$dir/serve.log" &
pid=$!
for _ in $(seq 100); do [[ -s $dir/ready ]] && break; sleep 0.1; done
[[ -s $dir/ready ]] || { cat "$dir/serve.log" >&2; exit 1; }
port=$(sed -n 's/^http_port=//p' "$dir/ready")
base=http://127.0.0.1:$port
curl -sf "$base/api/v1/config" | grep -q '"ui":true' ||
    { echo "ui: $bin has no web UI embedded (scripts/ui-build.sh, then rebuild)" >&2; exit 1; }

t0=$(date +%s)
# shellcheck disable=SC2086
NODE_PATH=$tools node "$root/bench/ui_bench.mjs" --base "$base" --reps "$reps" ${UI_BENCH_ARGS:-} >"$dir/out" ||
    { cat "$dir/out" >&2; echo "ui: ui_bench.mjs failed" >&2; exit 1; }
t1=$(date +%s)

kill "$pid"
wait "$pid" || { echo "ui: serve did not stop cleanly" >&2; exit 1; }
pid=
[[ -n ${UI_BENCH_RAW:-} ]] && cp "$dir/out" "$UI_BENCH_RAW"

# ---- the table -------------------------------------------------------------------------
awk -v reps="$reps" -v secs=$((t1 - t0)) '
/^UI / {
    name = $2
    for (i = 3; i <= NF; i++) { k = substr($i, 1, index($i, "=") - 1); v = substr($i, index($i, "=") + 1); R[name, k] = v }
}
function row(what, fig, base, ratio) { printf "| %-52s | %-26s | %-28s | %-12s |\n", what, fig, base, ratio }
END {
    printf "ui: %s, %s repetitions (medians), %s nodes / %s rows, %d s\n\n", R["browser", "version"], reps,
        R["tree_input", "nodes"], R["calls_load", "rows"], secs
    row("measurement", "ours", "baseline (same run)", "ratio")
    row("---", "---", "---", "---")
    row("tree: navigation -> first row", R["tree_open", "median"] " ms", "fetch+parse " R["tree_baseline_fetch_parse", "median"] " ms", R["tree_open", "ratio"])
    row("  of which: start-up until the tree request", R["tree_open_until_request", "median"] " ms", "", "")
    row(sprintf("  of which: request -> response end (%.1f MB)", R["tree_input", "json_bytes"] / 1e6), R["tree_open_response", "median"] " ms", "", "")
    row("  of which: response end -> first row", R["tree_open_after_response", "median"] " ms", "", "")
    row("tree: app JSON complete -> first paint", R["tree_app_json_to_paint", "median"] " ms", "JSON.parse " R["tree_baseline_parse", "median"] " ms",
        sprintf("%.2f", R["tree_app_json_to_paint", "median"] / R["tree_baseline_parse", "median"]))
    row("tree: flame view click -> first frame", R["tree_flame", "median"] " ms", "fetch+parse", R["tree_flame", "ratio"])
    row("tree: back to tree view", R["tree_back_to_tree", "median"] " ms", "", "")
    row("tree: search Enter -> count (" R["tree_input", "search_hits"] " hits)", R["tree_search", "median"] " ms", "fetch+parse", R["tree_search", "ratio"])
    row("calls: scroll 400 px/frame, frame median / p95", R["calls_scroll", "frame_median"] " / " R["calls_scroll", "frame_p95"] " ms",
        R["static_scroll", "frame_median"] " / " R["static_scroll", "frame_p95"] " ms", R["calls_scroll_ratio", "frame_median"] " / " R["calls_scroll_ratio", "frame_p95"])
    row("calls: scroll, main-thread task ms per frame", R["calls_scroll", "task_ms_per_frame"], R["static_scroll", "task_ms_per_frame"], R["calls_scroll_ratio", "task"])
    row("calls: random jumps, frame median / p95", R["calls_jumps", "frame_median"] " / " R["calls_jumps", "frame_p95"] " ms",
        R["static_jumps", "frame_median"] " / " R["static_jumps", "frame_p95"] " ms", R["calls_jumps_ratio", "frame_median"] " / " R["calls_jumps_ratio", "frame_p95"])
    row("calls: jumps, main-thread task ms per frame", R["calls_jumps", "task_ms_per_frame"], R["static_jumps", "task_ms_per_frame"], R["calls_jumps_ratio", "task"])
    row("calls: sort click -> new first row", R["calls_sort", "median"] " ms", "", "")
    row("calls: JS heap after GC, all rows loaded", sprintf("%.1f MB", R["calls_heap", "used_bytes"] / 1e6),
        sprintf("static %.1f MB", R["static_heap", "used_bytes"] / 1e6), "")
    row("calls: heap per loaded row", R["calls_heap", "bytes_per_row"] " B", "", "")
    row("calls: performance.memory.usedJSHeapSize", sprintf("%.1f MB", R["calls_heap", "perf_memory_used"] / 1e6), "", "")
    row("calls: first rows after navigation", R["calls_load", "first_rows_ms"] " ms", "", "")
    row("calls: load all rows by scrolling", R["calls_load", "load_all_ms"] " ms", "", "")
    row("calls: row elements in the DOM", R["calls_dom", "row_elements"], "", "")
}' "$dir/out"
