/* dumpname.c -- what an upload's URL path and file name say (dumps-http.md §3, §5): the
 * nine path segments, the kind and stamp of a file name, the pod string's parts.
 *
 * Everything here reads untrusted text from a URL: segments are bounded to
 * CP_DUMP_MAX_NAME bytes after decoding, and a rejected path names the segment and the
 * rule it broke, since the message becomes the 400 reply the uploader logs. */
#include "model/cp_dumpfmt.h"

#include <stdarg.h>
#include <stdio.h>

/* ---- kinds ------------------------------------------------------------------------------ */

static const char *const kind_names[CP_DUMP_KIND_MAX + 1] = {
    [CP_DUMP_TD] = "td",
    [CP_DUMP_TOP] = "top",
    [CP_DUMP_GC] = "gc",
    [CP_DUMP_HEAP] = "heap",
    [CP_DUMP_ALLOC] = "alloc",
    [CP_DUMP_PPROF_HEAP] = "pprof_heap",
    [CP_DUMP_GOROUTINE] = "goroutine",
    [CP_DUMP_PROFILE] = "profile",
    [CP_DUMP_OTHER] = "other",
};

const char *cp_dump_kind_name(cp_dump_kind k)
{
    if ((int)k < CP_DUMP_TD || (int)k > CP_DUMP_KIND_MAX) return NULL;
    return kind_names[k];
}

int cp_dump_kind_parse(const char *s, size_t n, cp_dump_kind *out)
{
    for (int k = CP_DUMP_TD; k <= CP_DUMP_KIND_MAX; k++) {
        const char *name = kind_names[k];
        if (strlen(name) == n && memcmp(name, s, n) == 0) {
            *out = (cp_dump_kind)k;
            return CP_OK;
        }
    }
    return CP_EINVAL;
}

int cp_dump_kind_is_pprof(cp_dump_kind k)
{
    return k == CP_DUMP_ALLOC || k == CP_DUMP_PPROF_HEAP || k == CP_DUMP_GOROUTINE || k == CP_DUMP_PROFILE;
}

/* ---- calendar ------------------------------------------------------------------------------ */

static int is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int days_in_month(int y, int m)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int64_t civil_ms(int y, int mo, int d, int h, int mi, int s)
{
    return ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 + (int64_t)s * 1000;
}

/* Years the collector accepts: nothing it indexes predates the epoch, and the storage
 * layout writes the year as four digits. */
#define YEAR_MIN 1970
#define YEAR_MAX 9999

/* Value of exactly n ASCII digits, or -1. */
static int digits_value(const char *s, size_t n)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* ---- upload path --------------------------------------------------------------------------- */

static const char *const seg_names[9] = {"namespace", "year", "month", "day", "hour", "minute", "second", "pod", "file"};

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..n) once into out (cap CP_DUMP_MAX_NAME + 1, NUL-terminated). */
static int decode_segment(const char *name, const char *s, size_t n, char *out, size_t *outn, char *err,
                          size_t errlen)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            int hi = n - i >= 3 ? hex_digit(s[i + 1]) : -1, lo = n - i >= 3 ? hex_digit(s[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                cp_set_err(err, errlen, "%s has a bad percent escape at byte %zu", name, i);
                return CP_EINVAL;
            }
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        if (k == CP_DUMP_MAX_NAME) {
            cp_set_err(err, errlen, "%s is longer than %d bytes", name, CP_DUMP_MAX_NAME);
            return CP_EINVAL;
        }
        out[k++] = c;
    }
    out[k] = '\0';
    *outn = k;
    return CP_OK;
}

/* The rules of a namespace, pod or file segment (already decoded). */
static int check_name(const char *name, const char *s, size_t n, char *err, size_t errlen)
{
    if (n == 0) {
        cp_set_err(err, errlen, "%s is empty", name);
        return CP_EINVAL;
    }
    if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) {
        cp_set_err(err, errlen, "%s is \"%s\"", name, n == 1 ? "." : "..");
        return CP_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        if (c == '/') {
            cp_set_err(err, errlen, "%s contains '/'", name);
            return CP_EINVAL;
        }
        if (c == '\\') {
            cp_set_err(err, errlen, "%s contains '\\'", name);
            return CP_EINVAL;
        }
        if (c < 0x20 || c == 0x7f) {
            cp_set_err(err, errlen, "%s contains control character 0x%02x at byte %zu", name, c, i);
            return CP_EINVAL;
        }
    }
    return CP_OK;
}

int cp_dump_segment_check(const char *what, const char *s, size_t n, char *err, size_t errlen)
{
    if (n > CP_DUMP_MAX_NAME) {
        cp_set_err(err, errlen, "%s is longer than %d bytes", what, CP_DUMP_MAX_NAME);
        return CP_EINVAL;
    }
    return check_name(what, s, n, err, errlen);
}

int cp_dump_path_parse(const char *raw, size_t n, cp_dump_path *out, char *err, size_t errlen)
{
    cp_set_err(err, errlen, "%s", "");
    size_t nseg = 1;
    for (size_t i = 0; i < n; i++) nseg += raw[i] == '/';
    if (nseg != 9) {
        cp_set_err(err, errlen, "%zu segments, expected 9 ({namespace}/{YYYY}/{MM}/{DD}/{HH}/{mm}/{ss}/{pod}/{file})",
                nseg);
        return CP_EINVAL;
    }

    static const size_t width[9] = {0, 4, 2, 2, 2, 2, 2, 0, 0};
    static const int lo[9] = {0, YEAR_MIN, 1, 1, 0, 0, 0, 0, 0};
    static const int hi[9] = {0, YEAR_MAX, 12, 31, 23, 59, 59, 0, 0};
    int date[9] = {0};
    char tmp[CP_DUMP_MAX_NAME + 1];
    size_t start = 0;
    for (int s = 0; s < 9; s++) {
        size_t end = start;
        while (end < n && raw[end] != '/') end++;
        char *dst = s == 0 ? out->ns : s == 7 ? out->pod : s == 8 ? out->file : tmp;
        size_t len;
        int st = decode_segment(seg_names[s], raw + start, end - start, dst, &len, err, errlen);
        if (st != CP_OK) return st;
        if (width[s] == 0) {
            st = check_name(seg_names[s], dst, len, err, errlen);
            if (st != CP_OK) return st;
        } else {
            int v = len == width[s] ? digits_value(dst, len) : -1;
            if (v < 0) {
                /* the reason goes back to the uploader: echo printable ASCII only */
                char shown[17];
                size_t k = len < 16 ? len : 16;
                for (size_t i = 0; i < k; i++) shown[i] = dst[i] >= 0x20 && dst[i] < 0x7f ? dst[i] : '?';
                shown[k] = '\0';
                cp_set_err(err, errlen, "%s \"%s%s\" is not %zu digits", seg_names[s], shown, len > 16 ? "..." : "",
                        width[s]);
                return CP_EINVAL;
            }
            if (v < lo[s] || v > hi[s]) {
                cp_set_err(err, errlen, "%s %d is out of range (%0*d-%0*d)", seg_names[s], v, (int)width[s], lo[s],
                        (int)width[s], hi[s]);
                return CP_EINVAL;
            }
            date[s] = v;
        }
        start = end + 1;
    }
    if (date[3] > days_in_month(date[1], date[2])) {
        cp_set_err(err, errlen, "day %02d is not a day of %04d-%02d", date[3], date[1], date[2]);
        return CP_EINVAL;
    }
    out->dir_ms = civil_ms(date[1], date[2], date[3], date[4], date[5], date[6]);
    return CP_OK;
}

/* ---- file names -------------------------------------------------------------------------- */

static int ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* 1 if s[0..n) is 1..max digits. */
static int all_digits(const char *s, size_t n, size_t max)
{
    if (n == 0 || n > max) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

static int is_alnum(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* YYYYMMDDTHHMMSS[UTC] at the start of the name, as a whole token (the next byte is the
 * end or punctuation); -1 when absent or not a real time. */
static int64_t name_stamp(const char *s, size_t n)
{
    if (n < 15 || s[8] != 'T') return -1;
    int y = digits_value(s, 4), mo = digits_value(s + 4, 2), d = digits_value(s + 6, 2);
    int h = digits_value(s + 9, 2), mi = digits_value(s + 11, 2), sec = digits_value(s + 13, 2);
    if (y < YEAR_MIN || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59)
        return -1;
    if (d > days_in_month(y, mo)) return -1;
    size_t end = 15;
    if (n - end >= 3 && memcmp(s + end, "UTC", 3) == 0) end += 3;
    if (end < n && is_alnum(s[end])) return -1;
    return civil_ms(y, mo, d, h, mi, sec);
}

/* The pprof kind its name says: the last token before ".pprof" split at '.', '-', '_'. */
static int pprof_name_kind(const char *s, size_t n, cp_dump_kind *k)
{
    size_t stem = n - 6, t = stem;
    while (t > 0 && s[t - 1] != '.' && s[t - 1] != '-' && s[t - 1] != '_') t--;
    static const struct {
        const char *token;
        cp_dump_kind kind;
    } tokens[] = {
        {"alloc", CP_DUMP_ALLOC},         {"heap", CP_DUMP_PPROF_HEAP}, {"goroutine", CP_DUMP_GOROUTINE},
        {"profile", CP_DUMP_PROFILE},     {"cpu", CP_DUMP_PROFILE},
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(tokens); i++) {
        if (strlen(tokens[i].token) == stem - t && memcmp(s + t, tokens[i].token, stem - t) == 0) {
            *k = tokens[i].kind;
            return 1;
        }
    }
    return 0;
}

int cp_dump_name_classify(const char *file, cp_dump_name *out, char *err, size_t errlen)
{
    cp_set_err(err, errlen, "%s", "");
    size_t n = strlen(file);
    out->kind = CP_DUMP_OTHER;
    out->stamp_ms = name_stamp(file, n);
    out->gc_rotation = -1;
    out->pprof_from_name = 0;

    if (ends_with(file, n, ".td.txt")) out->kind = CP_DUMP_TD;
    else if (ends_with(file, n, ".top.txt")) out->kind = CP_DUMP_TOP;
    else if (ends_with(file, n, ".hprof.zip")) out->kind = CP_DUMP_HEAP;
    else if (strcmp(file, "gc.log") == 0 || ends_with(file, n, ".gc.log")) out->kind = CP_DUMP_GC;
    else if (n > 7 && memcmp(file, "gc.log.", 7) == 0 && all_digits(file + 7, n - 7, 9)) {
        /* at most 9 digits: the rotation number fits an int */
        out->kind = CP_DUMP_GC;
        out->gc_rotation = digits_value(file + 7, n - 7);
    } else if (ends_with(file, n, ".pprof")) {
        cp_dump_kind k = CP_DUMP_PROFILE;
        out->pprof_from_name = pprof_name_kind(file, n, &k);
        out->kind = k;
    } else if (strcmp(file, "core") == 0 || (n > 5 && memcmp(file, "core.", 5) == 0 && all_digits(file + 5, n - 5, 19)) ||
               ends_with(file, n, ".log") || ends_with(file, n, ".txt") || ends_with(file, n, ".hprof") ||
               ends_with(file, n, ".jfr") || ends_with(file, n, ".zip")) {
        out->kind = CP_DUMP_OTHER; /* hs_err_pid<N>.log is a *.log */
    } else {
        cp_set_err(err, errlen,
                "unknown file name (expected *.td.txt, *.top.txt, *.hprof.zip, gc.log, gc.log.<N>, *.gc.log, *.pprof, "
                "core, core.<N>, *.log, *.txt, *.hprof, *.jfr or *.zip)");
        return CP_EINVAL;
    }
    return CP_OK;
}

/* ---- pod string -------------------------------------------------------------------------- */

static void copy_trunc(char *dst, size_t cap, const char *s, size_t n)
{
    if (!dst || cap == 0) return;
    if (n > cap - 1) n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static int is_lower_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

/* Index of the last '-' in s[0..n), or n when there is none. */
static size_t last_dash(const char *s, size_t n)
{
    for (size_t i = n; i > 0; i--)
        if (s[i - 1] == '-') return i - 1;
    return n;
}

void cp_dump_pod_split(const char *pod, char *base, size_t base_cap, char *service, size_t service_cap,
                       int64_t *restart_ms)
{
    size_t n = strlen(pod), blen = n;
    int64_t restart = 0;
    const char *us = strrchr(pod, '_');
    if (us && all_digits(us + 1, n - (size_t)(us + 1 - pod), 13)) {
        blen = (size_t)(us - pod);
        for (const char *p = us + 1; *p; p++) restart = restart * 10 + (*p - '0');
    }
    if (restart_ms) *restart_ms = restart;
    copy_trunc(base, base_cap, pod, blen);

    /* Deployment pods are <service>-<replicaset hash>-<random>; a StatefulSet's are
     * <service>-<ordinal>. A drop that would leave nothing keeps what there was: an
     * empty service name helps nobody. */
    size_t slen = blen, d = last_dash(pod, slen);
    if (d < slen && d > 0) {
        slen = d;
        d = last_dash(pod, slen);
        size_t hl = slen - d - 1;
        if (d < slen && d > 0 && hl >= 6 && hl <= 10 && is_lower_hex(pod + d + 1, hl)) slen = d;
    }
    copy_trunc(service, service_cap, pod, slen);
}
