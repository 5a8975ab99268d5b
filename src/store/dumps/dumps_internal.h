/* dumps_internal.h -- private to dumps*.c: the cp_dumps object (connection pool), the
 * record's columns, object keys and the pending-object bookkeeping shared by intake
 * (dumps.c), reading and deleting (dumps_read.c), compaction (dumps_compact.c) and
 * retention (dumps_retention.c). */
#ifndef CP_DUMPS_INTERNAL_H
#define CP_DUMPS_INTERNAL_H

#include "store/audit/audit_internal.h"
#include "store/sql/sqldb.h"
#include "store/cp_dumps.h"

#include <pthread.h>

/* pg_advisory_xact_lock classes (catalog_pg.c uses "cprf") */
#define DUMPS_LOCK_PATH 0x63706470  /* "cpdp": key = hash of the upload path */
#define DUMPS_LOCK_CLAIM 0x63706463 /* "cpdc": key 1, compaction claims and their finish */

#define DUMPS_HOUR_MS ((int64_t)3600000)
/* dump_pending.node of an object left to delete (a replaced or deleted file's old object):
 * created_time 0, so the sweep takes it at once if the deleter died */
#define DUMPS_PENDING_DELETE "delete"
#define DUMPS_PENDING_SWEEP "sweep"

struct cp_dumps {
    char *catalog;
    char *tmp_dir;
    char *node;
    cp_ostore *store;
    uint64_t inline_max;
    unsigned max_conns;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    cp_sqldb **idle;
    size_t nidle;
    unsigned nconns; /* open connections, idle or in use */
};

/* A connection of the pool (waits while all max_conns are in use). */
int dumps_conn_get(cp_dumps *d, cp_sqldb **out, char *err, size_t errlen);
/* Gives it back (a broken one, or one left inside a transaction, is closed). */
void dumps_conn_put(cp_dumps *d, cp_sqldb *db);

/* err = "<what>: <the connection's message>"; returns st. */
int dumps_fail(char *err, size_t errlen, int st, const char *what, const cp_sqldb *db);

/* The record's columns, in the order dumps_meta_of reads them. */
#define DUMPS_META_COLS                                                                                           \
    "uuid, namespace, pod_name, coalesce(restart_pod, ''), coalesce(service_name, ''), coalesce(file_name, ''),"  \
    " dump_type, gc_rotation, dir_time, capture_time, received_time, restart_time, bytes_size,"                   \
    " coalesce(sha256, ''), version, location, coalesce(object_key, ''), cold_row, coalesce(info, '{}')"
#define DUMPS_META_NCOLS 19
/* cols[0..DUMPS_META_NCOLS) -> m. */
void dumps_meta_of(const cp_sql_val *cols, cp_dump_meta *m);

/* "ns/YYYY/MM/DD/HH/mm/ss/pod/file": the row's path (unique). */
int dumps_path_string(const cp_dump_path *p, cp_buf *out);
/* 32-bit hash for the path lock. */
int32_t dumps_path_lock_key(const char *path);
/* "YYYY/MM/DD/HH/" of a time (UTC). */
int dumps_hour_prefix(int64_t ms, cp_buf *out);

/* Deletes the object key from the store, then its dump_pending row (best effort: a
 * failure leaves the row for the sweep). 1 if the object was deleted. */
int dumps_object_drop(cp_dumps *d, const char *key);

/* Tear-down shared with retention: the record of id (state complete) becomes 'deleted',
 * its blob cleared, its object (if any) deleted. CP_ENOTFOUND if no such record. */
int dumps_delete_id(cp_dumps *d, int64_t id, int64_t now_ms, int *object_deleted, char *err, size_t errlen);
/* The same, recording audit (when not NULL) in the deletion's transaction: its namespace,
 * outcome "ok", time now_ms and a detail naming the file are filled in from the row. */
int dumps_delete_audited(cp_dumps *d, int64_t id, int64_t now_ms, cp_audit_entry *audit, int *object_deleted,
                         char *err, size_t errlen);

#endif
