/* dumps_compact.c -- hot diagnostic files -> Parquet in the object store (cp_dumps.h
 * "compaction"; storage.md "Cold tier").
 *
 * One claim at a time, one hour at a time:
 *   1. claim    in one transaction (serialised across nodes by a lock): a claim whose
 *               lease ran out (or any, with take_over) is taken over as it is; else the
 *               oldest hour that has unclaimed hot files before `until` and no live claim
 *               gets a new one, key "d<YYYYMMDD>_<HH>_<first id>v<its version>", on at most
 *               CLAIM_MAX_ROWS of its files;
 *   2. reset    what an earlier run of the claim left: s3_files rows not completed, and
 *               their objects;
 *   3. write    per (namespace, kind), sorted by pod then time, one Parquet file
 *               (cp_cold_dumps_schema) in tmp_dir, each file's bytes fetched one row at
 *               a time; key YYYY/MM/DD/HH/<ns>/profiler-<kind>.parquet, or
 *               profiler-<kind>.<claim>.parquet when another claim holds that name
 *               (s3_files.uuid is the key: reserved by an insert that does nothing on
 *               conflict);
 *   4. upload   each file (put_file from the temp file);
 *   5. finish   one transaction: the files completed, each row still at the version that
 *               was written pointed at its file and row, its blob cleared; rows replaced
 *               or deleted meanwhile stay as they are (hot), the claim is cleared.
 * Readers see the hot blob until 5 commits and the cold row after. A crash leaves the
 * claim on its rows; after the lease it is taken over and redone from 2 to the same keys.
 */
#include "store/dumps/dumps_internal.h"
#include "store/cp_cold.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CLAIM_MAX_ROWS 10000
#define MAX_CLAIMS_PER_RUN 10000
#define HOUR_SEARCH_MAX 100000
#define ROW_GROUP_BYTES ((size_t)16 << 20) /* a cold read decodes one row group's bytes */
#define FILE_MAX_SERVICES 256

/* ---- the claim ----------------------------------------------------------------------- */

typedef struct job {
    char claim[64];
    int64_t hour_ms;
    int taken_over;
} job;

typedef struct claim_pick {
    int found;
    char claim[64];
    int64_t t;
} claim_pick;

static int on_pick(void *ud, const cp_sql_val *c, size_t n)
{
    claim_pick *p = ud;
    if (n < 2 || c[1].type != CP_SQL_I64) return 0;
    p->found = 1;
    snprintf(p->claim, sizeof p->claim, "%s", cp_sql_str(&c[0]));
    p->t = c[1].i;
    return 0;
}

static int on_int(void *ud, const cp_sql_val *c, size_t n)
{
    int64_t *v = ud;
    if (n && c[0].type == CP_SQL_I64) v[0] = c[0].i, v[1] = 1;
    return 0;
}

static int on_first(void *ud, const cp_sql_val *c, size_t n)
{
    int64_t *v = ud;
    if (n >= 2) v[0] = cp_sql_int(&c[0], 0), v[1] = cp_sql_int(&c[1], 1), v[2] = 1;
    return 0;
}

static int64_t hour_of(int64_t t) { return t - (((t % DUMPS_HOUR_MS) + DUMPS_HOUR_MS) % DUMPS_HOUR_MS); }

#define CANDIDATE "location = 'hot' AND state = 'complete'"

static int claim_in(cp_dumps *d, cp_sqldb *db, int64_t until_ms, int64_t now_ms, int take_over, job *j)
{
    int st = cp_sqldb_lock(db, DUMPS_LOCK_CLAIM, 1);
    if (st != CP_OK) return st;
    /* an abandoned claim is taken over as it is (same key, same objects) */
    claim_pick p = {0};
    cp_sql_val v1[] = {cp_sql_i64(now_ms - CP_COMPACT_LEASE_MS), cp_sql_i64(take_over ? 1 : 0)};
    st = cp_sqldb_exec(db,
                       "SELECT claim, min(dir_time) FROM dumps WHERE claim IS NOT NULL AND " CANDIDATE
                       " AND (claimed_at IS NULL OR claimed_at < $1 OR $2 = 1) GROUP BY claim ORDER BY 2, 1 LIMIT 1",
                       v1, 2, on_pick, &p, NULL);
    if (st != CP_OK) return st;
    if (p.found) {
        snprintf(j->claim, sizeof j->claim, "%s", p.claim);
        j->hour_ms = hour_of(p.t);
        j->taken_over = 1;
        cp_sql_val v[] = {cp_sql_text(j->claim), cp_sql_text(d->node), cp_sql_i64(now_ms)};
        return cp_sqldb_exec(db, "UPDATE dumps SET claimed_by = $2, claimed_at = $3 WHERE claim = $1", v, 3, NULL,
                             NULL, NULL);
    }
    /* the oldest hour with unclaimed files and no claim at work */
    int64_t lo = INT64_MIN;
    for (int i = 0; i < HOUR_SEARCH_MAX; i++) {
        int64_t t[2] = {0, 0};
        cp_sql_val v[] = {cp_sql_i64(until_ms), cp_sql_i64(lo)};
        st = cp_sqldb_exec(db,
                           "SELECT min(dir_time) FROM dumps WHERE claim IS NULL AND " CANDIDATE
                           " AND dir_time < $1 AND dir_time >= $2",
                           v, 2, on_int, t, NULL);
        if (st != CP_OK) return st;
        if (!t[1]) return CP_ENOTFOUND;
        int64_t h = hour_of(t[0]), busy[2] = {0, 0};
        cp_sql_val hv[] = {cp_sql_i64(h), cp_sql_i64(h + DUMPS_HOUR_MS), cp_sql_i64(until_ms),
                           cp_sql_i64(CLAIM_MAX_ROWS)};
        st = cp_sqldb_exec(db,
                           "SELECT 1 FROM dumps WHERE claim IS NOT NULL AND " CANDIDATE
                           " AND dir_time >= $1 AND dir_time < $2 LIMIT 1",
                           hv, 2, on_int, busy, NULL);
        if (st != CP_OK) return st;
        if (busy[1]) {
            lo = h + DUMPS_HOUR_MS;
            continue;
        }
        int64_t first[3] = {0, 0, 0};
        st = cp_sqldb_exec(db,
                           "SELECT uuid, version FROM dumps WHERE claim IS NULL AND " CANDIDATE
                           " AND dir_time >= $1 AND dir_time < $2 AND dir_time < $3 ORDER BY uuid LIMIT 1",
                           hv, 3, on_first, first, NULL);
        if (st != CP_OK) return st;
        if (!first[2]) return CP_ENOTFOUND;
        time_t ts = (time_t)((h < 0 ? 0 : h) / 1000);
        struct tm tm;
        gmtime_r(&ts, &tm);
        /* the first file's id and version: the same rows claimed again after a release get
         * the same key (and the reset cleans what the released run left), while a file
         * compacted, replaced and compacted again never meets its old claim's key */
        snprintf(j->claim, sizeof j->claim, "d%04d%02d%02d_%02d_%lldv%lld", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, (long long)first[0], (long long)first[1]);
        j->hour_ms = h;
        j->taken_over = 0;
        cp_sql_val uv[] = {cp_sql_i64(h), cp_sql_i64(h + DUMPS_HOUR_MS), cp_sql_i64(until_ms),
                           cp_sql_i64(CLAIM_MAX_ROWS), cp_sql_text(j->claim), cp_sql_text(d->node),
                           cp_sql_i64(now_ms)};
        return cp_sqldb_exec(db,
                             "UPDATE dumps SET claim = $5, claimed_by = $6, claimed_at = $7 WHERE uuid IN"
                             " (SELECT uuid FROM dumps WHERE claim IS NULL AND " CANDIDATE
                             " AND dir_time >= $1 AND dir_time < $2 AND dir_time < $3 ORDER BY uuid LIMIT $4)",
                             uv, 7, NULL, NULL, NULL);
    }
    return CP_ENOTFOUND;
}

static int claim(cp_dumps *d, int64_t until_ms, int64_t now_ms, int take_over, job *j, char *err, size_t errlen)
{
    cp_sqldb *db;
    int st = dumps_conn_get(d, &db, err, errlen);
    if (st != CP_OK) return st;
    st = cp_sqldb_begin(db);
    if (st == CP_OK) st = claim_in(d, db, until_ms, now_ms, take_over, j);
    if (st == CP_OK || st == CP_ENOTFOUND) {
        int cs = cp_sqldb_commit(db);
        if (cs != CP_OK) st = cs;
    }
    if (st != CP_OK && st != CP_ENOTFOUND) dumps_fail(err, errlen, st, "dumps claim", db);
    dumps_conn_put(d, db);
    return st;
}

/* ---- reset / release ------------------------------------------------------------------- */

typedef struct key_list {
    char **v;
    size_t n, cap;
    int st;
} key_list;

static int on_key(void *ud, const cp_sql_val *c, size_t n)
{
    key_list *l = ud;
    if (!n || c[0].type != CP_SQL_TEXT) return 0;
    if (cp_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v, 16) != CP_OK) return l->st = CP_ENOMEM;
    if (!(l->v[l->n] = strdup(cp_sql_str(&c[0])))) return l->st = CP_ENOMEM;
    l->n++;
    return 0;
}

static void keys_free(key_list *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Objects and s3_files rows of the claim that are not completed (an earlier run's). */
static int reset(cp_dumps *d, const job *j, char *err, size_t errlen)
{
    cp_sqldb *db;
    int st = dumps_conn_get(d, &db, err, errlen);
    if (st != CP_OK) return st;
    key_list l = {0};
    cp_sql_val v[] = {cp_sql_text(j->claim)};
    st = cp_sqldb_exec(db,
                       "SELECT coalesce(object_key, uuid) FROM s3_files WHERE claim = $1 AND file_type = 'dumps'"
                       " AND status <> 'completed'",
                       v, 1, on_key, &l, NULL);
    for (size_t i = 0; st == CP_OK && i < l.n; i++) {
        char e[512];
        int ds = cp_ostore_key_ok(l.v[i]) ? d->store->ops->del(d->store, l.v[i], e, sizeof e) : CP_OK;
        if (ds != CP_OK && ds != CP_ENOTFOUND) {
            snprintf(err, errlen, "dumps compaction: delete %s: %s", l.v[i], e);
            st = ds;
        }
    }
    keys_free(&l);
    if (st == CP_OK)
        st = cp_sqldb_exec(db,
                           "DELETE FROM s3_files WHERE claim = $1 AND file_type = 'dumps' AND status <> 'completed'", v,
                           1, NULL, NULL, NULL);
    if (st != CP_OK && !err[0]) dumps_fail(err, errlen, st, "dumps compaction: reset", db);
    dumps_conn_put(d, db);
    return st;
}

/* After a failure: the claim's leftovers go and its rows are free again (if still ours). */
static void release(cp_dumps *d, const job *j)
{
    char e[512] = "";
    reset(d, j, e, sizeof e);
    cp_sqldb *db;
    if (dumps_conn_get(d, &db, e, sizeof e) != CP_OK) return;
    cp_sql_val v[] = {cp_sql_text(j->claim), cp_sql_text(d->node)};
    cp_sqldb_exec(db,
                  "UPDATE dumps SET claim = NULL, claimed_by = NULL, claimed_at = NULL WHERE claim = $1"
                  " AND claimed_by = $2",
                  v, 2, NULL, NULL, NULL);
    dumps_conn_put(d, db);
}

/* ---- the claim's rows ------------------------------------------------------------------ */

enum { S_NS, S_KIND, S_POD, S_SERVICE, S_POD_TYPE, S_NAME, S_PATH, S_SHA, S_INFO, S_COUNT };

typedef struct crow {
    int64_t id, version, dir_ms, restart_ms, capture_ms, bytes;
    const char *s[S_COUNT];
    char *text;
    int64_t cold_row;       /* -1 until written */
    size_t file;
} crow;

typedef struct crows {
    crow *v;
    size_t n, cap;
    int st;
} crows;

static int on_crow(void *ud, const cp_sql_val *c, size_t n)
{
    crows *l = ud;
    if (n < 6 + S_COUNT) return 0;
    if (cp_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v, 256) != CP_OK) return l->st = CP_ENOMEM;
    crow *r = &l->v[l->n];
    memset(r, 0, sizeof *r);
    r->id = cp_sql_int(&c[0], 0);
    r->version = cp_sql_int(&c[1], 1);
    r->dir_ms = cp_sql_int(&c[2], 0);
    r->restart_ms = cp_sql_int(&c[3], 0);
    r->capture_ms = cp_sql_int(&c[4], -1);
    r->bytes = cp_sql_int(&c[5], 0);
    size_t total = 0;
    for (int i = 0; i < S_COUNT; i++) total += strlen(cp_sql_str(&c[6 + i])) + 1;
    char *t = malloc(total);
    if (!t) return l->st = CP_ENOMEM;
    r->text = t;
    for (int i = 0; i < S_COUNT; i++) {
        const char *s = cp_sql_str(&c[6 + i]);
        size_t len = strlen(s);
        memcpy(t, s, len + 1);
        r->s[i] = t;
        t += len + 1;
    }
    r->cold_row = -1;
    l->n++;
    return 0;
}

static void crows_free(crows *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->v[i].text);
    free(l->v);
}

/* namespace, kind, then the file's order: pod, time, id (bytes, like both catalogs) */
static int crow_cmp(const void *a, const void *b)
{
    const crow *x = a, *y = b;
    int c = strcmp(x->s[S_NS], y->s[S_NS]);
    if (!c) c = strcmp(x->s[S_KIND], y->s[S_KIND]);
    if (!c) c = strcmp(x->s[S_POD], y->s[S_POD]);
    if (!c) c = x->dir_ms < y->dir_ms ? -1 : x->dir_ms > y->dir_ms;
    if (!c) c = x->id < y->id ? -1 : x->id > y->id;
    return c;
}

static int load_rows(cp_dumps *d, const job *j, crows *l, char *err, size_t errlen)
{
    cp_sqldb *db;
    int st = dumps_conn_get(d, &db, err, errlen);
    if (st != CP_OK) return st;
    cp_sql_val v[] = {cp_sql_text(j->claim)};
    st = cp_sqldb_exec(db,
                       "SELECT uuid, version, dir_time, restart_time, capture_time, bytes_size, namespace, dump_type,"
                       " pod_name, coalesce(service_name, ''), coalesce(pod_type, ''), coalesce(file_name, ''),"
                       " coalesce(path, ''), coalesce(sha256, ''), coalesce(info, '{}') FROM dumps"
                       " WHERE claim = $1 AND " CANDIDATE,
                       v, 1, on_crow, l, NULL);
    if (st != CP_OK) {
        if (l->st != CP_OK) snprintf(err, errlen, "dumps compaction: out of memory");
        else dumps_fail(err, errlen, st, "dumps compaction: read the claim", db);
    }
    dumps_conn_put(d, db);
    if (st == CP_OK && l->n) qsort(l->v, l->n, sizeof *l->v, crow_cmp);
    return st;
}

/* ---- one file ----------------------------------------------------------------------------- */

typedef struct cfile {
    char key[CP_OSTORE_MAX_KEY + 1];
    size_t first, count;    /* rows[first .. first + count) */
    int64_t rows, size, min_ms, max_ms;
    int uploaded;
} cfile;

typedef struct writer {
    cp_dumps *d;
    const job *j;
    FILE *fp;
    cp_pq_writer *w;
    crow *row;              /* the row being fetched */
    int64_t written;
    int st;
    char *err;
    size_t errlen;
} writer;

static int sink(void *ud, const void *p, size_t n)
{
    writer *w = ud;
    return fwrite(p, 1, n, w->fp) == n ? 0 : CP_EIO;
}

static cp_pq_bytes sb(const char *s) { return (cp_pq_bytes){(const uint8_t *)s, strlen(s)}; }

/* The blob of the row being written: one Parquet row. */
static int on_blob(void *ud, const cp_sql_val *c, size_t n)
{
    writer *w = ud;
    crow *r = w->row;
    if (!n || (c[0].type != CP_SQL_BLOB && c[0].type != CP_SQL_TEXT) || (int64_t)c[0].n != r->bytes) {
        snprintf(w->err, w->errlen, "dumps compaction: file %lld has %zu bytes in its row, the record says %lld",
                 (long long)r->id, n ? c[0].n : 0, (long long)r->bytes);
        return w->st = CP_ECORRUPT;
    }
    char id[24], version[24], capture[24];
    snprintf(id, sizeof id, "%lld", (long long)r->id);
    snprintf(version, sizeof version, "%lld", (long long)r->version);
    snprintf(capture, sizeof capture, "%lld", (long long)r->capture_ms);
    cp_pq_bytes vals[7] = {sb(id), sb(r->s[S_NAME]), sb(r->s[S_PATH]), sb(r->s[S_SHA]), sb(version), sb(r->s[S_INFO]),
                           sb(capture)};
    static const char *const keys[7] = {"id", "name", "path", "sha256", "version", "info", "capture_ms"};
    cp_pq_map_entry map[7];
    size_t nmap = 0;
    for (size_t i = 0; i < 7; i++) {
        if (i == 6 && r->capture_ms < 0) continue;
        map[nmap++] = (cp_pq_map_entry){sb(keys[i]), &vals[i], 1};
    }
    cp_pq_value row[CP_COLD_D_COUNT];
    memset(row, 0, sizeof row);
    row[CP_COLD_D_TIME].i = r->dir_ms;
    row[CP_COLD_D_NAMESPACE].b = sb(r->s[S_NS]);
    row[CP_COLD_D_SERVICE].b = sb(r->s[S_SERVICE]);
    row[CP_COLD_D_POD].b = sb(r->s[S_POD]);
    row[CP_COLD_D_RESTART].i = r->restart_ms;
    row[CP_COLD_D_POD_TYPE].b = sb(r->s[S_POD_TYPE]);
    row[CP_COLD_D_DUMP_TYPE].b = sb(r->s[S_KIND]);
    row[CP_COLD_D_BYTES].i = r->bytes;
    row[CP_COLD_D_PARAMS].map = map;
    row[CP_COLD_D_PARAMS].nmap = nmap;
    row[CP_COLD_D_BINARY].b = (cp_pq_bytes){c[0].p, c[0].n};
    if (cp_pq_writer_add(w->w, row) != CP_OK) {
        snprintf(w->err, w->errlen, "dumps compaction: parquet: %s", cp_pq_writer_errmsg(w->w));
        return w->st = CP_EIO;
    }
    r->cold_row = w->written++;
    return 0;
}

/* Reserves the file's key: the hour's plain name, or ".<claim>" when another claim has it. */
static int reserve(cp_sqldb *db, const job *j, const crow *r, cfile *f, char *err, size_t errlen)
{
    cp_buf b;
    cp_buf_init(&b);
    int st = dumps_hour_prefix(j->hour_ms, &b);
    if (st == CP_OK) st = cp_cold_ns_component(r->s[S_NS], strlen(r->s[S_NS]), &b);
    if (st == CP_OK) st = cp_buf_puts(&b, "/profiler-");
    if (st == CP_OK) st = cp_cold_ns_component(r->s[S_KIND], strlen(r->s[S_KIND]), &b);
    size_t base = b.len;
    for (int pass = 0; st == CP_OK && pass < 2; pass++) {
        b.len = base;
        st = cp_buf_printf(&b, "%s%s.parquet", pass ? "." : "", pass ? j->claim : "");
        if (st == CP_OK) st = cp_buf_putc(&b, 0);
        if (st != CP_OK || b.len > sizeof f->key) break;
        memcpy(f->key, b.data, b.len);
        const char *name = strrchr(f->key, '/') + 1;
        cp_sql_val v[] = {cp_sql_text(f->key), cp_sql_i64(j->hour_ms), cp_sql_i64(j->hour_ms + DUMPS_HOUR_MS),
                          cp_sql_text(r->s[S_KIND]), cp_sql_text(r->s[S_NS]), cp_sql_text(name),
                          cp_sql_i64(cp_now_ms()), cp_sql_text(j->claim)};
        st = cp_sqldb_exec(db,
                           "INSERT INTO s3_files (uuid, start_time, end_time, file_type, dump_type, namespace,"
                           " duration_range, file_name, status, services, created_time, api_version, rows_count,"
                           " file_size, object_key, indexed_params, claim) VALUES ($1, $2, $3, 'dumps', $4, $5, 0,"
                           " $6, 'creating', '[]', $7, '1', 0, 0, $1, '[]', $8) ON CONFLICT (uuid) DO NOTHING",
                           v, 8, NULL, NULL, NULL);
        claim_pick p = {0};
        /* ours: reserved by this claim and not completed (a completed file is never rewritten) */
        if (st == CP_OK)
            st = cp_sqldb_exec(db,
                               "SELECT claim, CAST(CASE WHEN status = 'completed' THEN 1 ELSE 0 END AS bigint)"
                               " FROM s3_files WHERE uuid = $1",
                               v, 1, on_pick, &p, NULL);
        if (st != CP_OK) {
            cp_buf_free(&b);
            return dumps_fail(err, errlen, st, "dumps compaction: reserve a file", db);
        }
        if (p.found && !strcmp(p.claim, j->claim) && p.t == 0) {
            cp_buf_free(&b);
            return CP_OK;
        }
    }
    cp_buf_free(&b);
    snprintf(err, errlen, "dumps compaction: no free file name for %s/%s in claim %s", r->s[S_NS], r->s[S_KIND],
             j->claim);
    return st == CP_OK ? CP_EIO : st;
}

static int json_services(const crow *rows, size_t n, cp_buf *out)
{
    const char *seen[FILE_MAX_SERVICES];
    size_t k = 0;
    int st = cp_buf_putc(out, '[');
    for (size_t i = 0; st == CP_OK && i < n && k < FILE_MAX_SERVICES; i++) {
        const char *s = rows[i].s[S_SERVICE];
        size_t j = 0;
        while (j < k && strcmp(seen[j], s)) j++;
        if (j < k) continue;
        if (k) st = cp_buf_putc(out, ',');
        if (st == CP_OK) st = cp_json_str(out, s, strlen(s));
        seen[k++] = s;
    }
    if (st == CP_OK) st = cp_buf_append(out, "]", 2);
    return st;
}

/* Writes, records and uploads one file. *empty = 1 when no row was left to write. */
static int one_file(cp_dumps *d, const job *j, crow *rows, cfile *f, size_t index, int64_t now_ms,
                    cp_dumps_compact_stats *stats, void (*progress)(void *, const char *), void *ud, char *err,
                    size_t errlen)
{
    cp_sqldb *db;
    int st = dumps_conn_get(d, &db, err, errlen);
    if (st != CP_OK) return st;
    st = reserve(db, j, &rows[f->first], f, err, errlen);
    char path[4400];
    snprintf(path, sizeof path, "%s/dcompact-%s-%zu.parquet", d->tmp_dir, j->claim, index);
    writer w = {.d = d, .j = j, .err = err, .errlen = errlen, .st = CP_OK};
    if (st == CP_OK && !(w.fp = fopen(path, "wb"))) {
        snprintf(err, errlen, "dumps compaction: create %s: %s", path, strerror(errno));
        st = CP_EIO;
    }
    if (st == CP_OK) {
        cp_pq_writer_opts o = {.row_group_bytes = ROW_GROUP_BYTES};
        char e[256];
        st = cp_pq_writer_new(cp_cold_dumps_schema, CP_COLD_D_COUNT, &o, sink, &w, &w.w, e, sizeof e);
        if (st != CP_OK) snprintf(err, errlen, "dumps compaction: parquet: %s", e);
    }
    f->min_ms = INT64_MAX, f->max_ms = INT64_MIN;
    for (size_t i = 0; st == CP_OK && i < f->count; i++) {
        crow *r = &rows[f->first + i];
        w.row = r;
        /* a file replaced or deleted since the claim is not written: it stays as it is */
        cp_sql_val v[] = {cp_sql_i64(r->id), cp_sql_text(j->claim), cp_sql_i64(r->version)};
        st = cp_sqldb_exec(db,
                           "SELECT binary_data FROM dumps WHERE uuid = $1 AND claim = $2 AND version = $3"
                           " AND " CANDIDATE,
                           v, 3, on_blob, &w, NULL);
        if (st != CP_OK && w.st == CP_OK) dumps_fail(err, errlen, st, "dumps compaction: read a file", db);
        if (st == CP_OK && r->cold_row >= 0) {
            if (r->dir_ms < f->min_ms) f->min_ms = r->dir_ms;
            if (r->dir_ms > f->max_ms) f->max_ms = r->dir_ms;
        }
    }
    if (st == CP_OK && cp_pq_writer_finish(w.w) != CP_OK) {
        snprintf(err, errlen, "dumps compaction: parquet: %s", cp_pq_writer_errmsg(w.w));
        st = CP_EIO;
    }
    if (w.w) f->size = (int64_t)cp_pq_writer_bytes(w.w);
    f->rows = w.written;
    cp_pq_writer_free(w.w);
    if (w.fp) {
        if (fclose(w.fp) != 0 && st == CP_OK) {
            snprintf(err, errlen, "dumps compaction: write %s: %s", path, strerror(errno));
            st = CP_EIO;
        }
    }
    cp_buf services, url;
    cp_buf_init(&services);
    cp_buf_init(&url);
    if (st == CP_OK && f->rows == 0) { /* everything was replaced meanwhile */
        cp_sql_val v[] = {cp_sql_text(f->key), cp_sql_text(j->claim)};
        st = cp_sqldb_exec(db, "DELETE FROM s3_files WHERE uuid = $1 AND claim = $2", v, 2, NULL, NULL, NULL);
        if (st != CP_OK) dumps_fail(err, errlen, st, "dumps compaction: drop an empty file", db);
    } else if (st == CP_OK) {
        st = json_services(rows + f->first, f->count, &services);
        if (st == CP_OK && (d->store->ops->url(d->store, f->key, &url) != CP_OK || cp_buf_putc(&url, 0) != CP_OK))
            cp_buf_reset(&url);
        cp_sql_val v[] = {cp_sql_text(f->key),
                          cp_sql_text(j->claim),
                          cp_sql_i64(f->rows),
                          cp_sql_i64(f->size),
                          cp_sql_text(st == CP_OK ? (const char *)services.data : "[]"),
                          cp_sql_i64(f->min_ms),
                          cp_sql_i64(f->max_ms),
                          cp_sql_text(url.len ? (const char *)url.data : f->key),
                          cp_sql_text(path),
                          cp_sql_i64(now_ms),
                          cp_sql_text(d->node)};
        if (st == CP_OK)
            st = cp_sqldb_exec(db,
                               "UPDATE s3_files SET status = 'transferring', rows_count = $3, file_size = $4,"
                               " services = $5, min_time = $6, max_time = $7, remote_storage_path = $8,"
                               " local_file_path = $9 WHERE uuid = $1 AND claim = $2",
                               v, 9, NULL, NULL, NULL);
        /* the lease: a compactor still uploading is alive */
        if (st == CP_OK)
            st = cp_sqldb_exec(db, "UPDATE dumps SET claimed_at = $10 WHERE claim = $2 AND claimed_by = $11", v, 11,
                               NULL, NULL, NULL);
        if (st != CP_OK) dumps_fail(err, errlen, st, "dumps compaction: record a file", db);
    }
    dumps_conn_put(d, db);
    if (st == CP_OK && f->rows) {
        char e[512];
        st = d->store->ops->put_file(d->store, f->key, path, e, sizeof e);
        if (st != CP_OK) snprintf(err, errlen, "dumps compaction: upload %s: %s", f->key, e);
        else {
            f->uploaded = 1;
            stats->files_written++;
            stats->bytes_written += (uint64_t)f->size;
            if (progress) {
                char line[1400];
                snprintf(line, sizeof line, "dumps: %s: %lld dumps, %lld bytes", f->key, (long long)f->rows,
                         (long long)f->size);
                progress(ud, line);
            }
        }
    }
    unlink(path);
    cp_buf_free(&services);
    cp_buf_free(&url);
    return st;
}

/* ---- finish ---------------------------------------------------------------------------------- */

static int finish(cp_dumps *d, const job *j, const crow *rows, size_t nrows, const cfile *files, size_t nfiles,
                  uint64_t *moved, char *err, size_t errlen)
{
    *moved = 0;
    cp_sqldb *db;
    int st = dumps_conn_get(d, &db, err, errlen);
    if (st != CP_OK) return st;
    st = cp_sqldb_begin(db);
    /* the claim lock: a takeover cannot slip in between the check and the switch */
    if (st == CP_OK) st = cp_sqldb_lock(db, DUMPS_LOCK_CLAIM, 1);
    int64_t others[2] = {0, 0};
    cp_sql_val cv[] = {cp_sql_text(j->claim), cp_sql_text(d->node)};
    if (st == CP_OK)
        st = cp_sqldb_exec(db, "SELECT 1 FROM dumps WHERE claim = $1 AND coalesce(claimed_by, '') <> $2 LIMIT 1", cv,
                           2, on_int, others, NULL);
    if (st == CP_OK && others[1]) {
        cp_sqldb_rollback(db);
        dumps_conn_put(d, db);
        snprintf(err, errlen, "dumps compaction: claim %s was taken over by another compactor", j->claim);
        return CP_EABORT;
    }
    for (size_t i = 0; st == CP_OK && i < nfiles; i++) {
        if (!files[i].uploaded) continue;
        cp_sql_val v[] = {cp_sql_text(files[i].key), cp_sql_text(j->claim)};
        st = cp_sqldb_exec(db, "UPDATE s3_files SET status = 'completed' WHERE uuid = $1 AND claim = $2", v, 2, NULL,
                           NULL, NULL);
    }
    for (size_t i = 0; st == CP_OK && i < nrows; i++) {
        const crow *r = &rows[i];
        if (r->cold_row < 0 || !files[r->file].uploaded) continue;
        int64_t n = 0;
        cp_sql_val v[] = {cp_sql_i64(r->id), cp_sql_text(j->claim), cp_sql_i64(r->version),
                          cp_sql_text(files[r->file].key), cp_sql_i64(r->cold_row)};
        st = cp_sqldb_exec(db,
                           "UPDATE dumps SET location = 'cold', object_key = $4, cold_row = $5, binary_data = NULL,"
                           " claim = NULL, claimed_by = NULL, claimed_at = NULL WHERE uuid = $1 AND claim = $2"
                           " AND version = $3 AND " CANDIDATE,
                           v, 5, NULL, NULL, &n);
        *moved += (uint64_t)n;
    }
    if (st == CP_OK) /* rows not written (replaced or deleted meanwhile) */
        st = cp_sqldb_exec(db, "UPDATE dumps SET claim = NULL, claimed_by = NULL, claimed_at = NULL WHERE claim = $1",
                           cv, 1, NULL, NULL, NULL);
    if (st == CP_OK) st = cp_sqldb_commit(db);
    if (st != CP_OK) {
        *moved = 0;
        dumps_fail(err, errlen, st, "dumps compaction: finish", db);
    }
    dumps_conn_put(d, db);
    return st;
}

static int compact_job(cp_dumps *d, const job *j, int64_t now_ms, cp_dumps_compact_stats *stats,
                       void (*progress)(void *, const char *), void *ud, uint64_t *moved, char *err, size_t errlen)
{
    *moved = 0;
    crows l = {.st = CP_OK};
    cfile *files = NULL;
    size_t nfiles = 0, capfiles = 0;
    int st = reset(d, j, err, errlen);
    if (st == CP_OK) st = load_rows(d, j, &l, err, errlen);
    for (size_t i = 0; st == CP_OK && i < l.n;) {
        size_t e = i + 1;
        while (e < l.n && !strcmp(l.v[e].s[S_NS], l.v[i].s[S_NS]) && !strcmp(l.v[e].s[S_KIND], l.v[i].s[S_KIND])) e++;
        if (cp_grow((void **)&files, &capfiles, nfiles + 1, sizeof *files, 8) != CP_OK) {
            snprintf(err, errlen, "out of memory");
            st = CP_ENOMEM;
            break;
        }
        cfile *f = &files[nfiles];
        memset(f, 0, sizeof *f);
        f->first = i;
        f->count = e - i;
        for (size_t k = i; k < e; k++) l.v[k].file = nfiles;
        nfiles++;
        st = one_file(d, j, l.v, f, nfiles - 1, now_ms, stats, progress, ud, err, errlen);
        i = e;
    }
    if (st == CP_OK) st = finish(d, j, l.v, l.n, files, nfiles, moved, err, errlen);
    if (st == CP_OK) stats->dumps_moved += *moved;
    free(files);
    crows_free(&l);
    return st;
}

int cp_dumps_compact(cp_dumps *d, int64_t until_ms, int64_t now_ms, int take_over,
                     void (*progress)(void *ud, const char *line), void *ud, cp_dumps_compact_stats *st, char *err,
                     size_t errlen)
{
    memset(st, 0, sizeof *st);
    err[0] = 0;
    uint64_t t0 = cp_mono_ns();
    for (int n = 0; n < MAX_CLAIMS_PER_RUN; n++) {
        /* the clock moves on during a run: leases are measured from the caller's now */
        int64_t now = now_ms + (int64_t)((cp_mono_ns() - t0) / 1000000u);
        job j;
        memset(&j, 0, sizeof j);
        int r = claim(d, until_ms, now, take_over, &j, err, errlen);
        if (r == CP_ENOTFOUND) return CP_OK;
        if (r != CP_OK) return r;
        uint64_t moved = 0, files0 = st->files_written;
        r = compact_job(d, &j, now, st, progress, ud, &moved, err, errlen);
        if (r != CP_OK) {
            if (r != CP_EABORT) release(d, &j);
            return r;
        }
        if (progress) {
            char line[256];
            snprintf(line, sizeof line, "dumps: claim %s%s: %llu dumps moved into %llu Parquet files", j.claim,
                     j.taken_over ? " (taken over)" : "", (unsigned long long)moved,
                     (unsigned long long)(st->files_written - files0));
            progress(ud, line);
        }
        if (!moved) break; /* all replaced meanwhile: the next run takes them */
    }
    return CP_OK;
}
