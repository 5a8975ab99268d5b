#!/usr/bin/env bash
# bench/api_auth.sh -- API requests per second with an OIDC bearer token (`--auth oidc`)
# against the same requests without login (`--auth none`), in the same run (issue 17;
# goal: >= 0.9x).
#
# The data: fixtures/foreign/shop.trcbin imported (`cloudprof import --data`) into namespace
# bench. The provider: tests/oidc/provider.mjs (oidc-provider on loopback); the token: a
# client-credentials access token of cloudprof-cli (RS256 JWT, groups viewer,team-a). The
# server runs once with --auth none and once with --auth oidc on the same data directory;
# bench_api_auth (bench/api_auth.c) sends keep-alive GETs from C connections for S seconds.
# The modes alternate ROUNDS times and the median of each is reported, with the ratio:
#   config   GET /api/v1/config          (the cheapest authenticated request: auth dominates)
#   calls    GET /api/v1/calls?...limit=50 (a real query)
#
# usage: bench/api_auth.sh [ROUNDS]      (default 3; ~1 minute)
# env:   BUILD_DIR (default build/), CONNS (default 4), SECONDS_PER_RUN (default 5)
set -euo pipefail

rounds=${1:-3}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
[[ $build = /* ]] || build=$root/$build
bin=$build/cloudprof
load=$build/bench/bench_api_auth
fixtures=${CP_FIXTURES_DIR:-$root/../shared/fixtures}
conns=${CONNS:-4}
slices=${SLICES:-100}
slice_ms=${SLICE_MS:-100}
for f in "$bin" "$load"; do [[ -x $f ]] || { echo "api_auth: $f not built (cmake --build $build)" >&2; exit 1; }; done
[[ -d $root/tests/tools/node_modules/oidc-provider ]] || { echo "api_auth: run scripts/node-tools.sh" >&2; exit 1; }

dir=$(mktemp -d /tmp/cloudprof-authbench-XXXXXX)
pids=() ppid_=
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
    [[ -n $ppid_ ]] && kill "$ppid_" 2>/dev/null && wait "$ppid_" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
log() { echo "api_auth: $*" >&2; }

win=$("$bin" import --data "$dir/none" --namespace bench --json "$fixtures/foreign/shop.trcbin" |
    sed -n 's/.*"first_ms":\([0-9]*\).*/\1/p')
"$bin" import --data "$dir/oidc" --namespace bench "$fixtures/foreign/shop.trcbin" >/dev/null
[[ -n $win ]] || { echo "api_auth: the import failed" >&2; exit 1; }
from=$((win - 3600000)) to=$((win + 86400000))
# the provider; its stdin stays open (a FIFO held by sleep) until the script ends
mkfifo "$dir/in"
node "$root/tests/oidc/provider.mjs" <"$dir/in" >"$dir/provider.out" 2>"$dir/provider.log" &
ppid_=$!
exec 3>"$dir/in"
for _ in $(seq 200); do [[ -s $dir/provider.out ]] && break; sleep 0.1; done
issuer=$(sed -n 's/.*"issuer":"\([^"]*\)".*/\1/p' "$dir/provider.out")
[[ -n $issuer ]] || { cat "$dir/provider.log" >&2; exit 1; }
curl -sf -u cloudprof-cli:cli-secret-0123456789 -d grant_type=client_credentials \
    --data-urlencode resource=urn:cloudprof:api "$issuer/token" |
    sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p' >"$dir/token"
[[ -s $dir/token ]] || { echo "api_auth: no token" >&2; exit 1; }
echo ui-secret-0123456789 >"$dir/secret"

start() { # start MODE: a server on the data directory of MODE; sets port_MODE
    local extra=()
    [[ $1 == oidc ]] && extra=(--auth oidc --oidc-issuer "$issuer" --oidc-client-id cloudprof-ui
        --oidc-client-secret-file "$dir/secret" --oidc-audience cloudprof-api --oidc-roles-claim groups)
    "$bin" serve --data "$dir/$1" --agent-host 127.0.0.1 --agent-port auto --http-host 127.0.0.1 --http-port 0 \
        --compact-every 0 --ready-file "$dir/ready.$1" "${extra[@]}" 2>>"$dir/serve.$1.log" &
    pids+=($!)
    for _ in $(seq 200); do [[ -s $dir/ready.$1 ]] && break; sleep 0.1; done
    [[ -s $dir/ready.$1 ]] || { cat "$dir/serve.$1.log" >&2; exit 1; }
    printf -v "port_$1" '%s' "$(sed -n 's/^http_port=//p' "$dir/ready.$1")"
}
start none
start oidc

declare -A paths=([config]="/api/v1/config" [calls]="/api/v1/calls?namespace=bench&from=$from&to=$to&limit=50")
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # utime + stime, clock ticks
hz=$(getconf CLK_TCK)
declare -A res
for ((r = 1; r <= rounds; r++)); do
    for what in config calls; do
        c0n=$(cpu "${pids[0]}") c0o=$(cpu "${pids[1]}")
        # the first request with the token verifies it (RSA); the rest hit the cache
        out=$("$load" --port "$port_none" --auth-port "$port_oidc" --token-file "$dir/token" --path "${paths[$what]}" \
            --conns "$conns" --slices "$slices" --slice-ms "$slice_ms") ||
            { echo "api_auth: $what failed: $out" >&2; tail -5 "$dir"/serve.*.log >&2; exit 1; }
        read -r _ n _ o _ ratio _ reqn reqo _ <<<"$out"
        # the servers' CPU per request (the loader shares the 2 cores: this is the part that is the server's)
        usn=$(awk -v c="$(($(cpu "${pids[0]}") - c0n))" -v n="$reqn" -v hz="$hz" 'BEGIN {printf "%.1f", c / hz * 1e6 / n}')
        uso=$(awk -v c="$(($(cpu "${pids[1]}") - c0o))" -v n="$reqo" -v hz="$hz" 'BEGIN {printf "%.1f", c / hz * 1e6 / n}')
        res[none.$what]+="$n " res[oidc.$what]+="$o " res[ratio.$what]+="$ratio " res[usn.$what]+="$usn " res[uso.$what]+="$uso "
        log "round $r $what: none $n/s ($usn us CPU each), oidc $o/s ($uso us CPU each), ratio $ratio"
    done
done

median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-8s %12s %12s %7s %16s %16s\n' request "none req/s" "oidc req/s" ratio "none CPU us/req" "oidc CPU us/req"
for what in config calls; do
    printf '%-8s %12s %12s %7s %16s %16s\n' "$what" "$(median "${res[none.$what]}")" "$(median "${res[oidc.$what]}")" \
        "$(median "${res[ratio.$what]}")" "$(median "${res[usn.$what]}")" "$(median "${res[uso.$what]}")"
done
echo "($rounds rounds of $slices slices of $slice_ms ms alternating, $conns keep-alive connections, medians; $(nproc) cores)"
