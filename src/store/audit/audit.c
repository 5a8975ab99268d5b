/* audit.c -- the audit log in the catalog (cp_audit.h): its connection pool, recording,
 * listing newest first with a keyset, and the retention pass.
 *
 * The table (migration 9 of both catalogs):
 *   audit_log (id, time_ms, user_name, role, action, target, namespace, outcome, remote,
 *              detail), indexed by (time_ms, id): the listing's order and the pruning's
 *              range. namespace is NULL for entries about no single namespace.
 * The statements are the same text on SQLite and PostgreSQL (sqldb.h).
 */
#include "store/audit/audit_internal.h"
#include "store/cp_catalog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_CONNS 2
#define MAX_CONNS 16
#define PRUNE_EVERY_MS ((int64_t)3600 * 1000) /* the retention pass, at most this often */

struct cp_audit {
    char *catalog;
    int64_t retention_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    cp_sqldb **idle;
    size_t nidle;
    unsigned nconns, max_conns; /* open connections (idle or in use), the most at once */
    int64_t next_prune_ms;      /* under mu */
};

/* ---- fields ---------------------------------------------------------------------------- */

/* 1 if the sequence p[0..k) is a control character: C0, DEL, or C1 (U+0080..U+009F). */
static int is_control(const uint8_t *p, size_t k)
{
    if (k == 1) return p[0] < 0x20 || p[0] == 0x7f;
    return k == 2 && p[0] == 0xc2 && p[1] < 0xa0;
}

void cp_audit_set(char *dst, size_t cap, const char *s, size_t n)
{
    if (!cap) return;
    const uint8_t *p = (const uint8_t *)s;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = cp_utf8_seq(p + i, n - i);
        if (k == 0 || is_control(p + i, k)) { /* one '?' per bad byte or control character */
            if (o + 1 >= cap) break;
            dst[o++] = '?';
            i += k ? k : 1;
            continue;
        }
        if (o + k >= cap) break; /* never half a character */
        memcpy(dst + o, p + i, k);
        o += k;
        i += k;
    }
    dst[o] = 0;
}

/* ---- the pool --------------------------------------------------------------------------- */

static int conn_get(cp_audit *a, cp_sqldb **out, char *err, size_t errlen)
{
    *out = NULL;
    pthread_mutex_lock(&a->mu);
    while (!a->nidle && a->nconns >= a->max_conns) pthread_cond_wait(&a->cv, &a->mu);
    if (a->nidle) {
        *out = a->idle[--a->nidle];
        pthread_mutex_unlock(&a->mu);
        return CP_OK;
    }
    a->nconns++; /* the slot is ours; connect without holding the lock */
    pthread_mutex_unlock(&a->mu);
    int st = cp_sqldb_open(a->catalog, out, err, errlen);
    if (st != CP_OK) {
        pthread_mutex_lock(&a->mu);
        a->nconns--;
        pthread_cond_signal(&a->cv);
        pthread_mutex_unlock(&a->mu);
    }
    return st;
}

/* Gives a connection back; a broken one is closed (the next caller opens a new one). */
static void conn_put(cp_audit *a, cp_sqldb *db)
{
    if (!db) return;
    int bad = cp_sqldb_broken(db);
    pthread_mutex_lock(&a->mu);
    if (bad || a->nidle >= a->max_conns) {
        a->nconns--;
        pthread_mutex_unlock(&a->mu);
        cp_sqldb_close(db);
        pthread_mutex_lock(&a->mu);
    } else {
        a->idle[a->nidle++] = db;
    }
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static int fail(char *err, size_t errlen, int st, const char *what, const cp_sqldb *db)
{
    snprintf(err, errlen, "audit %s: %s", what, db ? cp_sqldb_errmsg(db) : "failed");
    return st;
}

/* ---- recording ---------------------------------------------------------------------------- */

static int on_id(void *ud, const cp_sql_val *c, size_t n)
{
    if (n) *(int64_t *)ud = cp_sql_int(&c[0], 0);
    return 0;
}

int audit_insert_db(cp_sqldb *db, cp_audit_entry *e)
{
    if (!e->time_ms) e->time_ms = cp_now_ms();
    cp_sql_val v[] = {cp_sql_i64(e->time_ms), cp_sql_text(e->user),    cp_sql_text(e->role),
                      cp_sql_text(e->action), cp_sql_text(e->target),  e->ns[0] ? cp_sql_text(e->ns) : cp_sql_null(),
                      cp_sql_text(e->outcome), cp_sql_text(e->remote), cp_sql_text(e->detail[0] ? e->detail : "{}")};
    e->id = 0;
    return cp_sqldb_exec(db,
                         "INSERT INTO audit_log (time_ms, user_name, role, action, target, namespace, outcome, remote,"
                         " detail) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
                         v, CP_ARRAY_LEN(v), on_id, &e->id, NULL);
}

/* 1 if the retention pass is due now (it is then taken: the next one is an hour away). */
static int prune_due(cp_audit *a, int64_t now)
{
    if (a->retention_ms <= 0) return 0;
    pthread_mutex_lock(&a->mu);
    int due = now >= a->next_prune_ms;
    if (due) a->next_prune_ms = now + PRUNE_EVERY_MS;
    pthread_mutex_unlock(&a->mu);
    return due;
}

int cp_audit_record(cp_audit *a, cp_audit_entry *e, char *err, size_t errlen)
{
    cp_sqldb *db;
    int st = conn_get(a, &db, err, errlen);
    if (st != CP_OK) return st;
    st = audit_insert_db(db, e); /* one statement: committed (durably) on its own */
    if (st != CP_OK) fail(err, errlen, st, "record", db);
    conn_put(a, db);
    int64_t now = cp_now_ms();
    if (st == CP_OK && prune_due(a, now)) {
        char perr[256]; /* the record is done; a failed pass waits for the next due one */
        cp_audit_prune(a, now - a->retention_ms, NULL, perr, sizeof perr);
    }
    return st;
}

int cp_audit_finish(cp_audit *a, int64_t id, const char *outcome, const char *detail, char *err, size_t errlen)
{
    char oc[CP_AUDIT_MAX_OUTCOME], dt[CP_AUDIT_MAX_DETAIL];
    cp_audit_sets(oc, sizeof oc, outcome);
    cp_audit_sets(dt, sizeof dt, detail && *detail ? detail : "{}");
    cp_sqldb *db;
    int st = conn_get(a, &db, err, errlen);
    if (st != CP_OK) return st;
    cp_sql_val v[] = {cp_sql_i64(id), cp_sql_text(oc), cp_sql_text(dt)};
    int64_t changed = 0;
    st = cp_sqldb_exec(db, "UPDATE audit_log SET outcome = $2, detail = $3 WHERE id = $1", v, 3, NULL, NULL, &changed);
    if (st != CP_OK) fail(err, errlen, st, "finish", db);
    conn_put(a, db);
    if (st == CP_OK && changed == 0) {
        snprintf(err, errlen, "audit finish: no entry %lld", (long long)id);
        st = CP_ENOTFOUND;
    }
    return st;
}

int cp_audit_prune(cp_audit *a, int64_t before_ms, uint64_t *removed, char *err, size_t errlen)
{
    if (removed) *removed = 0;
    cp_sqldb *db;
    int st = conn_get(a, &db, err, errlen);
    if (st != CP_OK) return st;
    cp_sql_val v[] = {cp_sql_i64(before_ms)};
    int64_t n = 0;
    st = cp_sqldb_exec(db, "DELETE FROM audit_log WHERE time_ms < $1", v, 1, NULL, NULL, &n);
    if (st != CP_OK) fail(err, errlen, st, "retention", db);
    conn_put(a, db);
    if (st == CP_OK && removed) *removed = n > 0 ? (uint64_t)n : 0;
    return st;
}

/* ---- listing ------------------------------------------------------------------------------ */

_Static_assert(CP_SQLQ_MAX_PARAMS >= 8 + CP_AUDIT_FILTER_MAX_NS, "a filter's namespaces fit a query");

static int list_sql(cp_sqlq *q, const cp_audit_filter *f)
{
    cp_sqlq_init(q);
    q->st = cp_buf_puts(&q->sql, "SELECT id, time_ms, user_name, role, action, target, coalesce(namespace, ''),"
                                 " outcome, remote, detail FROM audit_log WHERE 1 = 1");
    if (f->from_ms) cp_sqlq_and(q, "time_ms >= ?", cp_sql_i64(f->from_ms));
    if (f->to_ms) cp_sqlq_and(q, "time_ms < ?", cp_sql_i64(f->to_ms));
    if (f->action) cp_sqlq_and(q, "action = ?", cp_sql_text(f->action));
    if (f->user) cp_sqlq_and(q, "user_name = ?", cp_sql_text(f->user));
    /* entries without a namespace never match a limited reader: NULL is IN nothing */
    cp_sqlq_in(q, "namespace", f->ns_limited, f->ns_in, f->nns_in, CP_AUDIT_FILTER_MAX_NS);
    if (f->before_id > 0) { /* the entries after a page's last one */
        cp_sql_val id = cp_sql_i64(f->before_id);
        cp_sqlq_and2(q, "(time_ms < ? OR (time_ms = ? AND id < @))", cp_sql_i64(f->before_ms), &id);
    }
    if (q->st == CP_OK) q->st = cp_buf_puts(&q->sql, " ORDER BY time_ms DESC, id DESC");
    if (q->st == CP_OK && f->limit) q->st = cp_buf_printf(&q->sql, " LIMIT %zu", f->limit);
    if (q->st == CP_OK) q->st = cp_buf_putc(&q->sql, 0);
    return q->st;
}

typedef struct list_ctx {
    int (*fn)(void *ud, const cp_audit_entry *e);
    void *ud;
    cp_audit_entry e;
} list_ctx;

static void col_text(char *dst, size_t cap, const cp_sql_val *v)
{
    size_t n;
    const char *s = cp_sql_strn(v, &n);
    cp_audit_set(dst, cap, s, n);
}

static int on_entry(void *ud, const cp_sql_val *c, size_t n)
{
    list_ctx *x = ud;
    if (n < 10) return 0;
    cp_audit_entry *e = &x->e;
    e->id = cp_sql_int(&c[0], 0);
    e->time_ms = cp_sql_int(&c[1], 0);
    col_text(e->user, sizeof e->user, &c[2]);
    col_text(e->role, sizeof e->role, &c[3]);
    col_text(e->action, sizeof e->action, &c[4]);
    col_text(e->target, sizeof e->target, &c[5]);
    col_text(e->ns, sizeof e->ns, &c[6]);
    col_text(e->outcome, sizeof e->outcome, &c[7]);
    col_text(e->remote, sizeof e->remote, &c[8]);
    col_text(e->detail, sizeof e->detail, &c[9]);
    return x->fn(x->ud, e);
}

int cp_audit_list(cp_audit *a, const cp_audit_filter *f, int (*fn)(void *ud, const cp_audit_entry *e), void *ud,
                  char *err, size_t errlen)
{
    cp_sqlq *q = calloc(1, sizeof *q); /* ~9 KiB of parameters: off the (HTTP thread's) stack */
    list_ctx *x = calloc(1, sizeof *x);
    int st = q && x ? list_sql(q, f) : CP_ENOMEM;
    if (st != CP_OK)
        snprintf(err, errlen, "audit list: %s", st == CP_ELIMIT ? "too many namespaces" : "out of memory");
    cp_sqldb *db = NULL;
    if (st == CP_OK) st = conn_get(a, &db, err, errlen);
    if (st == CP_OK) {
        x->fn = fn;
        x->ud = ud;
        st = cp_sqldb_exec(db, (const char *)q->sql.data, q->v, q->n, on_entry, x, NULL);
        if (st != CP_OK && cp_sqldb_errmsg(db)[0]) fail(err, errlen, st, "list", db); /* else fn stopped it */
        conn_put(a, db);
    }
    if (q) cp_buf_free(&q->sql);
    free(q);
    free(x);
    return st;
}

/* ---- open / close ------------------------------------------------------------------------- */

void cp_audit_close(cp_audit *a)
{
    if (!a) return;
    for (size_t i = 0; i < a->nidle; i++) cp_sqldb_close(a->idle[i]);
    free(a->idle);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a->catalog);
    free(a);
}

int cp_audit_open(const cp_audit_config *cfg, cp_audit **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!cfg->catalog || cfg->retention_ms < 0) {
        snprintf(err, errlen, "audit: a catalog is required and the retention must not be negative");
        return CP_EINVAL;
    }
    cp_catalog *cat = NULL; /* the catalog applies its migrations (the audit_log table included) */
    int st = cp_catalog_open(cfg->catalog, &cat, err, errlen);
    if (st != CP_OK) return st;
    cp_catalog_close(cat);
    cp_audit *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    a->retention_ms = cfg->retention_ms;
    a->max_conns = cfg->connections ? cfg->connections : DEFAULT_CONNS;
    if (a->max_conns > MAX_CONNS) a->max_conns = MAX_CONNS;
    a->catalog = strdup(cfg->catalog);
    a->idle = calloc(a->max_conns, sizeof *a->idle);
    if (!a->catalog || !a->idle) {
        cp_audit_close(a);
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    /* the retention pass at once: a log opened after a long stop is trimmed before it is
     * read; it also proves the table is reachable */
    if (a->retention_ms > 0) {
        int64_t now = cp_now_ms();
        a->next_prune_ms = now + PRUNE_EVERY_MS;
        st = cp_audit_prune(a, now - a->retention_ms, NULL, err, errlen);
        if (st != CP_OK) {
            cp_audit_close(a);
            return st;
        }
    }
    *out = a;
    return CP_OK;
}
