#!/usr/bin/env bash
# scripts/bench.sh -- builds the benchmarks (bench/*.c -> bench_<name>) in Release (-O2)
# in build-bench/ and runs them all, one after another, pinned to one core when taskset
# is available. Prints the machine (CPU model, cores), compiler, commit and date first.
#
# usage: scripts/bench.sh [ARGS...]     ARGS go to every bench program, e.g. --json,
#                                       --min-time 0.2
# env:   CP_FIXTURES_DIR   fixtures folder (default ../shared/fixtures beside the repo)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export CP_FIXTURES_DIR=${CP_FIXTURES_DIR:-$root/../shared/fixtures}
build=$root/build-bench

mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DCP_TESTS=OFF -DCP_FIXTURES_DIR="$CP_FIXTURES_DIR" >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; exit 1; }

benches=()
for f in bench/*.c; do
    benches+=("bench_$(basename "$f" .c)")
done
if ((${#benches[@]} == 0)); then
    echo "bench: no bench/*.c programs"
    exit 0
fi
cmake --build "$build" -j"$(nproc)" --target "${benches[@]}" >"$build/build.log" 2>&1 ||
    { tail -n 60 "$build/build.log"; exit 1; }

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

status=0
for b in "${benches[@]}"; do
    echo
    echo "== $b $*"
    "${pin[@]}" "$build/bench/$b" "$@" || { echo "bench: $b exited with $?"; status=1; }
done
exit $status
