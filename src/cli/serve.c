/* serve.c -- `cloudprof serve`: options (flags over environment) -> cp_server. */
#include "cli/cli_internal.h"
#include "cli/cp_cli.h"
#include "common/cp_fsutil.h"
#include "common/cp_metrics.h"
#include "http/cp_http.h"
#include "query/cp_query.h"
#include "server/cp_server.h"
#include "store/cp_cold.h"
#include "store/cp_hot.h"
#include "wire/cp_wire.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: cloudprof serve [options]\n"
    "\n"
    "Runs the collector: accepts profiler agents on the agent port, appends their stream\n"
    "files to the raw log (<data>/raw/...), assembles their calls into the hot tier of the\n"
    "catalog (<data>/catalog.db, or PostgreSQL), compacts closed hours into Parquet files in\n"
    "the cold store (<data>/cold, or S3) and answers the query API (/api/v1, docs/API.md)\n"
    "on the HTTP port from both tiers. The same port takes the agents' diagnostic-file\n"
    "uploads (PUT/POST /diagnostic/..., thread dumps, top, GC logs, heap dumps, pprof).\n"
    "Each option can also be given by the environment variable shown; a flag wins.\n"
    "\n"
    "  --agent-host ADDR        listen address (CLOUDPROF_AGENT_HOST, default 0.0.0.0)\n"
    "  --agent-port N|auto      plain-text agent port, auto = any free port, 0 = none (agents\n"
    "                           only over TLS) (CLOUDPROF_AGENT_PORT, default 1715)\n"
    "  --agent-tls-port N|auto  agent port over TLS 1.2/1.3, the same protocol; auto = any\n"
    "                           free port (CLOUDPROF_AGENT_TLS_PORT, default none)\n"
    "  --tls-cert FILE          its certificate chain, PEM, leaf first (CLOUDPROF_TLS_CERT)\n"
    "  --tls-key FILE           its private key, PEM (CLOUDPROF_TLS_KEY); both files are\n"
    "                           read again on SIGHUP (live connections keep the old ones)\n"
    "  --tls-client-ca FILE     agents must present a certificate signed by a CA of this PEM\n"
    "                           file (mutual TLS) (CLOUDPROF_TLS_CLIENT_CA, default none)\n"
    "  --tls-namespace-from-cert cn|ou|san-uri\n"
    "                           an agent may only send the namespace its client certificate\n"
    "                           names: the subject CN, the subject OU, or NAME in a URI SAN\n"
    "                           spiffe://DOMAIN/ns/NAME/...; others get 0xFF and are closed\n"
    "                           (CLOUDPROF_TLS_NAMESPACE_FROM_CERT, default none)\n"
    "  --data DIR               data directory (CLOUDPROF_DATA, default ./data)\n"
    "  --protocol-version V     handshake reply: 100605 (agent sends 'dictionary') or\n"
    "                           100705 (agent sends 'posDictionary')\n"
    "                           (CLOUDPROF_PROTOCOL_VERSION, default 100605)\n"
    "  --blacklist NS[,NS...]   namespaces to refuse with 88888888; repeatable\n"
    "                           (CLOUDPROF_BLACKLIST, default none)\n"
    "  --idle-methods SUBSTR[,SUBSTR...]\n"
    "                           more idle-loop methods (substrings of the method text) that\n"
    "                           the calls API's hide_system filter hides, on top of the\n"
    "                           built-in list (Quartz, LDAP, JMS AQ, listeners...); repeatable\n"
    "                           (CLOUDPROF_IDLE_METHODS, default none)\n"
    "  --rotation KIND=PERIOD_MS:SIZE_BYTES[,KIND=...]\n"
    "                           rotation period/size answered to INIT, per stream; KIND is a\n"
    "                           stream name (trace, calls, xml, sql, dictionary, posDictionary,\n"
    "                           suspend, params, gc, td, top, heap) or 'all'; 0 = none;\n"
    "                           repeatable, later wins (CLOUDPROF_ROTATION; default\n"
    "                           3600000:2097152 for data streams, 0:0 for dictionary,\n"
    "                           posDictionary and params)\n"
    "  --idle-timeout SEC       close agents silent this long, 0 = never\n"
    "                           (CLOUDPROF_IDLE_TIMEOUT, default 120)\n"
    "  --max-connections N      refuse connections beyond N (CLOUDPROF_MAX_CONNECTIONS,\n"
    "                           default 20000)\n"
    "  --max-open-files N       stream files kept open at once (an fd cache: idle files are\n"
    "                           closed and reopened on their next write; a file is never\n"
    "                           closed before its bytes are synced) (CLOUDPROF_MAX_OPEN_FILES,\n"
    "                           default: from the fd limit, at most 4096)\n"
    "  --min-free SIZE|PCT%%    below this much free space on the data directory's file\n"
    "                           system nothing new is written: agents get 0xFF, uploads and\n"
    "                           imports 507, /api/v1/health says so; 0 = no floor\n"
    "                           (CLOUDPROF_MIN_FREE, default 1G or 5%%, whichever is smaller)\n"
    "  --ingest-memory SIZE     memory ingest may hold beyond the process's fixed needs: an\n"
    "                           eighth for copies of recent trace/sql/xml bytes (call assembly\n"
    "                           reads them back), a sixteenth for recently resolved sql/xml\n"
    "                           values, a quarter for the catalog (SQLite's page cache,\n"
    "                           or PostgreSQL's COPY buffers), a quarter for trace whose calls\n"
    "                           records have not come yet (past it agents' trace payloads wait:\n"
    "                           backpressure; a thirty-second of it at most for the calls\n"
    "                           queued for the catalog writer thread, past which agents are\n"
    "                           not read), an eighth for partial records (--max-buffered);\n"
    "                           0 = no bound\n"
    "                           (CLOUDPROF_INGEST_MEMORY, default 64M, at least 8M)\n"
    "  --ingest-writer MODE     where ingest's catalog writes (calls, rows, words) run: thread\n"
    "                           (a writer thread fed through a queue bounded by a thirty-\n"
    "                           second of --ingest-memory: no SQL on the thread that reads\n"
    "                           and acknowledges), inline (on that thread: cheaper with one\n"
    "                           CPU), or auto (thread when the process may run on two CPUs\n"
    "                           or more)\n"
    "                           (CLOUDPROF_INGEST_WRITER, default auto)\n"
    "  --max-buffered SIZE      partial records held for all agents together; past it an agent\n"
    "                           holding more than its share gets 0xFF (CLOUDPROF_MAX_BUFFERED,\n"
    "                           default an eighth of --ingest-memory)\n"
    "  --max-rotations-per-minute N\n"
    "                           INITs of one stream name per connection and minute, 0 = any\n"
    "                           (CLOUDPROF_MAX_ROTATIONS_PER_MINUTE, default 1200)\n"
    "  --max-files-per-connection N\n"
    "                           stream files one connection may open, 0 = any\n"
    "                           (CLOUDPROF_MAX_FILES_PER_CONNECTION, default 20000)\n"
    "  --wal-max SIZE           SQLite catalog: the WAL is cut back past this size\n"
    "                           (CLOUDPROF_WAL_MAX, default 64M)\n"
    "  --http-host ADDR         HTTP listen address (CLOUDPROF_HTTP_HOST, default 0.0.0.0)\n"
    "  --http-port N            HTTP port of the API, 0 = any free port (CLOUDPROF_HTTP_PORT,\n"
    "                           default 8080)\n"
    "  --http-threads N         HTTP worker threads (CLOUDPROF_HTTP_THREADS, default 4)\n"
    "  --http-header-timeout SEC\n"
    "                           a request's headers must be complete within SEC of the\n"
    "                           connection's start (or of the last answer on a kept-alive\n"
    "                           one), else it is closed; bodies are not bounded by it; 0 = no\n"
    "                           deadline (CLOUDPROF_HTTP_HEADER_TIMEOUT, default 10)\n"
    "  --http-max-per-client N  HTTP connections at once from one client address, 0 = any\n"
    "                           (CLOUDPROF_HTTP_MAX_PER_CLIENT, default 256)\n"
    "  --http-tls-cert FILE     HTTPS on the HTTP port: its certificate chain, PEM, leaf first\n"
    "                           (CLOUDPROF_HTTP_TLS_CERT, default none: plain HTTP)\n"
    "  --http-tls-key FILE      its private key, PEM (CLOUDPROF_HTTP_TLS_KEY)\n"
    "  --http-tls-client-ca FILE\n"
    "                           ask HTTPS clients for a certificate; one signed by a CA of this\n"
    "                           PEM file may upload and import (CLOUDPROF_HTTP_TLS_CLIENT_CA)\n"
    "  --auth none|basic|oidc   login for the API and the UI (CLOUDPROF_AUTH, default none:\n"
    "                           everyone may read and delete everything)\n"
    "  --auth-users FILE        --auth basic: htpasswd file, bcrypt ($2y$/$2b$) or SHA-512\n"
    "                           crypt ($6$) hashes, re-read when it changes (CLOUDPROF_AUTH_USERS)\n"
    "  --auth-groups FILE       Apache group file 'group: user1 user2'; the groups viewer,\n"
    "                           operator and admin grant those roles; without it every user\n"
    "                           is an admin (CLOUDPROF_AUTH_GROUPS)\n"
    "  --auth-namespaces NAME=NS[,NS...]\n"
    "                           the role or group NAME sees only these namespaces ('*' = all);\n"
    "                           repeatable; without any, everyone sees every namespace\n"
    "                           (CLOUDPROF_AUTH_NAMESPACES, rules separated by ';')\n"
    "  --upload-token FILE      uploads (/diagnostic) and imports need 'Authorization: Bearer\n"
    "                           <the file's text>', a client certificate or an operator's\n"
    "                           login (CLOUDPROF_UPLOAD_TOKEN_FILE, default none)\n"
    "  --oidc-issuer URL        --auth oidc: the provider (CLOUDPROF_OIDC_ISSUER)\n"
    "  --oidc-client-id ID      the UI's client id (CLOUDPROF_OIDC_CLIENT_ID)\n"
    "  --oidc-client-secret-file FILE\n"
    "                           its secret; none = a public client (CLOUDPROF_OIDC_CLIENT_SECRET_FILE)\n"
    "  --oidc-audience AUD      bearer tokens must name it (CLOUDPROF_OIDC_AUDIENCE, default\n"
    "                           the client id)\n"
    "  --oidc-roles-claim PATH  claim holding roles and groups, e.g. realm_access.roles\n"
    "                           (CLOUDPROF_OIDC_ROLES_CLAIM)\n"
    "  --oidc-user-claim NAME   claim naming the user (CLOUDPROF_OIDC_USER_CLAIM, default\n"
    "                           preferred_username, email, sub)\n"
    "  --oidc-scopes LIST       scopes of the UI's login (CLOUDPROF_OIDC_SCOPES, default\n"
    "                           'openid profile email')\n"
    "  --public-url URL         this server's external base URL, for the login's redirect\n"
    "                           (CLOUDPROF_PUBLIC_URL)\n"
    "  --trace-link URL         the calls list links each trace/request id to this URL, {id}\n"
    "                           replaced by the id and {name} by its param (brave.trace_id,\n"
    "                           x-request-id, ...), e.g. https://jaeger.example/trace/{id}\n"
    "                           (CLOUDPROF_TRACE_LINK, default none)\n"
    "  --allowed-origins URL[,URL...]\n"
    "                           browser origins (https://host[:port]) besides the server's\n"
    "                           own that may upload, import or delete; other cross-origin\n"
    "                           writes get 403 (CLOUDPROF_ALLOWED_ORIGINS, default none)\n"
    "  --max-query-span DAYS    widest time range one query may cover (CLOUDPROF_MAX_QUERY_SPAN,\n"
    "                           default 31)\n"
    "  --hot-window MIN         hot-tier window length in minutes (CLOUDPROF_HOT_WINDOW,\n"
    "                           default 5)\n"
    "  --trace-wait SEC         how long a call waits for the end of its trace before it is\n"
    "                           stored without one (CLOUDPROF_TRACE_WAIT, default 60)\n"
    "%s"
    "  --retention SPAN         cold files and diagnostic files older than this are deleted,\n"
    "                           0 = keep forever\n"
    "                           (CLOUDPROF_RETENTION, default 14d)\n"
    "  --audit-retention SPAN   audit log entries (deletions, exports, downloads, imports)\n"
    "                           older than this are deleted at start and then at most hourly,\n"
    "                           0 = keep forever (CLOUDPROF_AUDIT_RETENTION, default 365d)\n"
    "  --compact-every SEC      how often closed windows are compacted, 0 = never\n"
    "                           (CLOUDPROF_COMPACT_EVERY, default 60)\n"
    "  --compact-delay MIN      windows are compacted this long after they end\n"
    "                           (CLOUDPROF_COMPACT_DELAY, default 15)\n"
    "  --cold-cache MB          local cache of S3 objects read by queries\n"
    "                           (CLOUDPROF_COLD_CACHE, default 1024)\n"
    "  --node NAME              this collector's name in the catalog's compaction claims\n"
    "                           (CLOUDPROF_NODE, default <hostname>-<pid>)\n"
    "  --dump-max-size TYPE=SIZE[,TYPE=SIZE...]\n"
    "                           largest diagnostic file accepted per type (td, top, gc, heap,\n"
    "                           alloc, pprof_heap, goroutine, profile, other, or 'all');\n"
    "                           SIZE like 512K, 64M, 10G; larger uploads get 413; repeatable\n"
    "                           (CLOUDPROF_DUMP_MAX_SIZE, default 10G for every type)\n"
    "  --dump-inline-max SIZE   files up to this size are kept in the catalog until\n"
    "                           compaction; larger ones and every heap dump go to the object\n"
    "                           store at once (CLOUDPROF_DUMP_INLINE_MAX, default 16M)\n"
    "  --heap-keep N            heap dumps kept per pod, newest first, 0 = all\n"
    "                           (CLOUDPROF_HEAP_KEEP, default 10)\n"
    "  --log-level LEVEL        error, warn, info or debug (CLOUDPROF_LOG_LEVEL, default info)\n"
    "  --ready-file FILE        once listening, atomically write 'agent_port=N' and\n"
    "                           'http_port=M' lines to FILE (and 'agent_tls_port=T' with TLS;\n"
    "                           agent_port=0 when the plain port is off)\n"
    "                           (CLOUDPROF_READY_FILE)\n"
    "  --help                   this text\n"
    "\n"
    "SIGINT/SIGTERM stop gracefully: files are synced and closed, the catalog committed.\n";

typedef struct serve_opts {
    cp_server_config cfg;
    cp_cli_storage storage;
    cp_coldtask_config cold;
    uint64_t cold_cache_bytes;
    cp_http_config http;
    const char *ready_file;
    const char **blacklist; /* points into argv / environ strings split in place */
    size_t nblacklist;
    const char **idle_methods; /* the built-in list, then --idle-methods */
    size_t nidle_methods;
    char *lists[64];        /* strdup'd comma lists we split, freed at exit */
    size_t nlists;
    int blacklist_from_flag;
    const char **auth_ns;   /* --auth-namespaces rules (into lists[]) */
    size_t nauth_ns;
    int auth_ns_from_flag;
    uint64_t dump_inline_max;
    unsigned heap_keep;
    int64_t audit_retention_ms; /* --audit-retention */
    int max_buffered_set; /* --max-buffered given: not derived from --ingest-memory */
} serve_opts;

static void opts_free(serve_opts *o)
{
    for (size_t i = 0; i < o->nlists; i++) free(o->lists[i]);
    free(o->blacklist);
    free(o->idle_methods);
    cp_metrics_free(o->cfg.metrics); /* after both servers and the cold task stopped */
    free(o->auth_ns);
}

/* ---- value parsers ------------------------------------------------------------------- */

static int parse_level(const char *s, int *out)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (!strcasecmp(s, names[i])) {
            *out = i;
            return CP_OK;
        }
    if (!strcasecmp(s, "warning")) {
        *out = CP_LOG_WARN;
        return CP_OK;
    }
    return CP_EINVAL;
}

/* Keeps a writable copy of a comma list so its items can be split in place. */
static char *keep_copy(serve_opts *o, const char *s)
{
    if (o->nlists == CP_ARRAY_LEN(o->lists)) return NULL;
    char *d = strdup(s);
    if (d) o->lists[o->nlists++] = d;
    return d;
}

/* "512", "512K", "64M", "10G", "1T" (binary units) -> bytes. */
static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s < '0' || *s > '9') return CP_EINVAL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno) return CP_EINVAL;
    unsigned shift = 0;
    switch (*end) {
    case 0: break;
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    default: return CP_EINVAL;
    }
    if (*end && end[1] && !((end[1] == 'b' || end[1] == 'B' || end[1] == 'i') && !end[2])) return CP_EINVAL;
    if (shift && v > (UINT64_MAX >> shift)) return CP_EINVAL;
    *out = (uint64_t)v << shift;
    return CP_OK;
}

/* --dump-max-size td=64M,heap=20G (or all=...) */
static int add_dump_max(serve_opts *o, const char *list, const char *source, char *why, size_t whylen)
{
    char *copy = keep_copy(o, list);
    if (!copy) {
        snprintf(why, whylen, "%s: out of memory or too many lists", source);
        return CP_EINVAL;
    }
    for (char *save = NULL, *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        uint64_t size;
        if (!eq || parse_size(eq + 1, &size) != CP_OK || size == 0) {
            snprintf(why, whylen, "%s: '%s' is not TYPE=SIZE (e.g. heap=20G)", source, item);
            return CP_EINVAL;
        }
        *eq = 0;
        cp_dump_kind k;
        if (!strcmp(item, "all")) {
            for (int i = 1; i <= CP_DUMP_KIND_MAX; i++) o->http.dump_max[i] = size;
        } else if (cp_dump_kind_parse(item, strlen(item), &k) == CP_OK) {
            o->http.dump_max[k] = size;
        } else {
            snprintf(why, whylen, "%s: unknown type '%s' (td, top, gc, heap, alloc, pprof_heap, goroutine, profile, other, all)",
                     source, item);
            return CP_EINVAL;
        }
    }
    return CP_OK;
}

static int add_blacklist(serve_opts *o, const char *list, char *why, size_t whylen)
{
    char *copy = keep_copy(o, list);
    if (!copy) {
        snprintf(why, whylen, "too many --blacklist values");
        return CP_EINVAL;
    }
    for (char *save = NULL, *ns = strtok_r(copy, ",", &save); ns; ns = strtok_r(NULL, ",", &save)) {
        const char **b = realloc(o->blacklist, (o->nblacklist + 1) * sizeof *b);
        if (!b) return CP_ENOMEM;
        o->blacklist = b;
        b[o->nblacklist++] = ns;
    }
    return CP_OK;
}

/* NAME=ns1,ns2 rules, ';' between several (the policy checks them at start). */
static int add_auth_ns(serve_opts *o, const char *list, char *why, size_t whylen)
{
    char *copy = keep_copy(o, list);
    if (!copy) {
        snprintf(why, whylen, "too many --auth-namespaces values");
        return CP_EINVAL;
    }
    for (char *save = NULL, *r = strtok_r(copy, ";", &save); r; r = strtok_r(NULL, ";", &save)) {
        const char **b = realloc(o->auth_ns, (o->nauth_ns + 1) * sizeof *b);
        if (!b) return CP_ENOMEM;
        o->auth_ns = b;
        b[o->nauth_ns++] = r;
    }
    return CP_OK;
}

static int add_idle_methods(serve_opts *o, const char *list, char *why, size_t whylen)
{
    char *copy = keep_copy(o, list);
    if (!copy) {
        snprintf(why, whylen, "too many --idle-methods values");
        return CP_EINVAL;
    }
    if (!o->idle_methods) { /* the built-in list comes first */
        o->idle_methods = malloc(cp_system_idle_default_count * sizeof *o->idle_methods);
        if (!o->idle_methods) return CP_ENOMEM;
        for (size_t i = 0; i < cp_system_idle_default_count; i++) o->idle_methods[i] = cp_system_idle_default[i];
        o->nidle_methods = cp_system_idle_default_count;
    }
    for (char *save = NULL, *m = strtok_r(copy, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        const char **b = realloc(o->idle_methods, (o->nidle_methods + 1) * sizeof *b);
        if (!b) return CP_ENOMEM;
        o->idle_methods = b;
        b[o->nidle_methods++] = m;
    }
    return CP_OK;
}

/* KIND=PERIOD_MS:SIZE_BYTES[,KIND=...] */
static int add_rotation(serve_opts *o, const char *spec, char *why, size_t whylen)
{
    char *copy = keep_copy(o, spec);
    if (!copy) {
        snprintf(why, whylen, "too many --rotation values");
        return CP_EINVAL;
    }
    for (char *save = NULL, *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '='), *colon = eq ? strchr(eq, ':') : NULL;
        uint64_t period, size;
        if (!eq || !colon) {
            snprintf(why, whylen, "rotation '%s' is not KIND=PERIOD_MS:SIZE_BYTES", item);
            return CP_EINVAL;
        }
        *eq = *colon = 0;
        if (cp_parse_u64(eq + 1, INT64_MAX, &period) != CP_OK || cp_parse_u64(colon + 1, INT64_MAX, &size) != CP_OK) {
            snprintf(why, whylen, "rotation for '%s': period and size must be non-negative integers", item);
            return CP_EINVAL;
        }
        int all = !strcasecmp(item, "all");
        cp_stream_kind kind = all ? CP_STREAM_UNKNOWN : cp_stream_kind_parse(item);
        if (!all && kind == CP_STREAM_UNKNOWN) {
            snprintf(why, whylen, "rotation: unknown stream '%s'", item);
            return CP_EINVAL;
        }
        for (int k = CP_STREAM_TRACE; k < CP_STREAM_KIND_COUNT; k++) {
            if (!all && k != (int)kind) continue;
            o->cfg.rotation_period_ms[k] = (int64_t)period;
            o->cfg.rotation_size[k] = (int64_t)size;
        }
    }
    return CP_OK;
}

/* ---- options --------------------------------------------------------------------------- */

enum {
    OPT_HOST,
    OPT_PORT,
    OPT_DATA,
    OPT_VERSION,
    OPT_BLACKLIST,
    OPT_IDLE_METHODS,
    OPT_ROTATION,
    OPT_IDLE,
    OPT_MAXCONN,
    OPT_MAXFILES,
    OPT_LOG,
    OPT_READY,
    OPT_HTTP_HOST,
    OPT_HTTP_PORT,
    OPT_HTTP_THREADS,
    OPT_MAX_SPAN,
    OPT_HOT_WINDOW,
    OPT_TRACE_WAIT,
    OPT_CATALOG,
    OPT_STORE,
    OPT_S3_ENDPOINT,
    OPT_S3_REGION,
    OPT_RETENTION,
    OPT_COMPACT_EVERY,
    OPT_COMPACT_DELAY,
    OPT_COLD_CACHE,
    OPT_NODE,
    OPT_DUMP_MAX,
    OPT_DUMP_INLINE,
    OPT_HEAP_KEEP,
    OPT_HTTP_HEADER_TIMEOUT,
    OPT_HTTP_PER_CLIENT,
    OPT_ALLOWED_ORIGINS,
    OPT_MIN_FREE,
    OPT_MAX_BUFFERED,
    OPT_INGEST_MEMORY,
    OPT_INGEST_WRITER,
    OPT_MAX_ROTATIONS,
    OPT_MAX_FILES_CONN,
    OPT_WAL_MAX,
    OPT_TLS_PORT,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
    OPT_TLS_CLIENT_CA,
    OPT_TLS_NS_FROM,
    OPT_HTTP_TLS_CERT,
    OPT_HTTP_TLS_KEY,
    OPT_HTTP_TLS_CLIENT_CA,
    OPT_AUTH,
    OPT_AUTH_USERS,
    OPT_AUTH_GROUPS,
    OPT_AUTH_NS,
    OPT_UPLOAD_TOKEN,
    OPT_OIDC_ISSUER,
    OPT_OIDC_CLIENT_ID,
    OPT_OIDC_SECRET_FILE,
    OPT_OIDC_AUDIENCE,
    OPT_OIDC_ROLES_CLAIM,
    OPT_OIDC_USER_CLAIM,
    OPT_OIDC_SCOPES,
    OPT_PUBLIC_URL,
    OPT_TRACE_LINK,
    OPT_AUDIT_RETENTION
};

static const struct {
    const char *flag;
    const char *env;
} options[] = {
    [OPT_HOST] = {"--agent-host", "CLOUDPROF_AGENT_HOST"},
    [OPT_PORT] = {"--agent-port", "CLOUDPROF_AGENT_PORT"},
    [OPT_DATA] = {"--data", "CLOUDPROF_DATA"},
    [OPT_VERSION] = {"--protocol-version", "CLOUDPROF_PROTOCOL_VERSION"},
    [OPT_BLACKLIST] = {"--blacklist", "CLOUDPROF_BLACKLIST"},
    [OPT_IDLE_METHODS] = {"--idle-methods", "CLOUDPROF_IDLE_METHODS"},
    [OPT_ROTATION] = {"--rotation", "CLOUDPROF_ROTATION"},
    [OPT_IDLE] = {"--idle-timeout", "CLOUDPROF_IDLE_TIMEOUT"},
    [OPT_MAXCONN] = {"--max-connections", "CLOUDPROF_MAX_CONNECTIONS"},
    [OPT_MAXFILES] = {"--max-open-files", "CLOUDPROF_MAX_OPEN_FILES"},
    [OPT_LOG] = {"--log-level", "CLOUDPROF_LOG_LEVEL"},
    [OPT_READY] = {"--ready-file", "CLOUDPROF_READY_FILE"},
    [OPT_HTTP_HOST] = {"--http-host", "CLOUDPROF_HTTP_HOST"},
    [OPT_HTTP_PORT] = {"--http-port", "CLOUDPROF_HTTP_PORT"},
    [OPT_HTTP_THREADS] = {"--http-threads", "CLOUDPROF_HTTP_THREADS"},
    [OPT_MAX_SPAN] = {"--max-query-span", "CLOUDPROF_MAX_QUERY_SPAN"},
    [OPT_HOT_WINDOW] = {"--hot-window", "CLOUDPROF_HOT_WINDOW"},
    [OPT_TRACE_WAIT] = {"--trace-wait", "CLOUDPROF_TRACE_WAIT"},
    [OPT_CATALOG] = {"--catalog", "CLOUDPROF_CATALOG"},
    [OPT_STORE] = {"--store", "CLOUDPROF_STORE"},
    [OPT_S3_ENDPOINT] = {"--s3-endpoint", "CLOUDPROF_S3_ENDPOINT"},
    [OPT_S3_REGION] = {"--s3-region", "CLOUDPROF_S3_REGION"},
    [OPT_RETENTION] = {"--retention", "CLOUDPROF_RETENTION"},
    [OPT_COMPACT_EVERY] = {"--compact-every", "CLOUDPROF_COMPACT_EVERY"},
    [OPT_COMPACT_DELAY] = {"--compact-delay", "CLOUDPROF_COMPACT_DELAY"},
    [OPT_COLD_CACHE] = {"--cold-cache", "CLOUDPROF_COLD_CACHE"},
    [OPT_NODE] = {"--node", "CLOUDPROF_NODE"},
    [OPT_DUMP_MAX] = {"--dump-max-size", "CLOUDPROF_DUMP_MAX_SIZE"},
    [OPT_DUMP_INLINE] = {"--dump-inline-max", "CLOUDPROF_DUMP_INLINE_MAX"},
    [OPT_HEAP_KEEP] = {"--heap-keep", "CLOUDPROF_HEAP_KEEP"},
    [OPT_HTTP_HEADER_TIMEOUT] = {"--http-header-timeout", "CLOUDPROF_HTTP_HEADER_TIMEOUT"},
    [OPT_HTTP_PER_CLIENT] = {"--http-max-per-client", "CLOUDPROF_HTTP_MAX_PER_CLIENT"},
    [OPT_ALLOWED_ORIGINS] = {"--allowed-origins", "CLOUDPROF_ALLOWED_ORIGINS"},
    [OPT_MIN_FREE] = {"--min-free", "CLOUDPROF_MIN_FREE"},
    [OPT_MAX_BUFFERED] = {"--max-buffered", "CLOUDPROF_MAX_BUFFERED"},
    [OPT_INGEST_MEMORY] = {"--ingest-memory", "CLOUDPROF_INGEST_MEMORY"},
    [OPT_INGEST_WRITER] = {"--ingest-writer", "CLOUDPROF_INGEST_WRITER"},
    [OPT_MAX_ROTATIONS] = {"--max-rotations-per-minute", "CLOUDPROF_MAX_ROTATIONS_PER_MINUTE"},
    [OPT_MAX_FILES_CONN] = {"--max-files-per-connection", "CLOUDPROF_MAX_FILES_PER_CONNECTION"},
    [OPT_WAL_MAX] = {"--wal-max", "CLOUDPROF_WAL_MAX"},
    [OPT_TLS_PORT] = {"--agent-tls-port", "CLOUDPROF_AGENT_TLS_PORT"},
    [OPT_TLS_CERT] = {"--tls-cert", "CLOUDPROF_TLS_CERT"},
    [OPT_TLS_KEY] = {"--tls-key", "CLOUDPROF_TLS_KEY"},
    [OPT_TLS_CLIENT_CA] = {"--tls-client-ca", "CLOUDPROF_TLS_CLIENT_CA"},
    [OPT_TLS_NS_FROM] = {"--tls-namespace-from-cert", "CLOUDPROF_TLS_NAMESPACE_FROM_CERT"},
    [OPT_HTTP_TLS_CERT] = {"--http-tls-cert", "CLOUDPROF_HTTP_TLS_CERT"},
    [OPT_HTTP_TLS_KEY] = {"--http-tls-key", "CLOUDPROF_HTTP_TLS_KEY"},
    [OPT_HTTP_TLS_CLIENT_CA] = {"--http-tls-client-ca", "CLOUDPROF_HTTP_TLS_CLIENT_CA"},
    [OPT_AUTH] = {"--auth", "CLOUDPROF_AUTH"},
    [OPT_AUTH_USERS] = {"--auth-users", "CLOUDPROF_AUTH_USERS"},
    [OPT_AUTH_GROUPS] = {"--auth-groups", "CLOUDPROF_AUTH_GROUPS"},
    [OPT_AUTH_NS] = {"--auth-namespaces", "CLOUDPROF_AUTH_NAMESPACES"},
    [OPT_UPLOAD_TOKEN] = {"--upload-token", "CLOUDPROF_UPLOAD_TOKEN_FILE"},
    [OPT_OIDC_ISSUER] = {"--oidc-issuer", "CLOUDPROF_OIDC_ISSUER"},
    [OPT_OIDC_CLIENT_ID] = {"--oidc-client-id", "CLOUDPROF_OIDC_CLIENT_ID"},
    [OPT_OIDC_SECRET_FILE] = {"--oidc-client-secret-file", "CLOUDPROF_OIDC_CLIENT_SECRET_FILE"},
    [OPT_OIDC_AUDIENCE] = {"--oidc-audience", "CLOUDPROF_OIDC_AUDIENCE"},
    [OPT_OIDC_ROLES_CLAIM] = {"--oidc-roles-claim", "CLOUDPROF_OIDC_ROLES_CLAIM"},
    [OPT_OIDC_USER_CLAIM] = {"--oidc-user-claim", "CLOUDPROF_OIDC_USER_CLAIM"},
    [OPT_OIDC_SCOPES] = {"--oidc-scopes", "CLOUDPROF_OIDC_SCOPES"},
    [OPT_PUBLIC_URL] = {"--public-url", "CLOUDPROF_PUBLIC_URL"},
    [OPT_TRACE_LINK] = {"--trace-link", "CLOUDPROF_TRACE_LINK"},
    [OPT_AUDIT_RETENTION] = {"--audit-retention", "CLOUDPROF_AUDIT_RETENTION"},
};

/* Applies one option value; `source` names the flag or variable in messages. */
static int apply(serve_opts *o, int opt, const char *v, const char *source, char *why, size_t whylen)
{
    uint64_t n;
    int st = CP_OK;
    switch (opt) {
    case OPT_HOST: o->cfg.host = v; break;
    case OPT_DATA: o->cfg.data_dir = v; break;
    case OPT_READY: o->ready_file = v; break;
    case OPT_PORT: /* 0 = off (TLS only), auto = ephemeral */
        if (!strcmp(v, "auto")) o->cfg.port = 0;
        else if ((st = cp_parse_u64(v, 65535, &n)) == CP_OK) o->cfg.port = n ? (int)n : CP_SERVER_PORT_OFF;
        else snprintf(why, whylen, "%s: '%s' is not a port number (1-65535), 0 (none) or auto", source, v);
        break;
    case OPT_TLS_PORT:
        if (!strcmp(v, "auto")) o->cfg.tls_port = 0;
        else if ((st = cp_parse_u64(v, 65535, &n)) == CP_OK) o->cfg.tls_port = n ? (int)n : CP_SERVER_PORT_OFF;
        else snprintf(why, whylen, "%s: '%s' is not a port number (1-65535), 0 (none) or auto", source, v);
        break;
    case OPT_TLS_CERT: o->cfg.tls_cert = v; break;
    case OPT_TLS_KEY: o->cfg.tls_key = v; break;
    case OPT_TLS_CLIENT_CA: o->cfg.tls_client_ca = v; break;
    case OPT_TLS_NS_FROM:
        if (!strcasecmp(v, "cn")) o->cfg.tls_ns_from = CP_TLS_NS_CN;
        else if (!strcasecmp(v, "ou")) o->cfg.tls_ns_from = CP_TLS_NS_OU;
        else if (!strcasecmp(v, "san-uri")) o->cfg.tls_ns_from = CP_TLS_NS_SAN_URI;
        else if (!strcasecmp(v, "none")) o->cfg.tls_ns_from = CP_TLS_NS_NONE;
        else {
            snprintf(why, whylen, "%s: '%s' is not cn, ou, san-uri or none", source, v);
            st = CP_EINVAL;
        }
        break;
    case OPT_VERSION:
        if (cp_parse_u64(v, INT64_MAX, &n) == CP_OK && (n == CP_PROTOCOL_V2 || n == CP_PROTOCOL_V3)) {
            o->cfg.protocol_version = (int64_t)n;
        } else {
            snprintf(why, whylen, "%s: '%s' is not supported; use %d (dictionary) or %d (posDictionary)", source, v,
                     CP_PROTOCOL_V2, CP_PROTOCOL_V3);
            st = CP_EINVAL;
        }
        break;
    case OPT_BLACKLIST: st = add_blacklist(o, v, why, whylen); break;
    case OPT_IDLE_METHODS: st = add_idle_methods(o, v, why, whylen); break;
    case OPT_ROTATION: st = add_rotation(o, v, why, whylen); break;
    case OPT_IDLE:
        if ((st = cp_parse_u64(v, UINT32_MAX / 1000, &n)) == CP_OK) o->cfg.idle_timeout_ms = (uint32_t)(n * 1000);
        else snprintf(why, whylen, "%s: '%s' is not a number of seconds", source, v);
        break;
    case OPT_MAXCONN:
        if ((st = cp_parse_u64(v, 10000000, &n)) == CP_OK && n > 0) o->cfg.max_connections = (uint32_t)n;
        else {
            snprintf(why, whylen, "%s: '%s' is not a connection count (1-10000000)", source, v);
            st = CP_EINVAL;
        }
        break;
    case OPT_MAXFILES:
        if ((st = cp_parse_u64(v, 10000000, &n)) == CP_OK && n > 0) o->cfg.max_open_files = (uint32_t)n;
        else {
            snprintf(why, whylen, "%s: '%s' is not a file count (1-10000000)", source, v);
            st = CP_EINVAL;
        }
        break;
    case OPT_HTTP_HOST: o->http.host = v; break;
    case OPT_HTTP_PORT:
        if ((st = cp_parse_u64(v, 65535, &n)) == CP_OK) o->http.port = (int)n;
        else snprintf(why, whylen, "%s: '%s' is not a port number (0-65535)", source, v);
        break;
    case OPT_HTTP_THREADS:
        if ((st = cp_parse_u64(v, 256, &n)) == CP_OK && n > 0) o->http.threads = (unsigned)n;
        else {
            snprintf(why, whylen, "%s: '%s' is not a thread count (1-256)", source, v);
            st = CP_EINVAL;
        }
        break;
    case OPT_HTTP_HEADER_TIMEOUT:
        if ((st = cp_parse_u64(v, 86400, &n)) == CP_OK) o->http.header_timeout_s = (unsigned)n;
        else snprintf(why, whylen, "%s: '%s' is not a number of seconds (0-86400)", source, v);
        break;
    case OPT_HTTP_PER_CLIENT:
        if ((st = cp_parse_u64(v, 1000000, &n)) == CP_OK) o->http.max_per_client = (unsigned)n;
        else snprintf(why, whylen, "%s: '%s' is not a connection count (0-1000000)", source, v);
        break;
    case OPT_ALLOWED_ORIGINS: o->http.allowed_origins = v; break; /* checked by cp_http_start */
    case OPT_HTTP_TLS_CERT: o->http.tls_cert_file = v; break; /* the files: read by cp_http_start */
    case OPT_HTTP_TLS_KEY: o->http.tls_key_file = v; break;
    case OPT_HTTP_TLS_CLIENT_CA: o->http.tls_client_ca_file = v; break;
    case OPT_AUTH:
        if (!strcmp(v, "none")) o->http.auth_mode = CP_AUTH_NONE;
        else if (!strcmp(v, "basic")) o->http.auth_mode = CP_AUTH_BASIC;
        else if (!strcmp(v, "oidc")) o->http.auth_mode = CP_AUTH_OIDC;
        else {
            snprintf(why, whylen, "%s: '%s' is not none, basic or oidc", source, v);
            st = CP_EINVAL;
        }
        break;
    case OPT_AUTH_USERS: o->http.auth_users_file = v; break;
    case OPT_AUTH_GROUPS: o->http.auth_groups_file = v; break;
    case OPT_AUTH_NS: st = add_auth_ns(o, v, why, whylen); break;
    case OPT_UPLOAD_TOKEN: o->http.upload_token_file = v; break;
    case OPT_OIDC_ISSUER: o->http.oidc_issuer = v; break;
    case OPT_OIDC_CLIENT_ID: o->http.oidc_client_id = v; break;
    case OPT_OIDC_SECRET_FILE: o->http.oidc_client_secret_file = v; break;
    case OPT_OIDC_AUDIENCE: o->http.oidc_audience = v; break;
    case OPT_OIDC_ROLES_CLAIM: o->http.oidc_roles_claim = v; break;
    case OPT_OIDC_USER_CLAIM: o->http.oidc_user_claim = v; break;
    case OPT_OIDC_SCOPES: o->http.oidc_scopes = v; break;
    case OPT_PUBLIC_URL: o->http.public_url = v; break;
    case OPT_TRACE_LINK: o->http.trace_link = v; break; /* checked by cp_http_start */
    case OPT_MIN_FREE: {
        size_t len = strlen(v);
        if (len > 1 && v[len - 1] == '%') { /* a share of the file system */
            char pct[16];
            snprintf(pct, sizeof pct, "%.*s", (int)(len - 1), v);
            if ((st = cp_parse_u64(pct, 99, &n)) == CP_OK) {
                o->cfg.min_free_pct = (unsigned)n;
                o->cfg.min_free_bytes = 0;
            }
        } else if ((st = parse_size(v, &o->cfg.min_free_bytes)) == CP_OK) {
            o->cfg.min_free_pct = 0;
        }
        if (st != CP_OK) snprintf(why, whylen, "%s: '%s' is not a size like 1G or a share like 5%%", source, v);
        break;
    }
    case OPT_MAX_BUFFERED:
        if ((st = parse_size(v, &o->cfg.max_buffered)) != CP_OK)
            snprintf(why, whylen, "%s: '%s' is not a size like 16M (0 = no budget)", source, v);
        o->max_buffered_set = 1;
        break;
    case OPT_INGEST_MEMORY:
        if ((st = parse_size(v, &o->cfg.ingest_memory)) != CP_OK)
            snprintf(why, whylen, "%s: '%s' is not a size like 64M (0 = no bound)", source, v);
        else if (o->cfg.ingest_memory && o->cfg.ingest_memory < ((uint64_t)8 << 20)) {
            snprintf(why, whylen, "%s: '%s' is too small: at least 8M (or 0 = no bound)", source, v);
            st = CP_EINVAL;
        }
        if (st == CP_OK && !o->max_buffered_set) o->cfg.max_buffered = o->cfg.ingest_memory / 8;
        break;
    case OPT_INGEST_WRITER:
        if ((st = cp_catw_mode_parse(v, &o->cfg.ingest_writer)) != CP_OK)
            snprintf(why, whylen, "%s: '%s' is not auto, thread or inline", source, v);
        break;
    case OPT_MAX_ROTATIONS:
        if ((st = cp_parse_u64(v, UINT32_MAX, &n)) == CP_OK) o->cfg.max_rotations_per_min = (uint32_t)n;
        else snprintf(why, whylen, "%s: '%s' is not a count (0 = any)", source, v);
        break;
    case OPT_MAX_FILES_CONN:
        if ((st = cp_parse_u64(v, UINT32_MAX, &n)) == CP_OK) o->cfg.max_files_per_conn = (uint32_t)n;
        else snprintf(why, whylen, "%s: '%s' is not a count (0 = any)", source, v);
        break;
    case OPT_WAL_MAX:
        if ((st = parse_size(v, &o->cfg.wal_max)) != CP_OK || o->cfg.wal_max < (1u << 20))
            snprintf(why, whylen, "%s: '%s' is not a size of at least 1M", source, v), st = CP_EINVAL;
        break;
    case OPT_MAX_SPAN:
        if ((st = cp_parse_u64(v, 3660, &n)) == CP_OK && n > 0) o->http.max_span_ms = (int64_t)n * 86400000;
        else {
            snprintf(why, whylen, "%s: '%s' is not a number of days (1-3660)", source, v);
            st = CP_EINVAL;
        }
        break;
    case OPT_HOT_WINDOW:
        /* windows must tile hours: compaction takes whole hours (storage.md) */
        if ((st = cp_parse_u64(v, 60, &n)) == CP_OK && n > 0 && 60 % n == 0) o->cfg.hot_window_ms = (int64_t)n * 60000;
        else {
            snprintf(why, whylen, "%s: '%s' must be a number of minutes that divides 60", source, v);
            st = CP_EINVAL;
        }
        break;
    case OPT_TRACE_WAIT:
        if ((st = cp_parse_u64(v, 86400, &n)) == CP_OK && n > 0) o->cfg.trace_wait_ms = (int64_t)n * 1000;
        else {
            snprintf(why, whylen, "%s: '%s' is not a number of seconds (1-86400)", source, v);
            st = CP_EINVAL;
        }
        break;
    case OPT_CATALOG: o->storage.catalog = v; break;
    case OPT_STORE: o->storage.store = v; break;
    case OPT_S3_ENDPOINT: o->storage.s3_endpoint = v; break;
    case OPT_S3_REGION: o->storage.s3_region = v; break;
    case OPT_NODE: o->cold.node = v; break;
    case OPT_DUMP_MAX: st = add_dump_max(o, v, source, why, whylen); break;
    case OPT_DUMP_INLINE:
        if ((st = parse_size(v, &o->dump_inline_max)) != CP_OK || o->dump_inline_max == 0) {
            snprintf(why, whylen, "%s: '%s' is not a size like 16M", source, v);
            st = CP_EINVAL;
        }
        break;
    case OPT_HEAP_KEEP:
        if ((st = cp_parse_u64(v, 1000000, &n)) == CP_OK) o->heap_keep = (unsigned)n;
        else snprintf(why, whylen, "%s: '%s' is not a count (0-1000000)", source, v);
        break;
    case OPT_RETENTION:
        if ((st = cp_cli_parse_span(v, &o->cold.retention_ms)) != CP_OK)
            snprintf(why, whylen, "%s: '%s' is not a span like 14d, 36h or 90m (0 = keep forever)", source, v);
        break;
    case OPT_AUDIT_RETENTION:
        if ((st = cp_cli_parse_span(v, &o->audit_retention_ms)) != CP_OK)
            snprintf(why, whylen, "%s: '%s' is not a span like 365d or 720h (0 = keep forever)", source, v);
        break;
    case OPT_COMPACT_EVERY:
        if ((st = cp_parse_u64(v, 86400, &n)) == CP_OK) o->cold.every_ms = (int64_t)n * 1000;
        else snprintf(why, whylen, "%s: '%s' is not a number of seconds (0-86400)", source, v);
        break;
    case OPT_COMPACT_DELAY:
        if ((st = cp_parse_u64(v, 10080, &n)) == CP_OK) o->cold.delay_ms = (int64_t)n * 60000;
        else snprintf(why, whylen, "%s: '%s' is not a number of minutes (0-10080)", source, v);
        break;
    case OPT_COLD_CACHE:
        if ((st = cp_parse_u64(v, 1u << 20, &n)) == CP_OK) o->cold_cache_bytes = n << 20;
        else snprintf(why, whylen, "%s: '%s' is not a number of megabytes", source, v);
        break;
    case OPT_LOG:
        if ((st = parse_level(v, &o->cfg.log_level)) != CP_OK)
            snprintf(why, whylen, "%s: '%s' is not one of error, warn, info, debug", source, v);
        break;
    }
    return st;
}

static int apply_env(serve_opts *o, char *why, size_t whylen)
{
    for (int i = 0; i < (int)CP_ARRAY_LEN(options); i++) {
        const char *v = getenv(options[i].env);
        if (v && *v) {
            int st = apply(o, i, v, options[i].env, why, whylen);
            if (st != CP_OK) return st;
        }
    }
    return CP_OK;
}

static int apply_flags(serve_opts *o, int argc, char **argv, char *why, size_t whylen)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        int opt = -1;
        for (int k = 0; k < (int)CP_ARRAY_LEN(options) && opt < 0; k++) {
            size_t fl = strlen(options[k].flag);
            if (strncmp(arg, options[k].flag, fl) != 0) continue;
            if (arg[fl] == '=') val = arg + fl + 1, opt = k;
            else if (arg[fl] == 0) opt = k;
        }
        if (opt < 0) {
            snprintf(why, whylen, "unknown option '%s'", arg);
            return CP_EINVAL;
        }
        if (!val) {
            if (i + 1 >= argc) {
                snprintf(why, whylen, "%s needs a value", options[opt].flag);
                return CP_EINVAL;
            }
            val = argv[++i];
        }
        if (opt == OPT_BLACKLIST && !o->blacklist_from_flag) { /* flags replace the env list */
            o->blacklist_from_flag = 1;
            o->nblacklist = 0;
        }
        if (opt == OPT_AUTH_NS && !o->auth_ns_from_flag) { /* likewise */
            o->auth_ns_from_flag = 1;
            o->nauth_ns = 0;
        }
        int st = apply(o, opt, val, options[opt].flag, why, whylen);
        if (st != CP_OK) return st;
    }
    return CP_OK;
}

/* ---- running ----------------------------------------------------------------------------- */

static void log_line(void *ud, int level, const char *msg)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(stderr, "cloudprof: %s.%03ldZ %s: %s\n", when, ts.tv_nsec / 1000000, names[level & 3], msg);
}

/* The HTTP threads log through this: same format, filtered by --log-level (the agent
 * server filters its own lines). */
static void http_log_line(void *ud, int level, const char *msg)
{
    if (level <= *(const int *)ud) log_line(NULL, level, msg);
}

/* 1 if host only listens on this machine (127.x, ::1, localhost). */
static int is_loopback(const char *host)
{
    return host && (!strncmp(host, "127.", 4) || !strcmp(host, "::1") || !strcmp(host, "localhost"));
}

static int write_ready_file(const char *path, int port, int http_port, int tls_port)
{
    char text[96];
    int n = snprintf(text, sizeof text, "agent_port=%d\nhttp_port=%d\n", port, http_port);
    if (tls_port) n += snprintf(text + n, sizeof text - (size_t)n, "agent_tls_port=%d\n", tls_port);
    return cp_write_file_atomic(path, text, (size_t)n);
}

typedef struct reader_ctx {
    const char *catalog;
    cp_tiered_config tiered;
} reader_ctx;

/* Each HTTP thread reads both tiers: its own catalog connection for the hot tier and the
 * cold files it lists, and the shared object store. */
static int open_reader(void *ud, cp_reader **out, char *err, size_t errlen)
{
    const reader_ctx *c = ud;
    cp_reader *hot = NULL;
    int st = cp_reader_open(c->catalog, &hot, err, errlen);
    if (st != CP_OK) return st;
    st = cp_reader_open_tiered(hot, &c->tiered, out, err, errlen);
    if (st != CP_OK) cp_reader_close(hot);
    return st;
}

/* An import's writes go through a catalog connection of its own, set up like the
 * server's: the same hot windows and idle list (rollup fingerprints). */
static int open_catalog(void *ud, cp_catalog **out, char *err, size_t errlen)
{
    const cp_server_config *c = ud;
    return cp_cli_open_catalog_for(c->catalog, c->hot_window_ms, c->idle_methods, c->nidle_methods, out, err, errlen);
}

/* /api/v1/health's view of the server: recovery progress, the free-space floor, ingest. */
static void server_health(void *ud, cp_buf *b, const char **status)
{
    cp_server_health h;
    cp_server_health_get(ud, &h);
    if (h.disk_low) *status = "degraded";
    cp_buf_printf(b,
                  ",\"recovery\":{\"running\":%s,\"ok\":%s,\"passes\":%llu,\"restarts_total\":%llu,"
                  "\"restarts_done\":%llu,\"calls_added\":%llu},\"disk\":{\"low\":%s,\"free_bytes\":%llu,"
                  "\"floor_bytes\":%llu},\"ingest\":{\"connections\":%llu,\"buffered\":%llu}",
                  h.recovering ? "true" : "false", h.recovery_ok ? "true" : "false",
                  (unsigned long long)h.recovery_passes, (unsigned long long)h.recovery_restarts_total,
                  (unsigned long long)h.recovery_restarts_done, (unsigned long long)h.recovery_calls_added,
                  h.disk_low ? "true" : "false", (unsigned long long)h.disk_free, (unsigned long long)h.disk_floor,
                  (unsigned long long)h.connections, (unsigned long long)h.buffered);
}

static int server_disk_low(void *ud) { return cp_server_disk_low(ud); }

int cp_cli_serve(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf(usage_text, cp_cli_storage_help);
            return 0;
        }
    serve_opts o;
    memset(&o, 0, sizeof o);
    cp_server_config_default(&o.cfg);
    cp_http_config_default(&o.http);
    o.cold.every_ms = 60000;
    o.cold.delay_ms = 15 * 60000;
    o.cold.retention_ms = (int64_t)14 * 86400000;
    o.cold_cache_bytes = (uint64_t)1024 << 20;
    o.dump_inline_max = CP_DUMPS_DEFAULT_INLINE_MAX;
    o.heap_keep = 10;
    o.audit_retention_ms = (int64_t)365 * 86400000;
    char why[256] = "";
    int st = apply_env(&o, why, sizeof why);
    if (st == CP_OK) st = apply_flags(&o, argc, argv, why, sizeof why);
    if (st == CP_OK && o.cfg.tls_port != CP_SERVER_PORT_OFF && (!o.cfg.tls_cert || !o.cfg.tls_key)) {
        snprintf(why, sizeof why, "--agent-tls-port needs --tls-cert and --tls-key");
        st = CP_EINVAL;
    }
    if (st == CP_OK) {
        o.storage.data_dir = o.cfg.data_dir;
        st = cp_cli_storage_resolve(&o.storage, why, sizeof why);
    }
    /* One malloc arena for every thread: glibc gives each busy thread its own, and memory
     * one thread frees (call assembly on the loop) cannot then serve another's allocations
     * (SQLite's pages on the catalog writer), which costs ~5 MB of RSS under overload
     * (overload_test). The busy threads allocate small blocks from their own caches
     * (tcache) anyway, so the shared arena's lock is rarely taken (bench/ingest.sh: no
     * change in calls/s). */
    mallopt(M_ARENA_MAX, 1);
    if (st != CP_OK) {
        fprintf(stderr, "cloudprof serve: %s\n\n", why[0] ? why : cp_strstatus(st));
        fprintf(stderr, usage_text, cp_cli_storage_help);
        opts_free(&o);
        return 2;
    }
    o.cfg.blacklist = o.blacklist;
    o.cfg.nblacklist = o.nblacklist;
    o.cfg.log = log_line;

    o.cfg.catalog = o.storage.catalog;
    /* /metrics: one registry the agent loop, the cold task and the HTTP threads add to */
    o.cfg.metrics = o.http.metrics = o.cold.metrics = cp_metrics_new();
    if (!o.cfg.metrics || cp_metrics_set_build_info(o.cfg.metrics, CP_VERSION_STRING) != CP_OK) {
        fprintf(stderr, "cloudprof serve: out of memory\n");
        opts_free(&o);
        return 1;
    }
    cp_server *srv;
    char err[1024];
    if (cp_server_open(&o.cfg, &srv, err, sizeof err) != CP_OK) {
        fprintf(stderr, "cloudprof serve: %s\n", err);
        opts_free(&o);
        return 1;
    }
    cp_ostore *store = NULL;
    if (cp_cli_storage_open_store(&o.storage, &store, err, sizeof err) != CP_OK) {
        fprintf(stderr, "cloudprof serve: store %s: %s\n", o.storage.store, err);
        cp_server_close(srv);
        opts_free(&o);
        return 1;
    }
    char tmp_dir[4200], cache_dir[4200], node[128];
    snprintf(tmp_dir, sizeof tmp_dir, "%s/tmp", o.cfg.data_dir);
    snprintf(cache_dir, sizeof cache_dir, "%s/cache", o.cfg.data_dir);
    if (!o.cold.node) {
        char host[64] = "host";
        gethostname(host, sizeof host - 1);
        snprintf(node, sizeof node, "%s-%d", host, (int)getpid());
        o.cold.node = node;
    }
    /* the HTTP threads read the catalog through their own connections */
    reader_ctx rctx = {o.storage.catalog,
                       {store, strncmp(o.storage.store, "s3://", 5) ? NULL : cache_dir, o.cold_cache_bytes}};
    /* diagnostic files: their own catalog connections, bodies received in <data>/dumps-tmp */
    char dumps_tmp[4200];
    snprintf(dumps_tmp, sizeof dumps_tmp, "%s/dumps-tmp", o.cfg.data_dir);
    cp_dumps_config dc = {.catalog = o.storage.catalog, .store = store, .tmp_dir = dumps_tmp,
                          .inline_max = o.dump_inline_max, .connections = o.http.threads + 1, .node = o.cold.node};
    cp_dumps *dumps = NULL;
    if (cp_dumps_open(&dc, &dumps, err, sizeof err) != CP_OK) {
        fprintf(stderr, "cloudprof serve: diagnostic files: %s\n", err);
        cp_server_close(srv);
        cp_ostore_close(store);
        opts_free(&o);
        return 1;
    }
    o.http.dumps = dumps;
    /* the audit log (deletions, exports, downloads, imports): its own catalog connections */
    cp_audit_config ac = {.catalog = o.storage.catalog, .retention_ms = o.audit_retention_ms, .connections = 2};
    cp_audit *audit = NULL;
    if (cp_audit_open(&ac, &audit, err, sizeof err) != CP_OK) {
        fprintf(stderr, "cloudprof serve: audit log: %s\n", err);
        cp_dumps_close(dumps);
        cp_server_close(srv);
        cp_ostore_close(store);
        opts_free(&o);
        return 1;
    }
    o.http.audit = audit;
    /* heap dump summaries (GET /dumps/{id}/hprof) are cached as files beside the data */
    char hprof_cache[4200];
    snprintf(hprof_cache, sizeof hprof_cache, "%s/hprof-cache", o.cfg.data_dir);
    o.http.hprof_cache_dir = hprof_cache;
    o.http.blacklist = o.blacklist;
    o.http.nblacklist = o.nblacklist;
    o.http.idle_methods = o.idle_methods;
    o.http.nidle_methods = o.nidle_methods;
    o.http.auth_ns_rules = o.auth_ns;
    o.http.nauth_ns_rules = o.nauth_ns;
    /* the rollups' system flag uses the same list as the queries' hide_system */
    o.cfg.idle_methods = o.idle_methods;
    o.cfg.nidle_methods = o.nidle_methods;
    o.cold.idle_methods = o.idle_methods;
    o.cold.nidle_methods = o.nidle_methods;
    o.http.open_reader = open_reader;
    o.http.open_reader_ud = &rctx;
    o.http.open_catalog = open_catalog;
    o.http.open_catalog_ud = &o.cfg;
    o.http.health = server_health;
    o.http.disk_low = server_disk_low;
    o.http.state_ud = srv;
    o.http.version = CP_VERSION_STRING;
    o.http.log = http_log_line;
    o.http.log_ud = &o.cfg.log_level;
    cp_http *http = NULL;
    if (cp_http_start(&o.http, &http, err, sizeof err) != CP_OK) {
        fprintf(stderr, "cloudprof serve: HTTP: %s\n", err);
        cp_audit_close(audit);
    cp_dumps_close(dumps);
        cp_server_close(srv);
        cp_ostore_close(store);
        opts_free(&o);
        return 1;
    }
    if (o.http.auth_mode == CP_AUTH_NONE && (!is_loopback(o.http.host) || !is_loopback(o.cfg.host)))
        log_line(NULL, CP_LOG_WARN, "--auth none on a non-loopback address: anyone who reaches the HTTP port reads and "
                          "deletes every profile and dump (README \"Security\"; --auth basic|oidc)");
    fprintf(stderr, "cloudprof: agent listener on %s:%d (TLS: %d; 0 = none), HTTP API on %s:%d, data %s\n",
            o.cfg.host, cp_server_port(srv), cp_server_tls_port(srv), o.http.host, cp_http_port(http), o.cfg.data_dir);
    if (o.ready_file &&
        write_ready_file(o.ready_file, cp_server_port(srv), cp_http_port(http), cp_server_tls_port(srv)) != CP_OK) {
        fprintf(stderr, "cloudprof serve: cannot write ready file %s: %s\n", o.ready_file, strerror(errno));
        cp_http_stop(http);
        cp_audit_close(audit);
    cp_dumps_close(dumps);
        cp_server_close(srv);
        cp_ostore_close(store);
        opts_free(&o);
        return 1;
    }
    o.cold.catalog = o.storage.catalog;
    o.cold.store = store;
    o.cold.tmp_dir = tmp_dir;
    o.cold.log = http_log_line;
    o.cold.log_ud = &o.cfg.log_level;
    o.cold.dumps = dumps;
    o.cold.heap_keep = o.heap_keep;
    cp_coldtask *cold = NULL;
    if (cp_coldtask_start(&o.cold, &cold, err, sizeof err) != CP_OK)
        fprintf(stderr, "cloudprof serve: compaction disabled: %s\n", err);
    cp_server_run(srv);
    cp_coldtask_stop(cold);
    cp_http_stop(http);
    cp_audit_close(audit);
    cp_dumps_close(dumps);
    cp_server_close(srv);
    cp_ostore_close(store);
    opts_free(&o);
    return 0;
}
