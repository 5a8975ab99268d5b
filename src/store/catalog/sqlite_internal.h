/* sqlite_internal.h -- private to src/store: the SQLite catalog's state, shared by
 * catalog_sqlite.c (metadata, hot tier, migrations) and catalog_sqlite_cold.c
 * (compaction claims, cold files, inverted index, retention). */
#ifndef CP_SQLITE_INTERNAL_H
#define CP_SQLITE_INTERNAL_H

#include "store/catalog/catalog_core.h"
#include "store/cp_catalog.h"
#include "store/hot/hot_internal.h"

#include <sqlite3.h>

/* The statements the SQLite catalog keeps prepared itself (catalog_shared.c's go through
 * sqldb.h's cache). */
enum {
    ST_DICT_PUT,
    ST_COUNT
};

struct sq_cold; /* catalog_sqlite_cold.c */

typedef struct sqlite_catalog {
    cp_catalog_core core; /* first: the interface pointer is the object pointer */
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    int in_txn;
    char err[256];
    char *path;
    sqlite3 *ckpt;   /* maintain()'s own connection: checkpoints off the writer's thread */
    cp_hot_writer *hot;
    int64_t window_ms;  /* hot-tier window length (set_windows) */
    char *wal_path;
    uint64_t wal_max;   /* the WAL's bound (set_wal_max; default WAL_MAX_DEFAULT) */
    sqlite3 *snap;      /* compact_calls' read connection: one snapshot while the main one writes */
    struct sq_cold *cold;
} sqlite_catalog;

int cp_sq_fail(sqlite_catalog *c, const char *what);
int cp_sq_exec(sqlite_catalog *c, const char *sql, const char *what);
/* Starts the batch write transaction if none is open. */
int cp_sq_begin(sqlite_catalog *c);
int cp_sq_commit(cp_catalog *base);

/* catalog_sqlite_cold.c */
int cp_sq_compact_claim(cp_catalog *c, const cp_compact_opts *o, cp_compact_job *job);
int cp_sq_compact_calls(cp_catalog *c, const cp_compact_job *job, cp_call_fn fn, void *ud);
int cp_sq_index_put(cp_catalog *c, const char *param, size_t param_len, const char *value, size_t value_len,
                    const char *file_uuid);
void cp_sq_cold_free(sqlite_catalog *c);

#endif
