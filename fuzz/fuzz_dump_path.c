/* fuzz_dump_path.c -- libFuzzer target: what an upload's URL says (cp_dumpfmt.h):
 * cp_dump_path_parse, cp_dump_name_classify and cp_dump_pod_split on the input as text.
 *
 * Checked properties:
 *   path:  CP_OK or CP_EINVAL with a reason. An accepted path obeys every rule of
 *          dumps-http.md §3 (names non-empty, at most 253 bytes, no '/', '\\', control
 *          bytes, not "." or ".."; the time a whole second between 1970 and 9999), and
 *          re-encoding it -- the date from dir_ms via gmtime, each name percent-encoded
 *          in a way picked by the input (minimal, every byte, mixed hex case) -- parses
 *          back to the same values. Parsing a prefix never reads past it (ASan: the
 *          input is an exact-size copy).
 *   name:  CP_OK or CP_EINVAL with a reason; the kind agrees with the extension rules
 *          (td/top/heap/gc/pprof names end as the table says, gc.log.<N> gives N), and a
 *          stamp re-formats to the name's first 15 bytes.
 *   pod:   base is the pod or the pod minus "_<1-13 digits>" (whose value is the
 *          restart); service is a prefix of base, ending where a '-' starts; outputs
 *          truncated by small caps are prefixes of the full ones.
 */
#include "fuzz_common.h"

#include "model/cp_dumpfmt.h"

#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* The rules of §3 for a namespace, pod or file segment. */
static void check_segment(const char *what, const char *s)
{
    size_t n = strnlen(s, CP_DUMP_MAX_NAME + 1);
    FZ_CHECK(n >= 1 && n <= CP_DUMP_MAX_NAME, "%s of %zu bytes accepted", what, n);
    FZ_CHECK(strcmp(s, ".") != 0 && strcmp(s, "..") != 0, "%s \"%s\" accepted", what, s);
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        FZ_CHECK(c != '/' && c != '\\' && c >= 0x20 && c != 0x7f, "%s has byte 0x%02x at %zu", what, c, i);
    }
}

/* Percent-encodes s as a path segment. style 0: only what must be escaped; 1: every
 * byte; 2: alternating, lower-case hex. */
static void encode_segment(cp_buf *out, const char *s, int style)
{
    static const char up[] = "0123456789ABCDEF", lo[] = "0123456789abcdef";
    for (size_t i = 0; s[i]; i++) {
        uint8_t c = (uint8_t)s[i];
        int must = c == '%' || c == '/' || c < 0x20 || c >= 0x7f;
        int esc = style == 0 ? must : style == 1 ? 1 : must || (i & 1);
        if (!esc) {
            cp_buf_putc(out, c);
            continue;
        }
        const char *h = style == 2 ? lo : up;
        char e[3] = {'%', h[c >> 4], h[c & 15]};
        cp_buf_append(out, e, 3);
    }
}

static void check_path(const uint8_t *data, size_t size)
{
    /* exact-size copy: a read past n is an ASan report */
    char *raw = malloc(size ? size : 1);
    memcpy(raw, data, size);
    cp_dump_path p;
    char err[256];
    err[0] = 'x';
    int st = cp_dump_path_parse(raw, size, &p, err, sizeof err);
    FZ_CHECK(st == CP_OK || st == CP_EINVAL, "path status %d", st);
    if (st != CP_OK) {
        FZ_CHECK(err[0] != '\0' && memchr(err, 0, sizeof err) != NULL, "a rejected path without a reason");
    } else {
        FZ_CHECK(err[0] == '\0', "an accepted path with a reason: %s", err);
        check_segment("namespace", p.ns);
        check_segment("pod", p.pod);
        check_segment("file", p.file);
        FZ_CHECK(p.dir_ms >= 0 && p.dir_ms <= 253402300799000 && p.dir_ms % 1000 == 0, "dir_ms %lld",
                 (long long)p.dir_ms);
        time_t t = (time_t)(p.dir_ms / 1000);
        struct tm tm;
        FZ_CHECK(gmtime_r(&t, &tm) != NULL, "gmtime");
        for (int style = 0; style < 3; style++) {
            cp_buf b;
            cp_buf_init(&b);
            encode_segment(&b, p.ns, style);
            cp_buf_printf(&b, "/%04d/%02d/%02d/%02d/%02d/%02d/", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                          tm.tm_hour, tm.tm_min, tm.tm_sec);
            encode_segment(&b, p.pod, style);
            cp_buf_putc(&b, '/');
            encode_segment(&b, p.file, style);
            cp_dump_path q;
            int st2 = cp_dump_path_parse((const char *)b.data, b.len, &q, err, sizeof err);
            FZ_CHECK(st2 == CP_OK, "re-encoded path (style %d) rejected: %s", style, err);
            FZ_CHECK(strcmp(p.ns, q.ns) == 0 && strcmp(p.pod, q.pod) == 0 && strcmp(p.file, q.file) == 0 &&
                         p.dir_ms == q.dir_ms,
                     "re-encoded path (style %d) parses differently", style);
            cp_buf_free(&b);
        }
    }
    /* a prefix is just another path: it must not crash or read past its end */
    if (size > 0) {
        size_t cut = data[0] % size;
        char *pre = malloc(cut ? cut : 1);
        memcpy(pre, data, cut);
        int st3 = cp_dump_path_parse(pre, cut, &p, err, sizeof err);
        FZ_CHECK(st3 == CP_OK || st3 == CP_EINVAL, "prefix status %d", st3);
        free(pre);
    }
    free(raw);
}

static void check_name(const char *s)
{
    cp_dump_name n;
    char err[256];
    int st = cp_dump_name_classify(s, &n, err, sizeof err);
    FZ_CHECK(st == CP_OK || st == CP_EINVAL, "name status %d", st);
    if (st != CP_OK) {
        FZ_CHECK(err[0] != '\0', "a rejected name without a reason");
        return;
    }
    FZ_CHECK(cp_dump_kind_name(n.kind) != NULL, "kind %d", (int)n.kind);
    switch (n.kind) {
    case CP_DUMP_TD: FZ_CHECK(ends_with(s, ".td.txt"), "td: %s", s); break;
    case CP_DUMP_TOP: FZ_CHECK(ends_with(s, ".top.txt"), "top: %s", s); break;
    case CP_DUMP_HEAP: FZ_CHECK(ends_with(s, ".hprof.zip"), "heap: %s", s); break;
    case CP_DUMP_GC:
        if (n.gc_rotation >= 0) {
            /* leading zeros are allowed: compare the value */
            FZ_CHECK(strncmp(s, "gc.log.", 7) == 0 && atol(s + 7) == n.gc_rotation, "rotation %d of %s", n.gc_rotation, s);
        } else {
            FZ_CHECK(strcmp(s, "gc.log") == 0 || ends_with(s, ".gc.log"), "gc: %s", s);
        }
        break;
    case CP_DUMP_ALLOC:
    case CP_DUMP_PPROF_HEAP:
    case CP_DUMP_GOROUTINE:
    case CP_DUMP_PROFILE:
        FZ_CHECK(ends_with(s, ".pprof"), "pprof: %s", s);
        FZ_CHECK(n.pprof_from_name || n.kind == CP_DUMP_PROFILE, "a guessed pprof kind must start as profile");
        break;
    case CP_DUMP_OTHER: break;
    }
    FZ_CHECK(n.kind == CP_DUMP_GC || n.gc_rotation == -1, "rotation %d for %s", n.gc_rotation, s);
    FZ_CHECK(cp_dump_kind_is_pprof(n.kind) || n.pprof_from_name == 0, "pprof_from_name for %s", s);
    FZ_CHECK(n.stamp_ms == -1 || (n.stamp_ms >= 0 && n.stamp_ms % 1000 == 0), "stamp %lld", (long long)n.stamp_ms);
    if (n.stamp_ms >= 0) {
        time_t t = (time_t)(n.stamp_ms / 1000);
        struct tm tm;
        char want[32];
        gmtime_r(&t, &tm);
        snprintf(want, sizeof want, "%04d%02d%02dT%02d%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec);
        FZ_CHECK(strncmp(s, want, 15) == 0, "stamp %s of %s", want, s);
    }
}

static void check_pod(const char *pod)
{
    char base[CP_DUMP_MAX_NAME + 1], service[CP_DUMP_MAX_NAME + 1];
    size_t n = strlen(pod);
    if (n > CP_DUMP_MAX_NAME) return; /* pods come from validated paths */
    int64_t restart = -1;
    cp_dump_pod_split(pod, base, sizeof base, service, sizeof service, &restart);
    size_t bl = strlen(base), sl = strlen(service);
    FZ_CHECK(bl <= n && memcmp(base, pod, bl) == 0, "base is not a prefix of the pod");
    FZ_CHECK(restart >= 0, "restart %lld", (long long)restart);
    if (bl < n) {
        size_t dl = n - bl - 1;
        FZ_CHECK(pod[bl] == '_' && dl >= 1 && dl <= 13, "stripped \"%s\" is not _<1-13 digits>", pod + bl);
        int64_t v = 0;
        for (size_t i = bl + 1; i < n; i++) {
            FZ_CHECK(pod[i] >= '0' && pod[i] <= '9', "non-digit in the stripped suffix");
            v = v * 10 + (pod[i] - '0');
        }
        FZ_CHECK(v == restart, "restart %lld, suffix says %lld", (long long)restart, (long long)v);
    } else {
        FZ_CHECK(restart == 0, "restart %lld without a stripped suffix", (long long)restart);
    }
    FZ_CHECK(sl <= bl && memcmp(service, base, sl) == 0, "service is not a prefix of base");
    FZ_CHECK(sl == bl || (base[sl] == '-' && sl > 0), "service \"%s\" does not end at a '-' of \"%s\"", service, base);
    FZ_CHECK(sl > 0 || bl == 0, "empty service for \"%s\"", base);
    /* small caps truncate */
    char b2[4], s2[3];
    int64_t r2;
    cp_dump_pod_split(pod, b2, sizeof b2, s2, sizeof s2, &r2);
    FZ_CHECK(r2 == restart && strncmp(b2, base, 3) == 0 && strlen(b2) == (bl < 3 ? bl : 3) &&
                 strncmp(s2, service, 2) == 0 && strlen(s2) == (sl < 2 ? sl : 2),
             "truncated outputs differ");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_path(data, size);
    /* the input as a NUL-terminated name and pod (up to its first NUL) */
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    check_name(s);
    check_pod(s);
    /* and the last path segment alone, as a name would arrive */
    const char *slash = strrchr(s, '/');
    if (slash) {
        check_name(slash + 1);
        check_pod(slash + 1);
    }
    free(s);
    return 0;
}
