#!/usr/bin/env bash
# scripts/fuzz.sh -- builds the libFuzzer targets (fuzz/fuzz_*.c) with clang + ASan/UBSan
# in build-fuzz/, seeds their corpora from the fixtures, runs each for N seconds and
# fails if any target crashes (crash, sanitizer report, leak, timeout or invariant abort).
#
# usage: scripts/fuzz.sh [SECONDS_PER_TARGET]       (default 15)
# env:   CP_FIXTURES_DIR   fixtures folder (default ../shared/fixtures beside the repo)
#        FUZZ_JOBS         targets run at once (default: number of cores, at most 2)
#        FUZZ_TARGETS      space-separated subset, e.g. "fuzz_wire fuzz_dec_calls"
#
# Crashing inputs are kept in build-fuzz/fuzz-artifacts/; reproduce one with
#   build-fuzz/fuzz/<target> <artifact>
set -euo pipefail

secs=${1:-15}
if ! [[ $secs =~ ^[0-9]+$ ]] || ((secs < 1)); then
    echo "usage: $0 [SECONDS_PER_TARGET]" >&2
    exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export CP_FIXTURES_DIR=${CP_FIXTURES_DIR:-$root/../shared/fixtures}
build=$root/build-fuzz
max_len=65536

if ! command -v clang >/dev/null; then
    echo "fuzz: clang not found (scripts/setup.sh installs it)" >&2
    exit 1
fi

# ---- build ---------------------------------------------------------------------------
targets=()
if [[ -n ${FUZZ_TARGETS:-} ]]; then
    read -r -a targets <<<"$FUZZ_TARGETS"
else
    for f in fuzz/fuzz_*.c; do
        t=$(basename "$f" .c)
        targets+=("$t")
    done
fi
echo "fuzz: building ${#targets[@]} targets in $build"
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCP_FUZZ=ON -DCP_SANITIZE=ON -DCP_TESTS=OFF -DCP_FIXTURES_DIR="$CP_FIXTURES_DIR" >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >"$build/build.log" 2>&1 ||
    { tail -n 60 "$build/build.log"; exit 1; }

# ---- corpora ---------------------------------------------------------------------------
"$root/scripts/fuzz-seed.sh"

# ---- run -------------------------------------------------------------------------------
logs=$build/fuzz-logs
artifacts=$build/fuzz-artifacts
mkdir -p "$logs" "$artifacts"
jobs_max=${FUZZ_JOBS:-$(nproc)}
((jobs_max > 2)) && jobs_max=2
((jobs_max < 1)) && jobs_max=1

# Runs one target; its exit status goes to $logs/<target>.rc (background-safe).
run_target() {
    local t=$1 corpus=$root/fuzz/corpus-${1#fuzz_}
    mkdir -p "$corpus"
    local rc=0
    # detect_leaks: the decoders must not leak on any input.
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$build/fuzz/$t" "$corpus" -max_len=$max_len -max_total_time="$secs" -timeout=20 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/$t-" \
        >"$logs/$t.log" 2>&1 || rc=$?
    echo "$rc" >"$logs/$t.rc"
}

echo "fuzz: running each target for ${secs}s, $jobs_max at a time, -max_len=$max_len"
rm -f "$logs"/*.rc
for t in "${targets[@]}"; do
    while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n || true; done
    run_target "$t" &
done
wait

fail=0
for t in "${targets[@]}"; do
    rc=$(cat "$logs/$t.rc" 2>/dev/null || echo missing)
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$logs/$t.log" | grep -o '[0-9]*$' || true)
    cov=$(grep -o 'cov: [0-9]*' "$logs/$t.log" | tail -n 1 || true)
    if [[ $rc == 0 ]]; then
        printf 'fuzz: %-24s ok    %10s runs  %s\n' "$t" "${execs:-?}" "$cov"
    else
        fail=1
        printf 'fuzz: %-24s FAIL  (exit %s)  log: %s\n' "$t" "$rc" "$logs/$t.log"
        grep -E 'ERROR:|fuzz invariant failed|SUMMARY|Test unit written|runtime error' "$logs/$t.log" | head -n 20 | sed 's/^/    /'
        echo "    reproduce: $build/fuzz/$t <artifact from $artifacts>"
    fi
done
if ((fail)); then
    echo "fuzz: FAILED (see above)"
    exit 1
fi
echo "fuzz: all ${#targets[@]} targets clean"
