/* dumpfmt_test.c -- diagnostic file metadata (cp_dumpfmt.h, dumps-http.md §3, §5, §8.4,
 * §8.5, §10): upload path rules (every rule of §3, the §9 item 5 cases, the spec's
 * example URLs), file-name classification (every row of the file-name table), the pod
 * string (§5 examples), zip central directories (the fixture, hand-built zips made with
 * zlib: stored, deflated, data descriptor, ZIP64, comments, damage), pprof profiles (the
 * §10 facts of the four fixtures, flat/cum totals checked against sums computed here,
 * hand-built protobufs packed and unpacked, errors, gzip bombs) and http_pprof_json. */
#include "testutil.h"

#include "http/dumpjson.h"
#include "model/cp_dumpfmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- kinds ------------------------------------------------------------------------------- */

static void test_kinds(void **state)
{
    (void)state;
    static const char *names[] = {NULL, "td", "top", "gc", "heap", "alloc", "pprof_heap", "goroutine", "profile", "other"};
    for (int k = CP_DUMP_TD; k <= CP_DUMP_KIND_MAX; k++) {
        assert_string_equal(cp_dump_kind_name((cp_dump_kind)k), names[k]);
        cp_dump_kind got = 0;
        assert_int_equal(cp_dump_kind_parse(names[k], strlen(names[k]), &got), CP_OK);
        assert_int_equal(got, k);
    }
    assert_null(cp_dump_kind_name((cp_dump_kind)0));
    assert_null(cp_dump_kind_name((cp_dump_kind)(CP_DUMP_KIND_MAX + 1)));
    cp_dump_kind k;
    assert_int_equal(cp_dump_kind_parse("TD", 2, &k), CP_EINVAL);
    assert_int_equal(cp_dump_kind_parse("tdx", 3, &k), CP_EINVAL);
    assert_int_equal(cp_dump_kind_parse("tdx", 2, &k), CP_OK); /* explicit length */
    assert_int_equal(k, CP_DUMP_TD);
    assert_int_equal(cp_dump_kind_parse("", 0, &k), CP_EINVAL);
    assert_int_equal(cp_dump_kind_parse("pprof_alloc", 11, &k), CP_EINVAL);
    assert_true(cp_dump_kind_is_pprof(CP_DUMP_ALLOC) && cp_dump_kind_is_pprof(CP_DUMP_PPROF_HEAP) &&
                cp_dump_kind_is_pprof(CP_DUMP_GOROUTINE) && cp_dump_kind_is_pprof(CP_DUMP_PROFILE));
    assert_false(cp_dump_kind_is_pprof(CP_DUMP_HEAP) || cp_dump_kind_is_pprof(CP_DUMP_TD) ||
                 cp_dump_kind_is_pprof(CP_DUMP_OTHER) || cp_dump_kind_is_pprof(CP_DUMP_GC));
}

/* ---- upload path ----------------------------------------------------------------------------- */

static cp_dump_path expect_path(const char *raw, const char *ns, const char *pod, const char *file, int64_t ms)
{
    cp_dump_path p;
    char err[256] = "untouched";
    int st = cp_dump_path_parse(raw, strlen(raw), &p, err, sizeof err);
    if (st != CP_OK) fail_msg("\"%s\": %d (%s)", raw, st, err);
    assert_string_equal(p.ns, ns);
    assert_string_equal(p.pod, pod);
    assert_string_equal(p.file, file);
    if (ms >= 0 && p.dir_ms != ms) fail_msg("\"%s\": dir_ms %" PRId64 ", expected %" PRId64, raw, p.dir_ms, ms);
    return p;
}

/* Rejected with CP_EINVAL and a reason containing `why`. */
static void expect_bad_path_n(const char *raw, size_t n, const char *why)
{
    cp_dump_path p;
    char err[256] = "";
    int st = cp_dump_path_parse(raw, n, &p, err, sizeof err);
    if (st != CP_EINVAL) fail_msg("\"%.*s\" gave %d, expected CP_EINVAL", (int)n, raw, st);
    if (!strstr(err, why)) fail_msg("\"%.*s\": reason \"%s\" does not mention \"%s\"", (int)n, raw, err, why);
}
#define BAD_PATH(raw, why) expect_bad_path_n((raw), strlen(raw), (why))

static void test_path_spec_examples(void **state)
{
    (void)state;
    const char *pod = "orders-5cbcd847d-l2t7t_1719318147399";
    expect_path("shop/2024/07/31/23/58/00/orders-5cbcd847d-l2t7t_1719318147399/20240731T235800.td.txt", "shop", pod,
                "20240731T235800.td.txt", 1722470280000);
    expect_path("shop/2024/07/31/22/59/35/orders-5cbcd847d-l2t7t_1719318147399/20240731T225935.hprof.zip", "shop", pod,
                "20240731T225935.hprof.zip", 1722466775000);
    expect_path("shop/2024/08/01/10/00/07/orders-5cbcd847d-l2t7t_1719318147399/gc.log", "shop", pod, "gc.log",
                1722506407000);
    /* the range ends */
    expect_path("n/1970/01/01/00/00/00/p/f", "n", "p", "f", 0);
    expect_path("n/9999/12/31/23/59/59/p/f", "n", "p", "f", 253402300799000);
}

static void test_path_segments(void **state)
{
    (void)state;
    /* §9 item 5: 8 or 10 segments */
    BAD_PATH("shop/2024/07/31/23/58/00/pod", "8 segments, expected 9");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/x/f.td.txt", "10 segments, expected 9");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/f.td.txt/", "10 segments"); /* trailing slash */
    BAD_PATH("/shop/2024/07/31/23/58/00/pod/f.td.txt", "10 segments"); /* leading slash */
    BAD_PATH("", "1 segments");
    BAD_PATH("shop/2024/07/31/23/58/00//pod/f", "10 segments");
    /* the length is explicit: bytes after n do not count */
    const char *longer = "shop/2024/07/31/23/58/00/pod/f.td.txt/extra";
    cp_dump_path p;
    char err[128];
    assert_int_equal(cp_dump_path_parse(longer, strlen(longer) - 6, &p, err, sizeof err), CP_OK);
    assert_string_equal(p.file, "f.td.txt");
}

static void test_path_dates(void **state)
{
    (void)state;
    BAD_PATH("shop/2024/13/31/23/58/00/pod/f", "month 13 is out of range");
    BAD_PATH("shop/2024/00/31/23/58/00/pod/f", "month 0 is out of range");
    BAD_PATH("shop/2024/07/32/23/58/00/pod/f", "day 32 is out of range");
    BAD_PATH("shop/2024/07/00/23/58/00/pod/f", "day 0 is out of range");
    BAD_PATH("shop/2024/07/31/24/58/00/pod/f", "hour 24 is out of range");
    BAD_PATH("shop/2024/07/31/23/60/00/pod/f", "minute 60 is out of range");
    BAD_PATH("shop/2024/07/31/23/58/60/pod/f", "second 60 is out of range");
    BAD_PATH("shop/1969/12/31/23/59/59/pod/f", "year 1969 is out of range");
    /* zero-padded to the width, digits only */
    BAD_PATH("shop/2024/7/31/23/58/00/pod/f", "month \"7\" is not 2 digits");
    BAD_PATH("shop/2024/007/31/23/58/00/pod/f", "month \"007\" is not 2 digits");
    BAD_PATH("shop/24/07/31/23/58/00/pod/f", "year \"24\" is not 4 digits");
    BAD_PATH("shop/02024/07/31/23/58/00/pod/f", "year");
    BAD_PATH("shop/2O24/07/31/23/58/00/pod/f", "year \"2O24\" is not 4 digits");
    BAD_PATH("shop/2024/07/31/+1/58/00/pod/f", "hour");
    BAD_PATH("shop/2024/07/31/ 1/58/00/pod/f", "hour");
    BAD_PATH("shop/2024/07/31/23/58/-0/pod/f", "second");
    BAD_PATH("shop//07/31/23/58/00/pod/f", "year");
    BAD_PATH("shop/2024/%0A7/31/23/58/00/pod/f", "month \"?7\" is not 2 digits"); /* reasons echo printable bytes only */
    BAD_PATH("shop/20240000000000000000/07/31/23/58/00/pod/f", "year \"2024000000000000...\" is not 4 digits");
    /* real calendar dates, leap years included */
    expect_path("shop/2024/02/29/12/00/00/pod/f", "shop", "pod", "f", 1709208000000);
    BAD_PATH("shop/2023/02/29/12/00/00/pod/f", "day 29 is not a day of 2023-02");
    BAD_PATH("shop/2023/02/30/12/00/00/pod/f", "day 30 is not a day of 2023-02");
    expect_path("shop/2000/02/29/00/00/00/pod/f", "shop", "pod", "f", 951782400000); /* divisible by 400 */
    BAD_PATH("shop/2100/02/29/00/00/00/pod/f", "day 29 is not a day of 2100-02");    /* by 100 only */
    BAD_PATH("shop/2024/04/31/00/00/00/pod/f", "day 31 is not a day of 2024-04");
    expect_path("shop/2024/12/31/00/00/00/pod/f", "shop", "pod", "f", 1735603200000);
    /* date parts are percent-decoded too */
    expect_path("shop/%32024/07/31/23/58/00/pod/f", "shop", "pod", "f", 1722470280000);
}

static void test_path_names(void **state)
{
    (void)state;
    /* empty, ".", ".." */
    BAD_PATH("shop/2024/07/31/23/58/00//f.td.txt", "pod is empty");
    BAD_PATH("/2024/07/31/23/58/00/pod/f.td.txt", "namespace is empty");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/", "file is empty");
    BAD_PATH("shop/2024/07/31/23/58/00/../f.td.txt", "pod is \"..\"");
    BAD_PATH("../2024/07/31/23/58/00/pod/f.td.txt", "namespace is \"..\"");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/..", "file is \"..\"");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/.", "file is \".\"");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/%2e%2E", "file is \"..\"");
    expect_path("shop/2024/07/31/23/58/00/pod/...", "shop", "pod", "...", -1);
    expect_path("shop/2024/07/31/23/58/00/.pod/..f", "shop", ".pod", "..f", -1);
    /* separators and control characters, raw or escaped */
    BAD_PATH("shop/2024/07/31/23/58/00/po\\d/f", "pod contains '\\'");
    BAD_PATH("shop/2024/07/31/23/58/00/po%5Cd/f", "pod contains '\\'");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/a%2Fb", "file contains '/'");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/a%2fb", "file contains '/'");
    BAD_PATH("sh%2Fop/2024/07/31/23/58/00/pod/f", "namespace contains '/'");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/a%00b", "file contains control character 0x00");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/a%0Ab", "control character 0x0a");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/a%7fb", "control character 0x7f");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/a\tb", "control character 0x09");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/a\x1f", "control character 0x1f");
    expect_bad_path_n("shop/2024/07/31/23/58/00/pod/a\0b", 32, "file contains control character 0x00");
    /* percent escapes decode once, either case */
    expect_path("shop/2024/07/31/23/58/00/orders%2Dx/f%2Etd%2etxt", "shop", "orders-x", "f.td.txt", -1);
    expect_path("shop/2024/07/31/23/58/00/pod/%2541", "shop", "pod", "%41", -1); /* once, not twice */
    expect_path("shop/2024/07/31/23/58/00/p%C3%A9d/f", "shop", "p\xC3\xA9" "d", "f", -1);
    expect_path("sh op/2024/07/31/23/58/00/pod+1/f", "sh op", "pod+1", "f", -1); /* '+' is not a space */
    /* bad escapes */
    BAD_PATH("shop/2024/07/31/23/58/00/pod/f%", "file has a bad percent escape at byte 1");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/f%4", "file has a bad percent escape");
    BAD_PATH("shop/2024/07/31/23/58/00/pod/f%zz", "file has a bad percent escape");
    BAD_PATH("shop/2024/07/31/23/58/00/p%G1/f", "pod has a bad percent escape");
    BAD_PATH("shop/2024/07/31/23/58/00/p%/f", "pod has a bad percent escape");
}

static void test_path_lengths(void **state)
{
    (void)state;
    char raw[2048], name[1024];
    /* 253 bytes is the most, 254 is rejected */
    memset(name, 'a', 253);
    name[253] = 0;
    snprintf(raw, sizeof raw, "shop/2024/07/31/23/58/00/%s/f", name);
    cp_dump_path p = expect_path(raw, "shop", name, "f", -1);
    assert_int_equal(strlen(p.pod), 253);
    name[253] = 'a';
    name[254] = 0;
    snprintf(raw, sizeof raw, "shop/2024/07/31/23/58/00/%s/f", name);
    BAD_PATH(raw, "pod is longer than 253 bytes");
    snprintf(raw, sizeof raw, "%s/2024/07/31/23/58/00/p/f", name);
    BAD_PATH(raw, "namespace is longer than 253 bytes");
    snprintf(raw, sizeof raw, "n/2024/07/31/23/58/00/p/%s", name);
    BAD_PATH(raw, "file is longer than 253 bytes");
    /* the limit is on decoded bytes: 253 escaped bytes (759 raw) pass, 254 do not */
    size_t k = 0;
    for (int i = 0; i < 253; i++) k += (size_t)snprintf(name + k, sizeof name - k, "%%%02X", 'b');
    snprintf(raw, sizeof raw, "n/2024/07/31/23/58/00/p/%s", name);
    char bs[254];
    memset(bs, 'b', 253);
    bs[253] = 0;
    expect_path(raw, "n", "p", bs, -1);
    snprintf(raw, sizeof raw, "n/2024/07/31/23/58/00/p/%s%%62", name);
    BAD_PATH(raw, "file is longer than 253 bytes");
}

/* ---- file names ---------------------------------------------------------------------------- */

static void expect_name(const char *file, cp_dump_kind kind, int64_t stamp, int rotation, int from_name)
{
    cp_dump_name n;
    char err[256] = "untouched";
    int st = cp_dump_name_classify(file, &n, err, sizeof err);
    if (st != CP_OK) fail_msg("\"%s\": %d (%s)", file, st, err);
    if (n.kind != kind) fail_msg("\"%s\": kind %s, expected %s", file, cp_dump_kind_name(n.kind), cp_dump_kind_name(kind));
    if (n.stamp_ms != stamp) fail_msg("\"%s\": stamp %" PRId64 ", expected %" PRId64, file, n.stamp_ms, stamp);
    if (n.gc_rotation != rotation) fail_msg("\"%s\": rotation %d, expected %d", file, n.gc_rotation, rotation);
    if (n.pprof_from_name != from_name) fail_msg("\"%s\": pprof_from_name %d", file, n.pprof_from_name);
    assert_string_equal(err, "");
}

static void expect_bad_name(const char *file)
{
    cp_dump_name n;
    char err[256] = "";
    if (cp_dump_name_classify(file, &n, err, sizeof err) != CP_EINVAL) fail_msg("\"%s\" accepted", file);
    if (!strstr(err, "unknown file name")) fail_msg("\"%s\": reason \"%s\"", file, err);
}

static void test_names_table(void **state)
{
    (void)state;
    const int64_t s0617 = 1702966654000, s0629 = 1702967393000, s2358 = 1722470280000, s2259 = 1722466775000;
    /* one line per row of the §3 file-name table, fixture names first */
    expect_name("20231219T061734UTC.td.txt", CP_DUMP_TD, s0617, -1, 0);
    expect_name("20240731T235800.td.txt", CP_DUMP_TD, s2358, -1, 0);
    expect_name("20231219T061734UTC.top.txt", CP_DUMP_TOP, s0617, -1, 0);
    expect_name("20240731T225935.hprof.zip", CP_DUMP_HEAP, s2259, -1, 0);
    expect_name("test-service.heap.hprof.zip", CP_DUMP_HEAP, -1, -1, 0);
    expect_name("gc.log", CP_DUMP_GC, -1, -1, 0);
    expect_name("gc.log.3", CP_DUMP_GC, -1, 3, 0);
    expect_name("gc.log.0", CP_DUMP_GC, -1, 0, 0);
    expect_name("gc.log.123456789", CP_DUMP_GC, -1, 123456789, 0);
    expect_name("20231219T062953UTC.gc.log", CP_DUMP_GC, s0629, -1, 0);
    expect_name("20240731T235800.alloc.pprof", CP_DUMP_ALLOC, s2358, -1, 1);
    expect_name("20240731T235800.heap.pprof", CP_DUMP_PPROF_HEAP, s2358, -1, 1);
    expect_name("20240731T235800.goroutine.pprof", CP_DUMP_GOROUTINE, s2358, -1, 1);
    expect_name("20240731T235800.profile.pprof", CP_DUMP_PROFILE, s2358, -1, 1);
    expect_name("go-alloc.pprof", CP_DUMP_ALLOC, -1, -1, 1);
    expect_name("go-heap.pprof", CP_DUMP_PPROF_HEAP, -1, -1, 1);
    expect_name("go-goroutine.pprof", CP_DUMP_GOROUTINE, -1, -1, 1);
    expect_name("go-profile.pprof", CP_DUMP_PROFILE, -1, -1, 1);
    expect_name("svc_cpu.pprof", CP_DUMP_PROFILE, -1, -1, 1);
    expect_name("cpu.pprof", CP_DUMP_PROFILE, -1, -1, 1);
    /* the name does not say: guessed from the content later */
    expect_name("mystery.pprof", CP_DUMP_PROFILE, -1, -1, 0);
    expect_name("20240731T235800.pprof", CP_DUMP_PROFILE, s2358, -1, 0);
    expect_name("x.Heap.pprof", CP_DUMP_PROFILE, -1, -1, 0);
    expect_name("heap-x.pprof", CP_DUMP_PROFILE, -1, -1, 0); /* the last token counts */
    /* other crash artefacts */
    expect_name("hs_err_pid12.log", CP_DUMP_OTHER, -1, -1, 0);
    expect_name("core", CP_DUMP_OTHER, -1, -1, 0);
    expect_name("core.4711", CP_DUMP_OTHER, -1, -1, 0);
    expect_name("app.log", CP_DUMP_OTHER, -1, -1, 0);
    expect_name("notes.txt", CP_DUMP_OTHER, -1, -1, 0);
    expect_name("java_pid1.hprof", CP_DUMP_OTHER, -1, -1, 0);
    expect_name("20240731T225935.hprof", CP_DUMP_OTHER, s2259, -1, 0);
    expect_name("recording.jfr", CP_DUMP_OTHER, -1, -1, 0);
    expect_name("bundle.zip", CP_DUMP_OTHER, -1, -1, 0);
    expect_name("gc.log.x.log", CP_DUMP_OTHER, -1, -1, 0);
    /* unknown names are rejected with a reason */
    expect_bad_name("readme");
    expect_bad_name("dump.bin");
    expect_bad_name("core.x");
    expect_bad_name("core.");
    expect_bad_name("gc.log.");
    expect_bad_name("gc.log.x");
    expect_bad_name("gc.log.1234567890");
    expect_bad_name("x.TD.TXT"); /* extensions are case-sensitive */
    expect_bad_name("profile.pprof.gz");
    expect_bad_name("x.hprof.zip.part");
    expect_bad_name("");
}

static void test_names_stamps(void **state)
{
    (void)state;
    expect_name("20240229T120000.td.txt", CP_DUMP_TD, 1709208000000, -1, 0);
    expect_name("20240229T120000UTC.td.txt", CP_DUMP_TD, 1709208000000, -1, 0);
    expect_name("20240229T120000-extra.td.txt", CP_DUMP_TD, 1709208000000, -1, 0);
    expect_name("20230229T120000.td.txt", CP_DUMP_TD, -1, -1, 0);  /* not a date: no stamp */
    expect_name("20231319T061734.td.txt", CP_DUMP_TD, -1, -1, 0);  /* month 13 */
    expect_name("20231219T241734.td.txt", CP_DUMP_TD, -1, -1, 0);  /* hour 24 */
    expect_name("20231219T0617345.td.txt", CP_DUMP_TD, -1, -1, 0); /* not a whole token */
    expect_name("20231219T061734Z.td.txt", CP_DUMP_TD, -1, -1, 0);
    expect_name("20231219t061734.td.txt", CP_DUMP_TD, -1, -1, 0);
    expect_name("x20231219T061734.td.txt", CP_DUMP_TD, -1, -1, 0); /* at the start only */
    expect_name("2023121T061734.td.txt", CP_DUMP_TD, -1, -1, 0);
    expect_name("19700101T000000.td.txt", CP_DUMP_TD, 0, -1, 0);
}

/* ---- pod string ------------------------------------------------------------------------------ */

static void expect_pod(const char *pod, const char *base, const char *service, int64_t restart)
{
    char b[CP_DUMP_MAX_NAME + 1], s[CP_DUMP_MAX_NAME + 1];
    int64_t r = -5;
    cp_dump_pod_split(pod, b, sizeof b, s, sizeof s, &r);
    if (strcmp(b, base) || strcmp(s, service) || r != restart)
        fail_msg("\"%s\": base \"%s\" service \"%s\" restart %" PRId64 ", expected \"%s\" \"%s\" %" PRId64, pod, b, s,
                 r, base, service, restart);
}

static void test_pod_split(void **state)
{
    (void)state;
    /* §5 examples; the restart is 2024-06-25 12:22:27.399 UTC */
    expect_pod("test-service-1-5cbcd847d-l2t7t_1719318147399", "test-service-1-5cbcd847d-l2t7t", "test-service-1",
               1719318147399);
    expect_pod("db-0", "db-0", "db", 0);
    expect_pod("orders-x", "orders-x", "orders", 0);
    expect_pod("orders-x_1719318147399", "orders-x", "orders", 1719318147399); /* §9 item 7 */
    expect_pod("orders-5cbcd847d-l2t7t_1719318147399", "orders-5cbcd847d-l2t7t", "orders", 1719318147399);
    expect_pod("orders-5cbcd847d-l2t7t", "orders-5cbcd847d-l2t7t", "orders", 0); /* bare hostname */
    expect_pod("standalone", "standalone", "standalone", 0);
    expect_pod("standalone_42", "standalone", "standalone", 42);
    /* the suffix: 1 to 13 digits after the last '_' */
    expect_pod("pod-a_12345678901234", "pod-a_12345678901234", "pod", 0);
    expect_pod("pod-a_9999999999999", "pod-a", "pod", 9999999999999);
    expect_pod("pod-a_", "pod-a_", "pod", 0);
    expect_pod("pod-a_12x", "pod-a_12x", "pod", 0);
    expect_pod("a_b-c_17", "a_b-c", "a_b", 17);
    /* the hash segment: 6 to 10 lower-case hex digits */
    expect_pod("web-123456-x", "web-123456-x", "web", 0);
    expect_pod("web-abcdef0123-x", "web-abcdef0123-x", "web", 0);
    expect_pod("web-12345-x", "web-12345-x", "web-12345", 0);
    expect_pod("web-abcdef01234-x", "web-abcdef01234-x", "web-abcdef01234", 0);
    expect_pod("web-ABCDEF-x", "web-ABCDEF-x", "web-ABCDEF", 0);
    expect_pod("web-5cbcd84g-x", "web-5cbcd84g-x", "web-5cbcd84g", 0);
    expect_pod("a-b-c", "a-b-c", "a-b", 0);
    /* a drop that would leave nothing keeps the name */
    expect_pod("-x", "-x", "-x", 0);
    expect_pod("-5cbcd847d-x", "-5cbcd847d-x", "-5cbcd847d", 0);
    expect_pod("_123", "", "", 123);
    expect_pod("", "", "", 0);

    /* truncated to the caps, NULL outputs allowed */
    char b[5], s[3];
    int64_t r;
    cp_dump_pod_split("test-service-1-5cbcd847d-l2t7t_1719318147399", b, sizeof b, s, sizeof s, &r);
    assert_string_equal(b, "test");
    assert_string_equal(s, "te");
    assert_true(r == 1719318147399);
    cp_dump_pod_split("db-0_7", NULL, 0, NULL, 0, &r);
    assert_true(r == 7);
    cp_dump_pod_split("db-0_7", b, sizeof b, s, sizeof s, NULL);
    assert_string_equal(b, "db-0");
    assert_string_equal(s, "db");
}

/* ---- zip ----------------------------------------------------------------------------------- */

typedef struct memfile {
    const uint8_t *p;       /* n bytes at file offset base; the rest of the file reads as zeros */
    size_t n;
    uint64_t base;
    uint64_t size;
    uint64_t min_off;       /* lowest offset read */
    unsigned reads;
    int fail;               /* return CP_EIO on every read */
} memfile;

static int mem_pread(void *ud, void *dst, size_t n, uint64_t off)
{
    memfile *m = ud;
    m->reads++;
    if (m->fail) return CP_EIO;
    assert_true(off <= m->size && n <= m->size - off); /* the probe never reads past the end */
    if (off < m->min_off) m->min_off = off;
    uint8_t *d = dst;
    for (size_t i = 0; i < n; i++) {
        uint64_t o = off + i;
        d[i] = o >= m->base && o - m->base < m->n ? m->p[o - m->base] : 0;
    }
    return CP_OK;
}

static int probe(const uint8_t *p, size_t n, cp_zip_info *zi, char *err, size_t errlen, memfile *mf)
{
    memfile local;
    if (!mf) mf = &local;
    *mf = (memfile){.p = p, .size = n, .n = n, .min_off = UINT64_MAX};
    return cp_zip_probe(mem_pread, mf, n, zi, err, errlen);
}

static void put16(cp_buf *b, uint16_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    cp_buf_append(b, x, 2);
}
static void put32(cp_buf *b, uint32_t v)
{
    put16(b, (uint16_t)v);
    put16(b, (uint16_t)(v >> 16));
}
static void put64(cp_buf *b, uint64_t v)
{
    put32(b, (uint32_t)v);
    put32(b, (uint32_t)(v >> 32));
}

/* One entry of a zip built with zlib the way streaming writers lay it out. */
typedef struct zent {
    const char *name;
    const void *data;
    size_t len;
    int method;             /* 0 stored, 8 deflate */
    int descriptor;         /* sizes and CRC in a data descriptor after the data */
    int zip64;              /* sizes and offset as ZIP64 extra fields */
    uint64_t claim_usize;   /* non-zero: the uncompressed size the central directory says */
} zent;

static void deflate_raw(const void *p, size_t n, cp_buf *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t bound = deflateBound(&z, (uLong)n);
    cp_buf_reserve(out, bound);
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)n;
    z.next_out = out->data + out->len;
    z.avail_out = (uInt)bound;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    out->len += bound - z.avail_out;
    deflateEnd(&z);
}

/* Writes the entries, the central directory, a ZIP64 end record + locator when zip64_end,
 * and the end record with the comment. */
static void build_zip(cp_buf *z, const zent *e, size_t n, int zip64_end, const char *comment)
{
    cp_buf_init(z);
    uint64_t offs[8], csizes[8];
    uint32_t crcs[8];
    assert_true(n <= 8);
    for (size_t i = 0; i < n; i++) {
        cp_buf data;
        cp_buf_init(&data);
        if (e[i].method == 8) deflate_raw(e[i].data, e[i].len, &data);
        else cp_buf_append(&data, e[i].data, e[i].len);
        crcs[i] = (uint32_t)crc32(0, e[i].data, (uInt)e[i].len);
        csizes[i] = data.len;
        offs[i] = z->len;
        size_t nl = strlen(e[i].name);
        put32(z, 0x04034b50);
        put16(z, e[i].zip64 ? 45 : 20);
        put16(z, e[i].descriptor ? 8 : 0);
        put16(z, (uint16_t)e[i].method);
        put16(z, 0x5bd3);
        put16(z, 0x571b);
        put32(z, e[i].descriptor ? 0 : crcs[i]);
        put32(z, e[i].zip64 ? 0xFFFFFFFFu : e[i].descriptor ? 0 : (uint32_t)data.len);
        put32(z, e[i].zip64 ? 0xFFFFFFFFu : e[i].descriptor ? 0 : (uint32_t)e[i].len);
        put16(z, (uint16_t)nl);
        put16(z, e[i].zip64 ? 20 : 0);
        cp_buf_append(z, e[i].name, nl);
        if (e[i].zip64) {
            put16(z, 1);
            put16(z, 16);
            put64(z, e[i].descriptor ? 0 : e[i].len);
            put64(z, e[i].descriptor ? 0 : data.len);
        }
        cp_buf_append(z, data.data, data.len);
        if (e[i].descriptor) {
            put32(z, 0x08074b50);
            put32(z, crcs[i]);
            if (e[i].zip64) {
                put64(z, data.len);
                put64(z, e[i].len);
            } else {
                put32(z, (uint32_t)data.len);
                put32(z, (uint32_t)e[i].len);
            }
        }
        cp_buf_free(&data);
    }
    uint64_t cd_off = z->len;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(e[i].name);
        uint64_t usize = e[i].claim_usize ? e[i].claim_usize : e[i].len;
        put32(z, 0x02014b50);
        put16(z, 0x031e);
        put16(z, e[i].zip64 ? 45 : 20);
        put16(z, e[i].descriptor ? 8 : 0);
        put16(z, (uint16_t)e[i].method);
        put16(z, 0x5bd3);
        put16(z, 0x571b);
        put32(z, crcs[i]);
        put32(z, e[i].zip64 ? 0xFFFFFFFFu : (uint32_t)csizes[i]);
        put32(z, e[i].zip64 ? 0xFFFFFFFFu : (uint32_t)usize);
        put16(z, (uint16_t)nl);
        put16(z, e[i].zip64 ? 4 + 24 + 9 : 9); /* ZIP64 extra, then an extended timestamp */
        put16(z, 0);
        put16(z, 0);
        put16(z, 0);
        put32(z, 0);
        put32(z, e[i].zip64 ? 0xFFFFFFFFu : (uint32_t)offs[i]);
        cp_buf_append(z, e[i].name, nl);
        if (e[i].zip64) {
            put16(z, 1);
            put16(z, 24);
            put64(z, usize);
            put64(z, csizes[i]);
            put64(z, offs[i]);
        }
        put16(z, 0x5455);
        put16(z, 5);
        cp_buf_putc(z, 1);
        put32(z, 1703000000);
    }
    uint64_t cd_size = z->len - cd_off;
    if (zip64_end) {
        uint64_t rec = z->len;
        put32(z, 0x06064b50);
        put64(z, 44);
        put16(z, 45);
        put16(z, 45);
        put32(z, 0);
        put32(z, 0);
        put64(z, n);
        put64(z, n);
        put64(z, cd_size);
        put64(z, cd_off);
        put32(z, 0x07064b50);
        put32(z, 0);
        put64(z, rec);
        put32(z, 1);
    }
    size_t cl = comment ? strlen(comment) : 0;
    put32(z, 0x06054b50);
    put16(z, 0);
    put16(z, 0);
    put16(z, zip64_end ? 0xFFFF : (uint16_t)n);
    put16(z, zip64_end ? 0xFFFF : (uint16_t)n);
    put32(z, zip64_end ? 0xFFFFFFFFu : (uint32_t)cd_size);
    put32(z, zip64_end ? 0xFFFFFFFFu : (uint32_t)cd_off);
    put16(z, (uint16_t)cl);
    cp_buf_append(z, comment, cl);
}

static void expect_zip(const cp_buf *z, uint64_t entries, const char *name, uint64_t size, uint64_t comp,
                       uint16_t method, uint64_t total)
{
    cp_zip_info zi;
    char err[256];
    int st = probe(z->data, z->len, &zi, err, sizeof err, NULL);
    if (st != CP_OK) fail_msg("probe: %d (%s)", st, err);
    assert_true(zi.entries == entries);
    assert_string_equal(zi.first_name, name);
    assert_true(zi.first_size == size);
    if (comp != UINT64_MAX) assert_true(zi.first_comp_size == comp);
    assert_int_equal(zi.first_method, method);
    assert_true(zi.total_size == total);
}

static void expect_zip_corrupt(const uint8_t *p, size_t n, const char *why)
{
    cp_zip_info zi;
    char err[256] = "";
    int st = probe(p, n, &zi, err, sizeof err, NULL);
    if (st != CP_ECORRUPT) fail_msg("%zu bytes: status %d (%s), expected CP_ECORRUPT", n, st, err);
    if (why && !strstr(err, why)) fail_msg("reason \"%s\" does not mention \"%s\"", err, why);
    assert_true(err[0] != '\0');
    assert_true(zi.entries == 0 && zi.first_name[0] == '\0'); /* nothing half-filled */
}

static void test_zip_fixture(void **state)
{
    (void)state;
    cp_buf b;
    load_fixture("dumps/test-service.heap.hprof.zip", &b);
    assert_int_equal(b.len, 1456);
    cp_zip_info zi;
    char err[256];
    memfile mf;
    assert_int_equal(probe(b.data, b.len, &zi, err, sizeof err, &mf), CP_OK);
    assert_true(zi.entries == 1);
    assert_string_equal(zi.first_name, "-");
    assert_true(zi.first_size == 9450);
    assert_int_equal(zi.first_method, 8);
    assert_true(zi.total_size == 9450);
    /* the data ends where the central directory starts: 30 + 1 + 30 header bytes before it */
    assert_true(zi.first_comp_size > 0 && zi.first_comp_size < 1456 - 61);
    /* every truncation is an error, not a crash */
    for (size_t n = 0; n < b.len; n++) {
        int st = probe(b.data, n, &zi, err, sizeof err, NULL);
        if (st != CP_ECORRUPT) fail_msg("truncated to %zu: %d", n, st);
    }
    /* read failures propagate */
    mf = (memfile){.p = b.data, .size = b.len, .n = b.len, .fail = 1};
    assert_int_equal(cp_zip_probe(mem_pread, &mf, b.len, &zi, err, sizeof err), CP_EIO);
    assert_non_null(strstr(err, "cannot read"));
    cp_buf_free(&b);
}

static void test_zip_built(void **state)
{
    (void)state;
    static char text[9450];
    for (size_t i = 0; i < sizeof text; i++) text[i] = "top - 06:17:34 up 1 day\n"[i % 24];
    cp_buf z;

    zent stored = {"java_pid1.hprof", "JAVA PROFILE 1.0.2", 19, 0, 0, 0, 0};
    build_zip(&z, &stored, 1, 0, NULL);
    expect_zip(&z, 1, "java_pid1.hprof", 19, 19, 0, 19);
    cp_buf_free(&z);

    zent deflated = {"20240731T225935.hprof", text, sizeof text, 8, 0, 0, 0};
    build_zip(&z, &deflated, 1, 0, NULL);
    expect_zip(&z, 1, "20240731T225935.hprof", 9450, UINT64_MAX, 8, 9450);
    cp_zip_info zi;
    char err[256];
    memfile mf;
    assert_int_equal(probe(z.data, z.len, &zi, err, sizeof err, &mf), CP_OK);
    assert_true(zi.first_comp_size < 9450 / 4); /* repetitive text deflates well */
    cp_buf_free(&z);

    zent desc = {"-", text, sizeof text, 8, 1, 0, 0};
    build_zip(&z, &desc, 1, 0, NULL);
    expect_zip(&z, 1, "-", 9450, UINT64_MAX, 8, 9450);
    cp_buf_free(&z);

    /* ZIP64 everywhere: extra fields, end record + locator, saturated 32-bit values */
    zent z64 = {"-", text, sizeof text, 8, 1, 1, 0};
    build_zip(&z, &z64, 1, 1, NULL);
    expect_zip(&z, 1, "-", 9450, UINT64_MAX, 8, 9450);
    cp_buf_free(&z);

    /* sizes above 4 GiB only fit ZIP64 */
    zent big = {"java_pid7.hprof", text, sizeof text, 8, 1, 1, 5368709120ull};
    build_zip(&z, &big, 1, 1, NULL);
    expect_zip(&z, 1, "java_pid7.hprof", 5368709120ull, UINT64_MAX, 8, 5368709120ull);
    cp_buf_free(&z);

    /* only the end records and the directory are read, never entry data: with a 200 KB
     * entry the lowest read is the start of the last 64 KiB + 22 bytes */
    static char blob[200000];
    zent large = {"java_pid2.hprof", blob, sizeof blob, 0, 0, 0, 0};
    build_zip(&z, &large, 1, 0, NULL);
    assert_int_equal(probe(z.data, z.len, &zi, err, sizeof err, &mf), CP_OK);
    assert_true(zi.first_size == sizeof blob && zi.first_comp_size == sizeof blob);
    assert_true(mf.min_off == z.len - 65557);
    cp_buf_free(&z);

    /* a comment after the end record, with a false end-record signature inside */
    build_zip(&z, &stored, 1, 0, "made by test PK\x05\x06 not a record");
    expect_zip(&z, 1, "java_pid1.hprof", 19, 19, 0, 19);
    cp_buf_free(&z);
    build_zip(&z, &z64, 1, 1, "zip64 with a comment");
    expect_zip(&z, 1, "-", 9450, UINT64_MAX, 8, 9450);
    cp_buf_free(&z);

    /* several entries: the first is kept, sizes add up */
    zent many[3] = {{"a\x01\x7f.hprof", text, 100, 8, 0, 0, 0}, {"b", text, 200, 0, 1, 0, 0}, {"c", text, 300, 8, 1, 1, 0}};
    build_zip(&z, many, 3, 0, NULL);
    expect_zip(&z, 3, "a??.hprof", 100, UINT64_MAX, 8, 600); /* control bytes as '?' */
    cp_buf_free(&z);

    /* a long name is truncated to 255 bytes */
    char longname[400];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    zent ln = {longname, "x", 1, 0, 0, 0, 0};
    build_zip(&z, &ln, 1, 0, NULL);
    assert_int_equal(probe(z.data, z.len, &zi, err, sizeof err, NULL), CP_OK);
    assert_int_equal(strlen(zi.first_name), 255);
    cp_buf_free(&z);

    /* an empty archive is only an end record */
    build_zip(&z, NULL, 0, 0, NULL);
    assert_int_equal(z.len, 22);
    expect_zip(&z, 0, "", 0, 0, 0, 0);
    cp_buf_free(&z);
}

static void test_zip_damage(void **state)
{
    (void)state;
    static char text[5000];
    for (size_t i = 0; i < sizeof text; i++) text[i] = (char)('a' + i % 23);
    cp_buf z;
    zent e = {"java_pid1.hprof", text, sizeof text, 8, 1, 1, 0};
    build_zip(&z, &e, 1, 1, NULL);
    uint8_t *c = malloc(z.len);

    /* every truncation */
    for (size_t n = 0; n < z.len; n++) expect_zip_corrupt(z.data, n, NULL);
    /* garbage */
    uint64_t rng = 7;
    for (int round = 0; round < 50; round++) {
        for (size_t i = 0; i < z.len; i++) c[i] = (uint8_t)test_rand(&rng);
        expect_zip_corrupt(c, z.len, "not a zip archive");
    }
    expect_zip_corrupt((const uint8_t *)"PK\x03\x04 this is no zip", 21, "not a zip archive: 21 bytes");

    size_t eocd = z.len - 22, loc = eocd - 20, rec = loc - 56;
    uint64_t cd_off = rec - (46 + 15 + 37);
    /* the ZIP64 end record's directory offset past its own position */
    memcpy(c, z.data, z.len);
    c[rec + 48 + 2] = 0x10;
    expect_zip_corrupt(c, z.len, "central directory");
    /* more entries than the directory holds */
    memcpy(c, z.data, z.len);
    c[rec + 24] = c[rec + 32] = 3;
    expect_zip_corrupt(c, z.len, "do not fit");
    /* entries on this disk != total: a split archive */
    memcpy(c, z.data, z.len);
    c[rec + 24] = 0;
    expect_zip_corrupt(c, z.len, "multi-disk");
    /* the locator points nowhere */
    memcpy(c, z.data, z.len);
    c[loc + 8] ^= 0x10;
    expect_zip_corrupt(c, z.len, NULL);
    memcpy(c, z.data, z.len);
    c[loc + 15] = 0x80;
    expect_zip_corrupt(c, z.len, "ZIP64 end record offset");
    /* a broken central directory signature */
    memcpy(c, z.data, z.len);
    c[cd_off + 2] = 9;
    expect_zip_corrupt(c, z.len, "no central directory signature");
    /* sizes saturated but no ZIP64 extra (its id changed) */
    memcpy(c, z.data, z.len);
    c[cd_off + 46 + 15] = 0x99;
    expect_zip_corrupt(c, z.len, "ZIP64 extra field, which is missing");
    /* ZIP64 extra too short for the three saturated values */
    memcpy(c, z.data, z.len);
    c[cd_off + 46 + 15 + 2] = 16;
    expect_zip_corrupt(c, z.len, "too short");
    /* a compressed size that does not fit before the directory */
    memcpy(c, z.data, z.len);
    c[cd_off + 46 + 15 + 4 + 8 + 3] = 1;
    expect_zip_corrupt(c, z.len, "does not fit before the central directory");
    /* a local header offset past the directory */
    memcpy(c, z.data, z.len);
    c[cd_off + 46 + 15 + 4 + 16 + 4] = 1;
    expect_zip_corrupt(c, z.len, "does not fit before the central directory");
    /* a name length running past the directory */
    memcpy(c, z.data, z.len);
    c[cd_off + 29] = 0x10;
    expect_zip_corrupt(c, z.len, "runs past the central directory");
    /* an end-record comment length longer than what follows */
    memcpy(c, z.data, z.len);
    c[eocd + 20] = 5;
    expect_zip_corrupt(c, z.len, "no end of central directory record");
    cp_buf_free(&z);
    free(c);

    /* plain end record: the directory offset past the end record */
    zent s = {"x", "abc", 3, 0, 0, 0, 0};
    build_zip(&z, &s, 1, 0, NULL);
    c = malloc(z.len);
    memcpy(c, z.data, z.len);
    c[z.len - 22 + 16] += 1;
    expect_zip_corrupt(c, z.len, NULL);
    memcpy(c, z.data, z.len);
    c[z.len - 22 + 4] = 1; /* disk number */
    expect_zip_corrupt(c, z.len, "multi-disk");
    free(c);
    cp_buf_free(&z);
}

/* A directory of more than a million entries is over the limit, decided from the end
 * records alone: the file here is virtual (zeros except the records at its end). */
static void test_zip_limit(void **state)
{
    (void)state;
    uint64_t entries = 1000001, cd_size = entries * 46, cd_off = 4096;
    uint64_t size = cd_off + cd_size + 56 + 20 + 22;
    cp_buf tail;
    cp_buf_init(&tail);
    put32(&tail, 0x06064b50);
    put64(&tail, 44);
    put16(&tail, 45);
    put16(&tail, 45);
    put32(&tail, 0);
    put32(&tail, 0);
    put64(&tail, entries);
    put64(&tail, entries);
    put64(&tail, cd_size);
    put64(&tail, cd_off);
    put32(&tail, 0x07064b50);
    put32(&tail, 0);
    put64(&tail, cd_off + cd_size);
    put32(&tail, 1);
    put32(&tail, 0x06054b50);
    put16(&tail, 0);
    put16(&tail, 0);
    put16(&tail, 0xFFFF);
    put16(&tail, 0xFFFF);
    put32(&tail, 0xFFFFFFFFu);
    put32(&tail, 0xFFFFFFFFu);
    put16(&tail, 0);
    memfile mf = {.p = tail.data, .n = tail.len, .base = size - tail.len, .size = size, .min_off = UINT64_MAX};
    cp_zip_info zi;
    char err[256];
    assert_int_equal(cp_zip_probe(mem_pread, &mf, size, &zi, err, sizeof err), CP_ELIMIT);
    assert_non_null(strstr(err, "1000001 entries"));
    assert_true(mf.min_off >= size - 65557); /* decided from the tail */
    cp_buf_free(&tail);
}

/* ---- pprof fixtures ------------------------------------------------------------------------- */

static cp_pprof *load_pprof(const char *rel)
{
    cp_buf b;
    load_fixture(rel, &b);
    cp_pprof *pf = NULL;
    char err[256];
    int st = cp_pprof_parse(b.data, b.len, 0, &pf, err, sizeof err);
    if (st != CP_OK) fail_msg("%s: %d (%s)", rel, st, err);
    cp_buf_free(&b);
    return pf;
}

static void expect_type(const cp_pprof_value_type *vt, const char *type, const char *unit)
{
    assert_non_null(vt->type);
    assert_string_equal(vt->type, type);
    assert_string_equal(vt->unit, unit);
}

/* Checks the totals of every sample type against each other: flat sums to the total of
 * the samples whose leaf has a function, cum >= flat for non-negative values, the order. */
static void check_top(const cp_pprof *pf, size_t st, int64_t total)
{
    const cp_pprof_info *in = cp_pprof_get_info(pf);
    size_t nf = (size_t)in->functions, n = 99;
    cp_pprof_fn_total *t = malloc((nf + 1) * sizeof *t);
    assert_int_equal(cp_pprof_top(pf, st, t, nf + 1, &n), CP_OK);
    assert_int_equal(n, nf); /* every function, no more */
    int64_t flat_sum = 0, max_cum = 0;
    for (size_t i = 0; i < n; i++) {
        assert_non_null(t[i].name);
        assert_non_null(t[i].file);
        assert_true(t[i].flat >= 0 && t[i].cum >= t[i].flat);
        assert_true(t[i].cum <= total);
        flat_sum += t[i].flat;
        if (t[i].cum > max_cum) max_cum = t[i].cum;
        if (i > 0) {
            assert_true(t[i - 1].flat >= t[i].flat);
            if (t[i - 1].flat == t[i].flat) assert_true(strcmp(t[i - 1].name, t[i].name) <= 0);
        }
    }
    /* Go's profiles have a function on every leaf: flat adds up to the total */
    assert_true(flat_sum == total);
    assert_true(max_cum <= total && max_cum > 0);
    /* a smaller cap gives the first entries of the same order */
    cp_pprof_fn_total head[3];
    assert_int_equal(cp_pprof_top(pf, st, head, 3, &n), CP_OK);
    assert_int_equal(n, nf < 3 ? nf : 3);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(head[i].name, t[i].name);
        assert_true(head[i].flat == t[i].flat && head[i].cum == t[i].cum);
    }
    free(t);
}

static void test_pprof_alloc_heap(void **state)
{
    (void)state;
    static const char *types[4][2] = {{"alloc_objects", "count"}, {"alloc_space", "bytes"},
                                      {"inuse_objects", "count"}, {"inuse_space", "bytes"}};
    const char *files[2] = {"dumps/go-alloc.pprof", "dumps/go-heap.pprof"};
    const uint64_t samples[2] = {2164, 2174};
    /* totals per sample type (sums of the samples' values) */
    const int64_t totals[2][4] = {{13737999556, 1223596069818, 45699, 7624482},
                                  {13976830764, 1244963148473, 45747, 8686961}};
    for (int f = 0; f < 2; f++) {
        cp_pprof *pf = load_pprof(files[f]);
        const cp_pprof_info *in = cp_pprof_get_info(pf);
        assert_int_equal(in->nsample_types, 4);
        for (int i = 0; i < 4; i++) expect_type(&in->sample_types[i], types[i][0], types[i][1]);
        expect_type(&in->period_type, "space", "bytes");
        assert_true(in->period == 524288);
        assert_true(in->samples == samples[f]);
        assert_true(in->locations == 1214);
        assert_true(in->functions == 745);
        assert_true(in->mappings == 5);
        assert_true(in->time_nanos > 1700000000000000000 && in->duration_nanos == 0);
        /* allocs sets its default (alloc_space); heap leaves it unset */
        assert_int_equal(in->default_sample_type, f == 0 ? 1 : -1);
        assert_int_equal(cp_pprof_guess_kind(pf), f == 0 ? CP_DUMP_ALLOC : CP_DUMP_PPROF_HEAP);
        for (size_t st = 0; st < 4; st++) check_top(pf, st, totals[f][st]);
        cp_pprof_fn_total t[2];
        size_t n;
        assert_int_equal(cp_pprof_top(pf, 3, t, 2, &n), CP_OK);
        if (f == 0) {
            assert_string_equal(t[0].name, "github.com/antlr/antlr4/runtime/Go/antlr.NewBaseTransition");
            assert_true(t[0].flat == 1048624 && t[0].cum == 1048624);
            assert_string_equal(t[1].name, "github.com/segmentio/kafka-go.NewReader");
        } else {
            assert_string_equal(t[0].name, "github.com/segmentio/kafka-go.makePartitions");
            assert_true(t[0].flat == 1577093);
            assert_non_null(strstr(t[0].file, "kafka-go@v0.4.45/transport.go"));
        }
        assert_int_equal(cp_pprof_top(pf, 4, t, 2, &n), CP_EINVAL);
        assert_int_equal(n, 0);
        cp_pprof_free(pf);
    }
}

static void test_pprof_goroutine_cpu(void **state)
{
    (void)state;
    cp_pprof *pf = load_pprof("dumps/go-goroutine.pprof");
    const cp_pprof_info *in = cp_pprof_get_info(pf);
    assert_int_equal(in->nsample_types, 1);
    expect_type(&in->sample_types[0], "goroutine", "count");
    expect_type(&in->period_type, "goroutine", "count");
    assert_true(in->period == 1);
    assert_true(in->samples == 28 && in->locations == 78 && in->functions == 78);
    assert_int_equal(cp_pprof_guess_kind(pf), CP_DUMP_GOROUTINE);
    /* 83 goroutines (the first sample alone has 16, unpacked values), 81 of them parked */
    check_top(pf, 0, 83);
    cp_pprof_fn_total t[1];
    size_t n;
    assert_int_equal(cp_pprof_top(pf, 0, t, 1, &n), CP_OK);
    assert_string_equal(t[0].name, "runtime.gopark");
    assert_true(t[0].flat == 81 && t[0].cum == 81);
    cp_pprof_free(pf);

    pf = load_pprof("dumps/go-profile.pprof");
    in = cp_pprof_get_info(pf);
    assert_int_equal(in->nsample_types, 2);
    expect_type(&in->sample_types[0], "samples", "count");
    expect_type(&in->sample_types[1], "cpu", "nanoseconds");
    expect_type(&in->period_type, "cpu", "nanoseconds");
    assert_true(in->period == 10000000);
    assert_true(in->duration_nanos > 2000000000 && in->duration_nanos < 2001000000); /* ~2.0008 s */
    assert_true(in->samples == 1 && in->locations == 14 && in->functions == 13 && in->mappings == 5);
    assert_int_equal(in->default_sample_type, -1);
    assert_int_equal(cp_pprof_guess_kind(pf), CP_DUMP_PROFILE);
    check_top(pf, 0, 1);
    check_top(pf, 1, 10000000); /* one sample of one period */
    cp_pprof_fn_total all[13];
    assert_int_equal(cp_pprof_top(pf, 1, all, 13, &n), CP_OK);
    /* the leaf has it all flat; every function on the one stack has it cumulatively */
    assert_string_equal(all[0].name, "runtime.heapBitsSetType");
    assert_true(all[0].flat == 10000000 && all[0].cum == 10000000);
    int on_stack = 0;
    for (size_t i = 1; i < n; i++) {
        assert_true(all[i].flat == 0);
        on_stack += all[i].cum == 10000000;
    }
    assert_true(on_stack >= 10); /* 14 frames, 13 functions; a few may be unattributed */
    cp_pprof_free(pf);
}

/* ---- hand-built profiles ----------------------------------------------------------------------- */

static void pb_v(cp_buf *b, uint64_t v)
{
    while (v >= 0x80) {
        cp_buf_putc(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    cp_buf_putc(b, (uint8_t)v);
}
static void pb_kv(cp_buf *b, uint32_t f, uint64_t v)
{
    pb_v(b, (uint64_t)f << 3);
    pb_v(b, v);
}
static void pb_msg(cp_buf *b, uint32_t f, const cp_buf *m)
{
    pb_v(b, (uint64_t)f << 3 | 2);
    pb_v(b, m->len);
    cp_buf_append(b, m->data, m->len);
}
static void pb_strf(cp_buf *b, uint32_t f, const char *s)
{
    pb_v(b, (uint64_t)f << 3 | 2);
    pb_v(b, strlen(s));
    cp_buf_append(b, s, strlen(s));
}
/* A repeated numeric field, packed or one key per value. */
static void pb_rep(cp_buf *b, uint32_t f, const uint64_t *v, size_t n, int packed)
{
    if (!packed) {
        for (size_t i = 0; i < n; i++) pb_kv(b, f, v[i]);
        return;
    }
    cp_buf m;
    cp_buf_init(&m);
    for (size_t i = 0; i < n; i++) pb_v(&m, v[i]);
    pb_msg(b, f, &m);
    cp_buf_free(&m);
}

/* Knobs for the hand-built profile's damage. */
typedef struct hb_opts {
    int packed;
    int sparse_ids;       /* ids not 1..n: the sorted-map lookup */
    int unknown_fields;   /* fixed32/fixed64/len/varint fields nobody defined */
    int bad_name_index;
    int missing_function;
    int missing_location;
    int short_values;
    int first_string;     /* string_table[0] = "x" */
    int no_time;
    int dup_loc_id;
    int types;            /* extra sample types beyond the two */
    const char *leaf_name;
} hb_opts;

/* strings: 0 "", 1 samples, 2 count, 3 cpu, 4 nanoseconds, 5 main, 6 a.go, 7 leaf, 8 b.go, 9 inl
 * functions: main, leaf, inl; locations: L1 {leaf}, L2 {inl (inlined), main}, L3 {main}
 * samples (leaf first): [L1 L2] 1/10, [L2 L3] 2/20, [L3 L3 L3] 3/30 */
static void build_profile(cp_buf *b, const hb_opts *o)
{
    cp_buf_init(b);
    cp_buf m, sub;
    cp_buf_init(&m);
    cp_buf_init(&sub);
    uint64_t fid[3] = {1, 2, 3}, lid[3] = {1, 2, 3};
    if (o->sparse_ids) {
        fid[0] = 700, fid[1] = 5, fid[2] = 1ull << 40;
        lid[0] = 30, lid[1] = 10, lid[2] = 20;
    }
    if (o->dup_loc_id) lid[2] = lid[0];
    /* fields in an unusual order: samples before the tables they refer to */
    const uint64_t locs[3][3] = {{lid[0], lid[1]}, {lid[1], lid[2]}, {lid[2], lid[2], lid[2]}};
    const size_t nlocs[3] = {2, 2, 3};
    for (int s = 0; s < 3; s++) {
        cp_buf_reset(&m);
        uint64_t v[2 + 16] = {(uint64_t)(s + 1), (uint64_t)(10 * (s + 1))};
        for (int t = 0; t < o->types; t++) v[2 + t] = 1;
        uint64_t l[3];
        memcpy(l, locs[s], sizeof l);
        if (o->missing_location && s == 2) l[1] = 999;
        pb_rep(&m, 1, l, nlocs[s], o->packed);
        pb_rep(&m, 2, v, (size_t)(o->short_values && s == 1 ? 1 : 2 + o->types), o->packed);
        if (o->unknown_fields) { /* a label {key, num}, and an unknown field */
            cp_buf_reset(&sub);
            pb_kv(&sub, 1, 2);
            pb_kv(&sub, 3, 64);
            pb_msg(&m, 3, &sub);
            pb_kv(&m, 77, 5);
        }
        pb_msg(b, 2, &m);
    }
    const char *strs[] = {o->first_string ? "x" : "", "samples", "count", "cpu", "nanoseconds", "main", "a.go",
                          o->leaf_name ? o->leaf_name : "leaf", "b.go", "inl"};
    for (size_t i = 0; i < 5; i++) pb_strf(b, 6, strs[i]);
    for (int t = 0; t < 2 + o->types; t++) {
        cp_buf_reset(&m);
        pb_kv(&m, 1, t < 2 ? 1 + 2 * (uint64_t)t : 1);
        pb_kv(&m, 2, t < 2 ? 2 + 2 * (uint64_t)t : 2);
        pb_msg(b, 1, &m);
    }
    /* functions: main (5, a.go), leaf (7, b.go), inl (9, a.go) */
    const uint64_t fname[3] = {5, 7, 9}, ffile[3] = {6, 8, 6};
    for (int i = 0; i < 3; i++) {
        cp_buf_reset(&m);
        pb_kv(&m, 1, fid[i]);
        pb_kv(&m, 2, o->bad_name_index && i == 1 ? 10 : fname[i]);
        pb_kv(&m, 3, fname[i]);
        pb_kv(&m, 4, ffile[i]);
        pb_kv(&m, 5, 10 + (uint64_t)i);
        pb_msg(b, 5, &m);
    }
    for (size_t i = 5; i < 10; i++) pb_strf(b, 6, strs[i]);
    /* locations: L1 {leaf}, L2 {inl, main}, L3 {main} */
    const int lines[3][2] = {{1, -1}, {2, 0}, {0, -1}};
    for (int i = 0; i < 3; i++) {
        cp_buf_reset(&m);
        pb_kv(&m, 1, lid[i]);
        pb_kv(&m, 2, 1);
        pb_kv(&m, 3, 0x401000 + (uint64_t)i * 16);
        for (int k = 0; k < 2 && lines[i][k] >= 0; k++) {
            cp_buf_reset(&sub);
            pb_kv(&sub, 1, o->missing_function && i == 2 ? 4242 : fid[lines[i][k]]);
            pb_kv(&sub, 2, 100 + (uint64_t)k);
            pb_msg(&m, 4, &sub);
        }
        pb_msg(b, 4, &m);
    }
    cp_buf_reset(&m);
    pb_kv(&m, 1, 1);
    pb_kv(&m, 2, 0x400000);
    pb_msg(b, 3, &m);
    if (!o->no_time) pb_kv(b, 9, 1703077219612120500ull);
    pb_kv(b, 10, 1000000000);
    cp_buf_reset(&m);
    pb_kv(&m, 1, 3);
    pb_kv(&m, 2, 4);
    pb_msg(b, 11, &m);
    pb_kv(b, 12, 10000000);
    pb_kv(b, 14, 3); /* "cpu" */
    if (o->unknown_fields) {
        pb_v(b, 15 << 3 | 1);
        cp_buf_append(b, "12345678", 8);
        pb_v(b, 16 << 3 | 5);
        cp_buf_append(b, "1234", 4);
        pb_strf(b, 99, "future");
        pb_kv(b, 13, 1); /* comment */
        pb_kv(b, 7, 0);  /* drop_frames */
    }
    cp_buf_free(&m);
    cp_buf_free(&sub);
}

static int parse_buf(const cp_buf *b, size_t max, cp_pprof **pf, char *err, size_t errlen)
{
    return cp_pprof_parse(b->data, b->len, max, pf, err, errlen);
}

static void gzip_buf(const void *p, size_t n, cp_buf *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t bound = deflateBound(&z, (uLong)n);
    cp_buf_reserve(out, bound);
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)n;
    z.next_out = out->data + out->len;
    z.avail_out = (uInt)bound;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    out->len += bound - z.avail_out;
    deflateEnd(&z);
}

static void expect_hand_top(const cp_pprof *pf)
{
    const cp_pprof_info *in = cp_pprof_get_info(pf);
    assert_int_equal(in->nsample_types, 2);
    expect_type(&in->sample_types[1], "cpu", "nanoseconds");
    assert_int_equal(in->default_sample_type, 1);
    assert_true(in->samples == 3 && in->locations == 3 && in->functions == 3 && in->mappings == 1);
    cp_pprof_fn_total t[4];
    size_t n;
    assert_int_equal(cp_pprof_top(pf, 1, t, 4, &n), CP_OK);
    assert_int_equal(n, 3);
    /* main: flat 30 (leaf of sample 3), cum 20 + 30 + 10 (once per sample, though sample 2
     * and 3 hold it twice and thrice); inl: inlined into L2, leaf of sample 2 */
    assert_string_equal(t[0].name, "main");
    assert_string_equal(t[0].file, "a.go");
    assert_true(t[0].flat == 30 && t[0].cum == 60);
    assert_string_equal(t[1].name, "inl");
    assert_true(t[1].flat == 20 && t[1].cum == 30);
    assert_string_equal(t[2].file, "b.go");
    assert_true(t[2].flat == 10 && t[2].cum == 10);
    assert_int_equal(cp_pprof_top(pf, 0, t, 4, &n), CP_OK);
    assert_true(t[0].flat == 3 && t[0].cum == 6);
    assert_int_equal(cp_pprof_top(pf, 0, t, 0, &n), CP_OK);
    assert_int_equal(n, 0);
}

static void test_pprof_hand_built(void **state)
{
    (void)state;
    for (int variant = 0; variant < 8; variant++) {
        hb_opts o = {.packed = variant & 1, .sparse_ids = (variant >> 1) & 1, .unknown_fields = (variant >> 2) & 1};
        cp_buf b;
        build_profile(&b, &o);
        cp_pprof *pf;
        char err[256];
        int st = parse_buf(&b, 0, &pf, err, sizeof err);
        if (st != CP_OK) fail_msg("variant %d: %d (%s)", variant, st, err);
        expect_hand_top(pf);
        assert_int_equal(cp_pprof_guess_kind(pf), CP_DUMP_PROFILE);
        cp_pprof_free(pf);

        /* the same bytes gzipped, and gzipped as two concatenated members */
        cp_buf gz;
        cp_buf_init(&gz);
        gzip_buf(b.data, b.len, &gz);
        assert_int_equal(parse_buf(&gz, 0, &pf, err, sizeof err), CP_OK);
        expect_hand_top(pf);
        cp_pprof_free(pf);
        cp_buf_reset(&gz);
        gzip_buf(b.data, b.len / 3, &gz);
        gzip_buf(b.data + b.len / 3, b.len - b.len / 3, &gz);
        assert_int_equal(parse_buf(&gz, 0, &pf, err, sizeof err), CP_OK);
        expect_hand_top(pf);
        cp_pprof_free(pf);
        /* the cap is on inflated bytes: exactly the size passes, one less does not */
        assert_int_equal(parse_buf(&gz, b.len, &pf, err, sizeof err), CP_OK);
        cp_pprof_free(pf);
        assert_int_equal(parse_buf(&gz, b.len - 1, &pf, err, sizeof err), CP_ELIMIT);
        assert_null(pf);
        assert_int_equal(parse_buf(&b, b.len - 1, &pf, err, sizeof err), CP_ELIMIT); /* raw too */
        cp_buf_free(&gz);
        cp_buf_free(&b);
    }
}

static void expect_profile_error(const hb_opts *o, int status, const char *why)
{
    cp_buf b;
    build_profile(&b, o);
    cp_pprof *pf = (cp_pprof *)&b;
    char err[256] = "";
    int st = parse_buf(&b, 0, &pf, err, sizeof err);
    if (st != status) fail_msg("status %d (%s), expected %d", st, err, status);
    assert_null(pf);
    if (!strstr(err, why)) fail_msg("reason \"%s\" does not mention \"%s\"", err, why);
    cp_buf_free(&b);
}

static void test_pprof_errors(void **state)
{
    (void)state;
    expect_profile_error(&(hb_opts){.bad_name_index = 1}, CP_ECORRUPT, "function name string index 10 out of range");
    expect_profile_error(&(hb_opts){.missing_function = 1}, CP_ECORRUPT, "function 4242, which does not exist");
    expect_profile_error(&(hb_opts){.missing_location = 1, .packed = 1}, CP_ECORRUPT, "location 999");
    expect_profile_error(&(hb_opts){.short_values = 1}, CP_ECORRUPT, "sample 1 has 1 values for 2 sample types");
    expect_profile_error(&(hb_opts){.first_string = 1}, CP_ECORRUPT, "string_table[0] is not empty");
    expect_profile_error(&(hb_opts){.dup_loc_id = 1}, CP_ECORRUPT, "location id 1 is duplicated");
    expect_profile_error(&(hb_opts){.types = 15}, CP_ELIMIT, "more than 16 sample types");
    /* 16 is still fine */
    cp_buf b;
    build_profile(&b, &(hb_opts){.types = 14});
    cp_pprof *pf;
    char err[256];
    assert_int_equal(parse_buf(&b, 0, &pf, err, sizeof err), CP_OK);
    assert_int_equal(cp_pprof_get_info(pf)->nsample_types, 16);
    cp_pprof_free(pf);

    /* wire-level damage: every truncation of the raw message, a group, a bad length */
    size_t good = b.len;
    for (size_t n = 1; n < good; n++) {
        int st = cp_pprof_parse(b.data, n, 0, &pf, err, sizeof err);
        assert_true(st == CP_ECORRUPT || st == CP_OK);
        if (st == CP_OK) cp_pprof_free(pf); /* a cut between fields can still be whole */
        else assert_true(err[0] != '\0');
    }
    cp_buf_putc(&b, 3 << 3 | 3); /* start group */
    assert_int_equal(parse_buf(&b, 0, &pf, err, sizeof err), CP_ECORRUPT);
    b.len = good;
    pb_v(&b, 2 << 3 | 2);
    pb_v(&b, 1000);
    assert_int_equal(parse_buf(&b, 0, &pf, err, sizeof err), CP_ECORRUPT);
    b.len = good;
    pb_v(&b, 9 << 3 | 2); /* time_nanos as bytes */
    pb_v(&b, 0);
    assert_int_equal(parse_buf(&b, 0, &pf, err, sizeof err), CP_ECORRUPT);
    b.len = good;
    cp_buf_append(&b, "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 11); /* 11-byte varint */
    assert_int_equal(parse_buf(&b, 0, &pf, err, sizeof err), CP_ECORRUPT);
    cp_buf_free(&b);

    /* no string table at all, empty input, garbage */
    assert_int_equal(cp_pprof_parse((const uint8_t *)"\x60\x01", 2, 0, &pf, err, sizeof err), CP_ECORRUPT);
    assert_non_null(strstr(err, "no string table"));
    assert_int_equal(cp_pprof_parse((const uint8_t *)"", 0, 0, &pf, err, sizeof err), CP_ECORRUPT);
    const char *garbage = "this is not a profile at all, just text";
    assert_int_equal(cp_pprof_parse((const uint8_t *)garbage, strlen(garbage), 0, &pf, err, sizeof err), CP_ECORRUPT);
    assert_null(pf);
}

static void test_pprof_gzip_errors(void **state)
{
    (void)state;
    cp_buf b;
    load_fixture("dumps/go-profile.pprof", &b);
    cp_pprof *pf;
    char err[256];
    /* truncated gzip: every cut, the trailer included */
    for (size_t n = 2; n < b.len; n++) {
        err[0] = 0;
        int st = cp_pprof_parse(b.data, n, 0, &pf, err, sizeof err);
        if (st != CP_ECORRUPT) fail_msg("cut at %zu: %d (%s)", n, st, err);
        assert_null(pf);
    }
    assert_int_equal(cp_pprof_parse(b.data, b.len - 1, 0, &pf, err, sizeof err), CP_ECORRUPT);
    assert_non_null(strstr(err, "truncated gzip stream"));
    /* a flipped byte in the deflate data or the CRC */
    b.data[b.len - 6] ^= 0x55;
    assert_int_equal(cp_pprof_parse(b.data, b.len, 0, &pf, err, sizeof err), CP_ECORRUPT);
    assert_non_null(strstr(err, "corrupt gzip stream"));
    b.data[b.len - 6] ^= 0x55;
    b.data[3] = 0xff; /* reserved flag bits */
    assert_int_equal(cp_pprof_parse(b.data, b.len, 0, &pf, err, sizeof err), CP_ECORRUPT);
    cp_buf_free(&b);

    /* a gzip bomb: 64 MiB of zeros in about 64 KiB is stopped at the cap */
    size_t big = 64u << 20;
    uint8_t *zeros = calloc(1, big);
    cp_buf gz;
    cp_buf_init(&gz);
    gzip_buf(zeros, big, &gz);
    free(zeros);
    assert_true(gz.len < 128 * 1024);
    assert_int_equal(parse_buf(&gz, 1u << 20, &pf, err, sizeof err), CP_ELIMIT);
    assert_non_null(strstr(err, "inflates to more than 1048576 bytes"));
    assert_null(pf);
    /* under the default cap it inflates, and zeros are not a protobuf (field 0) */
    assert_int_equal(parse_buf(&gz, 0, &pf, err, sizeof err), CP_ECORRUPT);
    cp_buf_free(&gz);
}

/* ---- http_pprof_json --------------------------------------------------------------------------- */

static void test_pprof_json(void **state)
{
    (void)state;
    cp_pprof *pf = load_pprof("dumps/go-profile.pprof");
    json_t *j = http_pprof_json(pf, 1, 3);
    assert_non_null(j);
    json_t *types = json_object_get(j, "sample_types");
    assert_int_equal(json_array_size(types), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(types, 1), "type")), "cpu");
    assert_string_equal(json_string_value(json_object_get(json_array_get(types, 1), "unit")), "nanoseconds");
    assert_true(json_is_null(json_object_get(j, "default_sample_type")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "period_type"), "type")), "cpu");
    assert_true(json_integer_value(json_object_get(j, "period")) == 10000000);
    assert_true(json_integer_value(json_object_get(j, "time_ms")) == 1703077219612);
    double dur = json_number_value(json_object_get(j, "duration_ms"));
    assert_true(dur > 2000.7 && dur < 2000.9);
    assert_true(json_integer_value(json_object_get(j, "samples")) == 1);
    assert_true(json_integer_value(json_object_get(j, "locations")) == 14);
    assert_true(json_integer_value(json_object_get(j, "functions")) == 13);
    assert_true(json_integer_value(json_object_get(j, "mappings")) == 5);
    assert_true(json_integer_value(json_object_get(j, "sample_type")) == 1);
    json_t *top = json_object_get(j, "top");
    assert_int_equal(json_array_size(top), 3);
    json_t *r0 = json_array_get(top, 0);
    assert_string_equal(json_string_value(json_object_get(r0, "name")), "runtime.heapBitsSetType");
    assert_string_equal(json_string_value(json_object_get(r0, "file")), "/usr/local/go/src/runtime/mbitmap.go");
    assert_true(json_integer_value(json_object_get(r0, "flat")) == 10000000);
    assert_true(json_integer_value(json_object_get(r0, "cum")) == 10000000);
    json_decref(j);
    cp_pprof_free(pf);

    /* asking for more rows than functions gives every function; the default is set */
    pf = load_pprof("dumps/go-alloc.pprof");
    j = http_pprof_json(pf, 3, 100000);
    assert_int_equal(json_array_size(json_object_get(j, "top")), 745);
    assert_true(json_integer_value(json_object_get(j, "default_sample_type")) == 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "period_type"), "unit")), "bytes");
    json_decref(j);
    j = http_pprof_json(pf, 3, 0);
    assert_int_equal(json_array_size(json_object_get(j, "top")), 0);
    json_decref(j);
    cp_pprof_free(pf);

    /* names that are not UTF-8 are repaired byte by byte; no time is null */
    cp_buf b;
    build_profile(&b, &(hb_opts){.leaf_name = "bad\xff\xfe-\xC0\x80-\xE2\x82-caf\xC3\xA9", .no_time = 1});
    char err[256];
    assert_int_equal(parse_buf(&b, 0, &pf, err, sizeof err), CP_OK);
    j = http_pprof_json(pf, 1, 10);
    assert_non_null(j);
    assert_true(json_is_null(json_object_get(j, "time_ms")));
    top = json_object_get(j, "top");
    assert_int_equal(json_array_size(top), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(top, 2), "name")),
                        "bad\xEF\xBF\xBD\xEF\xBF\xBD-\xEF\xBF\xBD\xEF\xBF\xBD-\xEF\xBF\xBD\xEF\xBF\xBD-caf\xC3\xA9");
    char *text = json_dumps(j, JSON_COMPACT);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"flat\":10"));
    free(text);
    json_decref(j);
    cp_pprof_free(pf);
    cp_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_path_spec_examples),
        cmocka_unit_test(test_path_segments),
        cmocka_unit_test(test_path_dates),
        cmocka_unit_test(test_path_names),
        cmocka_unit_test(test_path_lengths),
        cmocka_unit_test(test_names_table),
        cmocka_unit_test(test_names_stamps),
        cmocka_unit_test(test_pod_split),
        cmocka_unit_test(test_zip_fixture),
        cmocka_unit_test(test_zip_built),
        cmocka_unit_test(test_zip_damage),
        cmocka_unit_test(test_zip_limit),
        cmocka_unit_test(test_pprof_alloc_heap),
        cmocka_unit_test(test_pprof_goroutine_cpu),
        cmocka_unit_test(test_pprof_hand_built),
        cmocka_unit_test(test_pprof_errors),
        cmocka_unit_test(test_pprof_gzip_errors),
        cmocka_unit_test(test_pprof_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
