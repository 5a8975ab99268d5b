/* reader_open.c -- cp_reader_open (a reader by catalog spec) and what the two readers
 * share (reader_internal.h): the cold-file listing's rules. */
#include "store/cp_cold.h"
#include "store/cp_hot.h"
#include "store/read/reader_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- open by spec ---------------------------------------------------------------------------- */

/* The same rule as cp_catalog_open: a libpq URI, else a SQLite file path. */
int cp_reader_open(const char *spec, cp_reader **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!spec || !*spec) {
        snprintf(err, errlen, "no catalog given");
        return CP_EINVAL;
    }
    if (cp_catalog_is_postgres(spec)) return cp_reader_open_pg(spec, out, err, errlen);
    return cp_reader_open_sqlite(spec, out, err, errlen);
}

/* ---- the sort columns --------------------------------------------------------------------------- */

const cp_rd_sort_col cp_rd_sort_cols[CP_SORT_COUNT] = {
    [CP_SORT_TS] = {"time", CP_RDC_TIME},
    [CP_SORT_DURATION] = {"duration", CP_RDC_DURATION},
    [CP_SORT_CPU] = {"cpu_time", CP_RDC_CPU},
    [CP_SORT_WAIT] = {"wait_time", CP_RDC_WAIT},
    [CP_SORT_MEMORY] = {"memory_used", CP_RDC_MEMORY},
    [CP_SORT_SUSPEND] = {"suspend_duration", CP_RDC_SUSPEND},
    [CP_SORT_CALLS] = {"calls", CP_RDC_CALLS},
    [CP_SORT_TRANSACTIONS] = {"transactions", CP_RDC_TRANSACTIONS},
    [CP_SORT_QUEUE] = {"queue_wait_duration", CP_RDC_QUEUE},
    [CP_SORT_LOGS_GENERATED] = {"logs_generated", CP_RDC_LOGS_GENERATED},
    [CP_SORT_LOGS_WRITTEN] = {"logs_written", CP_RDC_LOGS_WRITTEN},
    [CP_SORT_FILE_READ] = {"file_read", CP_RDC_FILE_READ},
    [CP_SORT_FILE_WRITTEN] = {"file_written", CP_RDC_FILE_WRITTEN},
    [CP_SORT_NET_READ] = {"net_read", CP_RDC_NET_READ},
    [CP_SORT_NET_WRITTEN] = {"net_written", CP_RDC_NET_WRITTEN},
    [CP_SORT_METHOD] = {"method_name", CP_RDC_METHOD},
    [CP_SORT_NAMESPACE] = {"namespace", CP_RDC_NS},
    [CP_SORT_SERVICE] = {"service_name", CP_RDC_SERVICE},
    [CP_SORT_POD] = {"pod_name", CP_RDC_POD},
    [CP_SORT_RESTART] = {"restart_time", CP_RDC_RESTART},
    [CP_SORT_THREAD] = {"thread", CP_RDC_THREAD},
    [CP_SORT_ERROR] = {"CAST(error AS integer)", CP_RDC_ERROR},
};

/* ---- shared operations' errors ---------------------------------------------------------------- */

int cp_rd_exec(const cp_rd_ctx *x, const char *sql, const cp_sql_val *p, size_t np, cp_sqldb_row_fn fn, void *ud,
               const char *what)
{
    int st = cp_sqldb_exec(x->db, sql, p, np, fn, ud, NULL);
    if (st != CP_OK && cp_sqldb_errmsg(x->db)[0]) { /* the database's failure, not fn's */
        snprintf(x->err, x->errlen, "%s: %s", what, cp_sqldb_errmsg(x->db));
        if (x->retry && cp_sqldb_retryable(x->db)) *x->retry = 1;
    }
    return st;
}

int cp_rd_oom(const cp_rd_ctx *x)
{
    snprintf(x->err, x->errlen, "out of memory");
    return CP_ENOMEM;
}

/* ---- folding ---------------------------------------------------------------------------------- */

int cp_rd_fold_into(cp_buf *out, const char *s, size_t n)
{
    cp_buf_reset(out);
    if (cp_buf_reserve(out, n + 1) != CP_OK) return CP_ENOMEM;
    for (size_t i = 0; i < n; i++) out->data[i] = cp_rd_fold((unsigned char)s[i]);
    out->data[n] = 0;
    out->len = n;
    return CP_OK;
}

/* ---- a JSON array of names -------------------------------------------------------------------- */

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at p (p + 4 <= end): the code unit, or -1. */
static long hex4(const unsigned char *p, const unsigned char *end)
{
    if (end - p < 4) return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

static size_t utf8_put(unsigned long cp, unsigned char out[4])
{
    if (cp < 0x80) return out[0] = (unsigned char)cp, 1;
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xc0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xe0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Decodes the next character of a JSON string body at *p (before the closing quote):
 * its UTF-8 bytes into out, their count into *n. 0 at the closing quote, -1 on bad
 * input, 1 otherwise. */
static int json_char(const unsigned char **p, const unsigned char *end, unsigned char out[4], size_t *n)
{
    const unsigned char *s = *p;
    if (s >= end) return -1;
    if (*s == '"') return 0;
    if (*s != '\\') {
        out[0] = *s;
        *n = 1;
        *p = s + 1;
        return 1;
    }
    if (end - s < 2) return -1;
    static const char esc_in[] = "\"\\/bfnrt", esc_out[] = "\"\\/\b\f\n\r\t";
    const char *e = memchr(esc_in, s[1], sizeof esc_in - 1);
    if (e) {
        out[0] = (unsigned char)esc_out[e - esc_in];
        *n = 1;
        *p = s + 2;
        return 1;
    }
    if (s[1] != 'u') return -1;
    long u = hex4(s + 2, end);
    if (u < 0) return -1;
    s += 6;
    unsigned long cp = (unsigned long)u;
    if (u >= 0xd800 && u < 0xdc00 && end - s >= 6 && s[0] == '\\' && s[1] == 'u') {
        long lo = hex4(s + 2, end);
        if (lo >= 0xdc00 && lo < 0xe000) {
            cp = 0x10000 + (((unsigned long)u - 0xd800) << 10) + ((unsigned long)lo - 0xdc00);
            s += 6;
        }
    }
    if (cp >= 0xd800 && cp < 0xe000) cp = 0xfffd; /* a lone surrogate */
    *n = utf8_put(cp, out);
    *p = s;
    return 1;
}

static const unsigned char *json_ws(const unsigned char *p, const unsigned char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* Compares one JSON string (p after its opening quote) with name, folding both; moves p
 * past the closing quote. 1 equal, 0 not, -1 bad input. */
static int json_str_eq(const unsigned char **p, const unsigned char *end, const char *name, size_t name_len)
{
    size_t k = 0;
    int same = 1;
    for (;;) {
        unsigned char ch[4];
        size_t n;
        int rc = json_char(p, end, ch, &n);
        if (rc < 0) return -1;
        if (rc == 0) break;
        for (size_t i = 0; i < n; i++, k++)
            if (same && (k >= name_len || cp_rd_fold(ch[i]) != cp_rd_fold((unsigned char)name[k]))) same = 0;
    }
    (*p)++; /* the closing quote */
    return same && k == name_len;
}

int cp_rd_json_names_has(const char *json, size_t len, const char *name, size_t name_len)
{
    if (!json) return 0;
    const unsigned char *p = (const unsigned char *)json, *end = p + len;
    p = json_ws(p, end);
    if (p >= end || *p++ != '[') return 0;
    p = json_ws(p, end);
    if (p < end && *p == ']') return 0;
    for (;;) {
        p = json_ws(p, end);
        if (p >= end || *p++ != '"') return 0;
        int eq = json_str_eq(&p, end, name, name_len);
        if (eq < 0) return 0;
        if (eq) return 1;
        p = json_ws(p, end);
        if (p >= end) return 0;
        if (*p == ']') return 0;
        if (*p++ != ',') return 0;
    }
}

int64_t cp_rd_json_maxlen(const char *json, const char *name, size_t name_len)
{
    if (!json) return -1;
    const unsigned char *p = (const unsigned char *)json, *end = p + strlen(json);
    p = json_ws(p, end);
    if (p >= end || *p++ != '{') return -1;
    p = json_ws(p, end);
    if (p < end && *p == '}') return -1;
    for (;;) {
        p = json_ws(p, end);
        if (p >= end || *p++ != '"') return -1;
        int eq = json_str_eq(&p, end, name, name_len);
        if (eq < 0) return -1;
        p = json_ws(p, end);
        if (p >= end || *p++ != ':') return -1;
        p = json_ws(p, end);
        int64_t v = 0;
        size_t digits = 0;
        while (p < end && *p >= '0' && *p <= '9' && digits < 12) v = v * 10 + (*p++ - '0'), digits++;
        if (!digits) return -1;
        if (eq) return v;
        p = json_ws(p, end);
        if (p >= end || *p == '}') return -1;
        if (*p++ != ',') return -1;
    }
}

/* ---- duration ranges, table names ----------------------------------------------------------- */

int cp_rd_cold_range_overlaps(int64_t duration_range, int64_t min_ms, int64_t max_ms)
{
    int r = cp_cold_range_of_upper(duration_range);
    int64_t lo = r < 0 ? 0 : cp_cold_range_lower(r);
    int64_t hi = r < 0 ? INT64_MAX : (int64_t)cp_cold_range_upper(r); /* exclusive */
    if (r == CP_COLD_RANGES - 1) hi = INT64_MAX;                       /* > 90 s: unbounded */
    return lo <= max_ms && hi > min_ms && min_ms <= max_ms;
}

/* ---- string sets ------------------------------------------------------------------------------ */

int cp_rd_strset_add(cp_rd_strset *s, const char *p, size_t n)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        char **v = realloc(s->v, cap * sizeof *v);
        if (!v) return CP_ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    char *c = malloc(n + 1);
    if (!c) return CP_ENOMEM;
    memcpy(c, p, n);
    c[n] = 0;
    s->v[s->n++] = c;
    return CP_OK;
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void cp_rd_strset_seal(cp_rd_strset *s)
{
    if (s->n > 1) qsort(s->v, s->n, sizeof *s->v, str_cmp);
}

int cp_rd_strset_has(const cp_rd_strset *s, const char *p)
{
    if (s->all) return 1;
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->v[mid], p);
        if (c == 0) return 1;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return 0;
}

void cp_rd_strset_free(cp_rd_strset *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* ---- the index rule -------------------------------------------------------------------------- */

int cp_rd_cold_pruned(const cp_cold_query *q, const cp_rd_strset *sets, const cp_cold_file *f)
{
    if (!f->uuid || !f->indexed_params) return 0;
    size_t ilen = strlen(f->indexed_params);
    for (size_t i = 0; i < q->nparams; i++) {
        const cp_cold_param *t = &q->params[i];
        if (!cp_rd_json_names_has(f->indexed_params, ilen, t->name, t->name_len)) continue;
        if (!cp_rd_strset_has(&sets[i], f->uuid)) return 1;
    }
    return 0;
}
