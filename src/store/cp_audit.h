/* cp_audit.h -- the audit log (ui.md §10.8, issue 19 item 10): one catalog row per
 * auditable action -- a diagnostic file deleted, calls exported, files downloaded, a
 * trace imported -- saying who (user, role, client address), what (action, target, the
 * target's namespace, a small JSON detail), when, and how it ended (outcome).
 *
 * Rows live in the catalog's audit_log table (migration 9, SQLite and PostgreSQL alike),
 * so the collectors sharing a PostgreSQL catalog write and list one log, and the log
 * survives restarts like the data it talks about.
 *
 * Every field is bounded (the CP_AUDIT_MAX_* sizes, NUL included) and holds valid UTF-8
 * without control characters (cp_audit_set): most of it comes from requests. Callers
 * never put secrets in an entry (no Authorization header, cookie, token or password);
 * the store cannot tell them apart from other text.
 *
 * Thread-safe: a cp_audit keeps a small pool of catalog connections of its own. Functions
 * return CP_OK or a negative status with the reason in err.
 */
#ifndef CP_AUDIT_H
#define CP_AUDIT_H

#include "common/cp_common.h"

#include <stddef.h>
#include <stdint.h>

/* Field sizes, the terminating NUL included. */
#define CP_AUDIT_MAX_USER 256    /* cp_auth.h's CP_AUTH_MAX_USER */
#define CP_AUDIT_MAX_ROLE 16
#define CP_AUDIT_MAX_ACTION 32
#define CP_AUDIT_MAX_TARGET 1024
#define CP_AUDIT_MAX_NS 256
#define CP_AUDIT_MAX_OUTCOME 8
#define CP_AUDIT_MAX_REMOTE 64   /* an IPv6 address as text is at most 45 bytes */
#define CP_AUDIT_MAX_DETAIL 1024

/* The actions (docs/API.md "GET /api/v1/audit"). */
#define CP_AUDIT_DUMP_DELETE "dump.delete"          /* DELETE /api/v1/dumps/{id}, DELETE /diagnostic/... */
#define CP_AUDIT_DUMP_DOWNLOAD "dump.download"      /* GET /api/v1/dumps/{id} */
#define CP_AUDIT_DUMPS_DOWNLOAD "dumps.download"    /* GET /api/v1/dumps/download, /cdt/v2/download */
#define CP_AUDIT_EXPORT_PREFIX "calls.export_"      /* + the file's extension: calls.export_csv, _xlsx */
#define CP_AUDIT_TREE_EXPORT "tree.export"          /* GET /calls/{id}/export, GET|POST /tree/export */
#define CP_AUDIT_IMPORT "import"                    /* POST /api/v1/import */

#define CP_AUDIT_OK "ok"

typedef struct cp_audit_entry {
    int64_t id;                          /* the row's id (set when recorded) */
    int64_t time_ms;                     /* server clock; 0 when recording = now */
    char user[CP_AUDIT_MAX_USER];        /* the login; "anonymous" without --auth */
    char role[CP_AUDIT_MAX_ROLE];        /* viewer, operator, admin, uploader, none */
    char action[CP_AUDIT_MAX_ACTION];    /* CP_AUDIT_* */
    char target[CP_AUDIT_MAX_TARGET];    /* a dump id, an upload path, an export's query... */
    char ns[CP_AUDIT_MAX_NS];            /* the target's namespace; "" = none or several */
    char outcome[CP_AUDIT_MAX_OUTCOME];  /* "ok", or the HTTP status of a failure ("404") */
    char remote[CP_AUDIT_MAX_REMOTE];    /* the client's address */
    char detail[CP_AUDIT_MAX_DETAIL];    /* a JSON object's text ("{}" when empty) */
} cp_audit_entry;

/* Copies s[0..n) into dst[0..cap) as the entry's fields are kept: valid UTF-8 sequences
 * as they are, control characters and bytes that start no valid sequence as '?', cut at
 * a character boundary so that it fits with its NUL. */
void cp_audit_set(char *dst, size_t cap, const char *s, size_t n);
/* The same for a NUL-terminated s (NULL = ""). */
static inline void cp_audit_sets(char *dst, size_t cap, const char *s)
{
    cp_audit_set(dst, cap, s ? s : "", s ? strlen(s) : 0);
}

typedef struct cp_audit cp_audit;

typedef struct cp_audit_config {
    const char *catalog;     /* SQLite path or postgres:// (cp_catalog_open's spec); its
                              * migrations are applied by cp_audit_open if needed */
    int64_t retention_ms;    /* entries older than this are removed when the log opens and
                              * then at most hourly as entries are recorded; 0 = kept forever */
    unsigned connections;    /* pool size, 0: 2 */
} cp_audit_config;

int cp_audit_open(const cp_audit_config *cfg, cp_audit **out, char *err, size_t errlen);
void cp_audit_close(cp_audit *a);

/* Records e (time_ms 0: now), durably when it returns (its own transaction); e->id is set.
 * A record whose retention pass is due also removes the entries past the retention
 * (a failure of that pass is not the record's: it is retried at the next record). */
int cp_audit_record(cp_audit *a, cp_audit_entry *e, char *err, size_t errlen);
/* Sets a recorded entry's outcome and detail: what a streamed download only knows at its
 * end (rows, bytes, whether it was complete). CP_ENOTFOUND when the entry is gone. */
int cp_audit_finish(cp_audit *a, int64_t id, const char *outcome, const char *detail, char *err, size_t errlen);

typedef struct cp_audit_filter {
    int64_t from_ms, to_ms;      /* time_ms in [from, to); to_ms 0 = no upper bound */
    const char *action, *user;   /* exact matches; NULL = any */
    size_t limit;                /* entries; 0 = no limit */
    int64_t before_ms, before_id;/* paging: entries strictly before (time_ms, id) in list
                                  * order; before_id 0 = from the newest */
    /* A reader limited to some namespaces (http/cp_auth.h): with ns_limited only entries
     * whose namespace is one of ns_in[0..nns_in) match -- entries without a namespace
     * never do; at most CP_AUDIT_FILTER_MAX_NS names (more: CP_ELIMIT). */
    int ns_limited;
    const char *const *ns_in;
    size_t nns_in;
} cp_audit_filter;
#define CP_AUDIT_FILTER_MAX_NS 256

/* Entries newest first (time_ms desc, id desc). fn returns non-zero to stop (returned). */
int cp_audit_list(cp_audit *a, const cp_audit_filter *f, int (*fn)(void *ud, const cp_audit_entry *e), void *ud,
                  char *err, size_t errlen);
/* Removes the entries with time_ms < before_ms; *removed (may be NULL) = how many. */
int cp_audit_prune(cp_audit *a, int64_t before_ms, uint64_t *removed, char *err, size_t errlen);

#endif
