#!/usr/bin/env bash
# scripts/fuzz-seed.sh -- (re)creates the libFuzzer seed corpora fuzz/corpus-<target>/
# from the shared fixtures. Seeds are generated, never committed (.gitignore has
# /fuzz/corpus-*/); files the fuzzer added to a corpus on earlier runs are kept.
#
# usage: scripts/fuzz-seed.sh            (fixtures: $CP_FIXTURES_DIR or ../shared/fixtures)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fx=${CP_FIXTURES_DIR:-$root/../shared/fixtures}
if [[ ! -d $fx/streams ]]; then
    echo "fuzz-seed: fixtures not found at $fx (set CP_FIXTURES_DIR)" >&2
    exit 1
fi
st=$fx/streams
v2=$fx/conversations/agent-v2
conv=$fx/conversations/parser.test.protocol

# seed TARGET NAME FILE [PREFIX_BYTES...]: copies FILE as seed-NAME, plus its first N
# bytes for each N given (short seeds mutate faster; a cut stream is still a valid
# stream start with a torn tail).
seed() {
    local target=$1 name=$2 file=$3
    shift 3
    local dir=$root/fuzz/corpus-$target
    mkdir -p "$dir"
    [[ -f $file ]] || { echo "fuzz-seed: missing fixture $file" >&2; return 1; }
    cp "$file" "$dir/seed-$name"
    chmod u+w "$dir/seed-$name" # fixtures are read-only; the corpus is ours
    local n
    for n in "$@"; do
        head -c "$n" "$file" >"$dir/seed-$name-$n"
    done
}

# Writes raw bytes given as hex pairs ("00 0a ff") to stdout.
hex() {
    local b
    for b in "$@"; do printf '%b' "\\x$b"; done
}

# Big-endian 16- and 32-bit integers, as bytes on stdout.
be16() { printf '%b' "\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"; }
be32() { be16 $(($1 >> 16 & 65535)); be16 $(($1 & 65535)); }

# A varstring (protocol.md §1.7) of a short ASCII text: varint length, UTF-16BE units.
vstr() {
    local s=$1 i
    printf '%b' "\\x$(printf %02x ${#s})"
    for ((i = 0; i < ${#s}; i++)); do printf '\x00%s' "${s:i:1}"; done
}

# A phrase (§4.3): 4-byte big-endian length, then the body read from stdin.
phrase() {
    local body
    body=$(mktemp)
    cat >"$body"
    be32 "$(stat -c %s "$body")"
    cat "$body"
    rm -f "$body"
}

# ---- decoders ----------------------------------------------------------------------
seed dec_trace traces0 "$st/test-service.traces.0.protocol" 512 4096
seed dec_trace v2 "$v2/stream.trace.bin" 1024
seed dec_calls calls0 "$st/test-service.calls.0.protocol" 512 4096
seed dec_calls v2 "$v2/stream.calls.bin" 1024
seed dec_dictionary dict "$st/test-service.dictionary.protocol" 2048 16384
seed dec_dictionary v2 "$v2/stream.dictionary.bin"
seed dec_params params "$st/test-service.params.protocol" 600
seed dec_params v2 "$v2/stream.params.bin"
seed dec_suspend suspend "$st/test-service.suspend.protocol" 300
seed dec_suspend v2 "$v2/stream.suspend.bin"
seed dec_sql sql0 "$st/test-service.sql.0.protocol"
seed dec_sql xml0 "$st/test-service.xml.0.protocol" 1024
seed dec_sql v2sql "$v2/stream.sql.bin"
seed dec_sql v2xml "$v2/stream.xml.bin"

# posDictionary has no fixture: synthesize phrases of (varint id, varstring word)
# records with explicit, out-of-order and multi-byte ids.
pd=$root/fuzz/corpus-dec_posdictionary
mkdir -p "$pd"
{
    { hex 00; vstr call.info; hex 01; vstr call.red; hex 13; vstr profiler.title; } | phrase
    { hex 05; vstr ""; hex 81 01; vstr java.lang.Thread.run; } | phrase
} >"$pd/seed-synthetic"
{ hex ff ff ff ff 07; vstr x; } | phrase >"$pd/seed-bigid"

# ---- command layer -------------------------------------------------------------------
seed wire v2client "$v2/client-to-server.bin" 300 4096
seed wire conversation "$conv" 4339 # the first 4339 bytes are commands only (§6.2)

# capture target input: byte 0 even = concatenated capture follows; odd = split capture:
# be16 server length, server bytes, client bytes (see fuzz/fuzz_capture.c).
cap=$root/fuzz/corpus-capture
mkdir -p "$cap"
{ hex 00; cat "$conv"; } >"$cap/seed-concat"
{ hex 00; head -c 6000 "$conv"; } >"$cap/seed-concat-6000"
{
    hex 01
    be16 "$(stat -c %s "$v2/server-to-client.bin")"
    cat "$v2/server-to-client.bin" "$v2/client-to-server.bin"
} >"$cap/seed-split"
{
    # a short conversation: handshake + first INIT replies (44 bytes), 200 client bytes
    hex 01
    be16 44
    head -c 44 "$v2/server-to-client.bin"
    head -c 200 "$v2/client-to-server.bin"
} >"$cap/seed-split-short"

# query parsers: the texts a query string carries (durations, searches, sort names, ids)
q=$root/fuzz/corpus-query
mkdir -p "$q"
printf '%s' '>=500ms' >"$q/seed-duration"
printf '%s' '100ms...2s' >"$q/seed-range"
printf '%s' "+abcde sysadm -'test page' \$nc.user=\"a b\" \$method=health" >"$q/seed-search"
printf '%s' '{"web.url":["http://x/a?b=1"],"_hidden":["x\"y\\u00e9"]}' >"$q/seed-params"
printf '%s' '-duration_ms' >"$q/seed-sort"
printf '%s' '1690201583767-1690201577000-1-8-0-00ff00ff00ff00ff' >"$q/seed-id"

# trace blobs (cp_model.h): one call -- ENTER 5, a tag, an sql reference, EXIT -- with two
# words, the resolved sql value and a pause. Varints here are all single bytes.
b=$root/fuzz/corpus-blob
mkdir -p "$b"
trace=$(mktemp)
{
    be32 0; be32 1000                    # timer start
    be32 0; be32 7; be32 0; be32 1000    # chunk: thread 7, chunk time
    hex 80 01 05                         # ENTER, delta 32, method 5
    hex 02 07 00; vstr ab                # TAG name 7, inline "ab"
    hex 06 09 03 01 00                   # TAG name 9, sql file 1 offset 0
    hex 05 03                            # EXIT delta 1, FINISH
} >"$trace"
{
    printf 'CPT1'
    hex "$(printf %02x "$(stat -c %s "$trace")")"
    cat "$trace"
    hex 03; hex 05 03; printf 'm()'; hex 07 01; printf 'x'; hex 09 03; printf 'sql'
    hex 01 03 01 00 01 06; printf 'SELECT'
    hex 01 e8 07 05                      # pause ending at 1000, 5 ms
} >"$b/seed-call"
rm -f "$trace"

# ---- parquet -------------------------------------------------------------------------
# Parquet files come from our own writer (plus two built by hand with the page shapes
# other writers use): fuzz/fuzz_parquet.c compiled with -DFZ_PARQUET_SEEDS is a small
# program that writes them. It needs only the parquet layer, cp_buf, libzstd and zlib.
pq=$root/fuzz/corpus-parquet
mkdir -p "$pq"
pqgen=$(mktemp -d)
"${CC:-cc}" -std=c17 -D_GNU_SOURCE -DFZ_PARQUET_SEEDS -I"$root/src" -o "$pqgen/seeds" \
    "$root/fuzz/fuzz_parquet.c" "$root"/src/parquet/*.c "$root/src/common/buf.c" -lzstd -lz
"$pqgen/seeds" "$pq"
rm -rf "$pqgen"

echo "fuzz-seed: corpora in $root/fuzz/corpus-*/ from $fx"
