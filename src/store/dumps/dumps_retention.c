/* dumps_retention.c -- old diagnostic files go (cp_dumps.h "retention"; dumps-http.md §7.1
 * "Retention"):
 *   1. records with a directory time before the cut-off are deleted; an object's key is
 *      entered in dump_pending in the same transaction and the object deleted after it;
 *   2. dumps Parquet files (s3_files, file_type 'dumps') whose hour ended by the cut-off
 *      and that no record points at any more are marked to_delete, their objects deleted,
 *      then their rows. The calls' retention (retention.c) marks them too, with the same
 *      cut-off but without looking at the records: run this first, so that the records
 *      of a file's hour are gone before its file is;
 *   3. heap dumps beyond the newest heap_keep of their (namespace, pod) are deleted as
 *      cp_dumps_delete does (record kept as 'deleted', object gone);
 *   4. dump_pending entries older than pending_ms (an upload that died between its put
 *      and its commit, or a deletion that died before its object went) lose their object.
 * Each step is idempotent: a crash is repaired by the next run. */
#include "store/dumps/dumps_internal.h"

#include <stdio.h>
#include <stdlib.h>

#define BATCH 500
#define DEFAULT_PENDING_MS ((int64_t)3600 * 1000)

typedef struct victim {
    int64_t id;
    int object;
    char *key;
} victim;

typedef struct victims {
    victim *v;
    size_t n, cap;
    int st;
} victims;

static int on_victim(void *ud, const cp_sql_val *c, size_t n)
{
    victims *l = ud;
    if (!n) return 0;
    if (cp_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v, 64) != CP_OK) return l->st = CP_ENOMEM;
    victim *x = &l->v[l->n];
    memset(x, 0, sizeof *x);
    x->id = cp_sql_int(&c[0], 0);
    if (n >= 3) {
        x->object = !strcmp(cp_sql_str(&c[1]), "object");
        if (!(x->key = strdup(cp_sql_str(&c[2])))) return l->st = CP_ENOMEM;
    } else if (c[0].type == CP_SQL_TEXT) {
        if (!(x->key = strdup(cp_sql_str(&c[0])))) return l->st = CP_ENOMEM;
    }
    l->n++;
    return 0;
}

static void victims_clear(victims *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->v[i].key);
    l->n = 0;
    l->st = CP_OK;
}

/* Runs a query listing victims into l (cleared first). */
static int list(cp_dumps *d, const char *sql, const cp_sql_val *v, size_t nv, victims *l, char *err, size_t errlen)
{
    victims_clear(l);
    cp_sqldb *db;
    int st = dumps_conn_get(d, &db, err, errlen);
    if (st != CP_OK) return st;
    st = cp_sqldb_exec(db, sql, v, nv, on_victim, l, NULL);
    if (st != CP_OK) {
        if (l->st != CP_OK) snprintf(err, errlen, "dumps retention: out of memory");
        else dumps_fail(err, errlen, st, "dumps retention", db);
    }
    dumps_conn_put(d, db);
    return st;
}

/* 1: records older than the cut-off. */
static int expire(cp_dumps *d, int64_t before_ms, victims *l, cp_dumps_retention_stats *s, char *err, size_t errlen)
{
    for (;;) {
        cp_sql_val v[] = {cp_sql_i64(before_ms), cp_sql_i64(BATCH)};
        int st = list(d, "SELECT uuid, location, coalesce(object_key, '') FROM dumps WHERE dir_time < $1"
                         " ORDER BY dir_time, uuid LIMIT $2",
                      v, 2, l, err, errlen);
        if (st != CP_OK || l->n == 0) return st;
        cp_sqldb *db;
        st = dumps_conn_get(d, &db, err, errlen);
        if (st != CP_OK) return st;
        st = cp_sqldb_begin(db);
        uint64_t gone = 0;
        for (size_t i = 0; st == CP_OK && i < l->n; i++) {
            victim *x = &l->v[i];
            int64_t n = 0;
            cp_sql_val dv[] = {cp_sql_i64(x->id), cp_sql_i64(before_ms)};
            st = cp_sqldb_exec(db, "DELETE FROM dumps WHERE uuid = $1 AND dir_time < $2", dv, 2, NULL, NULL, &n);
            gone += (uint64_t)n;
            if (st == CP_OK && n && x->object && x->key[0]) {
                cp_sql_val pv[] = {cp_sql_text(x->key)};
                st = cp_sqldb_exec(db,
                                   "INSERT INTO dump_pending (object_key, node, created_time) VALUES ($1, '"
                                   DUMPS_PENDING_DELETE "', 0) ON CONFLICT (object_key) DO NOTHING",
                                   pv, 1, NULL, NULL, NULL);
            } else if (!n) {
                x->object = 0; /* replaced by a newer upload meanwhile */
            }
        }
        if (st == CP_OK) st = cp_sqldb_commit(db);
        if (st != CP_OK) dumps_fail(err, errlen, st, "dumps retention: delete old records", db);
        dumps_conn_put(d, db);
        if (st != CP_OK) return st;
        s->expired += gone;
        for (size_t i = 0; i < l->n; i++)
            if (l->v[i].object && l->v[i].key[0]) s->objects_deleted += (uint64_t)dumps_object_drop(d, l->v[i].key);
        if (l->n < BATCH) return CP_OK;
    }
}

/* 2: the dumps Parquet files of hours past the cut-off. */
static int drop_files(cp_dumps *d, int64_t before_ms, victims *l, cp_dumps_retention_stats *s, char *err,
                      size_t errlen)
{
    cp_sqldb *db;
    int st = dumps_conn_get(d, &db, err, errlen);
    if (st != CP_OK) return st;
    cp_sql_val v[] = {cp_sql_i64(before_ms)};
    st = cp_sqldb_exec(db,
                       "UPDATE s3_files SET status = 'to_delete' WHERE file_type = 'dumps' AND status = 'completed'"
                       " AND end_time <= $1 AND NOT EXISTS (SELECT 1 FROM dumps WHERE dumps.object_key = s3_files.uuid"
                       " AND dumps.location = 'cold')",
                       v, 1, NULL, NULL, NULL);
    if (st != CP_OK) dumps_fail(err, errlen, st, "dumps retention: mark old files", db);
    dumps_conn_put(d, db);
    for (int rounds = 0; st == CP_OK && rounds < 100000; rounds++) {
        cp_sql_val lv[] = {cp_sql_i64(BATCH)};
        st = list(d, "SELECT coalesce(object_key, uuid), uuid FROM s3_files WHERE file_type = 'dumps'"
                     " AND status = 'to_delete' ORDER BY uuid LIMIT $1",
                  lv, 1, l, err, errlen);
        if (st != CP_OK || l->n == 0) break;
        size_t done = 0;
        for (size_t i = 0; i < l->n; i++) {
            char e[512];
            const char *key = l->v[i].key;
            int ds = cp_ostore_key_ok(key) ? d->store->ops->del(d->store, key, e, sizeof e) : CP_OK;
            if (ds != CP_OK && ds != CP_ENOTFOUND) continue; /* tried again next time */
            if (dumps_conn_get(d, &db, err, errlen) != CP_OK) break;
            cp_sql_val kv[] = {cp_sql_text(key)};
            /* uuid = object key for every dumps file */
            if (cp_sqldb_exec(db, "DELETE FROM s3_files WHERE uuid = $1 AND status = 'to_delete'", kv, 1, NULL, NULL,
                              NULL) == CP_OK)
                done++;
            dumps_conn_put(d, db);
            s->objects_deleted++;
        }
        if (!done || l->n < BATCH) break;
    }
    return st;
}

/* 3: heap dumps beyond the newest heap_keep per (namespace, pod): newest by directory
 * time, then by arrival (ids are random, so they say nothing about age). */
static int trim_heaps(cp_dumps *d, unsigned heap_keep, int64_t now_ms, victims *l, cp_dumps_retention_stats *s,
                      char *err, size_t errlen)
{
    for (;;) {
        cp_sql_val v[] = {cp_sql_i64(heap_keep), cp_sql_i64(BATCH)};
        int st = list(d,
                      "SELECT uuid FROM (SELECT uuid, row_number() OVER (PARTITION BY namespace, pod_name"
                      " ORDER BY dir_time DESC, received_time DESC, uuid DESC) AS rn FROM dumps WHERE dump_type = 'heap'"
                      " AND state = 'complete') x WHERE rn > $1 ORDER BY uuid LIMIT $2",
                      v, 2, l, err, errlen);
        if (st != CP_OK || l->n == 0) return st;
        size_t done = 0;
        for (size_t i = 0; i < l->n; i++) {
            int obj = 0;
            st = dumps_delete_id(d, l->v[i].id, now_ms, &obj, err, errlen);
            if (st == CP_ENOTFOUND) continue; /* deleted meanwhile */
            if (st != CP_OK) return st;
            done++;
            s->heaps_trimmed++;
            s->objects_deleted += (uint64_t)obj;
        }
        if (!done || l->n < BATCH) return CP_OK;
    }
}

/* 4: objects of dump_pending entries older than the cut-off. The entry is marked first
 * (an upload still running finds its entry gone and fails instead of recording a row for
 * an object that is being deleted), then the object goes, then the entry. */
static int sweep(cp_dumps *d, int64_t cut_ms, victims *l, cp_dumps_retention_stats *s, char *err, size_t errlen)
{
    for (int rounds = 0; rounds < 100000; rounds++) {
        cp_sql_val v[] = {cp_sql_i64(cut_ms), cp_sql_i64(BATCH)};
        int st = list(d, "SELECT object_key FROM dump_pending WHERE created_time < $1 ORDER BY object_key LIMIT $2", v,
                      2, l, err, errlen);
        if (st != CP_OK || l->n == 0) return st;
        size_t done = 0;
        for (size_t i = 0; i < l->n; i++) {
            const char *key = l->v[i].key;
            cp_sqldb *db;
            st = dumps_conn_get(d, &db, err, errlen);
            if (st != CP_OK) return st;
            int64_t n = 0;
            cp_sql_val mv[] = {cp_sql_text(key), cp_sql_i64(cut_ms)};
            st = cp_sqldb_exec(db,
                               "UPDATE dump_pending SET node = '" DUMPS_PENDING_SWEEP "' WHERE object_key = $1"
                               " AND created_time < $2",
                               mv, 2, NULL, NULL, &n);
            if (st != CP_OK) dumps_fail(err, errlen, st, "dumps retention: sweep", db);
            dumps_conn_put(d, db);
            if (st != CP_OK) return st;
            if (n != 1) continue;
            char e[512];
            int ds = cp_ostore_key_ok(key) ? d->store->ops->del(d->store, key, e, sizeof e) : CP_OK;
            if (ds != CP_OK && ds != CP_ENOTFOUND) continue; /* the entry stays: next run */
            st = dumps_conn_get(d, &db, err, errlen);
            if (st != CP_OK) return st;
            st = cp_sqldb_exec(db,
                               "DELETE FROM dump_pending WHERE object_key = $1 AND node = '" DUMPS_PENDING_SWEEP "'",
                               mv, 1, NULL, NULL, NULL);
            if (st != CP_OK) dumps_fail(err, errlen, st, "dumps retention: sweep", db);
            dumps_conn_put(d, db);
            if (st != CP_OK) return st;
            done++;
            s->pending_swept++;
        }
        if (!done || l->n < BATCH) return CP_OK;
    }
    return CP_OK;
}

int cp_dumps_retention(cp_dumps *d, int64_t before_ms, unsigned heap_keep, int64_t pending_ms, int64_t now_ms,
                       cp_dumps_retention_stats *st, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    err[0] = 0;
    victims l = {0};
    int r = expire(d, before_ms, &l, st, err, errlen);
    if (r == CP_OK) r = drop_files(d, before_ms, &l, st, err, errlen);
    if (r == CP_OK && heap_keep) r = trim_heaps(d, heap_keep, now_ms, &l, st, err, errlen);
    if (r == CP_OK) r = sweep(d, now_ms - (pending_ms > 0 ? pending_ms : DEFAULT_PENDING_MS), &l, st, err, errlen);
    victims_clear(&l);
    free(l.v);
    return r;
}
