#!/usr/bin/env bash
# scripts/bench.sh -- builds the benchmarks (bench/*.c -> bench_<name>) in Release (-O2)
# in build-bench/ (with the cloudprof binary) and runs them one after another: every
# bench_<name> program pinned to one core when taskset is available, then bench/ingest.sh
# (the end-to-end ingest benchmark, which pins the collector and the emulator itself).
# Prints the machine (CPU model, cores), compiler, commit and date first.
#
# usage: scripts/bench.sh [--json] [--quick] [--only NAMES] [--skip NAMES] [ARGS...]
#                         [--ingest INGEST_ARGS...]
#   --json          every benchmark prints JSON on stdout (one object each, in order);
#                   the header and progress go to stderr
#   --quick         bench/ingest.sh --quick (5 s runs), bench_hot --quick (1M calls),
#                   bench_parquet --rows 200000
#   --only NAMES    comma list of benchmarks to run: decode, connections, ingest, ...
#   --skip NAMES    comma list of benchmarks not to run
#   ARGS            go to every bench_<name> program, e.g. --min-time 0.2 (flags only
#                   one program knows: combine with --only, e.g. --only decode --min-time 0.2)
#   --ingest ...    everything after it goes to bench/ingest.sh (see bench/ingest.sh --help)
# bench_nullsink is not a benchmark but the baseline collector bench/ingest.sh starts;
# bench_connections pins its server and itself, so it runs unpinned.
# bench_hot (the hot tier: inserts, then query latency) writes 10M calls, about 17 GB at its
# peak, into a temporary catalog under $TMPDIR and takes a few minutes; --quick: 1M.
# bench_parquet (cold-tier Parquet writer against DuckDB's COPY ... zstd, same rows, same run)
# needs node and DuckDB's @duckdb/node-api in tests/tools (scripts/node-tools.sh is run first);
# 1M rows, about 3 minutes, ~1.5 GB of memory and ~0.5 GB under $TMPDIR; it runs unpinned
# (DuckDB is also timed with its default threads = all cores).
# env:   CP_FIXTURES_DIR   fixtures folder (default ../shared/fixtures beside the repo)
#        CP_BENCH_BUILD    build directory (default build-bench)
#        CP_INGEST_*       bench/ingest.sh settings (duration, agents, ...; see its --help)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export CP_FIXTURES_DIR=${CP_FIXTURES_DIR:-$root/../shared/fixtures}
build=${CP_BENCH_BUILD:-$root/build-bench}
helpers=(nullsink)        # bench/*.c programs that other benchmarks drive, not benchmarks
self_pinned=(connections) # start a server themselves and pin both sides: run unpinned
unpinned=(parquet)        # compared with a multi-threaded baseline (DuckDB): run unpinned

json=0 only="" skip=""
prog_args=() ingest_args=() hot_args=() parquet_args=()
while (($#)); do
    case $1 in
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    --json) json=1; prog_args+=("$1"); ingest_args+=("$1") ;;
    --quick) ingest_args+=("$1"); hot_args+=("$1"); parquet_args+=(--rows 200000) ;;
    --only) (($# >= 2)) || { echo "bench: --only needs a value" >&2; exit 2; }; only=$2; shift ;;
    --skip) (($# >= 2)) || { echo "bench: --skip needs a value" >&2; exit 2; }; skip=$2; shift ;;
    --ingest) shift; ingest_args+=("$@"); break ;;
    *) prog_args+=("$1") ;;
    esac
    shift
done
wanted() {
    [[ -n $only && ",$only," != *",$1,"* ]] && return 1
    [[ ",$skip," == *",$1,"* ]] && return 1
    return 0
}
# With --json stdout carries only the benchmarks' JSON.
if ((json)); then exec 3>&1 1>&2; else exec 3>&1; fi

mkdir -p "$build"
build=$(cd "$build" && pwd)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DCP_TESTS=OFF -DCP_FIXTURES_DIR="$CP_FIXTURES_DIR" >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; exit 1; }

names=()
for f in bench/*.c; do
    n=$(basename "$f" .c)
    [[ " ${helpers[*]} " == *" $n "* ]] && continue
    wanted "$n" && names+=("$n")
done
run_ingest=0
[[ -f bench/ingest.sh ]] && wanted ingest && run_ingest=1

# Build target by target, so one benchmark that does not build does not stop the others.
status=0
: >"$build/build.log"
build_target() {
    echo "== cmake --build --target $1" >>"$build/build.log"
    cmake --build "$build" -j"$(nproc)" --target "$1" >>"$build/build.log" 2>&1
}
# bench_parquet's baseline: DuckDB through node (tests/tools/node_modules)
if [[ " ${names[*]} " == *" parquet "* ]] && ! scripts/node-tools.sh >>"$build/build.log" 2>&1; then
    echo "bench: scripts/node-tools.sh failed (see $build/build.log): bench_parquet will lack DuckDB"
    status=1
fi
benches=()
for n in "${names[@]}"; do
    if build_target "bench_$n"; then
        benches+=("bench_$n")
    else
        echo "bench: bench_$n does not build (see $build/build.log):"
        grep -E 'error|Error' "$build/build.log" | tail -n 20
        status=1
    fi
done
# the collector itself: bench/ingest.sh and the self-pinned benchmarks start it
if ! build_target cloudprof; then
    echo "bench: cloudprof does not build (see $build/build.log):"
    grep -E 'error|Error' "$build/build.log" | tail -n 20
    run_ingest=0 status=1
fi
if ((run_ingest)) && ! build_target bench_nullsink; then
    echo "bench: bench_nullsink does not build, skipping the ingest benchmark:"
    grep -E 'error|Error' "$build/build.log" | tail -n 20
    run_ingest=0 status=1
fi
if ((${#benches[@]} == 0 && !run_ingest)); then
    echo "bench: nothing to run"
    exit $status
fi

# ---- the machine -----------------------------------------------------------------------
model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
model=${model:-$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)}
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
pin=()
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then pin=(taskset -c 0); fi

echo "machine: ${model:-unknown CPU}, $(nproc) cores; $(uname -sr)"
echo "build:   Release -O2, $("$cc" --version | head -n 1); commit $commit"
echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "pinned:  ${pin[*]:-no (taskset unavailable)}"

for b in "${benches[@]}"; do
    echo
    echo "== $b ${prog_args[*]}"
    rc=0
    p=("${pin[@]}")
    [[ " ${self_pinned[*]} ${unpinned[*]} " == *" ${b#bench_} "* ]] && p=()
    extra=()
    [[ $b == bench_hot ]] && extra=("${hot_args[@]}")
    [[ $b == bench_parquet ]] && extra=("${parquet_args[@]}")
    "${p[@]}" "$build/bench/$b" "${prog_args[@]}" "${extra[@]}" >&3 || rc=$?
    if ((rc != 0)); then echo "bench: $b exited with $rc"; status=1; fi
done
if ((run_ingest)); then
    echo
    echo "== bench/ingest.sh ${ingest_args[*]}"
    rc=0
    CP_BENCH_BUILD=$build bench/ingest.sh --no-build "${ingest_args[@]}" >&3 || rc=$?
    if ((rc != 0)); then echo "bench: bench/ingest.sh exited with $rc"; status=1; fi
fi
exit $status
