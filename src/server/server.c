/* server.c -- the listener and the loop: accept, the per-iteration check phase (catalog
 * commit, sync batch submit), the idle sweep, signals, graceful stop, logging. */
#include "server_internal.h"

#include "common/cp_metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define SWEEP_INTERVAL_MS 1000

/* ---- config and logging ---------------------------------------------------------------------- */

void cp_server_config_default(cp_server_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->host = "0.0.0.0";
    cfg->port = 1715;
    cfg->tls_port = CP_SERVER_PORT_OFF;
    cfg->tls_handshake_ms = 10000;
    cfg->data_dir = "./data";
    cfg->protocol_version = CP_PROTOCOL_V2;
    cfg->max_connections = 20000;
    cfg->idle_timeout_ms = 120000;
    cfg->log_level = CP_LOG_INFO;
    cfg->trace_wait_ms = 60000;
    cfg->hot_window_ms = 300000;
    cfg->hot_ahead_ms = 3 * 3600000;
    cfg->min_free_bytes = (uint64_t)1 << 30;
    cfg->min_free_pct = 5;
    cfg->ingest_memory = (uint64_t)64 << 20;
    cfg->max_buffered = cfg->ingest_memory / 8;
    cfg->max_rotations_per_min = 1200;
    cfg->max_files_per_conn = 20000;
    for (int k = 0; k < CP_STREAM_KIND_COUNT; k++) {
        int meta = k == CP_STREAM_DICTIONARY || k == CP_STREAM_POSDICTIONARY || k == CP_STREAM_PARAMS;
        /* splitting the dictionary id space or re-sending params buys nothing (§3.9) */
        cfg->rotation_period_ms[k] = meta ? 0 : 3600000;
        cfg->rotation_size[k] = meta ? 0 : 2097152;
    }
}

int cp_srv_log_enabled(const cp_server *s, int level) { return s->cfg->log && level <= s->cfg->log_level; }

void cp_srv_log(cp_server *s, int level, const char *fmt, ...)
{
    if (!cp_srv_log_enabled(s, level)) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    s->cfg->log(s->cfg->log_ud, level, msg);
}

/* ---- loop callbacks -------------------------------------------------------------------------- */

static void on_connection(uv_stream_t *l, int status)
{
    cp_server *s = l->data;
    if (status == UV_EMFILE || status == UV_ENFILE) {
        /* libuv has already accepted and closed the waiting connections */
        cp_srv_fd_shortage(s, uv_strerror(status));
        return;
    }
    if (status < 0) {
        cp_srv_log(s, CP_LOG_ERROR, "accept: %s", uv_strerror(status));
        return;
    }
    if (!s->stopping) cp_conn_accept(s, l, l == (uv_stream_t *)&s->tls_listener);
}

/* After every I/O poll: the connections that asked for durability share one fsync batch,
 * and those that read their share of this iteration may read again. (The catalog's
 * transactions are the writer thread's: catwriter.c.) */
static void on_check(uv_check_t *h)
{
    cp_server *s = h->data;
    cp_catw_publish(s);
    cp_sync_submit(s);
    cp_srv_release_held(s);
    cp_srv_gate_iteration(s);
}

/* Catalog upkeep that waits on the disk (a WAL checkpoint fsyncs) runs on the threadpool:
 * on the loop thread it would hold up every connection's acks. */
#define MAINTAIN_INTERVAL_MS 500 /* at saturation the WAL grows ~100 MB/s: keep up with it */

static void maintain_work(uv_work_t *w)
{
    cp_server *s = w->data;
    /* best effort: the next round retries; CP_AGAIN = behind, go again at once */
    s->maintain_behind = cp_catalog_maintain(s->catalog) == CP_AGAIN;
}

static void maybe_maintain(cp_server *s, uint64_t now);

static void maintain_done(uv_work_t *w, int status)
{
    cp_server *s = w->data;
    (void)status;
    s->maintaining = 0;
    if (s->maintain_behind) {
        s->next_maintain = 0;
        maybe_maintain(s, uv_now(&s->loop));
    }
}

static void maybe_maintain(cp_server *s, uint64_t now)
{
    if (s->maintaining || s->stopping || now < s->next_maintain) return;
    s->next_maintain = now + MAINTAIN_INTERVAL_MS;
    s->maintain.data = s;
    if (uv_queue_work(&s->loop, &s->maintain, maintain_work, maintain_done) == 0) s->maintaining = 1;
}

/* ---- the free-space floor ------------------------------------------------------------------ */

/* Checked once a second: a full disk tears files and fails catalog commits, so nothing
 * new is taken below the floor (agents retry; uploads get 507) and it is said in
 * /api/v1/health. */
static void check_disk(cp_server *s)
{
    const cp_server_config *cfg = s->cfg;
    struct statvfs v;
    if ((!cfg->min_free_bytes && !cfg->min_free_pct) || statvfs(cfg->data_dir, &v) != 0) {
        __atomic_store_n(&s->disk_low, 0, __ATOMIC_RELAXED);
        return;
    }
    uint64_t total = (uint64_t)v.f_blocks * v.f_frsize, avail = (uint64_t)v.f_bavail * v.f_frsize;
    uint64_t floor = cfg->min_free_bytes, pct = total / 100 * cfg->min_free_pct;
    if (cfg->min_free_pct && (!floor || pct < floor)) floor = pct;
    int low = avail < floor, was = __atomic_load_n(&s->disk_low, __ATOMIC_RELAXED);
    __atomic_store_n(&s->disk_free, avail, __ATOMIC_RELAXED);
    __atomic_store_n(&s->disk_floor, floor, __ATOMIC_RELAXED);
    __atomic_store_n(&s->disk_low, low, __ATOMIC_RELAXED);
    if (low && !was)
        cp_srv_log(s, CP_LOG_WARN, "data directory %s: %llu bytes free, below the floor of %llu (--min-free): "
                                   "agents and uploads are refused until there is room",
                   cfg->data_dir, (unsigned long long)avail, (unsigned long long)floor);
    else if (!low && was)
        cp_srv_log(s, CP_LOG_INFO, "data directory %s: %llu bytes free again: taking data", cfg->data_dir,
                   (unsigned long long)avail);
}

int cp_server_disk_low(const cp_server *s) { return __atomic_load_n(&s->disk_low, __ATOMIC_RELAXED); }

int cp_srv_disk_refuse(cp_server *s, const char *what)
{
    if (!cp_server_disk_low(s)) return 0;
    s->disk_refused++;
    uint64_t now = uv_now(&s->loop);
    if (!s->disk_refused_logged_ms || now - s->disk_refused_logged_ms >= 10000) {
        s->disk_refused_logged_ms = now;
        cp_srv_log(s, CP_LOG_WARN, "data directory below its free-space floor: %s refused (%llu so far)", what,
                   (unsigned long long)s->disk_refused);
    }
    return 1;
}

/* ---- partial records ------------------------------------------------------------------------ */

int cp_srv_buffered(cp_conn *c, uint64_t now)
{
    cp_server *s = c->srv;
    if (now == c->buffered) return 0;
    if (!c->buffered) s->nbuffering++;
    else if (!now) s->nbuffering--;
    __atomic_store_n(&s->buffered, s->buffered - c->buffered + now, __ATOMIC_RELAXED); /* health reads it */
    c->buffered = now;
    uint64_t budget = s->cfg->max_buffered;
    if (!budget || s->buffered <= budget) return 0;
    /* over the budget: whoever holds more than an equal share of it goes */
    uint64_t share = budget / (s->nbuffering ? s->nbuffering : 1);
    return now > share ? -1 : 0;
}

void cp_server_health_get(cp_server *s, cp_server_health *h)
{
    memset(h, 0, sizeof *h);
    cp_recovery_status rs;
    cp_srv_recovery_status(s, &rs);
    h->recovering = rs.running;
    h->recovery_ok = rs.last_ok;
    h->recovery_passes = rs.passes;
    h->recovery_restarts_total = rs.restarts_total;
    h->recovery_restarts_done = rs.restarts_done;
    h->recovery_calls_added = rs.calls_added;
    h->disk_low = cp_server_disk_low(s);
    h->disk_free = __atomic_load_n(&s->disk_free, __ATOMIC_RELAXED);
    h->disk_floor = __atomic_load_n(&s->disk_floor, __ATOMIC_RELAXED);
    h->connections = __atomic_load_n(&s->nconns, __ATOMIC_RELAXED);
    h->buffered = __atomic_load_n(&s->buffered, __ATOMIC_RELAXED);
}

/* One timer for all connections instead of one per connection (memory at 10k idle). */
static void on_sweep(uv_timer_t *t)
{
    cp_server *s = t->data;
    uint64_t now = uv_now(&s->loop);
    check_disk(s);
    maybe_maintain(s, now);
    for (cp_conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        cp_conn_sweep(c, now);
    }
}

static void on_signal(uv_signal_t *h, int signum)
{
    cp_server *s = h->data;
    cp_srv_log(s, CP_LOG_INFO, "received %s, stopping", signum == SIGINT ? "SIGINT" : "SIGTERM");
    cp_server_stop(s);
}

/* ---- lifecycle ------------------------------------------------------------------------------- */

/* Raises the soft RLIMIT_NOFILE to the hard one; returns the soft limit in effect. */
static size_t raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)rl.rlim_cur;
}

/* The fd cache size: what the fd limit leaves after the sockets of the connections we
 * expect (at most half the limit when max_connections is larger than the machine
 * allows) and a reserve, within [CP_SRV_MIN_FILES, CP_SRV_MAX_OPEN_FILES]. */
static size_t open_files_limit(const cp_server_config *cfg, size_t nofile)
{
    if (cfg->max_open_files) return cfg->max_open_files;
    size_t sockets = cfg->max_connections < nofile / 2 ? cfg->max_connections : nofile / 2;
    size_t left = nofile > sockets + CP_SRV_FD_RESERVE ? nofile - sockets - CP_SRV_FD_RESERVE : 0;
    if (left < CP_SRV_MIN_FILES) left = CP_SRV_MIN_FILES;
    return left < CP_SRV_MAX_OPEN_FILES ? left : CP_SRV_MAX_OPEN_FILES;
}

/* Connections are refused for lack of descriptors: log it (at most every 10 s, with a
 * count) and close idle cached fds so that the next connection finds room. */
void cp_srv_fd_shortage(cp_server *s, const char *why)
{
    s->fd_refused++;
    size_t closed = cp_rawlog_fdcache_shrink(&s->files, CP_SRV_FD_RESERVE);
    uint64_t now = uv_now(&s->loop);
    if (s->fd_refused_logged_ms && now - s->fd_refused_logged_ms < 10000) return;
    s->fd_refused_logged_ms = now;
    cp_srv_log(s, CP_LOG_WARN,
               "out of file descriptors (%s): connection refused (%llu so far); %zu connections, "
               "%zu stream files open (%zu closed now), fd limit %zu",
               why, (unsigned long long)s->fd_refused, s->nconns, s->files.open, closed, s->nofile);
}

/* The fds stream files may use: what the limit leaves after the sockets and the
 * reserve. Applied as the fd cache's hard cap whenever the connection count changes;
 * returns 0 if that leaves fewer than CP_SRV_MIN_FILES, or fewer than the files already
 * open (dirty or pinned, so not closable now). */
int cp_srv_fd_budget(cp_server *s)
{
    size_t used = s->nconns + CP_SRV_FD_RESERVE;
    size_t budget = s->nofile > used ? s->nofile - used : 0;
    cp_rawlog_fdcache_set_max_open(&s->files, budget);
    return s->files.open <= budget && budget >= CP_SRV_MIN_FILES;
}

/* Binds and listens on cfg->host:port (0 = ephemeral); *bound_port gets the real port. */
static int bind_listener(cp_server *s, uv_tcp_t *l, int port, int *bound_port, char *err, size_t errlen)
{
    const cp_server_config *cfg = s->cfg;
    struct sockaddr_storage addr;
    int r = strchr(cfg->host, ':') ? uv_ip6_addr(cfg->host, port, (struct sockaddr_in6 *)&addr)
                                    : uv_ip4_addr(cfg->host, port, (struct sockaddr_in *)&addr);
    if (r != 0) {
        snprintf(err, errlen, "bad listen address '%s': %s", cfg->host, uv_strerror(r));
        return CP_EINVAL;
    }
    r = uv_tcp_bind(l, (struct sockaddr *)&addr, 0);
    if (r == 0) r = uv_listen((uv_stream_t *)l, SOMAXCONN, on_connection);
    if (r != 0) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", cfg->host, port, uv_strerror(r));
        return CP_EIO;
    }
    struct sockaddr_storage bound;
    int len = sizeof bound;
    uv_tcp_getsockname(l, (struct sockaddr *)&bound, &len);
    *bound_port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                    : ((struct sockaddr_in *)&bound)->sin_port);
    return CP_OK;
}

int cp_server_open(const cp_server_config *cfg, cp_server **out, char *err, size_t errlen)
{
    *out = NULL;
    if (cfg->protocol_version != CP_PROTOCOL_V2 && cfg->protocol_version != CP_PROTOCOL_V3) {
        snprintf(err, errlen, "protocol version must be %d or %d", CP_PROTOCOL_V2, CP_PROTOCOL_V3);
        return CP_EINVAL;
    }
    if (cfg->port < 0 && cfg->tls_port < 0) {
        snprintf(err, errlen, "no agent port: the plain port is off and no TLS port is set");
        return CP_EINVAL;
    }
    size_t nofile = raise_nofile(); /* each agent costs a socket; stream files share the fd cache */
    signal(SIGPIPE, SIG_IGN); /* a vanished agent must be an EPIPE, not a dead collector */
    if (cp_mkdirs(cfg->data_dir, 0755) != CP_OK) {
        snprintf(err, errlen, "cannot create data directory %s: %s", cfg->data_dir, strerror(errno));
        return CP_EIO;
    }
    cp_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    s->cfg = cfg;
    s->fs_fd = -1;
    s->nofile = nofile;
    cp_rawlog_fdcache_init(&s->files, open_files_limit(cfg, nofile));
    cp_sync_init(s);
    cp_srv_recovery_init(s);
    int st = uv_loop_init(&s->loop) == 0 ? CP_OK : CP_EIO;
    if (st != CP_OK) {
        snprintf(err, errlen, "cannot create the event loop");
        free(s);
        return st;
    }
    s->has_plain = cfg->port >= 0;
    s->has_tls = cfg->tls_port >= 0;
    if (s->has_plain) uv_tcp_init(&s->loop, &s->listener);
    if (s->has_tls) uv_tcp_init(&s->loop, &s->tls_listener);
    uv_check_init(&s->loop, &s->check);
    uv_timer_init(&s->loop, &s->sweep);
    uv_timer_init(&s->loop, &s->asm_timer);
    uv_signal_init(&s->loop, &s->sigint);
    uv_signal_init(&s->loop, &s->sigterm);
    s->listener.data = s->tls_listener.data = s->check.data = s->sweep.data = s->sigint.data = s->sigterm.data = s;
    s->rbuf = malloc(CP_SRV_READ_BUF);
    s->words = cp_wordpool_new();
    if (!s->rbuf || !s->words) {
        snprintf(err, errlen, "out of memory");
        st = CP_ENOMEM;
    }
    char path[4096];
    if (st == CP_OK && (size_t)snprintf(path, sizeof path, "%s/catalog.db", cfg->data_dir) >= sizeof path) {
        snprintf(err, errlen, "data directory path too long");
        st = CP_EINVAL;
    }
    if (st == CP_OK) st = cp_catalog_open(cfg->catalog ? cfg->catalog : path, &s->catalog, err, errlen);
    if (st == CP_OK && cfg->idle_methods) cp_catalog_set_idle(s->catalog, cfg->idle_methods, cfg->nidle_methods);
    s->tails.budget = (size_t)(cfg->ingest_memory / 8);
    s->values.budget = (size_t)(cfg->ingest_memory / 16);
    s->asm_share = cfg->ingest_memory / 4; /* gate.c */
    if (st == CP_OK && cfg->ingest_memory && cp_catalog_set_cache_max(s->catalog, cfg->ingest_memory / 4) != CP_OK) {
        snprintf(err, errlen, "catalog: %s", cp_catalog_errmsg(s->catalog));
        st = CP_EINVAL;
    }
    if (st == CP_OK && cp_catalog_set_wal_max(s->catalog, cfg->wal_max) != CP_OK) {
        snprintf(err, errlen, "catalog: %s", cp_catalog_errmsg(s->catalog));
        st = CP_EINVAL;
    }
    if (st == CP_OK && cp_catalog_set_windows(s->catalog, cfg->hot_window_ms, cfg->hot_ahead_ms) != CP_OK) {
        snprintf(err, errlen, "catalog: %s", cp_catalog_errmsg(s->catalog));
        st = CP_EINVAL;
    }
    if (st == CP_OK) s->fs_fd = open(cfg->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* -1: no syncfs */
    if (st == CP_OK && cp_catw_start(s, cfg->ingest_memory / 32, cfg->ingest_writer) != CP_OK) {
        snprintf(err, errlen, "cannot start the catalog writer thread");
        st = CP_EIO;
    }
    if (st == CP_OK) check_disk(s); /* before the first agent */
    if (st == CP_OK && s->has_tls) st = cp_srv_tls_open(s, err, errlen); /* certificates before the port */
    if (st == CP_OK && s->has_plain) st = bind_listener(s, &s->listener, cfg->port, &s->port, err, errlen);
    if (st == CP_OK && s->has_tls) st = bind_listener(s, &s->tls_listener, cfg->tls_port, &s->tls_port, err, errlen);
    /* agents are accepted at once: what a crash left out of the hot tier is recovered
     * beside them, by the worker (recover.c) */
    if (st == CP_OK) st = cp_srv_recovery_start(s, err, errlen);
    if (st != CP_OK) {
        cp_server_close(s);
        return st;
    }
    /* handlers now, not in cp_server_run: a caller may announce readiness in between, and
     * a SIGTERM right after that must stop the server gracefully, not kill it */
    uv_signal_start(&s->sigint, on_signal, SIGINT);
    uv_signal_start(&s->sigterm, on_signal, SIGTERM);
    cp_srv_log(s, CP_LOG_INFO, "fd limit %zu: at most %zu stream files open at once", nofile, s->files.limit);
    *out = s;
    return CP_OK;
}

int cp_server_port(const cp_server *s) { return s->port; }
int cp_server_tls_port(const cp_server *s) { return s->tls_port; }

int cp_server_run(cp_server *s)
{
    uv_check_start(&s->check, on_check);
    uv_timer_start(&s->sweep, on_sweep, SWEEP_INTERVAL_MS, SWEEP_INTERVAL_MS);
    cp_srv_asm_timer_start(s);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    cp_catw_stop(s); /* what is queued is committed */
    return CP_OK;
}

void cp_server_stop(cp_server *s)
{
    if (s->stopping) return;
    s->stopping = 1;
    if (s->has_plain) uv_close((uv_handle_t *)&s->listener, NULL);
    if (s->has_tls) uv_close((uv_handle_t *)&s->tls_listener, NULL);
    for (cp_conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        cp_conn_close(c, "server stopping");
    }
    cp_srv_maybe_finish(s);
}

/* During a stop: once every connection is gone and no sync is outstanding, close the
 * loop's own handles so uv_run returns. */
void cp_srv_maybe_finish(cp_server *s)
{
    if (!s->stopping || s->finished || s->nconns || s->inflight || s->pending->nmembers) return;
    s->finished = 1;
    uv_close((uv_handle_t *)&s->check, NULL);
    uv_close((uv_handle_t *)&s->sweep, NULL);
    uv_close((uv_handle_t *)&s->asm_timer, NULL);
    uv_close((uv_handle_t *)&s->sigint, NULL);
    uv_close((uv_handle_t *)&s->sigterm, NULL);
    cp_srv_log(s, CP_LOG_INFO,
               "stopped (stream-file opens %llu, fds closed by the cache %llu, opens beyond its limit %llu; "
               "calls stored %llu, failed %llu)",
               (unsigned long long)s->files.opens, (unsigned long long)s->files.evictions,
               (unsigned long long)s->files.over_limit, (unsigned long long)s->calls_stored,
               (unsigned long long)s->calls_failed);
}

static void close_any(uv_handle_t *h, void *arg)
{
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

void cp_server_close(cp_server *s)
{
    if (!s) return;
    /* only loop-owned handles remain here (no connections): close and reap them */
    cp_srv_recovery_stop(s); /* between two restarts (or calls) of a pass */
    cp_catw_stop(s); /* a server that never ran */
    uv_walk(&s->loop, close_any, NULL);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    uv_loop_close(&s->loop);
    cp_catalog_close(s->catalog);
    cp_catw_free(s);
    cp_srv_recovery_free(s);
    if (s->fs_fd >= 0) close(s->fs_fd);
    cp_sync_free(s);
    cp_srv_tls_close(s); /* after the loop: every session (and its context reference) is gone */
    cp_buf_free(&s->scratch);
    free(s->rbuf);
    free(s->held);
    cp_wordpool_free(s->words); /* after every connection's assembler */
    free(s);
}
