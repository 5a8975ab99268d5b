/* cold_rows.c -- calls Parquet rows back into cp_call (cp_cold.h "reading calls files
 * back"): the inverse of cold_schema.c's cp_cold_call_row, and a row-group decoder that
 * reads only the columns a caller asks for.
 *
 * What has to come back exactly as the hot tier has it:
 *   params_json  {"name":["v1","v2"],...}: the map's entries in order (the compactor wrote
 *                them in params_json's order, which is sorted by name), names and values
 *                escaped with cp_json_str, "name":[] for an entry with no values, {} for
 *                no entries. Values were unescaped on the way in, so escaping them again
 *                gives the original text byte for byte.
 *   error        not stored: a call is an error when a "call.red" param is present
 *                (asm.c), so the map says it.
 *   trace ref    trace_index "<trace_file_index>_<buffer_offset>_<record_index>", each a
 *                decimal int32 (negatives allowed: printed with %d).
 */
#include "store/cp_cold.h"
#include "query/cp_query.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- one row -> cp_call -------------------------------------------------------------------- */

/* Parses one decimal int32 ("-" allowed) from p[*at..n) up to the stop byte (or the end
 * when stop is 0). */
static int parse_i32(const uint8_t *p, size_t n, size_t *at, uint8_t stop, int32_t *out)
{
    size_t i = *at;
    int neg = 0;
    if (i < n && p[i] == '-') neg = 1, i++;
    size_t first = i;
    int64_t v = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9') {
        v = v * 10 + (p[i] - '0');
        if (v > (int64_t)INT32_MAX + 1) return CP_ECORRUPT;
        i++;
    }
    if (i == first) return CP_ECORRUPT;
    if (neg) v = -v;
    if (v > INT32_MAX || v < INT32_MIN) return CP_ECORRUPT;
    if (stop ? (i >= n || p[i] != stop) : i != n) return CP_ECORRUPT;
    *at = stop ? i + 1 : i;
    *out = (int32_t)v;
    return CP_OK;
}

/* "<tfi>_<bo>_<ri>" -> the three numbers. */
static int parse_trace_index(cp_pq_bytes b, cp_call *c)
{
    size_t at = 0;
    int st = parse_i32(b.p, b.len, &at, '_', &c->trace_file_index);
    if (st == CP_OK) st = parse_i32(b.p, b.len, &at, '_', &c->buffer_offset);
    if (st == CP_OK) st = parse_i32(b.p, b.len, &at, 0, &c->record_index);
    return st;
}

/* 1 if the map has the key "call.red" (the error flag). */
static int map_has_call_red(const cp_pq_value *v)
{
    if (v->null) return 0;
    for (size_t i = 0; i < v->nmap; i++) {
        const cp_pq_bytes *k = &v->map[i].key;
        if (k->len == 8 && !memcmp(k->p, "call.red", 8)) return 1;
    }
    return 0;
}

/* The params map as the hot tier's params_json. */
static int map_json(const cp_pq_value *v, cp_buf *json)
{
    cp_buf_reset(json);
    int st = cp_buf_putc(json, '{');
    size_t n = v->null ? 0 : v->nmap;
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        const cp_pq_map_entry *e = &v->map[i];
        if (i) st = cp_buf_putc(json, ',');
        if (st == CP_OK) st = cp_json_str(json, (const char *)e->key.p, e->key.len);
        if (st == CP_OK) st = cp_buf_append(json, ":[", 2);
        for (size_t k = 0; st == CP_OK && e->values && k < e->nvalues; k++) {
            if (k) st = cp_buf_putc(json, ',');
            if (st == CP_OK) st = cp_json_str(json, (const char *)e->values[k].p, e->values[k].len);
        }
        if (st == CP_OK) st = cp_buf_putc(json, ']');
    }
    if (st == CP_OK) st = cp_buf_putc(json, '}');
    return st;
}

static const char *str_of(const cp_pq_value *v, size_t *len)
{
    if (v->null || !v->b.p) {
        *len = 0;
        return "";
    }
    *len = v->b.len;
    return (const char *)v->b.p;
}

/* Fills c from the columns of row present in `cols`; the others stay zero / empty. */
static int call_from_row(const cp_pq_value *row, uint32_t cols, cp_buf *json, int want_json, cp_call *c)
{
    memset(c, 0, sizeof *c);
    c->ts_ms = row[CP_COLD_C_TIME].i;
    c->cpu_time = row[CP_COLD_C_CPU].i;
    c->wait_time = row[CP_COLD_C_WAIT].i;
    c->memory_used = row[CP_COLD_C_MEMORY].i;
    c->duration_ms = (int32_t)row[CP_COLD_C_DURATION].i;
    c->non_blocking = row[CP_COLD_C_NONBLOCKING].i;
    c->queue_wait_ms = (int32_t)row[CP_COLD_C_QUEUE].i;
    c->suspend_ms = (int32_t)row[CP_COLD_C_SUSPEND].i;
    c->calls = (int32_t)row[CP_COLD_C_CALLS].i;
    c->transactions = row[CP_COLD_C_TRANSACTIONS].i;
    c->logs_generated = (int32_t)row[CP_COLD_C_LOGS_GENERATED].i;
    c->logs_written = (int32_t)row[CP_COLD_C_LOGS_WRITTEN].i;
    c->file_read = row[CP_COLD_C_FILE_READ].i;
    c->file_written = row[CP_COLD_C_FILE_WRITTEN].i;
    c->net_read = row[CP_COLD_C_NET_READ].i;
    c->net_written = row[CP_COLD_C_NET_WRITTEN].i;
    c->ns = str_of(&row[CP_COLD_C_NAMESPACE], &c->ns_len);
    c->service = str_of(&row[CP_COLD_C_SERVICE], &c->service_len);
    c->pod = str_of(&row[CP_COLD_C_POD], &c->pod_len);
    c->restart_ms = row[CP_COLD_C_RESTART].i;
    c->method = str_of(&row[CP_COLD_C_METHOD], &c->method_len);
    c->thread = str_of(&row[CP_COLD_C_THREAD], &c->thread_len);
    c->method_id = (int32_t)row[CP_COLD_C_METHOD_ID].i;
    c->sql = row[CP_COLD_C_HAS_SQL].i != 0;
    c->params_json = "{}";
    c->params_json_len = 2;
    if (cols & CP_COLD_COL(CP_COLD_C_PARAMS)) {
        c->error = map_has_call_red(&row[CP_COLD_C_PARAMS]);
        if (want_json) {
            int st = map_json(&row[CP_COLD_C_PARAMS], json);
            if (st != CP_OK) return st;
            c->params_json = (const char *)json->data;
            c->params_json_len = json->len;
        }
    }
    if (cols & CP_COLD_COL(CP_COLD_C_TRACE_INDEX)) {
        int st = parse_trace_index(row[CP_COLD_C_TRACE_INDEX].b, c);
        if (st != CP_OK) return st;
    }
    const cp_pq_value *t = &row[CP_COLD_C_TRACE];
    if ((cols & CP_COLD_COL(CP_COLD_C_TRACE)) && !t->null) {
        c->trace = t->b.p ? t->b.p : (const uint8_t *)"";
        c->trace_len = t->b.len;
    }
    /* the reason is one of the stable CP_TRACE_* strings; the row's bytes are not
     * NUL-terminated, so hand back the constant when it is one of them */
    const cp_pq_value *r = &row[CP_COLD_C_TRACE_REASON];
    if ((cols & CP_COLD_COL(CP_COLD_C_TRACE_REASON)) && !r->null) {
        static const char *const known[] = {CP_TRACE_INCOMPLETE, CP_TRACE_NOT_FOUND, CP_TRACE_BAD_POINTER,
                                            CP_TRACE_TOO_LARGE, CP_TRACE_BACKLOG};
        c->trace_reason = "unknown";
        for (size_t k = 0; k < CP_ARRAY_LEN(known); k++)
            if (r->b.len == strlen(known[k]) && !memcmp(r->b.p, known[k], r->b.len)) c->trace_reason = known[k];
    }
    return CP_OK;
}

int cp_cold_call_from_row(const cp_pq_value row[CP_COLD_C_COUNT], cp_buf *json, cp_call *out)
{
    return call_from_row(row, CP_COLD_COLS_ALL, json, 1, out);
}

/* ---- the row-group decoder -------------------------------------------------------------------- */

struct cp_cold_rows {
    cp_pq_reader *r;
    int col[CP_COLD_C_COUNT];               /* file column of each schema column, -1 = absent */
    size_t rg;                              /* row group of data[] */
    int has_rg;
    uint32_t have;                          /* columns decoded for rg */
    size_t nrows;
    cp_pq_column_data data[CP_COLD_C_COUNT];
    cp_pq_value row[CP_COLD_C_COUNT];       /* one row, assembled for call_from_row */
    cp_buf json;                            /* params_json of the last call */
};

/* Integer-like kinds read the same (int64 values); so do the two byte-array kinds. */
static int kind_of(cp_pq_type t)
{
    switch (t) {
    case CP_PQ_I32:
    case CP_PQ_I64:
    case CP_PQ_U64:
    case CP_PQ_TS_MS:
    case CP_PQ_BOOL: return 1;
    case CP_PQ_STRING:
    case CP_PQ_BINARY: return 2;
    case CP_PQ_MAP_STR_LIST: return 3;
    case CP_PQ_MAP_STR_STR: return 4;
    default: return 0;
    }
}

static int optional_column(int col)
{
    return col == CP_COLD_C_THREAD || col == CP_COLD_C_METHOD_ID || col == CP_COLD_C_TRACE_REASON ||
           col == CP_COLD_C_HAS_SQL;
}

int cp_cold_rows_open(cp_pq_reader *r, cp_cold_rows **out, char *err, size_t errlen)
{
    *out = NULL;
    cp_cold_rows *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    d->r = r;
    cp_buf_init(&d->json);
    for (int c = 0; c < CP_COLD_C_COUNT; c++) {
        const cp_pq_column *want = &cp_cold_calls_schema[c];
        int i = cp_pq_reader_find(r, want->name);
        d->col[c] = i;
        if (i < 0) {
            if (optional_column(c)) continue;
            snprintf(err, errlen, "not a calls file: no column %s", want->name);
            cp_cold_rows_free(d);
            return CP_ECORRUPT;
        }
        const cp_pq_column *have = cp_pq_reader_column(r, (size_t)i);
        if (!have || kind_of(have->type) != kind_of(want->type) || kind_of(want->type) == 0) {
            snprintf(err, errlen, "not a calls file: column %s has type %d", want->name, have ? (int)have->type : -1);
            cp_cold_rows_free(d);
            return CP_ECORRUPT;
        }
    }
    *out = d;
    return CP_OK;
}

void cp_cold_rows_free(cp_cold_rows *d)
{
    if (!d) return;
    cp_buf_free(&d->json);
    free(d);
}

void cp_cold_rows_release(cp_cold_rows *d)
{
    if (!d) return;
    cp_pq_reader_reset_arena(d->r);
    memset(d->data, 0, sizeof d->data);
    d->have = 0;
    d->has_rg = 0;
}

int cp_cold_rows_column(const cp_cold_rows *d, int col)
{
    return col >= 0 && col < CP_COLD_C_COUNT ? d->col[col] : -1;
}

size_t cp_cold_rows_count(const cp_cold_rows *d) { return d->has_rg ? d->nrows : 0; }

const int64_t *cp_cold_rows_ints(const cp_cold_rows *d, int col)
{
    if (!d->has_rg || col < 0 || col >= CP_COLD_C_COUNT || !(d->have & CP_COLD_COL(col))) return NULL;
    return d->data[col].i;
}

int cp_cold_rows_read(cp_cold_rows *d, size_t rg, uint32_t cols, char *err, size_t errlen)
{
    if (rg >= cp_pq_reader_row_groups(d->r)) {
        snprintf(err, errlen, "row group %zu out of range", rg);
        return CP_EINVAL;
    }
    if (!d->has_rg || d->rg != rg) {
        cp_pq_reader_reset_arena(d->r);
        memset(d->data, 0, sizeof d->data);
        d->have = 0;
        d->rg = rg;
        d->has_rg = 1;
        uint64_t n = cp_pq_reader_row_group_rows(d->r, rg);
        if (n > SIZE_MAX / 2) {
            snprintf(err, errlen, "row group %zu: %llu rows", rg, (unsigned long long)n);
            d->has_rg = 0;
            return CP_ECORRUPT;
        }
        d->nrows = (size_t)n;
    }
    for (int c = 0; c < CP_COLD_C_COUNT; c++) {
        uint32_t bit = CP_COLD_COL(c);
        if (!(cols & bit) || (d->have & bit) || d->col[c] < 0) continue;
        int st = cp_pq_reader_read(d->r, rg, (size_t)d->col[c], &d->data[c]);
        if (st != CP_OK) {
            snprintf(err, errlen, "row group %zu, column %s: %s", rg, cp_cold_calls_schema[c].name,
                     cp_pq_reader_errmsg(d->r));
            d->has_rg = 0; /* the arena may hold half a column: start over next time */
            return st;
        }
        if (d->data[c].nrows != d->nrows) {
            snprintf(err, errlen, "row group %zu, column %s: %zu rows, the row group has %zu", rg,
                     cp_cold_calls_schema[c].name, d->data[c].nrows, d->nrows);
            d->has_rg = 0;
            return CP_ECORRUPT;
        }
        d->have |= bit;
    }
    return CP_OK;
}

/* Row i of one decoded column as a value. */
static void value_at(const cp_pq_column_data *cd, int col, size_t i, cp_pq_value *v)
{
    memset(v, 0, sizeof *v);
    if (cd->nulls && cd->nulls[i]) {
        v->null = 1;
        return;
    }
    switch (kind_of(cp_cold_calls_schema[col].type)) {
    case 1: v->i = cd->i ? cd->i[i] : 0; break;
    case 2:
        if (cd->b) v->b = cd->b[i];
        break;
    default:
        if (cd->map_off && cd->map_entries) {
            v->map = cd->map_entries + cd->map_off[i];
            v->nmap = cd->map_off[i + 1] - cd->map_off[i];
        }
        break;
    }
}

static int bytes_has(cp_pq_bytes b, const cp_name *needles, size_t n)
{
    if (!b.p) return 0;
    for (size_t k = 0; k < n; k++)
        if (cp_ci_contains((const char *)b.p, b.len, needles[k].p, needles[k].len)) return 1;
    return 0;
}

int cp_cold_rows_contains(const cp_cold_rows *d, size_t i, const cp_name *needles, size_t n)
{
    if (!d->has_rg || i >= d->nrows) return 0;
    const cp_pq_column_data *m = &d->data[CP_COLD_C_METHOD], *p = &d->data[CP_COLD_C_POD];
    if ((d->have & CP_COLD_COL(CP_COLD_C_METHOD)) && m->b && bytes_has(m->b[i], needles, n)) return 1;
    if ((d->have & CP_COLD_COL(CP_COLD_C_POD)) && p->b && bytes_has(p->b[i], needles, n)) return 1;
    const cp_pq_column_data *pm = &d->data[CP_COLD_C_PARAMS];
    if (!(d->have & CP_COLD_COL(CP_COLD_C_PARAMS)) || !pm->map_off || (pm->nulls && pm->nulls[i])) return 0;
    for (size_t e = pm->map_off[i]; e < pm->map_off[i + 1]; e++) {
        const cp_pq_map_entry *x = &pm->map_entries[e];
        if (bytes_has(x->key, needles, n)) return 1;
        for (size_t v = 0; x->values && v < x->nvalues; v++)
            if (bytes_has(x->values[v], needles, n)) return 1;
    }
    return 0;
}

int cp_cold_rows_call(cp_cold_rows *d, size_t i, int json, cp_call *out)
{
    if (!d->has_rg || i >= d->nrows) return CP_EINVAL;
    for (int c = 0; c < CP_COLD_C_COUNT; c++) {
        if (d->have & CP_COLD_COL(c)) value_at(&d->data[c], c, i, &d->row[c]);
        else memset(&d->row[c], 0, sizeof d->row[c]);
        /* an absent optional text column reads as null: trace_reason NULL, thread "" */
    }
    return call_from_row(d->row, d->have, &d->json, json, out);
}
