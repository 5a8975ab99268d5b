/* footer.c -- the reader's view of FileMetaData (parquet.md §2.6, §3, §9 steps 1-2):
 * decodes the fields it needs from untrusted bytes (skipping everything else), rebuilds
 * the schema tree, computes every leaf's levels and recognises the column shapes of
 * cp_pq_type. Columns of other shapes get type 0 and a reason. */
#include "pq_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define PQ_SCHEMA_DEPTH 32      /* nesting of the schema tree */
#define PQ_MIN_CHUNK_BYTES 16   /* a ColumnChunk with its required fields is never smaller */

/* One SchemaElement, as far as we care. */
typedef struct selem {
    int type;                   /* -1: a group */
    int rep;                    /* -1: absent (the root) */
    const uint8_t *name;
    size_t name_len;
    int32_t nchildren;
    int conv;                   /* -1: none */
    int logical;                /* LogicalType member id, 0: none */
    int int_bits, int_signed;   /* INTEGER */
    int ts_unit;                /* TIMESTAMP: 1 millis, 2 micros, 3 nanos */
} selem;

typedef struct dec {
    pq_tr r;
    char *err;
    size_t errlen;
} dec;

static int corrupt(dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int corrupt(dec *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, d->errlen, fmt, ap);
    va_end(ap);
    return CP_ECORRUPT;
}

/* A Thrift-level failure: the cursor says why. */
static int thrift_fail(dec *d, const char *where)
{
    return corrupt(d, "parquet footer: %s at byte %zu: %s", where, d->r.pos, d->r.why ? d->r.why : "bad value");
}

/* Iterates the fields of the struct at the cursor: `FIELD_LOOP(d, id, t) { body }` runs
 * the body once per field (id, type t) and leaves the loop after the STOP byte. A bad
 * header returns CP_ECORRUPT from the enclosing function (pq_meta_decode adds the
 * message). Nested loops need distinct id names (the last-id variable derives from it). */
#define FIELD_LOOP(d, id, t)                                                                                           \
    int16_t id##_last = 0, id;                                                                                         \
    int t;                                                                                                             \
    for (;;)                                                                                                           \
        if (pq_tr_field(&(d)->r, &id##_last, &id, &t) != CP_OK) return CP_ECORRUPT;                                    \
        else if (t == PQ_T_STOP) break;                                                                                \
        else

/* ---- schema ----------------------------------------------------------------------------- */

static int read_time_unit(dec *d, int *unit)
{
    FIELD_LOOP(d, id, t)
    {
        if (id >= 1 && id <= 3 && t == PQ_T_STRUCT) *unit = id;
        if (pq_tr_skip(&d->r, t, 0) != CP_OK) return CP_ECORRUPT;
    }
    return CP_OK;
}

static int read_logical(dec *d, selem *e)
{
    FIELD_LOOP(d, id, t)
    {
        if (t != PQ_T_STRUCT) {
            if (pq_tr_skip(&d->r, t, 0) != CP_OK) return CP_ECORRUPT;
            continue;
        }
        e->logical = id;
        if (id == PQ_LT_INTEGER) {
            FIELD_LOOP(d, fid, ft)
            {
                int64_t v = 0;
                int b = 0, st;
                if (fid == 1) st = pq_tr_i64(&d->r, ft, &v), e->int_bits = (int)(v & 0xFF);
                else if (fid == 2) st = pq_tr_bool(&d->r, ft, 0, &b), e->int_signed = b;
                else st = pq_tr_skip(&d->r, ft, 0);
                if (st != CP_OK) return CP_ECORRUPT;
            }
        } else if (id == PQ_LT_TIMESTAMP) {
            FIELD_LOOP(d, fid, ft)
            {
                int st;
                if (fid == 2 && ft == PQ_T_STRUCT) st = read_time_unit(d, &e->ts_unit);
                else st = pq_tr_skip(&d->r, ft, 0);
                if (st != CP_OK) return CP_ECORRUPT;
            }
        } else if (pq_tr_skip(&d->r, t, 0) != CP_OK) {
            return CP_ECORRUPT;
        }
    }
    return CP_OK;
}

static int read_selem(dec *d, selem *e)
{
    memset(e, 0, sizeof *e);
    e->type = e->rep = e->conv = -1;
    e->nchildren = -1;
    int has_name = 0;
    FIELD_LOOP(d, id, t)
    {
        int32_t v = 0;
        int st;
        switch (id) {
        case 1: st = pq_tr_i32(&d->r, t, &v), e->type = v; break;
        case 3: st = pq_tr_i32(&d->r, t, &v), e->rep = v; break;
        case 4: st = pq_tr_binary(&d->r, t, &e->name, &e->name_len), has_name = 1; break;
        case 5: st = pq_tr_i32(&d->r, t, &v), e->nchildren = v; break;
        case 6: st = pq_tr_i32(&d->r, t, &v), e->conv = v; break;
        case 10: st = t == PQ_T_STRUCT ? read_logical(d, e) : pq_tr_skip(&d->r, t, 0); break;
        default: st = pq_tr_skip(&d->r, t, 0); break;
        }
        if (st != CP_OK) return CP_ECORRUPT;
    }
    if (!has_name) return corrupt(d, "parquet footer: schema element without a name");
    if (e->type < -1 || e->type > PQ_FIXED_LEN_BYTE_ARRAY || e->rep < -1 || e->rep > PQ_REPEATED)
        return corrupt(d, "parquet footer: schema element with a bad type or repetition");
    return CP_OK;
}

typedef struct tree {
    const selem *s;
    size_t n;
    pq_meta *m;
    size_t leaf_cap;
    dec *d;
} tree;

/* Walks the subtree at *i (pre-order), appending its leaves with their levels. */
static int walk(tree *t, size_t *i, int depth, int def, int rep)
{
    if (depth > PQ_SCHEMA_DEPTH) return corrupt(t->d, "parquet footer: schema nested deeper than %d", PQ_SCHEMA_DEPTH);
    if (*i >= t->n) return corrupt(t->d, "parquet footer: schema ends inside a group");
    const selem *e = &t->s[(*i)++];
    if (e->rep == PQ_OPTIONAL) def++;
    if (e->rep == PQ_REPEATED) def++, rep++;
    if (e->type >= 0) { /* a leaf */
        if (e->nchildren > 0) return corrupt(t->d, "parquet footer: a leaf with children");
        if (t->m->nleaves == t->leaf_cap) {
            size_t cap = t->leaf_cap ? t->leaf_cap * 2 : 16;
            pq_leaf *nl = realloc(t->m->leaves, cap * sizeof *nl);
            if (!nl) return CP_ENOMEM;
            t->m->leaves = nl;
            t->leaf_cap = cap;
        }
        pq_leaf *l = &t->m->leaves[t->m->nleaves++];
        l->type = e->type;
        l->max_def = def;
        l->max_rep = rep;
        return CP_OK;
    }
    int32_t nc = e->nchildren < 0 ? 0 : e->nchildren; /* no num_children: no children */
    /* each child takes at least one element, so this is bounded by the list size */
    if ((size_t)nc > t->n - *i) return corrupt(t->d, "parquet footer: group has more children than elements");
    for (int32_t c = 0; c < nc; c++) {
        int st = walk(t, i, depth + 1, def, rep);
        if (st != CP_OK) return st;
    }
    return CP_OK;
}

static int is_string_leaf(const selem *e)
{
    return e->type == PQ_BYTE_ARRAY && (e->conv == PQ_CT_UTF8 || e->conv == PQ_CT_ENUM || e->conv == PQ_CT_JSON ||
                                        e->logical == PQ_LT_STRING || e->logical == PQ_LT_ENUM ||
                                        e->logical == PQ_LT_JSON);
}

/* Type of a flat leaf, or 0 with *why. Timestamps in micro- or nanoseconds (DuckDB
 * writes micros) read as TS_MS: *ts_div is what their values are divided by. */
static cp_pq_type flat_type(const selem *e, const char **why, int64_t *ts_div)
{
    int conv = e->conv, lt = e->logical;
    switch (e->type) {
    case PQ_BOOLEAN:
        return CP_PQ_BOOL;
    case PQ_INT32:
        if ((conv < 0 || conv == PQ_CT_INT_8 || conv == PQ_CT_INT_16 || conv == PQ_CT_INT_32 || conv == PQ_CT_DATE) &&
            (lt == 0 || lt == PQ_LT_DATE || (lt == PQ_LT_INTEGER && e->int_signed)))
            return CP_PQ_I32;
        *why = "INT32 with an unsigned or decimal annotation";
        return 0;
    case PQ_INT64:
        if (conv == PQ_CT_TIMESTAMP_MILLIS || (lt == PQ_LT_TIMESTAMP && e->ts_unit == 1)) return CP_PQ_TS_MS;
        if (conv == PQ_CT_TIMESTAMP_MICROS || (lt == PQ_LT_TIMESTAMP && e->ts_unit == 2)) {
            *ts_div = 1000;
            return CP_PQ_TS_MS;
        }
        if (lt == PQ_LT_TIMESTAMP && e->ts_unit == 3) {
            *ts_div = 1000000;
            return CP_PQ_TS_MS;
        }
        if (conv == PQ_CT_UINT_64 || (lt == PQ_LT_INTEGER && !e->int_signed)) return CP_PQ_U64;
        if ((conv < 0 || conv == PQ_CT_INT_64) && (lt == 0 || lt == PQ_LT_INTEGER)) return CP_PQ_I64;
        *why = "INT64 with an annotation other than integer or TIMESTAMP(MILLIS)";
        return 0;
    case PQ_BYTE_ARRAY:
        if (is_string_leaf(e)) return CP_PQ_STRING;
        if ((conv < 0 || conv == PQ_CT_BSON) && (lt == 0 || lt == PQ_LT_BSON)) return CP_PQ_BINARY;
        *why = "BYTE_ARRAY with a decimal annotation";
        return 0;
    default:
        *why = "physical type not supported (FLOAT, DOUBLE, INT96, FIXED_LEN_BYTE_ARRAY)";
        return 0;
    }
}

static int opt_or_req(const selem *e) { return e->rep == PQ_OPTIONAL || e->rep == PQ_REQUIRED; }

/* Recognises the map shapes of §3.2 in the elements s[i..end). */
static void recognise_map(const selem *s, size_t i, size_t end, pq_col *c)
{
    const selem *m = &s[i];
    c->why = "a group that is not map<string, string> or map<string, list<string>>";
    if (!(m->conv == PQ_CT_MAP || m->conv == PQ_CT_MAP_KEY_VALUE || m->logical == PQ_LT_MAP) || !opt_or_req(m) ||
        m->nchildren != 1 || end - i < 4)
        return;
    const selem *kv = &s[i + 1], *key = &s[i + 2], *val = &s[i + 3];
    if (kv->type >= 0 || kv->rep != PQ_REPEATED || kv->nchildren != 2) return;
    if (key->type != PQ_BYTE_ARRAY || key->rep != PQ_REQUIRED) return;
    if (!opt_or_req(val)) return;
    c->d_map = m->rep == PQ_OPTIONAL;
    c->d_kv = c->d_map + 1;
    c->pub.optional = m->rep == PQ_OPTIONAL;
    if (val->type == PQ_BYTE_ARRAY && end - i == 4) {
        c->pub.type = CP_PQ_MAP_STR_STR;
        c->why = NULL;
        return;
    }
    if (end - i != 6 || val->type >= 0 || val->nchildren != 1 ||
        !(val->conv == PQ_CT_LIST || val->logical == PQ_LT_LIST))
        return;
    const selem *list = &s[i + 4], *el = &s[i + 5];
    if (list->type >= 0 || list->rep != PQ_REPEATED || list->nchildren != 1) return;
    if (el->type != PQ_BYTE_ARRAY || !opt_or_req(el)) return;
    c->d_val = c->d_kv + (val->rep == PQ_OPTIONAL);
    c->d_list = c->d_val + 1;
    c->pub.type = CP_PQ_MAP_STR_LIST;
    c->why = NULL;
}

static int build_columns(dec *d, const selem *s, size_t n, pq_meta *m)
{
    if (n == 0) return corrupt(d, "parquet footer: empty schema");
    if (s[0].type >= 0) return corrupt(d, "parquet footer: the schema root is a leaf");
    int32_t nroot = s[0].nchildren < 0 ? 0 : s[0].nchildren;
    if (nroot > CP_PQ_MAX_COLUMNS) {
        snprintf(d->err, d->errlen, "parquet footer: %d columns (at most %d)", nroot, CP_PQ_MAX_COLUMNS);
        return CP_ELIMIT;
    }
    m->cols = calloc((size_t)nroot + 1, sizeof *m->cols);
    size_t name_bytes = 0;
    for (size_t i = 0; i < n; i++) name_bytes += s[i].name_len + 1; /* bounded by the footer size */
    m->names = malloc(name_bytes + 1);
    if (!m->cols || !m->names) return CP_ENOMEM;
    tree t = {s, n, m, 0, d};
    size_t i = 1, name_at = 0;
    for (int32_t c = 0; c < nroot; c++) {
        if (i >= n) return corrupt(d, "parquet footer: schema has fewer elements than the root's children");
        size_t start = i, leaf0 = m->nleaves;
        int st = walk(&t, &i, 1, 0, 0);
        if (st != CP_OK) return st;
        pq_col *col = &m->cols[m->ncols++];
        col->leaf = leaf0;
        col->nleaves = m->nleaves - leaf0;
        col->pub.name = m->names + name_at;
        memcpy(m->names + name_at, s[start].name, s[start].name_len);
        name_at += s[start].name_len;
        m->names[name_at++] = 0;
        const selem *e = &s[start];
        if (e->type >= 0) {
            if (e->rep == PQ_REPEATED) col->why = "a repeated leaf";
            else col->pub.type = flat_type(e, &col->why, &col->ts_div);
            col->pub.optional = e->rep == PQ_OPTIONAL;
        } else {
            recognise_map(s, start, i, col);
        }
    }
    if (i != n) return corrupt(d, "parquet footer: schema has %zu elements outside the root", n - i);
    return CP_OK;
}

static int read_schema(dec *d, int t, pq_meta *m)
{
    int et;
    uint32_t n;
    if (pq_tr_list(&d->r, t, &et, &n) != CP_OK || pq_tr_expect(&d->r, et, PQ_T_STRUCT) != CP_OK)
        return thrift_fail(d, "schema");
    selem *s = calloc(n ? n : 1, sizeof *s); /* n is bounded by the footer's bytes */
    if (!s) return CP_ENOMEM;
    int st = CP_OK;
    for (uint32_t i = 0; i < n && st == CP_OK; i++) {
        st = read_selem(d, &s[i]);
        if (st == CP_ECORRUPT && !d->err[0]) st = thrift_fail(d, "schema element");
    }
    if (st == CP_OK) st = build_columns(d, s, n, m);
    free(s);
    return st;
}

/* ---- row groups ------------------------------------------------------------------------- */

static int read_stats(dec *d, pq_stats *s)
{
    s->present = 1;
    FIELD_LOOP(d, id, t)
    {
        int st;
        if (id == 3) st = pq_tr_i64(&d->r, t, &s->null_count);
        else if (id == 5) st = pq_tr_binary(&d->r, t, &s->max, &s->max_len);
        else if (id == 6) st = pq_tr_binary(&d->r, t, &s->min, &s->min_len);
        else st = pq_tr_skip(&d->r, t, 0);
        if (st != CP_OK) return CP_ECORRUPT;
    }
    return CP_OK;
}

static int read_col_meta(dec *d, pq_chunk *c)
{
    int seen = 0;
    FIELD_LOOP(d, id, t)
    {
        int32_t v = 0;
        int st;
        switch (id) {
        case 1: st = pq_tr_i32(&d->r, t, &v), c->type = v; break;
        case 4: st = pq_tr_i32(&d->r, t, &v), c->codec = v; break;
        case 5: st = pq_tr_i64(&d->r, t, &c->num_values); break;
        case 7: st = pq_tr_i64(&d->r, t, &c->total_compressed); break;
        case 9: st = pq_tr_i64(&d->r, t, &c->data_off); break;
        case 11: st = pq_tr_i64(&d->r, t, &c->dict_off); break;
        case 12:
            st = pq_tr_expect(&d->r, t, PQ_T_STRUCT);
            if (st == CP_OK) st = read_stats(d, &c->stats);
            break;
        default: st = pq_tr_skip(&d->r, t, 0); break;
        }
        if (st != CP_OK) return CP_ECORRUPT;
        if (id > 0 && id < 16) seen |= 1 << id;
    }
    int need = 1 << 1 | 1 << 4 | 1 << 5 | 1 << 7 | 1 << 9;
    if ((seen & need) != need) return corrupt(d, "parquet footer: column metadata misses a required field");
    if (c->num_values < 0 || c->total_compressed < 0 || c->data_off < 0)
        return corrupt(d, "parquet footer: negative size or offset in column metadata");
    return CP_OK;
}

static int read_chunk(dec *d, pq_chunk *c)
{
    int has_meta = 0;
    c->dict_off = -1;
    c->stats.null_count = -1;
    FIELD_LOOP(d, id, t)
    {
        int st;
        if (id == 1) return corrupt(d, "parquet footer: column chunk stored in another file (file_path)");
        if (id == 3) {
            st = pq_tr_expect(&d->r, t, PQ_T_STRUCT);
            if (st == CP_OK) st = read_col_meta(d, c);
            has_meta = 1;
        } else {
            st = pq_tr_skip(&d->r, t, 0);
        }
        if (st != CP_OK) return CP_ECORRUPT;
    }
    if (!has_meta) return corrupt(d, "parquet footer: column chunk without metadata (encrypted?)");
    return CP_OK;
}

static int read_row_group(dec *d, pq_rowgroup *g)
{
    int has_rows = 0, has_cols = 0;
    FIELD_LOOP(d, id, t)
    {
        int st;
        if (id == 1 && !has_cols) {
            int et;
            uint32_t n;
            if (pq_tr_list(&d->r, t, &et, &n) != CP_OK || pq_tr_expect(&d->r, et, PQ_T_STRUCT) != CP_OK)
                return CP_ECORRUPT;
            if (n > pq_tr_left(&d->r) / PQ_MIN_CHUNK_BYTES)
                return corrupt(d, "parquet footer: %u column chunks in %zu bytes", n, pq_tr_left(&d->r));
            g->chunks = calloc(n ? n : 1, sizeof *g->chunks);
            if (!g->chunks) return CP_ENOMEM;
            g->nchunks = n;
            has_cols = 1;
            for (uint32_t i = 0; i < n; i++) {
                st = read_chunk(d, &g->chunks[i]);
                if (st != CP_OK) return st;
            }
            continue;
        }
        if (id == 3) {
            st = pq_tr_i64(&d->r, t, &g->num_rows);
            has_rows = 1;
        } else {
            st = pq_tr_skip(&d->r, t, 0);
        }
        if (st != CP_OK) return CP_ECORRUPT;
    }
    if (!has_rows || !has_cols) return corrupt(d, "parquet footer: row group without columns or num_rows");
    if (g->num_rows < 0) return corrupt(d, "parquet footer: negative row count");
    return CP_OK;
}

static int read_row_groups(dec *d, int t, pq_meta *m)
{
    int et;
    uint32_t n;
    if (pq_tr_list(&d->r, t, &et, &n) != CP_OK || pq_tr_expect(&d->r, et, PQ_T_STRUCT) != CP_OK)
        return thrift_fail(d, "row groups");
    if (n > CP_PQ_MAX_ROW_GROUPS) {
        snprintf(d->err, d->errlen, "parquet footer: %u row groups (at most %d)", n, CP_PQ_MAX_ROW_GROUPS);
        return CP_ELIMIT;
    }
    m->rgs = calloc(n ? n : 1, sizeof *m->rgs);
    if (!m->rgs) return CP_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        m->nrgs = i + 1; /* so pq_meta_free frees what was read */
        int st = read_row_group(d, &m->rgs[i]);
        if (st == CP_ECORRUPT && !d->err[0]) st = thrift_fail(d, "row group");
        if (st != CP_OK) return st;
    }
    m->nrgs = n;
    return CP_OK;
}

/* ---- key/value metadata ----------------------------------------------------------------- */

static char *dup_bytes(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        if (n) memcpy(s, p, n);
        s[n] = 0;
    }
    return s;
}

static int read_kv(dec *d, int t, pq_meta *m)
{
    int et;
    uint32_t n;
    if (pq_tr_list(&d->r, t, &et, &n) != CP_OK || pq_tr_expect(&d->r, et, PQ_T_STRUCT) != CP_OK)
        return thrift_fail(d, "key/value metadata");
    if (m->kv) return corrupt(d, "parquet footer: key/value metadata twice");
    m->kv = calloc((size_t)n * 2 + 1, sizeof *m->kv);
    if (!m->kv) return CP_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *k = NULL, *v = NULL;
        size_t kn = 0, vn = 0;
        FIELD_LOOP(d, id, ft)
        {
            int st;
            if (id == 1) st = pq_tr_binary(&d->r, ft, &k, &kn);
            else if (id == 2) st = pq_tr_binary(&d->r, ft, &v, &vn);
            else st = pq_tr_skip(&d->r, ft, 0);
            if (st != CP_OK) return thrift_fail(d, "key/value metadata");
        }
        if (!k) return corrupt(d, "parquet footer: key/value metadata without a key");
        m->kv[m->nkv * 2] = dup_bytes(k, kn);
        m->kv[m->nkv * 2 + 1] = v ? dup_bytes(v, vn) : NULL;
        m->nkv++;
        if (!m->kv[m->nkv * 2 - 2] || (v && !m->kv[m->nkv * 2 - 1])) return CP_ENOMEM;
    }
    return CP_OK;
}

/* ---- FileMetaData ----------------------------------------------------------------------- */

static int decode(dec *d, pq_meta *m)
{
    int seen = 0;
    int16_t last = 0, id;
    int t;
    for (;;) {
        if (pq_tr_field(&d->r, &last, &id, &t) != CP_OK) return thrift_fail(d, "file metadata");
        if (t == PQ_T_STOP) break;
        int st;
        if (id == 2 && !(seen & 4)) st = read_schema(d, t, m);
        else if (id == 3) st = pq_tr_i64(&d->r, t, &m->num_rows) == CP_OK ? CP_OK : thrift_fail(d, "num_rows");
        else if (id == 4 && !(seen & 16)) st = read_row_groups(d, t, m);
        else if (id == 5) st = read_kv(d, t, m);
        else st = pq_tr_skip(&d->r, t, 0) == CP_OK ? CP_OK : thrift_fail(d, "file metadata");
        if (st != CP_OK) return st;
        if (id > 0 && id < 16) seen |= 1 << id;
    }
    if ((seen & (4 | 8 | 16)) != (4 | 8 | 16))
        return corrupt(d, "parquet footer: file metadata misses the schema, num_rows or row groups");
    /* the chunks of every row group are the schema's leaves, in order */
    int64_t total = 0;
    for (size_t g = 0; g < m->nrgs; g++) {
        const pq_rowgroup *rg = &m->rgs[g];
        if (rg->nchunks != m->nleaves)
            return corrupt(d, "parquet footer: row group %zu has %zu column chunks for %zu leaf columns", g,
                           rg->nchunks, m->nleaves);
        for (size_t c = 0; c < rg->nchunks; c++)
            if (rg->chunks[c].type != m->leaves[c].type)
                return corrupt(d, "parquet footer: row group %zu column %zu: type %d, schema says %d", g, c,
                               rg->chunks[c].type, m->leaves[c].type);
        if (__builtin_add_overflow(total, rg->num_rows, &total))
            return corrupt(d, "parquet footer: row count overflows");
    }
    if (total != m->num_rows)
        return corrupt(d, "parquet footer: num_rows %lld but the row groups hold %lld", (long long)m->num_rows,
                       (long long)total);
    return CP_OK;
}

int pq_meta_decode(const uint8_t *p, size_t len, pq_meta *m, char *err, size_t errlen)
{
    char scratch[8];
    dec d;
    memset(m, 0, sizeof *m);
    pq_tr_init(&d.r, p, len);
    d.err = err && errlen ? err : scratch;
    d.errlen = err && errlen ? errlen : sizeof scratch;
    d.err[0] = 0;
    int st = decode(&d, m);
    if (st == CP_ECORRUPT && !d.err[0]) thrift_fail(&d, "file metadata");
    if (st == CP_ENOMEM) snprintf(d.err, d.errlen, "parquet footer: out of memory");
    if (st != CP_OK) pq_meta_free(m);
    return st;
}

void pq_meta_free(pq_meta *m)
{
    for (size_t g = 0; g < m->nrgs; g++) free(m->rgs[g].chunks);
    free(m->rgs);
    free(m->leaves);
    free(m->cols);
    free(m->names);
    for (size_t i = 0; i < m->nkv * 2; i++) free(m->kv[i]);
    free(m->kv);
    memset(m, 0, sizeof *m);
}
