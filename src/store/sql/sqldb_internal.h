/* sqldb_internal.h -- private to sqldb*.c: the two backends behind sqldb.h. */
#ifndef CP_SQLDB_INTERNAL_H
#define CP_SQLDB_INTERNAL_H

#include "store/sql/sqldb.h"

typedef struct sqldb_ops {
    int (*exec)(cp_sqldb *db, const char *sql, const cp_sql_val *p, size_t np, cp_sqldb_row_fn fn, void *ud,
                int64_t *changes);
    int (*begin)(cp_sqldb *db);
    int (*commit)(cp_sqldb *db);
    void (*rollback)(cp_sqldb *db);
    int (*lock)(cp_sqldb *db, int32_t cls, int32_t key);
    int (*broken)(const cp_sqldb *db);
    void (*close)(cp_sqldb *db);
} sqldb_ops;

struct cp_sqldb {
    const sqldb_ops *ops;
    int pg;
    int in_txn;
    int retryable; /* the last failure may pass in a new transaction (cp_sqldb_retryable) */
    char err[512];
};

int cp_sqldb_open_sqlite(const char *path, cp_sqldb **out, char *err, size_t errlen);
int cp_sqldb_open_pg(const char *conninfo, cp_sqldb **out, char *err, size_t errlen);

#endif
