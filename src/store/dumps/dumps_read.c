/* dumps_read.c -- reading and deleting diagnostic files (cp_dumps.h "reading",
 * "removal"): lists and summaries from the catalog, a stored file's bytes wherever they
 * live (a hot row's blob, one row of a cold Parquet file, ranges of an object). */
#include "store/dumps/dumps_internal.h"
#include "parquet/cp_parquet.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#define LIST_CHUNK 256            /* rows fetched per round trip; callbacks run between them */
#define SUMMARY_MAX_GROUPS 1000000
#define READ_AHEAD (1u << 20)

/* ---- filters --------------------------------------------------------------------------- */

_Static_assert(CP_SQLQ_MAX_PARAMS >= 16 + CP_DUMP_FILTER_MAX_NS, "a filter's namespaces fit a query");

static void qb_filter(cp_sqlq *q, const cp_dump_filter *f)
{
    if (f->ns) cp_sqlq_and(q, "namespace = ?", cp_sql_text(f->ns));
    cp_sqlq_in(q, "namespace", f->ns_limited, f->ns_in, f->nns_in, CP_DUMP_FILTER_MAX_NS);
    if (f->service) cp_sqlq_and(q, "service_name = ?", cp_sql_text(f->service));
    if (f->pod) cp_sqlq_and(q, "(pod_name = ? OR restart_pod = ?)", cp_sql_text(f->pod));
    if (f->kind) {
        const char *k = cp_dump_kind_name(f->kind);
        cp_sqlq_and(q, "dump_type = ?", cp_sql_text(k ? k : "?"));
    }
    if (f->from_ms) cp_sqlq_and(q, "dir_time >= ?", cp_sql_i64(f->from_ms));
    if (f->to_ms > 0) cp_sqlq_and(q, "dir_time < ?", cp_sql_i64(f->to_ms));
}

/* ---- list / get ------------------------------------------------------------------------ */

typedef struct meta_list {
    cp_dump_meta *v;
    size_t n, cap;
} meta_list;

static int on_meta_row(void *ud, const cp_sql_val *c, size_t n)
{
    meta_list *l = ud;
    if (n < DUMPS_META_NCOLS || l->n == l->cap) return 0;
    dumps_meta_of(c, &l->v[l->n++]);
    return 0;
}

int cp_dumps_list(cp_dumps *d, const cp_dump_filter *f, int (*fn)(void *ud, const cp_dump_meta *m), void *ud,
                  char *err, size_t errlen)
{
    meta_list l = {calloc(LIST_CHUNK, sizeof(cp_dump_meta)), 0, LIST_CHUNK};
    if (!l.v) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    int64_t before_ms = f->before_ms, before_id = f->before_id;
    size_t left = f->limit;
    int st = CP_OK;
    /* a page at a time, the connection given back before the callbacks: they may read
     * the files listed (which takes a connection too) */
    for (;;) {
        size_t want = f->limit && left < LIST_CHUNK ? left : LIST_CHUNK;
        cp_sqlq q;
        cp_sqlq_init(&q);
        q.st = cp_buf_puts(&q.sql, "SELECT " DUMPS_META_COLS " FROM dumps WHERE state = 'complete'");
        qb_filter(&q, f);
        if (before_id > 0) {
            cp_sql_val id = cp_sql_i64(before_id);
            cp_sqlq_and2(&q, "(dir_time < ? OR (dir_time = ? AND uuid < @))", cp_sql_i64(before_ms), &id);
        }
        if (q.st == CP_OK) q.st = cp_buf_printf(&q.sql, " ORDER BY dir_time DESC, uuid DESC LIMIT %zu", want);
        if (q.st == CP_OK) q.st = cp_buf_putc(&q.sql, 0);
        if (q.st != CP_OK) {
            cp_buf_free(&q.sql);
            snprintf(err, errlen, "list: cannot build the query");
            st = q.st;
            break;
        }
        cp_sqldb *db;
        st = dumps_conn_get(d, &db, err, errlen);
        if (st == CP_OK) {
            l.n = 0;
            st = cp_sqldb_exec(db, (const char *)q.sql.data, q.v, q.n, on_meta_row, &l, NULL);
            if (st != CP_OK) dumps_fail(err, errlen, st, "list", db);
            dumps_conn_put(d, db);
        }
        cp_buf_free(&q.sql);
        if (st != CP_OK) break;
        for (size_t i = 0; i < l.n && st == CP_OK; i++) st = fn(ud, &l.v[i]);
        if (st != CP_OK || l.n < want) break;
        if (f->limit && (left -= l.n) == 0) break;
        before_ms = l.v[l.n - 1].dir_ms;
        before_id = l.v[l.n - 1].id;
    }
    free(l.v);
    return st;
}

int cp_dumps_get(cp_dumps *d, int64_t id, cp_dump_meta *out, char *err, size_t errlen)
{
    meta_list l = {out, 0, 1};
    cp_sqldb *db;
    int st = dumps_conn_get(d, &db, err, errlen);
    if (st != CP_OK) return st;
    cp_sql_val v[] = {cp_sql_i64(id)};
    st = cp_sqldb_exec(db, "SELECT " DUMPS_META_COLS " FROM dumps WHERE uuid = $1 AND state = 'complete'", v, 1,
                       on_meta_row, &l, NULL);
    if (st != CP_OK) dumps_fail(err, errlen, st, "get", db);
    dumps_conn_put(d, db);
    if (st == CP_OK && l.n == 0) {
        snprintf(err, errlen, "no file %lld", (long long)id);
        return CP_ENOTFOUND;
    }
    return st;
}

/* ---- summary ------------------------------------------------------------------------- */

typedef struct sum_row {
    cp_dump_sum s;
    char *text; /* ns, pod, restart_pod, service back to back */
} sum_row;

typedef struct sum_list {
    sum_row *v;
    size_t n, cap;
    int st;
} sum_list;

static int on_sum(void *ud, const cp_sql_val *c, size_t n)
{
    sum_list *l = ud;
    if (n < 11) return 0;
    if (l->n == SUMMARY_MAX_GROUPS) return l->st = CP_ELIMIT;
    if (cp_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v, 64) != CP_OK) return l->st = CP_ENOMEM;
    const char *s[4] = {cp_sql_str(&c[0]), cp_sql_str(&c[1]), cp_sql_str(&c[3]), cp_sql_str(&c[4])};
    size_t len[4], total = 0;
    for (int i = 0; i < 4; i++) total += (len[i] = strlen(s[i])) + 1;
    char *t = malloc(total);
    if (!t) return l->st = CP_ENOMEM;
    sum_row *r = &l->v[l->n++];
    memset(r, 0, sizeof *r);
    r->text = t;
    const char **dst[4] = {&r->s.ns, &r->s.pod, &r->s.restart_pod, &r->s.service};
    for (int i = 0; i < 4; i++) {
        memcpy(t, s[i], len[i] + 1);
        *dst[i] = t;
        t += len[i] + 1;
    }
    cp_dump_kind k;
    const char *kind = cp_sql_str(&c[2]);
    r->s.kind = cp_dump_kind_parse(kind, strlen(kind), &k) == CP_OK ? k : CP_DUMP_OTHER;
    r->s.restart_ms = cp_sql_int(&c[5], 0);
    r->s.count = (uint64_t)cp_sql_int(&c[6], 0);
    r->s.bytes = (uint64_t)cp_sql_int(&c[7], 0);
    r->s.first_ms = cp_sql_int(&c[8], 0);
    r->s.last_ms = cp_sql_int(&c[9], 0);
    r->s.last_received_ms = cp_sql_int(&c[10], 0);
    return 0;
}

/* Byte order, so both catalogs give the same order whatever PostgreSQL's collation. */
static int sum_cmp(const void *a, const void *b)
{
    const cp_dump_sum *x = &((const sum_row *)a)->s, *y = &((const sum_row *)b)->s;
    int c = strcmp(x->ns, y->ns);
    if (!c) c = strcmp(x->pod, y->pod);
    if (!c) c = (int)x->kind - (int)y->kind;
    return c;
}

int cp_dumps_summary(cp_dumps *d, const cp_dump_filter *f, int (*fn)(void *ud, const cp_dump_sum *s), void *ud,
                     char *err, size_t errlen)
{
    cp_sqlq q;
    cp_sqlq_init(&q);
    q.st = cp_buf_puts(&q.sql,
                "SELECT namespace, pod_name, dump_type, max(coalesce(restart_pod, '')),"
                " max(coalesce(service_name, '')), max(restart_time), count(*), CAST(sum(bytes_size) AS bigint),"
                " min(dir_time), max(dir_time), max(received_time) FROM dumps WHERE state = 'complete'");
    qb_filter(&q, f);
    if (q.st == CP_OK) q.st = cp_buf_puts(&q.sql, " GROUP BY namespace, pod_name, dump_type");
    if (q.st == CP_OK) q.st = cp_buf_putc(&q.sql, 0);
    if (q.st != CP_OK) {
        cp_buf_free(&q.sql);
        snprintf(err, errlen, "summary: cannot build the query");
        return q.st;
    }
    sum_list l = {.st = CP_OK};
    cp_sqldb *db;
    int st = dumps_conn_get(d, &db, err, errlen);
    if (st == CP_OK) {
        st = cp_sqldb_exec(db, (const char *)q.sql.data, q.v, q.n, on_sum, &l, NULL);
        if (st != CP_OK && l.st == CP_OK) dumps_fail(err, errlen, st, "summary", db);
        else if (st != CP_OK)
            snprintf(err, errlen, "summary: %s", l.st == CP_ELIMIT ? "too many groups" : "out of memory");
        dumps_conn_put(d, db);
    }
    cp_buf_free(&q.sql);
    if (st == CP_OK) {
        if (l.n) qsort(l.v, l.n, sizeof *l.v, sum_cmp);
        for (size_t i = 0; i < l.n && st == CP_OK; i++) st = fn(ud, &l.v[i].s);
    }
    for (size_t i = 0; i < l.n; i++) free(l.v[i].text);
    free(l.v);
    return st;
}

/* ---- the bytes ------------------------------------------------------------------------- */

struct cp_dump_reader {
    cp_dumps *d;
    cp_dump_location loc;
    uint64_t size;
    uint8_t *data;          /* hot, cold: the whole file */
    char key[CP_OSTORE_MAX_KEY + 1];
    uint8_t *ra;            /* object: read-ahead window */
    uint64_t ra_off;
    size_t ra_len;
    char err[1600];
};

typedef struct fresh {
    int found;
    cp_dump_meta m;
    uint8_t *blob;
    size_t blob_len;
    int has_blob, nomem;
} fresh;

static int on_fresh(void *ud, const cp_sql_val *c, size_t n)
{
    fresh *f = ud;
    if (n < DUMPS_META_NCOLS + 1) return 0;
    f->found = 1;
    dumps_meta_of(c, &f->m);
    const cp_sql_val *b = &c[DUMPS_META_NCOLS];
    if (b->type == CP_SQL_BLOB || b->type == CP_SQL_TEXT) {
        f->has_blob = 1;
        f->blob_len = b->n;
        f->blob = malloc(b->n ? b->n : 1);
        if (!f->blob) return f->nomem = CP_ENOMEM;
        if (b->n) memcpy(f->blob, b->p, b->n);
    }
    return 0;
}

typedef struct pq_src {
    cp_ostore *s;
    const char *key;
} pq_src;

static int pq_pread(void *ud, void *dst, size_t n, uint64_t off)
{
    const pq_src *src = ud;
    char e[256];
    return src->s->ops->read(src->s, src->key, dst, n, off, e, sizeof e);
}

/* Row `row` of the cold Parquet file `key`: only its row group's binary_data and params
 * columns are decoded; the params' "id" must be the record's. */
static int cold_load(cp_dumps *d, const cp_dump_meta *m, uint8_t **out, char *err, size_t errlen)
{
    uint64_t size = 0;
    char e[512];
    int st = d->store->ops->size(d->store, m->key, &size, e, sizeof e);
    if (st != CP_OK) {
        snprintf(err, errlen, "cold file %s: %s", m->key, e);
        return st;
    }
    pq_src src = {d->store, m->key};
    cp_pq_reader *r = NULL;
    st = cp_pq_reader_open(pq_pread, &src, size, &r, e, sizeof e);
    if (st != CP_OK) {
        snprintf(err, errlen, "cold file %s: %s", m->key, e);
        return st == CP_ENOTFOUND ? CP_ENOTFOUND : CP_ECORRUPT;
    }
    int cb = cp_pq_reader_find(r, "binary_data"), cpar = cp_pq_reader_find(r, "params");
    uint64_t first = 0;
    size_t rg = 0, nrg = cp_pq_reader_row_groups(r);
    while (rg < nrg && first + cp_pq_reader_row_group_rows(r, rg) <= (uint64_t)m->cold_row)
        first += cp_pq_reader_row_group_rows(r, rg++);
    cp_pq_column_data bin, par;
    if (cb < 0 || cpar < 0 || m->cold_row < 0 || rg == nrg) {
        snprintf(err, errlen, "cold file %s: no row %lld with binary_data and params", m->key, (long long)m->cold_row);
        st = CP_ECORRUPT;
    } else if ((st = cp_pq_reader_read(r, rg, (size_t)cb, &bin)) != CP_OK ||
               (st = cp_pq_reader_read(r, rg, (size_t)cpar, &par)) != CP_OK) {
        snprintf(err, errlen, "cold file %s: %s", m->key, cp_pq_reader_errmsg(r));
        st = st == CP_ENOMEM ? st : CP_ECORRUPT;
    } else {
        size_t i = (size_t)((uint64_t)m->cold_row - first);
        char want[24];
        snprintf(want, sizeof want, "%lld", (long long)m->id);
        int id_ok = 0;
        for (size_t k = par.map_off[i]; !par.nulls || !par.nulls[i] ? k < par.map_off[i + 1] : 0; k++) {
            const cp_pq_map_entry *me = &par.map_entries[k];
            if (me->key.len == 2 && !memcmp(me->key.p, "id", 2) && me->nvalues == 1 && me->values &&
                me->values[0].p && me->values[0].len == strlen(want) && !memcmp(me->values[0].p, want, strlen(want)))
                id_ok = 1;
        }
        const cp_pq_bytes *b = &bin.b[i];
        if (!id_ok) {
            snprintf(err, errlen, "cold file %s: row %lld is not file %lld", m->key, (long long)m->cold_row,
                     (long long)m->id);
            st = CP_ECORRUPT;
        } else if ((bin.nulls && bin.nulls[i]) || b->len != m->bytes) {
            snprintf(err, errlen, "cold file %s: row %lld has %zu bytes, the record says %llu", m->key,
                     (long long)m->cold_row, b->len, (unsigned long long)m->bytes);
            st = CP_ECORRUPT;
        } else if (!(*out = malloc(b->len ? b->len : 1))) {
            snprintf(err, errlen, "out of memory");
            st = CP_ENOMEM;
        } else {
            if (b->len) memcpy(*out, b->p, b->len);
        }
    }
    cp_pq_reader_free(r);
    return st;
}

int cp_dumps_reader_open(cp_dumps *d, const cp_dump_meta *m, cp_dump_reader **out, char *err, size_t errlen)
{
    *out = NULL;
    fresh f = {0};
    cp_sqldb *db;
    int st = dumps_conn_get(d, &db, err, errlen);
    if (st != CP_OK) return st;
    /* the record as it is now: a file compacted since m was read is found in its new place */
    cp_sql_val v[] = {cp_sql_i64(m->id)};
    st = cp_sqldb_exec(db,
                       "SELECT " DUMPS_META_COLS ", CASE WHEN location = 'hot' THEN binary_data END FROM dumps"
                       " WHERE uuid = $1 AND state = 'complete'",
                       v, 1, on_fresh, &f, NULL);
    if (st != CP_OK) {
        if (f.nomem) snprintf(err, errlen, "out of memory");
        else dumps_fail(err, errlen, st, "read", db);
    }
    dumps_conn_put(d, db);
    if (st == CP_OK && !f.found) {
        snprintf(err, errlen, "no file %lld", (long long)m->id);
        st = CP_ENOTFOUND;
    }
    if (st == CP_OK && f.m.version != m->version) {
        snprintf(err, errlen, "file %lld was replaced (version %lld, not %lld)", (long long)m->id,
                 (long long)f.m.version, (long long)m->version);
        st = CP_ENOTFOUND;
    }
    cp_dump_reader *r = NULL;
    if (st == CP_OK && !(r = calloc(1, sizeof *r))) {
        snprintf(err, errlen, "out of memory");
        st = CP_ENOMEM;
    }
    if (st == CP_OK) {
        r->d = d;
        r->loc = f.m.location;
        r->size = f.m.bytes;
        snprintf(r->key, sizeof r->key, "%s", f.m.key);
        if (f.m.location == CP_DUMP_HOT) {
            if (!f.has_blob || f.blob_len != f.m.bytes) {
                snprintf(err, errlen, "file %lld: the stored blob has %zu bytes, the record says %llu",
                         (long long)m->id, f.has_blob ? f.blob_len : 0, (unsigned long long)f.m.bytes);
                st = CP_ECORRUPT;
            } else {
                r->data = f.blob;
                f.blob = NULL;
            }
        } else if (f.m.location == CP_DUMP_COLD) {
            st = cold_load(d, &f.m, &r->data, err, errlen);
        } else {
            uint64_t size = 0;
            char e[512];
            st = d->store->ops->size(d->store, r->key, &size, e, sizeof e);
            if (st != CP_OK) snprintf(err, errlen, "object %s: %s", r->key, e);
            else if (size != f.m.bytes) {
                snprintf(err, errlen, "object %s has %llu bytes, the record says %llu", r->key,
                         (unsigned long long)size, (unsigned long long)f.m.bytes);
                st = CP_ECORRUPT;
            }
        }
    }
    free(f.blob);
    if (st != CP_OK) {
        cp_dump_reader_close(r);
        return st;
    }
    *out = r;
    return CP_OK;
}

long cp_dump_reader_pread(cp_dump_reader *r, void *dst, size_t n, uint64_t off)
{
    if (off >= r->size || n == 0) return 0;
    if (n > r->size - off) n = (size_t)(r->size - off);
    if (n > (size_t)LONG_MAX) n = (size_t)LONG_MAX;
    if (r->data) {
        memcpy(dst, r->data + off, n);
        return (long)n;
    }
    /* object: small reads come from a read-ahead window, large ones go straight through */
    if (off >= r->ra_off && off + n <= r->ra_off + r->ra_len) {
        memcpy(dst, r->ra + (off - r->ra_off), n);
        return (long)n;
    }
    char e[400];
    int st;
    if (n >= READ_AHEAD) {
        st = r->d->store->ops->read(r->d->store, r->key, dst, n, off, e, sizeof e);
    } else {
        if (!r->ra && !(r->ra = malloc(READ_AHEAD))) {
            snprintf(r->err, sizeof r->err, "out of memory");
            return CP_ENOMEM;
        }
        size_t len = r->size - off < READ_AHEAD ? (size_t)(r->size - off) : READ_AHEAD;
        r->ra_len = 0;
        st = r->d->store->ops->read(r->d->store, r->key, r->ra, len, off, e, sizeof e);
        if (st == CP_OK) {
            r->ra_off = off;
            r->ra_len = len;
            memcpy(dst, r->ra, n);
        }
    }
    if (st != CP_OK) {
        snprintf(r->err, sizeof r->err, "object %s: %s", r->key, e);
        return st;
    }
    return (long)n;
}

const char *cp_dump_reader_errmsg(const cp_dump_reader *r) { return r->err; }

void cp_dump_reader_close(cp_dump_reader *r)
{
    if (!r) return;
    free(r->data);
    free(r->ra);
    free(r);
}

int cp_dumps_load(cp_dumps *d, const cp_dump_meta *m, size_t max, uint8_t **p, size_t *n, char *err,
                  size_t errlen)
{
    *p = NULL;
    *n = 0;
    if (m->bytes > max) {
        snprintf(err, errlen, "file %lld has %llu bytes, more than %zu", (long long)m->id,
                 (unsigned long long)m->bytes, max);
        return CP_ELIMIT;
    }
    cp_dump_reader *r;
    int st = cp_dumps_reader_open(d, m, &r, err, errlen);
    if (st != CP_OK) return st;
    size_t size = (size_t)r->size;
    if (r->data) { /* hot and cold files are in memory already: hand the buffer over */
        *p = r->data;
        r->data = NULL;
    } else if (!(*p = malloc(size ? size : 1))) {
        snprintf(err, errlen, "out of memory");
        st = CP_ENOMEM;
    } else {
        for (size_t off = 0; st == CP_OK && off < size;) {
            long got = cp_dump_reader_pread(r, *p + off, size - off, off);
            if (got <= 0) {
                snprintf(err, errlen, "%s", got < 0 ? r->err : "short read");
                st = got < 0 ? (int)got : CP_ECORRUPT;
            } else {
                off += (size_t)got;
            }
        }
    }
    cp_dump_reader_close(r);
    if (st != CP_OK) {
        free(*p);
        *p = NULL;
        return st;
    }
    *n = size;
    return CP_OK;
}

/* ---- removal ------------------------------------------------------------------------------ */

typedef struct del_row {
    int found;
    char path[1024];
    int object;
    char key[CP_OSTORE_MAX_KEY + 1];
    /* what the audit entry says about the file */
    char ns[CP_DUMP_MAX_NAME + 1], pod[CP_DUMP_MAX_NAME + 1], name[CP_DUMP_MAX_NAME + 1], type[32];
    int64_t bytes;
} del_row;

static int on_del(void *ud, const cp_sql_val *c, size_t n)
{
    del_row *r = ud;
    if (n < 8) return 0;
    r->found = 1;
    snprintf(r->path, sizeof r->path, "%s", cp_sql_str(&c[0]));
    r->object = !strcmp(cp_sql_str(&c[1]), "object");
    snprintf(r->key, sizeof r->key, "%s", cp_sql_str(&c[2]));
    snprintf(r->ns, sizeof r->ns, "%s", cp_sql_str(&c[3]));
    snprintf(r->pod, sizeof r->pod, "%s", cp_sql_str(&c[4]));
    snprintf(r->name, sizeof r->name, "%s", cp_sql_str(&c[5]));
    snprintf(r->type, sizeof r->type, "%s", cp_sql_str(&c[6]));
    r->bytes = cp_sql_int(&c[7], 0);
    return 0;
}

/* The audit entry's detail for a deleted file: {"id","name","pod","type","bytes"}, or
 * without the name and pod when they would not fit. */
static void delete_detail(int64_t id, const del_row *r, char *dst, size_t cap)
{
    cp_buf b;
    cp_buf_init(&b);
    for (int full = 1; full >= 0; full--) {
        cp_buf_reset(&b);
        int st = cp_buf_printf(&b, "{\"id\":\"%lld\"", (long long)id);
        if (full && st == CP_OK) st = cp_buf_puts(&b, ",\"name\":");
        if (full && st == CP_OK) st = cp_json_str(&b, r->name, strlen(r->name));
        if (full && st == CP_OK) st = cp_buf_puts(&b, ",\"pod\":");
        if (full && st == CP_OK) st = cp_json_str(&b, r->pod, strlen(r->pod));
        if (st == CP_OK) st = cp_buf_puts(&b, ",\"type\":");
        if (st == CP_OK) st = cp_json_str(&b, r->type, strlen(r->type));
        if (st == CP_OK) st = cp_buf_printf(&b, ",\"bytes\":%lld}", (long long)r->bytes);
        if (st == CP_OK && b.len < cap) {
            memcpy(dst, b.data, b.len);
            dst[b.len] = 0;
            cp_buf_free(&b);
            return;
        }
    }
    cp_buf_free(&b);
    snprintf(dst, cap, "{}");
}

/* Fills the deletion's audit entry from the row and writes it on db (in the deletion's
 * transaction). */
static int delete_audit(cp_sqldb *db, int64_t id, const del_row *r, int64_t now_ms, cp_audit_entry *audit)
{
    audit->time_ms = now_ms;
    cp_audit_sets(audit->ns, sizeof audit->ns, r->ns);
    cp_audit_sets(audit->outcome, sizeof audit->outcome, CP_AUDIT_OK);
    delete_detail(id, r, audit->detail, sizeof audit->detail);
    return audit_insert_db(db, audit);
}

int dumps_delete_id(cp_dumps *d, int64_t id, int64_t now_ms, int *object_deleted, char *err, size_t errlen)
{
    return dumps_delete_audited(d, id, now_ms, NULL, object_deleted, err, errlen);
}

int dumps_delete_audited(cp_dumps *d, int64_t id, int64_t now_ms, cp_audit_entry *audit, int *object_deleted,
                         char *err, size_t errlen)
{
    if (object_deleted) *object_deleted = 0;
    cp_sqldb *db;
    int st = dumps_conn_get(d, &db, err, errlen);
    if (st != CP_OK) return st;
    static const char sel[] = "SELECT coalesce(path, ''), location, coalesce(object_key, ''), coalesce(namespace, ''),"
                              " coalesce(pod_name, ''), coalesce(file_name, ''), coalesce(dump_type, ''),"
                              " coalesce(bytes_size, 0) FROM dumps WHERE uuid = $1 AND state = 'complete'";
    cp_sql_val v[] = {cp_sql_i64(id), cp_sql_i64(now_ms)};
    del_row r = {0};
    st = cp_sqldb_begin(db);
    if (st == CP_OK) st = cp_sqldb_exec(db, sel, v, 1, on_del, &r, NULL);
    /* the path's lock, then the row again: an upload of the same path may have changed it */
    if (st == CP_OK && r.found) {
        st = cp_sqldb_lock(db, DUMPS_LOCK_PATH, dumps_path_lock_key(r.path));
        memset(&r, 0, sizeof r);
        if (st == CP_OK) st = cp_sqldb_exec(db, sel, v, 1, on_del, &r, NULL);
    }
    if (st == CP_OK && !r.found) {
        cp_sqldb_rollback(db);
        dumps_conn_put(d, db);
        snprintf(err, errlen, "no file %lld", (long long)id);
        return CP_ENOTFOUND;
    }
    /* the record stays (deletions are recorded); a cold file's bytes stay in its Parquet
     * file until that file's retention */
    if (st == CP_OK)
        st = cp_sqldb_exec(db,
                           "UPDATE dumps SET state = 'deleted', deleted_time = $2, binary_data = NULL,"
                           " object_key = CASE WHEN location = 'object' THEN NULL ELSE object_key END,"
                           " claim = NULL, claimed_by = NULL, claimed_at = NULL WHERE uuid = $1",
                           v, 2, NULL, NULL, NULL);
    /* the entry commits with the deletion or not at all: no deletion goes unrecorded */
    if (st == CP_OK && audit) st = delete_audit(db, id, &r, now_ms, audit);
    int drop = r.object && r.key[0];
    if (st == CP_OK && drop) {
        cp_sql_val pv[] = {cp_sql_text(r.key)};
        st = cp_sqldb_exec(db,
                           "INSERT INTO dump_pending (object_key, node, created_time) VALUES ($1, '"
                           DUMPS_PENDING_DELETE "', 0) ON CONFLICT (object_key) DO NOTHING",
                           pv, 1, NULL, NULL, NULL);
    }
    if (st == CP_OK) st = cp_sqldb_commit(db);
    if (st != CP_OK) dumps_fail(err, errlen, st, "delete", db);
    dumps_conn_put(d, db);
    if (st == CP_OK && drop) {
        int gone = dumps_object_drop(d, r.key);
        if (object_deleted) *object_deleted = gone;
    }
    return st;
}

int cp_dumps_delete(cp_dumps *d, int64_t id, int64_t now_ms, char *err, size_t errlen)
{
    return dumps_delete_id(d, id, now_ms, NULL, err, errlen);
}

int cp_dumps_delete_audited(cp_dumps *d, int64_t id, int64_t now_ms, cp_audit_entry *audit, char *err,
                            size_t errlen)
{
    return dumps_delete_audited(d, id, now_ms, audit, NULL, err, errlen);
}

static int on_uuid(void *ud, const cp_sql_val *c, size_t n)
{
    if (n) *(int64_t *)ud = cp_sql_int(&c[0], 0);
    return 0;
}

int cp_dumps_delete_path(cp_dumps *d, const cp_dump_path *path, int64_t now_ms, char *err, size_t errlen)
{
    return cp_dumps_delete_path_audited(d, path, now_ms, NULL, err, errlen);
}

int cp_dumps_delete_path_audited(cp_dumps *d, const cp_dump_path *path, int64_t now_ms, cp_audit_entry *audit,
                                 char *err, size_t errlen)
{
    cp_buf p;
    cp_buf_init(&p);
    int st = dumps_path_string(path, &p);
    if (st == CP_OK) st = cp_buf_putc(&p, 0);
    if (st != CP_OK) {
        cp_buf_free(&p);
        snprintf(err, errlen, "bad path");
        return CP_EINVAL;
    }
    int64_t id = 0;
    cp_sqldb *db;
    st = dumps_conn_get(d, &db, err, errlen);
    if (st == CP_OK) {
        cp_sql_val v[] = {cp_sql_text((const char *)p.data)};
        st = cp_sqldb_exec(db, "SELECT uuid FROM dumps WHERE path = $1 AND state = 'complete'", v, 1, on_uuid, &id,
                           NULL);
        if (st != CP_OK) dumps_fail(err, errlen, st, "delete", db);
        dumps_conn_put(d, db);
    }
    if (st == CP_OK && !id) {
        snprintf(err, errlen, "no file at %s", (const char *)p.data);
        st = CP_ENOTFOUND;
    }
    cp_buf_free(&p);
    return st == CP_OK ? dumps_delete_audited(d, id, now_ms, audit, NULL, err, errlen) : st;
}
