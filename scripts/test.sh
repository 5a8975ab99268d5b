#!/usr/bin/env bash
# scripts/test.sh -- sets the machine up and runs the whole test suite:
#   0. scripts/setup.sh             missing Debian packages + the normal build in build/
#      services                     PostgreSQL 15 + Swift s3api on loopback (scripts/pg-test.sh,
#                                   scripts/swift-test.sh), DuckDB + hyparquet (scripts/node-tools.sh)
#                                   for the *@pg-s3 suites and the Parquet checks
#   1. ctest of build/
#   2. an ASan+UBSan build in build-asan/ (gcc, CP_SANITIZE=ON) and its ctest
#   3. scripts/fuzz.sh 10           every libFuzzer target for 10 s (clang, ASan+UBSan)
# Every step runs even if an earlier one failed; the exit status is non-zero if any
# failed. The last line counts ctest tests (both builds) and fuzz targets:
#   summary: N passed, M failed
# Logs: build-logs/<step>.log. This is what .ci/run runs.
#
# usage: scripts/test.sh
# env:   FUZZ_SECONDS     seconds per fuzz target (default 10)
#        CP_FIXTURES_DIR  the shared fixtures (default ../shared/fixtures beside the repo)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# The tests read the real agent captures in place; without them every suite would fail
# one by one, so say so once.
export CP_FIXTURES_DIR=${CP_FIXTURES_DIR:-$root/../shared/fixtures}
if [[ ! -d $CP_FIXTURES_DIR/streams ]]; then
    echo "test: fixtures not found at $CP_FIXTURES_DIR: the shared/ folder must sit beside this repository," >&2
    echo "      or set CP_FIXTURES_DIR to its fixtures/ folder" >&2
    exit 2
fi
logs=$root/build-logs
mkdir -p "$logs"
jobs=$(nproc)
t_start=$(date +%s)

step_names=()
step_status=()
step_secs=()
passed=0
failed=0

section() {
    echo
    echo "=================================================================================="
    echo "== $*"
    echo "=================================================================================="
}

# Counts ctest's closing line ("N% tests passed, F tests failed out of T") from a log.
# A step that failed without such a line counts as one failure.
count_ctest() {
    local log=$1 rc=$2 line total fails
    line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
    if [[ -n $line ]]; then
        total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
        fails=$(sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/' <<<"$line")
        passed=$((passed + total - fails))
        failed=$((failed + fails))
        if ((rc != 0 && fails == 0)); then failed=$((failed + 1)); fi
    elif ((rc != 0)); then
        failed=$((failed + 1))
    fi
}

# Counts the per-target lines of scripts/fuzz.sh.
count_fuzz() {
    local log=$1 rc=$2 ok bad
    ok=$(grep -cE '^fuzz: +fuzz_[a-z_]+ +ok ' "$log" || true)
    bad=$(grep -cE '^fuzz: +fuzz_[a-z_]+ +FAIL ' "$log" || true)
    passed=$((passed + ok))
    failed=$((failed + bad))
    if ((rc != 0 && bad == 0)); then failed=$((failed + 1)); fi
}

# run_step NAME COUNTER COMMAND...: runs COMMAND with its output shown and kept in
# build-logs/NAME.log, records the result; never exits.
run_step() {
    local name=$1 counter=$2
    shift 2
    local log=$logs/$name.log t0 rc=0
    t0=$(date +%s)
    "$@" 2>&1 | tee "$log" || rc=$?
    step_names+=("$name")
    step_status+=("$rc")
    step_secs+=($(($(date +%s) - t0)))
    case $counter in
        ctest) count_ctest "$log" "$rc" ;;
        fuzz) count_fuzz "$log" "$rc" ;;
        *) if ((rc != 0)); then failed=$((failed + 1)); fi ;;
    esac
}

# (set -e does not apply inside run_step's pipeline: every command checks its status)
asan_suite() {
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCP_SANITIZE=ON -DCP_FIXTURES_DIR="$CP_FIXTURES_DIR" || return 1
    cmake --build build-asan -j"$jobs" || return 1
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir build-asan --output-on-failure -j2
}

section "0/3 setup: packages + build/ (scripts/setup.sh)"
run_step setup none env SETUP_TEST_TOOLS=1 "$root/scripts/setup.sh"

# The PostgreSQL + S3 pair of the storage suites (tests named *@pg-s3): a throwaway
# PostgreSQL 15 cluster and a Swift all-in-one with s3api on loopback, stopped on exit.
# DuckDB and hyparquet (npm) read the Parquet files the tests write.
services_dir=$root/build-logs/services
stop_services() {
    "$root/scripts/pg-test.sh" stop "$services_dir/pg" >/dev/null 2>&1 || true
    "$root/scripts/swift-test.sh" stop "$services_dir/swift" >/dev/null 2>&1 || true
}
# 1 if something listens on 127.0.0.1:$1.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# The first base port from $1 (stepping by 10) whose $2 ports are all free: another
# checkout's services (or anything else) on the default ports must not skip the pg-s3 suites.
free_base() {
    local base=$1 span=$2 i busy
    for _ in $(seq 1 50); do
        busy=0
        for ((i = 0; i < span; i++)); do port_busy $((base + i)) && busy=1 && break; done
        if [[ $busy = 0 ]]; then echo "$base"; return 0; fi
        base=$((base + 10))
    done
    return 1
}
start_services() {
    local out pg_port s3_port
    mkdir -p "$services_dir"
    pg_port=${CP_TEST_PG_PORT:-$(free_base 55440 1)} || return 1
    s3_port=${CP_TEST_S3_PORT:-$(free_base 18090 4)} || return 1
    out=$("$root/scripts/pg-test.sh" start "$services_dir/pg" "$pg_port") || return 1
    echo "$out"
    echo "export CP_TEST_PG_URL='$(sed -n 's/^CP_TEST_PG_URL=//p' <<<"$out" | tail -n 1)'" >"$services_dir/env"
    out=$("$root/scripts/swift-test.sh" start "$services_dir/swift" "$s3_port") || return 1
    echo "$out"
    echo "export CP_TEST_S3_ENDPOINT='$(sed -n 's/^S3_ENDPOINT=//p' <<<"$out" | tail -n 1)'" >>"$services_dir/env"
    "$root/scripts/node-tools.sh"
}
trap stop_services EXIT

section "services: PostgreSQL 15, Swift s3api, DuckDB + hyparquet (npm)"
rm -f "$services_dir/env"
run_step services none start_services
# run_step's pipeline ran it in a subshell: take its exports from the file
if [[ -f $services_dir/env ]]; then source "$services_dir/env"; fi

section "1/3 ctest: build/ (RelWithDebInfo)"
run_step ctest ctest ctest --test-dir build --output-on-failure -j2

section "2/3 ctest: build-asan/ (ASan + UBSan)"
run_step ctest-asan ctest asan_suite

section "3/3 fuzz: every libFuzzer target, ${FUZZ_SECONDS:-10} s each (scripts/fuzz.sh)"
run_step fuzz fuzz "$root/scripts/fuzz.sh" "${FUZZ_SECONDS:-10}"

# The failed tests' own words, near the end of the output (where a truncated log still
# shows them): from ctest's LastTest.log, each failed test's error lines, at most 30.
failure_digest() {
    local dir=$1 list=$1/Testing/Temporary/LastTestsFailed.log log=$1/Testing/Temporary/LastTest.log name
    [[ -s $list && -f $log ]] || return 0
    while IFS= read -r line; do
        name=${line#*:}
        echo "---- $dir: $name"
        awk -v n="$name" '
            $0 ~ "^[0-9]+/[0-9]+ Testing: " && index($0, n) { on = 1; next }
            on && $0 ~ ("^\"" ) && index($0, "end time") { on = 0 }
            on && /ERROR|FAIL|[Ff]ailure|error:|assert|server_fail|exited|acknowledged|peak RSS|over the|never/ { print }
        ' "$log" | tail -n 30
    done <"$list"
}
if ((failed > 0)) && [[ -s build/Testing/Temporary/LastTestsFailed.log || -s build-asan/Testing/Temporary/LastTestsFailed.log ]]; then
    section "failed tests (their error lines)"
    failure_digest build
    failure_digest build-asan
fi

section "result"
any_fail=0
for i in "${!step_names[@]}"; do
    st=ok
    if [[ ${step_status[$i]} != 0 ]]; then
        st="FAILED (exit ${step_status[$i]})"
        any_fail=1
    fi
    printf '  %-12s %-20s %5ss   log: build-logs/%s.log\n' "${step_names[$i]}" "$st" "${step_secs[$i]}" "${step_names[$i]}"
done
echo "  total time: $(($(date +%s) - t_start))s"
if ((any_fail == 0 && failed > 0)); then any_fail=1; fi
echo "summary: $passed passed, $failed failed"
exit $any_fail
