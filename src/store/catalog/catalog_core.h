/* catalog_core.h -- private to src/store/catalog: what both catalogs (catalog_sqlite*.c,
 * catalog_pg.c) keep first in their state, so operations written once over sqldb.h
 * (catalog_shared.c) reach it from the interface pointer.
 *
 * The catalogs differ where the databases do: SQLite's writer holds prepared INSERTs and
 * a page cache, PostgreSQL's buffers binary COPY tuples and locks rows so several nodes
 * can share it; those parts stay in their own files (the hot tier's rows, dictionary
 * words, claims and reading a claim's calls, inverted-index rows, migrations). What is
 * the same SQL on both -- pods, restarts, params and stream files, crash recovery's
 * questions, the cold tier's files, claims finished or released, retention -- is
 * written once (catalog_shared.c), on the catalog's own connection.
 *
 * Transactions: an operation that commits on its own first settles the catalog (commits
 * what it has batched, through the catalog's own commit), then runs BEGIN ... COMMIT on
 * the connection; on failure it rolls back. A batched write (restart_complete) joins the
 * catalog's batch through batch(). */
#ifndef CP_CATALOG_CORE_H
#define CP_CATALOG_CORE_H

#include "store/cp_catalog.h"
#include "store/sql/sqldb.h"

/* What a catalog does with its own transaction state. */
typedef struct cp_catalog_hooks {
    int (*settle)(cp_catalog *c);       /* commits what is batched, if anything */
    int (*batch)(cp_catalog *c);        /* opens (or joins) the batched write transaction */
    /* after a batched statement failed: what the catalog does with its transaction
     * (PostgreSQL: the server aborted it, so it is rolled back and the loss reported at
     * commit; SQLite: nothing, the transaction is still good) */
    void (*batch_failed)(cp_catalog *c);
    /* sends what the catalog holds back (PostgreSQL's COPY buffers) so a query in the
     * open transaction sees it; NULL when nothing is held back */
    int (*flush)(cp_catalog *c);
} cp_catalog_hooks;

typedef struct cp_catalog_core {
    cp_catalog base;               /* first: the interface pointer is the object pointer */
    cp_sqldb *db;                  /* the catalog's connection (cp_sqldb_wrap_*) */
    const cp_catalog_hooks *hooks;
    int64_t *window_ms;            /* the hot tier's window length */
    char *err;                     /* the catalog's error message buffer */
    size_t errlen;
} cp_catalog_core;

/* ---- catalog_shared.c: cp_catalog_ops entries written once ----------------------------------- */

int cp_cat_pod_register(cp_catalog *c, const cp_catalog_pod *p, int64_t now_ms);
int cp_cat_pod_touch(cp_catalog *c, const cp_catalog_pod *p, int64_t now_ms);
int cp_cat_param_put(cp_catalog *c, const cp_catalog_pod *p, const cp_catalog_param *prm);
int cp_cat_stream_open(cp_catalog *c, const cp_catalog_stream *x);
int cp_cat_stream_close(cp_catalog *c, const cp_catalog_stream *x);

int cp_cat_unfinished(cp_catalog *c, int (*fn)(void *ud, const cp_catalog_pod *p), void *ud);
int cp_cat_restart_files(cp_catalog *c, const cp_catalog_pod *p,
                         int (*fn)(void *ud, const char *stream, int64_t file_index, const char *path), void *ud);
int cp_cat_call_exists(cp_catalog *c, const cp_call *call);
int cp_cat_restart_complete(cp_catalog *c, const cp_catalog_pod *p);
int cp_cat_restart_finish(cp_catalog *c, const cp_catalog_pod *p, const char *note);

int cp_cat_cold_file_put(cp_catalog *c, const cp_compact_job *job, const cp_cold_file *f);
int cp_cat_compact_reset(cp_catalog *c, const cp_compact_job *job, int (*fn)(void *ud, const char *key), void *ud);
int cp_cat_indexed_params(cp_catalog *c, int (*fn)(void *ud, const char *name), void *ud);
int cp_cat_compact_finish(cp_catalog *c, const cp_compact_job *job, const char *const *uuids, size_t n);
int cp_cat_compact_release(cp_catalog *c, const cp_compact_job *job);
int cp_cat_retention_mark(cp_catalog *c, int64_t before_ms, int64_t *marked);
int cp_cat_retention_list(cp_catalog *c, size_t limit, int (*fn)(void *ud, const char *uuid, const char *key),
                          void *ud);
int cp_cat_retention_forget(cp_catalog *c, const char *uuid);

/* The cp_catalog_ops entries above, for both catalogs' tables. */
#define CP_CATALOG_SHARED_OPS                                                                               \
    .pod_register = cp_cat_pod_register, .pod_touch = cp_cat_pod_touch, .param_put = cp_cat_param_put,     \
    .stream_open = cp_cat_stream_open, .stream_close = cp_cat_stream_close,                              \
    .unfinished = cp_cat_unfinished, .restart_files = cp_cat_restart_files,                              \
    .call_exists = cp_cat_call_exists, .restart_finish = cp_cat_restart_finish,                          \
    .restart_complete = cp_cat_restart_complete, .cold_file_put = cp_cat_cold_file_put,                  \
    .compact_reset = cp_cat_compact_reset, .indexed_params = cp_cat_indexed_params,                      \
    .compact_finish = cp_cat_compact_finish, .compact_release = cp_cat_compact_release,                  \
    .retention_mark = cp_cat_retention_mark, .retention_list = cp_cat_retention_list,                    \
    .retention_forget = cp_cat_retention_forget

#endif
