/* dumps.c -- the diagnostic-file store (cp_dumps.h): opening it, its pool of catalog
 * connections, and the helpers the other dumps*.c files share (record columns, paths,
 * object keys, pending objects). */
#include "store/dumps/dumps_internal.h"
#include "store/cp_catalog.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_CONNS 4
#define MAX_CONNS 64
#define INLINE_MAX_CAP ((uint64_t)128 << 20) /* a cold row is decoded with its row group: bounded */
#define STALE_TEMP_S (24 * 3600)              /* temp files of a crashed process are this old */

/* ---- the pool -------------------------------------------------------------------------- */

int dumps_conn_get(cp_dumps *d, cp_sqldb **out, char *err, size_t errlen)
{
    *out = NULL;
    pthread_mutex_lock(&d->mu);
    while (!d->nidle && d->nconns >= d->max_conns) pthread_cond_wait(&d->cv, &d->mu);
    if (d->nidle) {
        *out = d->idle[--d->nidle];
        pthread_mutex_unlock(&d->mu);
        return CP_OK;
    }
    d->nconns++; /* the slot is ours; connect without holding the lock */
    pthread_mutex_unlock(&d->mu);
    int st = cp_sqldb_open(d->catalog, out, err, errlen);
    if (st != CP_OK) {
        pthread_mutex_lock(&d->mu);
        d->nconns--;
        pthread_cond_signal(&d->cv);
        pthread_mutex_unlock(&d->mu);
    }
    return st;
}

void dumps_conn_put(cp_dumps *d, cp_sqldb *db)
{
    if (!db) return;
    int bad = cp_sqldb_broken(db);
    if (!bad) cp_sqldb_rollback(db); /* a transaction a failure left open */
    pthread_mutex_lock(&d->mu);
    if (bad || d->nidle >= d->max_conns) {
        d->nconns--;
        pthread_mutex_unlock(&d->mu);
        cp_sqldb_close(db);
        pthread_mutex_lock(&d->mu);
    } else {
        d->idle[d->nidle++] = db;
    }
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

int dumps_fail(char *err, size_t errlen, int st, const char *what, const cp_sqldb *db)
{
    snprintf(err, errlen, "%s: %s", what, db ? cp_sqldb_errmsg(db) : "failed");
    return st;
}

/* ---- record columns, paths, keys --------------------------------------------------------- */

static void copy_col(char *dst, size_t cap, const cp_sql_val *v)
{
    size_t n = v->type == CP_SQL_TEXT ? v->n : 0;
    if (n >= cap) n = cap - 1;
    if (n) memcpy(dst, v->p, n);
    dst[n] = 0;
}

void dumps_meta_of(const cp_sql_val *c, cp_dump_meta *m)
{
    memset(m, 0, sizeof *m);
    m->id = cp_sql_int(&c[0], 0);
    copy_col(m->ns, sizeof m->ns, &c[1]);
    copy_col(m->pod, sizeof m->pod, &c[2]);
    copy_col(m->restart_pod, sizeof m->restart_pod, &c[3]);
    copy_col(m->service, sizeof m->service, &c[4]);
    copy_col(m->name, sizeof m->name, &c[5]);
    cp_dump_kind k;
    const char *kind = cp_sql_str(&c[6]);
    m->kind = cp_dump_kind_parse(kind, strlen(kind), &k) == CP_OK ? k : CP_DUMP_OTHER;
    m->gc_rotation = (int)cp_sql_int(&c[7], -1);
    m->dir_ms = cp_sql_int(&c[8], 0);
    m->capture_ms = cp_sql_int(&c[9], -1);
    m->received_ms = cp_sql_int(&c[10], 0);
    m->restart_ms = cp_sql_int(&c[11], 0);
    int64_t b = cp_sql_int(&c[12], 0);
    m->bytes = b > 0 ? (uint64_t)b : 0;
    copy_col(m->sha256, sizeof m->sha256, &c[13]);
    m->version = cp_sql_int(&c[14], 1);
    const char *loc = cp_sql_str(&c[15]);
    m->location = !strcmp(loc, "object") ? CP_DUMP_OBJECT : !strcmp(loc, "cold") ? CP_DUMP_COLD : CP_DUMP_HOT;
    copy_col(m->key, sizeof m->key, &c[16]);
    m->cold_row = m->location == CP_DUMP_COLD ? cp_sql_int(&c[17], -1) : -1;
    copy_col(m->info, sizeof m->info, &c[18]);
    if (!m->info[0]) snprintf(m->info, sizeof m->info, "{}");
}

static int utc(int64_t ms, struct tm *tm)
{
    time_t t = (time_t)((ms - (((ms % 1000) + 1000) % 1000)) / 1000);
    return gmtime_r(&t, tm) ? CP_OK : CP_EINVAL;
}

int dumps_path_string(const cp_dump_path *p, cp_buf *out)
{
    struct tm tm;
    if (utc(p->dir_ms, &tm) != CP_OK) return CP_EINVAL;
    return cp_buf_printf(out, "%s/%04d/%02d/%02d/%02d/%02d/%02d/%s/%s", p->ns, tm.tm_year + 1900, tm.tm_mon + 1,
                         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, p->pod, p->file);
}

int32_t dumps_path_lock_key(const char *path)
{
    uint32_t h = 0x811c9dc5u;
    for (const char *p = path; *p; p++) h = (h ^ (uint8_t)*p) * 0x01000193u;
    return (int32_t)(h & 0x7fffffff);
}

int dumps_hour_prefix(int64_t ms, cp_buf *out)
{
    struct tm tm;
    if (utc(ms < 0 ? 0 : ms, &tm) != CP_OK) return CP_EINVAL; /* before 1970: under 1970/01/01/00 */
    return cp_buf_printf(out, "%04d/%02d/%02d/%02d/", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour);
}

int dumps_object_drop(cp_dumps *d, const char *key)
{
    char e[512];
    int st = d->store->ops->del(d->store, key, e, sizeof e);
    if (st != CP_OK && st != CP_ENOTFOUND) return 0; /* the pending row stays: the sweep retries */
    cp_sqldb *db;
    if (dumps_conn_get(d, &db, e, sizeof e) == CP_OK) {
        cp_sql_val p[] = {cp_sql_text(key)};
        /* only the delete mark: never another upload's reservation of the same name */
        cp_sqldb_exec(db, "DELETE FROM dump_pending WHERE object_key = $1 AND node = '" DUMPS_PENDING_DELETE "'", p,
                      1, NULL, NULL, NULL);
        dumps_conn_put(d, db);
    }
    return 1;
}

/* ---- open / close ------------------------------------------------------------------------- */

static int named(const char *name, const char *prefix, const char *suffix)
{
    size_t n = strlen(name), p = strlen(prefix), s = strlen(suffix);
    return n > p + s && !strncmp(name, prefix, p) && !strcmp(name + n - s, suffix);
}

/* Removes receive files (dumps_intake.c) and Parquet files (dumps_compact.c) a crashed
 * process left in tmp_dir, old enough that no live process can still be writing them. */
static void sweep_temp(const char *dir)
{
    DIR *dh = opendir(dir);
    if (!dh) return;
    struct dirent *e;
    time_t now = time(NULL);
    while ((e = readdir(dh))) {
        if (!named(e->d_name, "dump-", ".part") && !named(e->d_name, "dcompact-", ".parquet")) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISREG(sb.st_mode) && now - sb.st_mtime > STALE_TEMP_S) unlink(p);
    }
    closedir(dh);
}

void cp_dumps_close(cp_dumps *d)
{
    if (!d) return;
    for (size_t i = 0; i < d->nidle; i++) cp_sqldb_close(d->idle[i]);
    free(d->idle);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    free(d->catalog);
    free(d->tmp_dir);
    free(d->node);
    free(d);
}

int cp_dumps_open(const cp_dumps_config *cfg, cp_dumps **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!cfg->catalog || !cfg->store || !cfg->tmp_dir || !*cfg->tmp_dir) {
        snprintf(err, errlen, "dumps: catalog, store and tmp_dir are required");
        return CP_EINVAL;
    }
    /* the catalog applies its migrations (dumps columns included) */
    cp_catalog *cat = NULL;
    int st = cp_catalog_open(cfg->catalog, &cat, err, errlen);
    if (st != CP_OK) return st;
    cp_catalog_close(cat);
    if (cp_mkdirs(cfg->tmp_dir, 0755) != CP_OK) {
        snprintf(err, errlen, "dumps: cannot create %s: %s", cfg->tmp_dir, strerror(errno));
        return CP_EIO;
    }
    cp_dumps *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    d->store = cfg->store;
    d->inline_max = cfg->inline_max ? cfg->inline_max : CP_DUMPS_DEFAULT_INLINE_MAX;
    if (d->inline_max > INLINE_MAX_CAP) d->inline_max = INLINE_MAX_CAP;
    d->max_conns = cfg->connections ? cfg->connections : DEFAULT_CONNS;
    if (d->max_conns > MAX_CONNS) d->max_conns = MAX_CONNS;
    char node[160];
    if (cfg->node && *cfg->node) {
        snprintf(node, sizeof node, "%s", cfg->node);
    } else {
        char host[64] = "host";
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = 0;
        snprintf(node, sizeof node, "%s:%d", host, (int)getpid());
    }
    d->catalog = strdup(cfg->catalog);
    d->tmp_dir = strdup(cfg->tmp_dir);
    d->node = strdup(node);
    d->idle = calloc(d->max_conns, sizeof *d->idle);
    if (!d->catalog || !d->tmp_dir || !d->node || !d->idle) {
        cp_dumps_close(d);
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    /* one connection now: a catalog that cannot be reached fails here, not at the first upload */
    cp_sqldb *db;
    st = dumps_conn_get(d, &db, err, errlen);
    if (st != CP_OK) {
        cp_dumps_close(d);
        return st;
    }
    dumps_conn_put(d, db);
    sweep_temp(d->tmp_dir);
    *out = d;
    return CP_OK;
}
