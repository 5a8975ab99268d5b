/* cp_http.h -- the HTTP server (libmicrohttpd): the JSON query API under /api/v1
 * (docs/API.md) and the diagnostic-file uploads under /diagnostic (dumps-http.md). It runs
 * on its own threads and reads the catalog through cp_reader connections (cp_hot.h), one
 * per request at a time from a small pool, so queries never touch the agent event loop.
 * Uploads stream to a temporary file as they arrive; finishing one (fsync, catalog, object
 * store) runs on a few worker threads while its connection is suspended.
 */
#ifndef CP_HTTP_H
#define CP_HTTP_H

#include "common/cp_common.h"
#include "model/cp_dumpfmt.h"
#include "store/cp_audit.h"
#include "store/cp_catalog.h"
#include "store/cp_dumps.h"
#include "store/cp_hot.h"
#include "http/cp_auth.h"

#include <stdint.h>

/* Opens one reader (called from HTTP threads, under the pool's lock). */
typedef int (*cp_http_reader_open_fn)(void *ud, cp_reader **out, char *err, size_t errlen);

typedef struct cp_http_config {
    const char *host;              /* bind address, default "0.0.0.0" */
    int port;                      /* default 8080; 0 = ephemeral */
    unsigned threads;              /* worker threads, default 4 */
    cp_http_reader_open_fn open_reader;
    void *open_reader_ud;
    /* Query bounds: a request beyond them gets a 400 with a JSON error. */
    int64_t max_span_ms;           /* to - from, default 31 days */
    unsigned max_limit;            /* page size, default 1000 (default page 100) */
    uint64_t max_scan;             /* rows examined per query, default 20 000 000 (partial beyond) */
    size_t max_tree_calls;         /* ids per tree, default 1000 */
    size_t max_tree_nodes;         /* default 1 000 000 (413 beyond) */
    size_t max_profile_calls;      /* calls an aggregate profile merges unless max_calls says (10 000) */
    uint64_t max_export_rows;      /* CSV rows, default 1 000 000 */
    int64_t cursor_ttl_ms;         /* default 15 min */
    const char *version;           /* product version for /api/v1/config */
    /* Diagnostic files: NULL = uploads answer 503 and the dumps API 503. */
    cp_dumps *dumps;
    /* The audit log (store/cp_audit.h, audit.c): deletions, exports, downloads and imports
     * are recorded in it; NULL = nothing is recorded and /api/v1/audit answers 503. */
    cp_audit *audit;
    uint64_t dump_max[CP_DUMP_KIND_MAX + 1]; /* bytes per kind (index cp_dump_kind); 0 = 10 GiB */
    const char *const *blacklist;  /* namespaces whose uploads are refused (403) */
    size_t nblacklist;
    unsigned dump_workers;         /* threads finishing uploads, default 2 */
    size_t dump_parse_max;         /* bytes a parsed view (threads, top, gc, profile) loads, default 256 MiB */
    size_t dump_zip_max_files;     /* files in one bulk download, default 100 000 */
    const char *hprof_cache_dir;   /* heap dump summaries kept as files (api_hprof.c); NULL =
                                    * in memory only */
    /* Imports (POST /api/v1/import): opens one catalog connection for an import's writes,
     * set up like the server's (hot window length, idle list); NULL = imports answer 503. */
    int (*open_catalog)(void *ud, cp_catalog **out, char *err, size_t errlen);
    void *open_catalog_ud;
    uint64_t import_max_bytes;     /* one import's bytes (after gunzip), default 64 GiB */
    unsigned import_workers;       /* imports running at once, default 2 */
    /* hide_system (ui.md §3.6): method substrings of idle loops; NULL = the built-in list
     * (cp_system_idle_default). */
    const char *const *idle_methods;
    size_t nidle_methods;
    /* Connections and requests (guard.c, docs/API.md "Conventions"). */
    unsigned header_timeout_s;     /* a request's headers must be complete within this many
                                    * seconds of the connection's start (or of the previous
                                    * answer on a kept-alive one), default 10; 0 = no deadline */
    unsigned max_per_client;       /* connections at once per client address, default 256; 0 = any */
    const char *allowed_origins;   /* "URL[,URL...]": browser origins besides the server's own
                                    * that may write (POST, PUT, DELETE); NULL = none */
    const char *trace_link;        /* the calls list's "ids" chip links each id to this URL
                                    * (ui.md §3.3): http(s), with {id} and optionally {name};
                                    * /api/v1/config hands it to the UI. NULL = no links */
    /* The server's state, from any HTTP thread (NULL = none): extra members of the
     * /api/v1/health object (appended as ,"name":value...), its status ("ok" or
     * "degraded"), and whether the data directory is below its free-space floor (uploads
     * and imports then answer 507). */
    void (*health)(void *ud, cp_buf *fields, const char **status);
    int (*disk_low)(void *ud);
    void *state_ud;
    void (*log)(void *ud, int level, const char *msg); /* may be called from any HTTP thread */
    void *log_ud;
    /* --auth oidc (auth_oidc.c, README "Security"): the provider's issuer URL (discovery at
     * <issuer>/.well-known/openid-configuration; https, or http on a loopback address), the
     * UI's client id and the file holding its secret (NULL: a public client, PKCE only),
     * the audience bearer tokens must name (NULL = the client id), the claim holding roles
     * and groups (a dotted path like realm_access.roles; NULL = none), the claim naming the
     * user (NULL = preferred_username, then email, then sub), the scopes the UI's login asks
     * for (NULL = "openid profile email") and the server's external base URL for the
     * redirect URI <public_url>/auth/callback (NULL = from the Host header, loopback only). */
    const char *oidc_issuer;
    const char *oidc_client_id;
    const char *oidc_client_secret_file;
    const char *oidc_audience;
    const char *oidc_roles_claim;
    const char *oidc_user_claim;
    const char *oidc_scopes;
    const char *public_url;
    /* Login and access (issue 17, cp_auth.h, auth.c, README "Security"). */
    cp_auth_mode auth_mode;        /* default CP_AUTH_NONE */
    const char *auth_users_file;   /* --auth basic: htpasswd ($2y$/$2b$/$6$), reloaded on change */
    const char *auth_groups_file;  /* Apache group file "group: user1 user2"; NULL = none */
    const char *const *auth_ns_rules; /* --auth-namespaces values "NAME=ns1,ns2" */
    size_t nauth_ns_rules;
    const char *upload_token_file; /* a bearer token for /diagnostic/... and /api/v1/import; NULL = none */
    /* HTTPS (libmicrohttpd with GnuTLS): both PEM files, or neither for plain HTTP. With
     * tls_client_ca the server asks for (does not require) a client certificate: one that
     * chains to it is an upload credential. */
    const char *tls_cert_file;
    const char *tls_key_file;
    const char *tls_client_ca_file;
    /* Prometheus counters (common/cp_metrics.h) the HTTP server adds to and /metrics
     * prints; NULL = /metrics answers with the HTTP counters only. */
    struct cp_metrics *metrics;
} cp_http_config;

void cp_http_config_default(cp_http_config *cfg);

#define CP_HTTP_DUMP_MAX_DEFAULT ((uint64_t)10 << 30) /* dumps-http.md §4.5: at least 10 GiB */

typedef struct cp_http cp_http;

/* Binds and starts serving. The config must outlive the server. */
int cp_http_start(const cp_http_config *cfg, cp_http **out, char *err, size_t errlen);
int cp_http_port(const cp_http *h);
/* Stops accepting, waits for running requests, closes the readers. */
void cp_http_stop(cp_http *h);

#endif
