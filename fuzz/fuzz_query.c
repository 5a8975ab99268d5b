/* fuzz_query.c -- libFuzzer target: every parser of the query layer (cp_query.h).
 *
 * The whole input is offered, as text from a query string, to each parser, and checked:
 *   - duration: a filter has 0 <= min <= max; white space is ignored (the input with its
 *     white space removed parses the same); a failure has a reason;
 *   - search: parses or fails with a reason; a parsed search matches the four-call
 *     dataset of ui.md §3.5 and a view whose params JSON is the input itself (malformed
 *     JSON must be walked safely); an empty search matches everything;
 *   - params JSON: when cp_params_each accepts the input, re-encoding what it reported
 *     with cp_json_str reads back the same (name, value) sequence;
 *   - cursor and call id: an accepted text is canonical (re-formats to the same text);
 *     cursors and refs built from input bytes format and re-parse to equal values;
 *   - sort: an accepted column name is the column's name, with an optional sign;
 *   - the search's prefilter (cp_search_needles): a call the search matches holds one of
 *     the needles in its method, pod, a param name or a value.
 *
 * Differential check of the matcher: the input also reads as a recipe (pieces split at
 * NUL bytes: method, pod, control bytes, then params as name\1value\2value...). The
 * params are written as JSON (escaping printable characters as \uXXXX or \/ and adding
 * white space as the control bytes say, long values repeated past the matcher's
 * unescaping window), search terms are generated from slices of those strings, and
 * cp_search_match must agree with a slow reference: lowercase both sides, memmem.
 */
#include "fuzz_common.h"
#include "model/cp_model.h"
#include "query/cp_query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- small text helpers ------------------------------------------------------------------ */

static int fq_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

static uint8_t fq_lower(uint8_t c) { return c >= 'A' && c <= 'Z' ? (uint8_t)(c | 0x20) : c; }

/* Reference substring test: both sides lowercased (ASCII), then memmem. */
static int fq_contains(const uint8_t *h, size_t hn, const uint8_t *nd, size_t nn)
{
    if (nn == 0) return 1;
    if (nn > hn) return 0;
    uint8_t *a = malloc(hn), *b = malloc(nn);
    for (size_t i = 0; i < hn; i++) a[i] = fq_lower(h[i]);
    for (size_t i = 0; i < nn; i++) b[i] = fq_lower(nd[i]);
    int r = memmem(a, hn, b, nn) != NULL;
    free(a);
    free(b);
    return r;
}

static int fq_eq_ci(const uint8_t *a, size_t an, const char *b, size_t bn)
{
    if (an != bn) return 0;
    for (size_t i = 0; i < an; i++)
        if (fq_lower(a[i]) != fq_lower((uint8_t)b[i])) return 0;
    return 1;
}

/* ---- the plain parsers ------------------------------------------------------------------- */

static void check_duration(const uint8_t *data, size_t size)
{
    cp_duration_filter f, g;
    char err[128], err2[128];
    int st = cp_duration_parse((const char *)data, size, &f, err, sizeof err);
    FZ_CHECK(st == CP_OK || st == CP_EINVAL, "duration status %d", st);
    if (st == CP_OK) FZ_CHECK(f.min_ms >= 0 && f.min_ms <= f.max_ms, "duration [%lld, %lld]", (long long)f.min_ms, (long long)f.max_ms);
    else FZ_CHECK(err[0] != '\0', "duration failed without a reason");
    /* white space is ignored anywhere */
    char *tight = malloc(size + 1);
    size_t n = 0;
    for (size_t i = 0; i < size; i++)
        if (!fq_space(data[i])) tight[n++] = (char)data[i];
    int st2 = cp_duration_parse(tight, n, &g, err2, sizeof err2);
    FZ_CHECK(st2 == st, "duration: %d, without white space %d", st, st2);
    if (st == CP_OK) FZ_CHECK(f.min_ms == g.min_ms && f.max_ms == g.max_ms, "duration differs without white space");
    free(tight);
}

typedef struct fq_pairs {
    cp_buf names;   /* each: u32 length + bytes */
    cp_buf vals;
    size_t n;
} fq_pairs;

static void fq_put(cp_buf *b, const char *s, size_t n)
{
    uint32_t len = (uint32_t)n;
    cp_buf_append(b, &len, sizeof len);
    cp_buf_append(b, s, n);
}

static int fq_collect(void *ud, const char *name, size_t nlen, const char *val, size_t vlen)
{
    fq_pairs *p = ud;
    FZ_CHECK(fz_valid_utf8((const uint8_t *)name, nlen) && fz_valid_utf8((const uint8_t *)val, vlen),
             "cp_params_each handed out invalid UTF-8");
    fq_put(&p->names, name, nlen);
    fq_put(&p->vals, val, vlen);
    p->n++;
    return 0;
}

static void fq_pairs_init(fq_pairs *p)
{
    memset(p, 0, sizeof *p);
    cp_buf_init(&p->names);
    cp_buf_init(&p->vals);
}

static void fq_pairs_free(fq_pairs *p)
{
    cp_buf_free(&p->names);
    cp_buf_free(&p->vals);
}

/* Accepted params JSON re-encodes (names grouped in order) to JSON that reads back the same. */
static void check_params(const uint8_t *data, size_t size)
{
    fq_pairs a, b;
    fq_pairs_init(&a);
    fq_pairs_init(&b);
    int st = cp_params_each((const char *)data, size, fq_collect, &a);
    FZ_CHECK(st == CP_OK || st == CP_ECORRUPT, "params status %d", st);
    if (st == CP_OK) {
        cp_buf json;
        cp_buf_init(&json);
        cp_buf_putc(&json, '{');
        size_t on = 0, ov = 0;
        for (size_t i = 0; i < a.n; i++) {
            uint32_t nl, vl;
            memcpy(&nl, a.names.data + on, 4);
            memcpy(&vl, a.vals.data + ov, 4);
            if (i) cp_buf_putc(&json, ',');
            cp_json_str(&json, (const char *)a.names.data + on + 4, nl);
            cp_buf_puts(&json, ":[");
            cp_json_str(&json, (const char *)a.vals.data + ov + 4, vl);
            cp_buf_putc(&json, ']');
            on += 4 + nl;
            ov += 4 + vl;
        }
        cp_buf_putc(&json, '}');
        st = cp_params_each((const char *)json.data, json.len, fq_collect, &b);
        FZ_CHECK(st == CP_OK, "re-encoded params JSON rejected: %d", st);
        /* (every pair adds a 4-byte length to both buffers: n > 0 means neither is NULL) */
        FZ_CHECK(a.n == b.n && a.names.len == b.names.len && a.vals.len == b.vals.len &&
                     (a.n == 0 || (memcmp(a.names.data, b.names.data, a.names.len) == 0 &&
                                   memcmp(a.vals.data, b.vals.data, a.vals.len) == 0)),
                 "params differ after a round trip through cp_json_str");
        cp_buf_free(&json);
    }
    fq_pairs_free(&a);
    fq_pairs_free(&b);
}

/* Field by field: cp_call_ref has padding, so memcmp would compare garbage. */
static int fq_ref_eq(const cp_call_ref *a, const cp_call_ref *b)
{
    return a->ts_ms == b->ts_ms && a->restart_ms == b->restart_ms && a->trace_file_index == b->trace_file_index &&
           a->buffer_offset == b->buffer_offset && a->record_index == b->record_index && a->pod_hash == b->pod_hash;
}

static int fq_cursor_eq(const cp_cursor *a, const cp_cursor *b)
{
    const cp_sort_key *x = &a->key, *y = &b->key;
    if (a->filter_hash != b->filter_hash || a->issued_ms != b->issued_ms || x->col != y->col || !!x->desc != !!y->desc)
        return 0;
    if (!fq_ref_eq(&x->ref, &y->ref)) return 0;
    if (cp_sort_is_text(x->col)) {
        size_t n = x->text_len < sizeof x->text ? x->text_len : sizeof x->text - 1;
        return y->text_len == n && memcmp(x->text, y->text, n) == 0;
    }
    return x->num == y->num;
}

static void check_ids(const uint8_t *data, size_t size)
{
    /* texts: accepted means canonical */
    cp_cursor c;
    char text[CP_CURSOR_MAX];
    if (cp_cursor_parse((const char *)data, size, &c) == CP_OK) {
        FZ_CHECK(c.key.col < CP_SORT_COUNT && (c.key.desc == 0 || c.key.desc == 1), "parsed cursor out of range");
        FZ_CHECK(c.key.text_len < sizeof c.key.text, "cursor text of %zu bytes", c.key.text_len);
        cp_cursor_format(&c, text);
        FZ_CHECK(strlen(text) == size && memcmp(text, data, size) == 0, "accepted cursor is not canonical");
    }
    cp_call_ref r, r2;
    char id[CP_CALL_ID_MAX];
    if (cp_call_id_parse((const char *)data, size, &r) == CP_OK) {
        cp_call_id_format(&r, id);
        FZ_CHECK(strlen(id) == size && memcmp(id, data, size) == 0, "accepted call id is not canonical");
    }
    /* values: anything formats and parses back */
    memset(&c, 0, sizeof c);
    uint8_t raw[8 * 8];
    memset(raw, 0, sizeof raw);
    memcpy(raw, data, size < sizeof raw ? size : sizeof raw);
    memcpy(&c.filter_hash, raw, 8);
    memcpy(&c.issued_ms, raw + 8, 8);
    memcpy(&c.key.num, raw + 16, 8);
    memcpy(&r.ts_ms, raw + 24, 8);
    memcpy(&r.restart_ms, raw + 32, 8);
    memcpy(&r.trace_file_index, raw + 40, 4);
    memcpy(&r.buffer_offset, raw + 44, 4);
    memcpy(&r.record_index, raw + 48, 4);
    memcpy(&r.pod_hash, raw + 56, 8);
    c.key.ref = r;
    c.key.col = (cp_sort_col)(raw[52] % CP_SORT_COUNT);
    c.key.desc = raw[53] & 3;
    c.key.text_len = size > 64 ? size - 64 : 0;
    if (c.key.text_len > sizeof c.key.text) c.key.text_len = sizeof c.key.text + raw[54]; /* over: cut */
    memcpy(c.key.text, data + (size > 64 ? 64 : size),
           c.key.text_len < sizeof c.key.text ? c.key.text_len : sizeof c.key.text);
    cp_cursor back;
    cp_cursor_format(&c, text);
    FZ_CHECK(strlen(text) < CP_CURSOR_MAX, "cursor text too long");
    FZ_CHECK(cp_cursor_parse(text, strlen(text), &back) == CP_OK, "formatted cursor rejected: %s", text);
    FZ_CHECK(fq_cursor_eq(&c, &back), "cursor changed in a round trip");
    cp_call_id_format(&r, id);
    FZ_CHECK(cp_call_id_parse(id, strlen(id), &r2) == CP_OK, "formatted id rejected: %s", id);
    FZ_CHECK(fq_ref_eq(&r, &r2), "call id changed in a round trip: %s", id);

    cp_sort_col col;
    int desc;
    if (cp_sort_parse((const char *)data, size, &col, &desc) == CP_OK && size > 0) {
        size_t skip = data[0] == '-' || data[0] == '+';
        const char *name = cp_sort_name(col);
        FZ_CHECK(name && strlen(name) == size - skip && memcmp(name, data + skip, size - skip) == 0,
                 "sort column parsed from other text");
        FZ_CHECK(desc == (data[0] == '-'), "sort direction wrong");
    }
}

/* ---- search: the ui.md dataset and the input as params JSON ---------------------------------- */

static void check_search_text(const uint8_t *data, size_t size)
{
    static const struct { const char *m, *pod, *json; } ds[] = {
        {"void com.acme.OrderController.create()", "orders-7d9f-abcde_1700000000000",
         "{\"nc.user\":[\"sysadm\"],\"web.method\":[\"POST\"],\"web.url\":[\"http://x/api/orders\"]}"},
        {"void com.acme.OrderController.list()", "orders-7d9f-fghij_1700000000000",
         "{\"nc.user\":[\"administrator\"],\"web.method\":[\"GET\"],\"web.url\":[\"http://x/api/orders?page=2\"]}"},
        {"void com.acme.HealthController.live()", "orders-7d9f-abcde_1700000000000",
         "{\"web.method\":[\"GET\"],\"web.url\":[\"http://x/health/live\"]}"},
        {"void com.acme.Jobs.run()", "billing-5c6d-klmno_1700000000000",
         "{\"_hidden\":[\"x\"],\"job.name\":[\"test page rebuild\"],\"nc.user\":[\"sysadm\"],\"q\\\"\":[\"a\\\\b\\u00e9\"]}"},
    };
    cp_search *q = NULL;
    char err[256];
    int st = cp_search_parse((const char *)data, size, &q, err, sizeof err);
    FZ_CHECK(st == CP_OK || st == CP_EINVAL, "search status %d", st);
    if (st != CP_OK) {
        FZ_CHECK(q == NULL && err[0] != '\0', "failed search parse left a search or no reason");
        return;
    }
    FZ_CHECK(q != NULL, "search parse OK without a search");
    int empty = cp_search_is_empty(q);
    for (size_t i = 0; i < CP_ARRAY_LEN(ds); i++) {
        cp_call_view v = {ds[i].m, strlen(ds[i].m), ds[i].pod, strlen(ds[i].pod), ds[i].json, strlen(ds[i].json)};
        int m = cp_search_match(q, &v);
        FZ_CHECK(m == 0 || m == 1, "match returned %d", m);
        if (empty) FZ_CHECK(m == 1, "an empty search rejected a call");
    }
    /* the input as a (probably malformed) params JSON: safe to walk */
    cp_call_view raw = {"m", 1, "p", 1, (const char *)data, size};
    int m = cp_search_match(q, &raw);
    FZ_CHECK(m == 0 || m == 1, "match returned %d", m);
    size_t req = cp_search_required_params(q, NULL, NULL);
    FZ_CHECK(req <= CP_SEARCH_MAX_TERMS, "%zu required params", req);
    cp_search_free(q);
}

/* ---- search: differential check against a reference matcher -------------------------------- */

#define FQ_MAX_PIECES 40

typedef struct fq_param {
    cp_buf name;           /* UTF-8 */
    cp_buf vals[4];
    size_t nvals;
} fq_param;

typedef struct fq_recipe {
    cp_buf method, pod;
    const uint8_t *ctl;
    size_t nctl, ictl;
    fq_param params[FQ_MAX_PIECES];
    size_t nparams;
} fq_recipe;

static uint8_t fq_ctl(fq_recipe *r) { return r->nctl ? r->ctl[r->ictl++ % r->nctl] : 0; }

/* Input bytes as Latin-1 -> UTF-8, so every string is valid and cp_json_str keeps it. */
static void fq_latin1(cp_buf *out, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] < 0x80) {
            cp_buf_putc(out, p[i]);
        } else {
            cp_buf_putc(out, (uint8_t)(0xC0 | p[i] >> 6));
            cp_buf_putc(out, (uint8_t)(0x80 | (p[i] & 0x3F)));
        }
    }
}

static void fq_recipe_read(fq_recipe *r, const uint8_t *data, size_t size)
{
    memset(r, 0, sizeof *r);
    cp_buf_init(&r->method);
    cp_buf_init(&r->pod);
    const uint8_t *pieces[FQ_MAX_PIECES + 3];
    size_t lens[FQ_MAX_PIECES + 3], np = 0, start = 0;
    for (size_t i = 0; i <= size && np < CP_ARRAY_LEN(pieces); i++) {
        if (i == size || data[i] == 0) {
            pieces[np] = data + start;
            lens[np++] = i - start;
            start = i + 1;
        }
    }
    if (np > 0) fq_latin1(&r->method, pieces[0], lens[0]);
    if (np > 1) fq_latin1(&r->pod, pieces[1], lens[1]);
    if (np > 2) {
        r->ctl = pieces[2];
        r->nctl = lens[2];
    }
    for (size_t k = 3; k < np; k++) {
        fq_param *p = &r->params[r->nparams++];
        cp_buf_init(&p->name);
        for (int v = 0; v < 4; v++) cp_buf_init(&p->vals[v]);
        const uint8_t *s = pieces[k], *e = s + lens[k];
        const uint8_t *sep = memchr(s, 1, lens[k]);
        fq_latin1(&p->name, s, (size_t)((sep ? sep : e) - s));
        while (sep && p->nvals < 4) {
            const uint8_t *vs = sep + 1;
            sep = memchr(vs, 2, (size_t)(e - vs));
            const uint8_t *ve = sep ? sep : e;
            cp_buf *val = &p->vals[p->nvals++];
            /* sometimes repeat a value past the matcher's 8 KiB unescaping window */
            size_t reps = (fq_ctl(r) & 31) == 31 ? 1 + (size_t)(fq_ctl(r) % 64) * 16 : 1;
            for (size_t k2 = 0; k2 < reps && val->len < (20u << 10); k2++) fq_latin1(val, vs, (size_t)(ve - vs));
        }
    }
}

static void fq_recipe_free(fq_recipe *r)
{
    cp_buf_free(&r->method);
    cp_buf_free(&r->pod);
    for (size_t k = 0; k < r->nparams; k++) {
        cp_buf_free(&r->params[k].name);
        for (int v = 0; v < 4; v++) cp_buf_free(&r->params[k].vals[v]);
    }
}

/* A JSON string with more escapes than cp_json_str writes: \uXXXX for some printable
 * characters (and UTF-16 pairs for none: the strings are BMP), \/ for some slashes. */
static void fq_json_str(fq_recipe *r, cp_buf *out, const cp_buf *s, int style)
{
    if (!(style & 1)) {
        cp_json_str(out, (const char *)s->data, s->len);
        return;
    }
    static const char hex[] = "0123456789abcdef";
    cp_buf_putc(out, '"');
    for (size_t i = 0; i < s->len;) {
        uint8_t c = s->data[i];
        unsigned cp = c;
        size_t k = 1;
        if (c >= 0xC0) { /* two-byte sequences only (Latin-1) */
            cp = (unsigned)(c & 0x1F) << 6 | (s->data[i + 1] & 0x3F);
            k = 2;
        }
        int esc = c < 0x20 || c == '"' || c == '\\' || (fq_ctl(r) & 3) == 0;
        if (c == '/' && (fq_ctl(r) & 1)) cp_buf_puts(out, "\\/");
        else if (!esc) cp_buf_append(out, s->data + i, k);
        else {
            char e[6] = {'\\', 'u', hex[cp >> 12 & 15], hex[cp >> 8 & 15], hex[cp >> 4 & 15], hex[cp & 15]};
            cp_buf_append(out, e, 6);
        }
        i += k;
    }
    cp_buf_putc(out, '"');
}

static void fq_ws(fq_recipe *r, cp_buf *out, int style)
{
    if (style & 2) cp_buf_puts(out, (fq_ctl(r) & 1) ? " " : "\n\t");
}

static void fq_build_json(fq_recipe *r, cp_buf *json)
{
    int style = fq_ctl(r);
    cp_buf_putc(json, '{');
    for (size_t k = 0; k < r->nparams; k++) {
        fq_param *p = &r->params[k];
        if (k) cp_buf_putc(json, ',');
        fq_ws(r, json, style);
        fq_json_str(r, json, &p->name, style);
        fq_ws(r, json, style);
        cp_buf_puts(json, ":[");
        for (size_t v = 0; v < p->nvals; v++) {
            if (v) cp_buf_putc(json, ',');
            fq_ws(r, json, style);
            fq_json_str(r, json, &p->vals[v], style);
        }
        cp_buf_putc(json, ']');
    }
    fq_ws(r, json, style);
    cp_buf_putc(json, '}');
}

enum { FQ_ANY, FQ_PARAM, FQ_METHOD, FQ_POD };

typedef struct fq_term {
    int sign;   /* 0 optional, 1 required, 2 excluded */
    int kind;
    const uint8_t *needle;
    size_t nlen;
    const uint8_t *name;
    size_t name_len;
} fq_term;

static int fq_hit(const fq_recipe *r, const fq_term *t)
{
    switch (t->kind) {
    case FQ_METHOD: return fq_contains(r->method.data, r->method.len, t->needle, t->nlen);
    case FQ_POD: return fq_contains(r->pod.data, r->pod.len, t->needle, t->nlen);
    case FQ_ANY:
        if (fq_contains(r->method.data, r->method.len, t->needle, t->nlen) ||
            fq_contains(r->pod.data, r->pod.len, t->needle, t->nlen))
            return 1;
        for (size_t k = 0; k < r->nparams; k++) {
            const fq_param *p = &r->params[k];
            if (p->name.len && p->name.data[0] == '_') continue;
            if (fq_contains(p->name.data, p->name.len, t->needle, t->nlen)) return 1;
            for (size_t v = 0; v < p->nvals; v++)
                if (fq_contains(p->vals[v].data, p->vals[v].len, t->needle, t->nlen)) return 1;
        }
        return 0;
    default:
        for (size_t k = 0; k < r->nparams; k++) {
            const fq_param *p = &r->params[k];
            if (p->name.len != t->name_len) continue;
            int same = 1;
            for (size_t i = 0; i < t->name_len && same; i++) same = fq_lower(p->name.data[i]) == fq_lower(t->name[i]);
            if (!same) continue;
            for (size_t v = 0; v < p->nvals; v++)
                if (fq_contains(p->vals[v].data, p->vals[v].len, t->needle, t->nlen)) return 1;
        }
        return 0;
    }
}

/* One of the recipe's strings (method, pod, a name or a value). */
static const cp_buf *fq_pick(fq_recipe *r)
{
    uint8_t c = fq_ctl(r);
    if (r->nparams == 0 || c < 64) return (c & 1) ? &r->method : &r->pod;
    fq_param *p = &r->params[fq_ctl(r) % r->nparams];
    if ((c & 1) || p->nvals == 0) return &p->name;
    return &p->vals[fq_ctl(r) % p->nvals];
}

/* Appends one term's text; 0 if the needle cannot be written (all three quotes in it). */
static int fq_term_text(cp_buf *q, const fq_term *t)
{
    static const char quotes[] = "\"'`";
    char quote = 0;
    for (int i = 0; i < 3 && !quote; i++)
        if (!memchr(t->needle, quotes[i], t->nlen)) quote = quotes[i];
    if (!quote) return 0;
    if (q->len) cp_buf_putc(q, ' ');
    if (t->sign) cp_buf_putc(q, t->sign == 1 ? '+' : '-');
    if (t->kind != FQ_ANY) {
        cp_buf_putc(q, '$');
        cp_buf_append(q, t->name, t->name_len);
        cp_buf_putc(q, '=');
    }
    cp_buf_putc(q, (uint8_t)quote);
    cp_buf_append(q, t->needle, t->nlen);
    cp_buf_putc(q, (uint8_t)quote);
    return 1;
}

static size_t fq_chars(const uint8_t *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += (s[i] & 0xC0) != 0x80;
    return c;
}

/* A callback for acceptance checks that only counts. */
static int fq_count(void *ud, const char *name, size_t nlen, const char *val, size_t vlen)
{
    (*(size_t *)ud)++;
    return 0;
}

static void check_search_differential(const uint8_t *data, size_t size)
{
    fq_recipe r;
    fq_recipe_read(&r, data, size);
    cp_buf json, qtext;
    cp_buf_init(&json);
    cp_buf_init(&qtext);
    fq_build_json(&r, &json);
    /* the JSON built is valid (and escapes more than cp_json_str): the strict reader takes it */
    size_t nvals = 0, seen = 0;
    for (size_t k = 0; k < r.nparams; k++) nvals += r.params[k].nvals;
    int pst = cp_params_each((const char *)json.data, json.len, fq_count, &seen);
    FZ_CHECK(pst == CP_OK && seen == nvals, "built params JSON: status %d, %zu of %zu values", pst, seen, nvals);

    /* up to four terms, each a slice of one of the recipe's strings, case flipped */
    fq_term terms[4];
    uint8_t needles[4][64];
    size_t nterms = 0, want = 1 + fq_ctl(&r) % 4;
    for (size_t k = 0; k < want; k++) {
        fq_term *t = &terms[nterms];
        memset(t, 0, sizeof *t);
        uint8_t c = fq_ctl(&r);
        t->sign = c % 3;
        t->kind = (c >> 2) % 4;
        const cp_buf *src = fq_pick(&r);
        size_t off = src->len ? fq_ctl(&r) % src->len : 0;
        size_t len = fq_ctl(&r) % 12;
        if (len > src->len - off) len = src->len - off;
        if (len > sizeof needles[0]) len = sizeof needles[0];
        for (size_t i = 0; i < len; i++) {
            uint8_t b = src->data[off + i];
            needles[nterms][i] = (fq_ctl(&r) & 1) && b >= 'a' && b <= 'z' ? (uint8_t)(b - 32) : b;
        }
        t->needle = needles[nterms];
        t->nlen = len;
        if (t->kind == FQ_PARAM) {
            if (r.nparams == 0) continue;
            const cp_buf *nm = &r.params[fq_ctl(&r) % r.nparams].name;
            int ok = nm->len > 0;
            for (size_t i = 0; i < nm->len && ok; i++) ok = !fq_space(nm->data[i]) && nm->data[i] != '=';
            if (!ok) continue;
            t->name = nm->data;
            t->name_len = nm->len;
            /* a real param called "method" or "node.name" is shadowed by the pseudo-param */
            if (fq_eq_ci(t->name, t->name_len, "method", 6)) t->kind = FQ_METHOD;
            if (fq_eq_ci(t->name, t->name_len, "node.name", 9)) t->kind = FQ_POD;
        } else if (t->kind == FQ_METHOD) {
            t->name = (const uint8_t *)((c & 0x80) ? "METHOD" : "method");
            t->name_len = 6;
        } else if (t->kind == FQ_POD) {
            t->name = (const uint8_t *)((c & 0x80) ? "Node.Name" : "node.name");
            t->name_len = 9;
        }
        if (fq_term_text(&qtext, t)) nterms++;
    }

    cp_search *q = NULL;
    char err[256];
    int st = cp_search_parse((const char *)qtext.data, qtext.len, &q, err, sizeof err);
    int fits = fq_chars(qtext.data, qtext.len) <= CP_SEARCH_MAX_TEXT;
    FZ_CHECK((st == CP_OK) == fits, "generated query (%zu bytes) gives %d: %s", qtext.len, st, err);
    if (st == CP_OK) {
        int any_opt = 0, opt_hit = 0, expect = 1;
        for (size_t k = 0; k < nterms; k++) {
            int h = fq_hit(&r, &terms[k]);
            if (terms[k].sign == 1 && !h) expect = 0;
            if (terms[k].sign == 2 && h) expect = 0;
            if (terms[k].sign == 0) {
                any_opt = 1;
                opt_hit |= h;
            }
        }
        if (any_opt && !opt_hit) expect = 0;
        cp_call_view v = {(const char *)r.method.data, r.method.len, (const char *)r.pod.data, r.pod.len,
                          (const char *)json.data, json.len};
        int got = cp_search_match(q, &v);
        FZ_CHECK(got == expect, "query [%.*s] matched %d, reference says %d (json %zu bytes)", (int)qtext.len,
                 (const char *)qtext.data, got, expect, json.len);
        /* the prefilter is sound: a matching call holds one of its needles somewhere */
        const char *nd[CP_SEARCH_MAX_TERMS];
        size_t nl[CP_SEARCH_MAX_TERMS];
        size_t nn = cp_search_needles(q, nd, nl, CP_SEARCH_MAX_TERMS);
        if (got && nn) {
            int found = 0;
            for (size_t k = 0; k < nn && !found; k++) {
                const uint8_t *x = (const uint8_t *)nd[k];
                found = fq_contains(r.method.data, r.method.len, x, nl[k]) || fq_contains(r.pod.data, r.pod.len, x, nl[k]);
                for (size_t j = 0; j < r.nparams && !found; j++) {
                    const fq_param *pp = &r.params[j];
                    found = fq_contains(pp->name.data, pp->name.len, x, nl[k]);
                    for (size_t vi = 0; vi < pp->nvals && !found; vi++)
                        found = fq_contains(pp->vals[vi].data, pp->vals[vi].len, x, nl[k]);
                }
            }
            FZ_CHECK(found, "query [%.*s] matched a call holding none of its %zu prefilter needles", (int)qtext.len,
                     (const char *)qtext.data, nn);
        }
        cp_search_free(q);
    }
    cp_buf_free(&json);
    cp_buf_free(&qtext);
    fq_recipe_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_duration(data, size);
    check_search_text(data, size);
    check_params(data, size);
    check_ids(data, size);
    check_search_differential(data, size);
    return 0;
}
