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
# assembly (fuzz_asm.c): a 4-byte trace length, the trace, the calls (cut to fit -max_len)
asm_seed() {
    local name=$1 trace=$2 calls=$3 tn=$4 cn=$5 dir=$root/fuzz/corpus-asm
    mkdir -p "$dir"
    { be32 "$tn"; head -c "$tn" "$trace"; head -c "$cn" "$calls"; } >"$dir/seed-$name"
}
asm_seed fixture "$st/test-service.traces.0.protocol" "$st/test-service.calls.0.protocol" 30000 20000
asm_seed fixture-small "$st/test-service.traces.0.protocol" "$st/test-service.calls.0.protocol" 4096 1024
asm_seed v2 "$v2/stream.trace.bin" "$v2/stream.calls.bin" 30000 20000
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
# CBOR raw trace (fuzz/fuzz_cbortrace.c): the fixture and prefixes ending inside the string
# definitions, after all symbols (1426) and inside the first and second records
seed cbortrace orders "$fx/foreign/orders.cbor" 64 1426 1600 2300
# TPTP traces (fuzz/fuzz_tptp_bin.c, fuzz_tptp_xml.c): the fixtures, and prefixes ending in
# the header, inside the first messages and mid-file
seed tptp_bin shop "$fx/foreign/shop.trcbin" 7 12 26 300 4000
seed tptp_bin be "$fx/foreign/shop-be.trcbin" 700
seed tptp_bin extras "$fx/foreign/shop-extras.trcbin" 24 8000 9100
seed tptp_xml shop "$fx/foreign/shop.trcxml" 39 120 2000 8000
# shapes the fixtures lack: ISO-8859-1 strings (encoding message, then "Kr\xf3w"); XML
# escapes, String[] escapes, custom text, <unknown>, skipped elements and a decimal time
# at a frequency that is no power of ten
{
    hex 30 54 42 46 01 00 01 01 0c 00 00 00
    hex 01 00 07 00 00 00 6c 61 74 69 6e 31 00
    hex ec 03 0d 00 00 00 4b 72 f3 77 00 15 cd 5b 07 00 00 00 00
} >"$root/fuzz/corpus-tptp_bin/seed-latin1"
printf '%s' '<?xml version="1.0"?><TRACE><encoding name="latin1"/><frequency ticksPerSecond="3"/>' \
    '<gcRoot type="a&amp;b&#9;c" classIdRef="-7"/><monWait time="-1.333333333" stackDepth="2" ' \
    'stackMethods="a\|b|c\\" stackLines="1|-2"/><custom>x &lt;y&gt;<b>z</b></custom>' \
    '<unknown id="77" size="6"/><other a="1"/></TRACE>' >"$root/fuzz/corpus-tptp_xml/seed-synthetic"

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

# ---- text dumps (cp_dumptext.h): thread dumps, top, GC logs ---------------------------
dd=$fx/dumps
seed td jdk17 "$dd/20231219T061734UTC.td.txt" 1500 6000 30000
seed td jdk17big "$dd/20230804T164402.td.txt" 24000
seed top top "$dd/20231219T061734UTC.top.txt" 400 800 2000
seed gc serial "$dd/20231219T062953UTC.gc.log" 400 3000
# shapes the fixtures lack: a JDK 8 dump with a deadlock report, graph-mode top, G1 and
# JDK 8 GC lines
{
    printf '%s\n' '2024-01-02 03:04:05' 'Full thread dump Java HotSpot(TM) 64-Bit Server VM (25.181-b13 mixed mode):' ''
    printf '%s\n' '"pool "x" w" #12 daemon prio=5 os_prio=0 tid=0x00007f3b44001000 nid=0x2a2e waiting on condition [0x00007f3b2c9fe000]'
    printf '%s\n' '   java.lang.Thread.State: BLOCKED (on object monitor)'
    printf '\tat %s\n\t- %s\n' 'Foo.bar(Foo.java:10)' 'waiting to lock <0x00000000aaaa0001> (a java.lang.Object)'
    printf '\tat %s\n\t- %s\n' 'Foo.baz(Foo.java:20)' 'eliminated <owner is scalar replaced> (a java.lang.Object)'
    printf '\n%s\n\t- %s\n\n' '   Locked ownable synchronizers:' '<0x00000000c23da160> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)'
    printf '%s\n\n' '"GC task thread#0 (ParallelGC)" os_prio=0 tid=0x00007f3b4401e800 nid=0x2a05 runnable '
    printf '%s\n' 'Found one Java-level deadlock:' '"Thread-1":' '  waiting to lock monitor 0x00007f3b2c003f08' ''
    printf '%s\n' 'Found 1 deadlock.' '' 'JNI global references: 1234'
} >"$root/fuzz/corpus-td/seed-jdk8"
{
    printf '%s\n' 'top - 10:11:12 up 3 min,  1 user,  load average: 0.10, 0.20, 0.30'
    printf '%s\n' 'Tasks:   5 total,   1 running,   4 sleeping,   0 stopped,   0 zombie'
    printf '%s\n' '%Cpu(s):  12.5/3.1    16[|||||          ]' 'KiB Mem : 65.2/12268760 [||||||    ]' 'GiB Swap:  0.0/0 [ ]' ''
    printf '%s\n' '  PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND'
    printf '%s\n' '   42 app       rt  -5    8.1t    10g    0.5g R 100.0  80.0 123:45.67 my thread' '   43 a 20 0 1 1 1 Z 0.0 0.0 12,34 b'
} >"$root/fuzz/corpus-top/seed-graph"
{
    printf '%s\n' '[0.005s][info][gc] Using G1'
    printf '%s\n' '[2024-01-02T03:04:05.678+0100][12.345s][info][gc,start    ] GC(5) Pause Young (Normal) (G1 Evacuation Pause)'
    printf '%s\n' '[2024-01-02T03:04:05.681+0100][12.348s][info][gc          ] GC(5) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 3.456ms'
    printf '%s\n' '[2024-01-02T03:04:06.100+01:00][13.1s][info ][gc] GC(6) Pause Remark 45M->45M(256M) 1.234ms'
    printf '%s\n' '[1704161047000ms][14000ms][gc] GC(7) Pause Full (System.gc()) 1G->512K(2G) 20.5ms'
} >"$root/fuzz/corpus-gc/seed-g1"
printf '%s\n' '2023-12-19T05:29:51.464+0000: 7252.712: [GC (Allocation Failure) [PSYoungGen: 153600K->10748K(179200K)] 153600K->10764K(588800K), 0.0143560 secs]' >"$root/fuzz/corpus-gc/seed-jdk8"

# ---- diagnostic files (cp_dumpfmt.h): paths and names, heap-dump zips, pprof profiles --
dp=$root/fuzz/corpus-dump_path
mkdir -p "$dp"
printf '%s' 'shop/2024/07/31/23/58/00/orders-5cbcd847d-l2t7t_1719318147399/20240731T235800.td.txt' >"$dp/seed-td"
printf '%s' 'shop/2024/07/31/22/59/35/orders-5cbcd847d-l2t7t_1719318147399/20240731T225935.hprof.zip' >"$dp/seed-heap"
printf '%s' 'shop/2024/08/01/10/00/07/orders-5cbcd847d-l2t7t_1719318147399/gc.log' >"$dp/seed-gc"
printf '%s' 'ns%2Dx/2024/02/29/00/00/00/test-service-1-5cbcd847d-l2t7t_1719318147399/gc.log.3' >"$dp/seed-escapes"
printf '%s' 'a/2023/12/19/06/17/34/db-0/20231219T061734UTC.go-alloc.pprof' >"$dp/seed-pprof"
printf '%s' 'hs_err_pid12.log' >"$dp/seed-name"
seed zip fixture "$dd/test-service.heap.hprof.zip"
# more zips (stored, deflated, data descriptors, ZIP64, comment, three entries, empty):
# fuzz/fuzz_zip.c compiled with -DFZ_ZIP_SEEDS writes them; it needs cp_buf and zlib.
zipgen=$(mktemp -d)
"${CC:-cc}" -std=c17 -D_GNU_SOURCE -DFZ_ZIP_SEEDS -I"$root/src" -o "$zipgen/seeds" \
    "$root/fuzz/fuzz_zip.c" "$root/src/common/buf.c" -lz
"$zipgen/seeds" "$root/fuzz/corpus-zip"
rm -rf "$zipgen"
for p in go-alloc go-heap go-goroutine go-profile; do seed pprof "$p" "$dd/$p.pprof"; done
# the protobuf inside (raw input is parsed too): mutations then hit the fields, not the gzip
for p in go-goroutine go-profile; do gzip -dc "$dd/$p.pprof" >"$root/fuzz/corpus-pprof/seed-$p-raw"; done

# ---- sampled stacks as trees (cp_stacktree.h; fuzz/fuzz_stacktree.c) ------------------------
# byte 0 the source (0 a thread dump, 2 one with its idle threads, 1 a pprof profile), byte 1
# the node budget (0: the default), byte 2 the depth and frame-bytes budgets (0: defaults)
sk=$root/fuzz/corpus-stacktree
mkdir -p "$sk"
{ hex 02 00 00; head -c 30000 "$dd/20231219T061734UTC.td.txt"; } >"$sk/seed-td-idle"
{ hex 00 20 00; head -c 30000 "$dd/20231219T061734UTC.td.txt"; } >"$sk/seed-td-budget"
{ hex 02 00 34; head -c 6000 "$dd/20231219T061734UTC.td.txt"; } >"$sk/seed-td-cut"
for p in go-goroutine go-profile; do { hex 01 00 00; gzip -dc "$dd/$p.pprof"; } >"$sk/seed-$p"; done
{ hex 01 08 00; gzip -dc "$dd/go-goroutine.pprof"; } >"$sk/seed-go-goroutine-budget"

# heap dumps (fuzz/fuzz_hprof.c): HPROF files written by tests/util/hprof_gen.c (4- and 8-byte
# ids, several segments or one, a tiny one); fuzz_hprof.c compiled with -DFZ_HPROF_SEEDS writes
# them; it needs the generator and cp_buf
hpgen=$(mktemp -d)
mkdir -p "$root/fuzz/corpus-hprof"
"${CC:-cc}" -std=c17 -D_GNU_SOURCE -DFZ_HPROF_SEEDS -I"$root/src" -I"$root/tests/util" -o "$hpgen/seeds" \
    "$root/fuzz/fuzz_hprof.c" "$root/tests/util/hprof_gen.c" "$root/src/common/buf.c"
"$hpgen/seeds" "$root/fuzz/corpus-hprof"
rm -rf "$hpgen"

# ---- multipart (cp_multipart.h) ------------------------------------------------------------
# byte 0 picks the Content-Type (0 "bb", 1 curl's boundary, 2 Go's, 3 quoted with
# specials, 4 "-", 5 taken from the input; +0x80 mixed case), byte 1 seeds the slicing,
# byte 2 picks the callback that aborts; the rest is the body (fuzz/fuzz_multipart.c).
mp=$root/fuzz/corpus-multipart
mkdir -p "$mp"
# mpart VARIANT BOUNDARY FILENAME: a one-file upload form around the heap-dump fixture
mpart() {
    hex "$1" 07 03
    printf -- '--%s\r\nContent-Disposition: form-data; name="file"; filename="%s"\r\n' "$2" "$3"
    printf 'Content-Type: application/octet-stream\r\n\r\n'
    cat "$dd/test-service.heap.hprof.zip"
    printf -- '\r\n--%s--\r\n' "$2"
}
mpart 01 ------------------------513596b516824120 x.hprof.zip >"$mp/seed-curl"
mpart 02 9f1c2d3e4a5b60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7 20240731T225935.hprof.zip >"$mp/seed-go"
{
    hex 83 20 02
    printf '%s' $'pre\r\n--xYz\'()+_,-./:=? \t\r\n' \
        $'content-disposition: form-data; name=a; filename*=UTF-8\'\'%E2%82%AC.zip\r\n\r\n' \
        $'\r\n--xYz\'()+_,-./:=?X\r\n--xYz\'()+_,-./:=?\r\nContent-Type: text/plain\r\n\r\n' \
        $'x\r\n--xYz\'()+_,-./:=?--\r\nepilogue'
} >"$mp/seed-quoted"
{ hex 04 01 04; printf '%s' $'---\r\n\r\n-\r\n---\r\nContent-Type: x\r\n\r\n--\r\n-----\r\n'; } >"$mp/seed-dash"
{ hex 05 09 01 07; printf '%s' $'01234567--QRSTUVWX\r\n\r\nhello\r\n--QRSTUVWX--'; } >"$mp/seed-own" # boundary QRSTUVWX
{ # one part over the CP_MP_MAX_PARTS limit (1000)
    hex 00 05 00
    for ((i = 0; i <= 1000; i++)); do printf -- '--bb\r\n\r\n%d\r\n' "$i"; done
    printf -- '--bb--\r\n'
} >"$mp/seed-1001-parts"

echo "fuzz-seed: corpora in $root/fuzz/corpus-*/ from $fx"
