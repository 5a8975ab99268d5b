/* http_query.c -- the calls query from its text parameters (docs/API.md "Common filters"):
 * window, exact names, a list of pods, duration, method, q, error, sort, limit, cursor,
 * columns.
 * Every value is untrusted: lengths are bounded, numbers strictly decimal, and any
 * problem is a 400 that names the parameter.
 */
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOUR_MS (3600LL * 1000)
#define MAX_EPOCH_MS 253402300799999LL /* 9999-12-31T23:59:59.999Z */

/* A non-negative decimal of at most 18 digits. CP_EINVAL otherwise. */
static void add_param(void *ud, const char *name, size_t nlen, const char *val, size_t vlen)
{
    http_query *q = ud;
    if (q->nparams < CP_ARRAY_LEN(q->params)) q->params[q->nparams++] = (cp_cold_param){name, val, nlen, vlen};
}

static int parse_dec(const char *s, size_t n, int64_t *out)
{
    if (n == 0 || n > 18) return CP_EINVAL;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return CP_EINVAL;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return CP_OK;
}

/* An optional epoch-ms parameter: 1 if present and valid, 0 if absent (or empty),
 * -1 with the 400 set. */
static int get_time(const http_args *a, const char *name, int64_t *out, http_out *o)
{
    const http_arg *x = http_arg_get(a, name);
    if (!x || x->vlen == 0) return 0;
    if (parse_dec(x->val, x->vlen, out) != CP_OK || *out > MAX_EPOCH_MS) {
        http_bad_param(o, name, "bad_parameter", "'%s' must be epoch milliseconds", name);
        return -1;
    }
    return 1;
}

int http_parse_window(cp_http *h, const http_args *a, int64_t *from, int64_t *to, http_out *o)
{
    int hf = get_time(a, "from", from, o);
    if (hf < 0) return -1;
    int ht = get_time(a, "to", to, o);
    if (ht < 0) return -1;
    if (!ht) *to = cp_now_ms();
    if (!hf) *from = *to > HOUR_MS ? *to - HOUR_MS : 0;
    if (*from >= *to) {
        http_bad_param(o, "from", "bad_range", "'from' must be before 'to'");
        return -1;
    }
    if (*to - *from > h->cfg->max_span_ms) {
        http_bad_param(o, "to", "span_too_large", "the window is longer than the maximum of %lld ms",
                       (long long)h->cfg->max_span_ms);
        return -1;
    }
    return 0;
}

/* Counts UTF-8 characters (bytes that do not continue a sequence). */
static size_t utf8_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* An optional bounded text parameter copied into *out (NULL when absent or empty). */
static int get_text(const http_args *a, const char *name, size_t max, char **out, http_out *o)
{
    const http_arg *x = http_arg_get(a, name);
    *out = NULL;
    if (!x || x->vlen == 0) return 0;
    if (x->vlen > max) {
        http_bad_param(o, name, "parameter_too_long", "'%s' is longer than %zu bytes", name, max);
        return -1;
    }
    *out = strndup(x->val, x->vlen);
    if (!*out) {
        http_oom(o);
        return -1;
    }
    return 0;
}

static int get_bool(const http_args *a, const char *name, int *out, http_out *o)
{
    const http_arg *x = http_arg_get(a, name);
    *out = 0;
    if (!x || x->vlen == 0) return 0;
    if (!strcmp(x->val, "true") || !strcmp(x->val, "1")) *out = 1;
    else if (strcmp(x->val, "false") != 0 && strcmp(x->val, "0") != 0) {
        http_bad_param(o, name, "bad_parameter", "'%s' must be true or false", name);
        return -1;
    }
    return 0;
}

/* An optional count in [1, max]; *out keeps its default when absent. */
static int get_count(const http_args *a, const char *name, uint64_t max, const char *code, uint64_t *out,
                     http_out *o)
{
    const http_arg *x = http_arg_get(a, name);
    int64_t v;
    if (!x || x->vlen == 0) return 0;
    if (parse_dec(x->val, x->vlen, &v) != CP_OK || v < 1) {
        http_bad_param(o, name, "bad_parameter", "'%s' must be a positive integer", name);
        return -1;
    }
    if ((uint64_t)v > max) {
        http_bad_param(o, name, code, "'%s' is larger than the maximum of %llu", name, (unsigned long long)max);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

/* sort: a column name with an optional '-' (descending) or '+'; "duration" and "ts"
 * are aliases of duration_ms and ts_ms. Surrounding spaces are dropped: an unencoded
 * "+" in a query string arrives as a space. */
static int get_sort(const http_args *a, cp_sort_col *col, int *desc, http_out *o)
{
    const http_arg *x = http_arg_get(a, "sort");
    char s[72];
    size_t n = 0;
    if (x && x->vlen > 64) goto bad;
    if (x) {
        const char *b = x->val, *e = x->val + x->vlen;
        while (b < e && *b == ' ') b++;
        while (e > b && e[-1] == ' ') e--;
        n = (size_t)(e - b);
        memcpy(s, b, n);
    }
    s[n] = 0;
    if (cp_sort_parse(s, n, col, desc) == CP_OK) return 0;
    char name[80];
    size_t sign = n && (s[0] == '-' || s[0] == '+');
    const char *base = s + sign;
    const char *alias = !strcmp(base, "duration") ? "duration_ms" : !strcmp(base, "ts") ? "ts_ms" : NULL;
    if (alias) {
        int len = snprintf(name, sizeof name, "%s%s", sign ? (s[0] == '-' ? "-" : "+") : "", alias);
        if (cp_sort_parse(name, (size_t)len, col, desc) == CP_OK) return 0;
    }
bad:
    http_bad_param(o, "sort", "bad_parameter", "'sort' must be a column name, optionally with a leading '-'");
    return -1;
}

/* Hash of everything that selects or orders rows: a cursor is valid only for it. Each
 * value is tagged and length-prefixed so different filters cannot collide by
 * concatenation. */
static uint64_t hash_field(uint64_t h, char tag, const void *p, size_t n)
{
    uint64_t len = n;
    h = cp_fnv64(h, &tag, 1);
    h = cp_fnv64(h, &len, sizeof len);
    return cp_fnv64(h, p, n);
}

static uint64_t hash_text(uint64_t h, char tag, const char *s)
{
    return s ? hash_field(h, tag, s, strlen(s)) : hash_field(h, (char)(tag | 0x80), "", 0);
}

static uint64_t query_hash(const http_query *q, const char *qtext, size_t qlen)
{
    int64_t nums[8] = {q->from_ms, q->to_ms, q->dur.min_ms, q->dur.max_ms, q->errors_only, (int64_t)q->sort, q->desc,
                       q->hide_system};
    uint64_t h = hash_field(CP_FNV_SEED, 'N', nums, sizeof nums);
    h = hash_text(h, 'n', q->ns);
    h = hash_text(h, 's', q->service);
    h = hash_text(h, 'p', q->pod);
    h = hash_text(h, 'm', q->method);
    if (q->npods) { /* sorted and unique: the same set in any order is the same filter */
        uint64_t np = q->npods;
        h = hash_field(h, 'P', &np, sizeof np);
        for (size_t i = 0; i < q->npods; i++) h = hash_field(h, 'o', q->pods[i].p, q->pods[i].len);
    }
    return hash_field(h, 'q', qtext, qlen);
}

/* Byte order, a prefix first. */
static int name_cmp(const void *x, const void *y)
{
    const http_name *a = x, *b = y;
    int c = memcmp(a->p, b->p, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* pods: a comma-separated list of exact pod names (at most HTTP_MAX_PODS, each 1 to
 * HTTP_MAX_NAME_BYTES bytes), kept sorted and unique for bsearch. */
static int get_pods(const http_args *a, http_query *q, http_out *o)
{
    const http_arg *x = http_arg_get(a, "pods");
    if (!x || x->vlen == 0) return 0;
    size_t n = 1;
    for (size_t i = 0; i < x->vlen; i++) n += x->val[i] == ',';
    if (n > HTTP_MAX_PODS) {
        http_bad_param(o, "pods", "bad_parameter", "'pods' lists more than %d names", HTTP_MAX_PODS);
        return -1;
    }
    q->pods_text = strndup(x->val, x->vlen);
    q->pods = calloc(n, sizeof *q->pods);
    if (!q->pods_text || !q->pods) {
        http_oom(o);
        return -1;
    }
    char *s = q->pods_text, *end = q->pods_text + x->vlen;
    for (size_t i = 0; i < n; i++) {
        char *comma = memchr(s, ',', (size_t)(end - s));
        char *e = comma ? comma : end;
        size_t len = (size_t)(e - s);
        if (len == 0) {
            http_bad_param(o, "pods", "bad_parameter", "'pods' has an empty name");
            return -1;
        }
        if (len > HTTP_MAX_NAME_BYTES) {
            http_bad_param(o, "pods", "bad_parameter", "a name in 'pods' is longer than %d bytes",
                           HTTP_MAX_NAME_BYTES);
            return -1;
        }
        *e = 0;
        q->pods[i] = (http_name){s, len};
        s = e + 1;
    }
    qsort(q->pods, n, sizeof *q->pods, name_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || name_cmp(&q->pods[u - 1], &q->pods[i]) != 0) q->pods[u++] = q->pods[i];
    q->npods = u;
    return 0;
}

/* duration and q, parsed by the query layer. */
static int get_duration_and_search(const http_args *a, http_query *q, http_out *o)
{
    char why[200] = "";
    const http_arg *d = http_arg_get(a, "duration");
    q->dur.min_ms = 0;
    q->dur.max_ms = INT64_MAX;
    if (d && d->vlen) {
        if (d->vlen > 64 || cp_duration_parse(d->val, d->vlen, &q->dur, why, sizeof why) != CP_OK) {
            http_bad_param(o, "duration", "bad_parameter", "bad duration filter: %s", why[0] ? why : "too long");
            return -1;
        }
    }
    const http_arg *s = http_arg_get(a, "q");
    if (s && s->vlen) {
        if (s->vlen > HTTP_MAX_Q_BYTES || utf8_chars(s->val, s->vlen) > CP_SEARCH_MAX_TEXT) {
            http_bad_param(o, "q", "query_too_long", "'q' is longer than %d characters", CP_SEARCH_MAX_TEXT);
            return -1;
        }
        int st = cp_search_parse(s->val, s->vlen, &q->search, why, sizeof why);
        if (st == CP_ENOMEM) {
            http_oom(o);
            return -1;
        }
        if (st != CP_OK) {
            http_bad_param(o, "q", "bad_parameter", "bad search: %s", why[0] ? why : "invalid");
            return -1;
        }
        q->nparams = 0;
        cp_search_required_params(q->search, add_param, q);
        if (cp_search_is_empty(q->search)) {
            cp_search_free(q->search);
            q->search = NULL;
        }
    }
    return 0;
}

/* cursor: must parse, belong to these filters and sort, and not have expired. */
static int get_cursor(cp_http *h, const http_args *a, http_query *q, http_out *o)
{
    const http_arg *x = http_arg_get(a, "cursor");
    if (!x || x->vlen == 0) return 0;
    if (x->vlen >= CP_CURSOR_MAX || cp_cursor_parse(x->val, x->vlen, &q->cursor) != CP_OK) {
        http_bad_param(o, "cursor", "bad_cursor", "malformed cursor");
        return -1;
    }
    if (q->cursor.filter_hash != q->hash || q->cursor.key.col != q->sort || !q->cursor.key.desc != !q->desc) {
        http_bad_param(o, "cursor", "cursor_mismatch", "the cursor was issued for other filters or another sort");
        return -1;
    }
    if (cp_now_ms() - q->cursor.issued_ms > h->cfg->cursor_ttl_ms) {
        http_error(o, 410, "cursor_expired", "the cursor has expired; start again from the first page");
        http_error_field(o, "parameter", "cursor");
        return -1;
    }
    q->has_cursor = 1;
    return 0;
}

/* Copies the asker's namespace set into q (auth.c): -1 with a 503 when out of memory. */
static int copy_scope(const http_args *a, http_query *q, http_out *o)
{
    const http_who *w = a->who;
    if (!w || w->p.all_namespaces) return 0;
    q->ns_limited = 1;
    if (!w->p.nns) return 0;
    size_t bytes = 0;
    for (size_t i = 0; i < w->p.nns; i++) bytes += w->ns_names[i].len;
    q->ns_in = malloc(w->p.nns * sizeof *q->ns_in);
    q->ns_in_text = malloc(bytes ? bytes : 1);
    if (!q->ns_in || !q->ns_in_text) {
        http_oom(o);
        return -1;
    }
    for (size_t i = 0, at = 0; i < w->p.nns; i++) {
        memcpy(q->ns_in_text + at, w->ns_names[i].p, w->ns_names[i].len);
        q->ns_in[i] = (cp_name){q->ns_in_text + at, w->ns_names[i].len};
        at += w->ns_names[i].len;
    }
    q->nns_in = w->p.nns;
    return 0;
}

int http_query_parse(cp_http *h, const http_args *a, unsigned flags, http_query *q, http_out *o)
{
    memset(q, 0, sizeof *q);
    q->sort = CP_SORT_TS;
    q->desc = 1;
    q->limit = 100 < h->cfg->max_limit ? 100 : h->cfg->max_limit;
    q->columns = 1000;
    if (copy_scope(a, q, o) != 0) return -1;
    if (http_parse_window(h, a, &q->from_ms, &q->to_ms, o) != 0) return -1;
    if (get_text(a, "namespace", HTTP_MAX_NAME_BYTES, &q->ns, o) || get_text(a, "service", HTTP_MAX_NAME_BYTES, &q->service, o) ||
        get_text(a, "pod", HTTP_MAX_NAME_BYTES, &q->pod, o) || get_text(a, "method", HTTP_MAX_NAME_BYTES, &q->method, o) ||
        get_bool(a, "error", &q->errors_only, o) || get_bool(a, "hide_system", &q->hide_system, o) ||
        get_duration_and_search(a, q, o) || get_pods(a, q, o))
        return -1;
    q->match = (http_match){q->search, q->pods, q->npods, q->hide_system, h->cfg->idle_methods, h->cfg->nidle_methods};
    if (!q->match.idle) {
        q->match.idle = cp_system_idle_default;
        q->match.nidle = cp_system_idle_default_count;
    }
    if (q->search) {
        const char *nd[CP_SEARCH_MAX_TERMS];
        size_t nl[CP_SEARCH_MAX_TERMS];
        q->nneedles = cp_search_needles(q->search, nd, nl, CP_SEARCH_MAX_TERMS);
        for (size_t i = 0; i < q->nneedles; i++) q->needles[i] = (cp_name){nd[i], nl[i]};
    }
    q->sel = (cp_rollup_sel){q->npods ? q->pods : NULL, q->npods, q->hide_system,
                             q->hide_system ? cp_rollup_idle_fp(q->match.idle, q->match.nidle) : 0, q->search != NULL};
    if ((flags & HTTP_Q_SORT) && get_sort(a, &q->sort, &q->desc, o)) return -1;
    if ((flags & HTTP_Q_STREAM) && get_bool(a, "stream", &q->stream, o)) return -1;
    if (flags & HTTP_Q_COLUMNS) {
        uint64_t c = q->columns;
        if (get_count(a, "columns", HTTP_STATS_MAX_COLUMNS, "bad_parameter", &c, o)) return -1;
        q->columns = (unsigned)c;
    }
    const http_arg *qt = http_arg_get(a, "q");
    q->hash = query_hash(q, qt ? qt->val : "", qt ? qt->vlen : 0);
    if (flags & HTTP_Q_PAGING) {
        uint64_t lim = q->limit;
        if (get_count(a, "limit", h->cfg->max_limit, "limit_too_large", &lim, o)) return -1;
        q->limit = (size_t)lim;
        if (get_cursor(h, a, q, o)) return -1;
    }
    return 0;
}

void http_query_free(http_query *q)
{
    free(q->ns);
    free(q->service);
    free(q->pod);
    free(q->method);
    free(q->pods_text);
    free(q->pods);
    free(q->ns_in);
    free(q->ns_in_text);
    cp_search_free(q->search);
    memset(q, 0, sizeof *q);
}


/* The filter's extra predicate: the pods list, then the search syntax. */
static int match_call(void *ud, const cp_call_view *v)
{
    const http_match *m = ud;
    if (m->npods) {
        http_name pod = {v->pod ? v->pod : "", v->pod ? v->pod_len : 0};
        if (!bsearch(&pod, m->pods, m->npods, sizeof *m->pods, name_cmp)) return 0;
    }
    if (m->hide_system && cp_system_call(v, m->idle, m->nidle)) return 0;
    return !m->search || cp_search_match(m->search, v);
}

void http_query_filter(const cp_http *h, const http_query *q, cp_call_filter *f)
{
    memset(f, 0, sizeof *f);
    f->from_ms = q->from_ms;
    f->to_ms = q->to_ms;
    f->ns = q->ns;
    f->ns_limited = q->ns_limited;
    f->ns_in = q->ns_in;
    f->nns_in = q->nns_in;
    f->service = q->service;
    f->pod = q->pod;
    f->min_duration_ms = q->dur.min_ms;
    f->max_duration_ms = q->dur.max_ms;
    f->errors_only = q->errors_only;
    if (q->search || q->npods || q->hide_system) {
        f->match = match_call;
        f->match_ud = (void *)&q->match; /* read-only; q outlives the search */
        f->sel = &q->sel;
    }
    if (q->search) {
        f->params = q->params;
        f->nparams = q->nparams;
        f->needles = q->nneedles ? q->needles : NULL;
        f->nneedles = q->nneedles;
    }
    f->method_substr = q->method;
    f->sort = q->sort;
    f->desc = q->desc;
    f->after = q->has_cursor ? &q->cursor.key : NULL;
    f->limit = q->limit;
    f->max_scan = h->cfg->max_scan;
}


int http_time_id_cursor(const http_args *a, int64_t *ms, int64_t *id, http_out *o)
{
    const http_arg *c = http_arg_get(a, "cursor");
    if (!c || !c->vlen) return 0;
    long long t, n;
    char tail;
    if (c->vlen > 40 || sscanf(c->val, "%lld_%lld%c", &t, &n, &tail) != 2 || t < 0 || n <= 0) {
        http_bad_param(o, "cursor", "bad_cursor", "the cursor is not one this server gave");
        return -1;
    }
    *ms = t;
    *id = n;
    return 0;
}
