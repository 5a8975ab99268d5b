/* coldtask.c -- the cold tier's background task in `serve` (cp_server.h): compaction on a
 * timer, then retention, on a thread of its own with its own catalog connection, so the
 * agent loop never waits for Parquet writing or uploads. */
#include "server/cp_server.h"
#include "common/cp_metrics.h"
#include "query/cp_query.h"
#include "store/cp_catalog.h"
#include "store/cp_cold.h"
#include "store/cp_dumps.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define RETENTION_EVERY_MS ((int64_t)10 * 60 * 1000)

struct cp_coldtask {
    cp_coldtask_config cfg;
    cp_catalog *cat;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    volatile int stop;
    int64_t last_retention;
};

static void logf_(cp_coldtask *t, int level, const char *msg)
{
    if (t->cfg.log) t->cfg.log(t->cfg.log_ud, level, msg);
}

static void on_progress(void *ud, const char *line) { logf_(ud, CP_LOG_INFO, line); }

static void run_once(cp_coldtask *t)
{
    char err[1024];
    int64_t now = cp_now_ms();
    cp_compactor_config cc = {.cat = t->cat,
                              .store = t->cfg.store,
                              .tmp_dir = t->cfg.tmp_dir,
                              .node = t->cfg.node,
                              .lease_ms = CP_COMPACT_LEASE_MS,
                              .progress = on_progress,
                              .progress_ud = t,
                              .stop = &t->stop,
                              .idle = t->cfg.idle_methods ? t->cfg.idle_methods : cp_system_idle_default,
                              .nidle = t->cfg.idle_methods ? t->cfg.nidle_methods : cp_system_idle_default_count};
    cp_compact_stats st;
    memset(&st, 0, sizeof st);
    int rc = cp_compact_run(&cc, now - t->cfg.delay_ms, now, 0, &st, err, sizeof err);
    cp_metrics_inc(t->cfg.metrics, CP_M_COMPACTION_RUNS, 0);
    cp_metrics_add(t->cfg.metrics, CP_M_COMPACTION_CALLS, 0, st.calls);
    if (rc != CP_OK && !t->stop) {
        cp_metrics_inc(t->cfg.metrics, CP_M_COMPACTION_FAILURES, 0);
        char line[1100];
        snprintf(line, sizeof line, "compaction failed (retried at the next run): %s", err);
        logf_(t, CP_LOG_ERROR, line);
    }
    if (t->cfg.dumps && !t->stop) {
        cp_dumps_compact_stats ds;
        if (cp_dumps_compact(t->cfg.dumps, now - t->cfg.delay_ms, now, 0, on_progress, t, &ds, err, sizeof err) !=
            CP_OK) {
            char line[1100];
            snprintf(line, sizeof line, "diagnostic files compaction failed (retried at the next run): %s", err);
            logf_(t, CP_LOG_ERROR, line);
        }
    }
    if (t->stop || t->cfg.retention_ms <= 0 || now - t->last_retention < RETENTION_EVERY_MS) return;
    t->last_retention = now;
    /* dumps first: their records go before the calls' retention deletes their Parquet files */
    if (t->cfg.dumps) {
        cp_dumps_retention_stats ds;
        if (cp_dumps_retention(t->cfg.dumps, now - t->cfg.retention_ms, t->cfg.heap_keep, 0, now, &ds, err,
                               sizeof err) != CP_OK) {
            char line[1100];
            snprintf(line, sizeof line, "diagnostic files retention failed (retried later): %s", err);
            logf_(t, CP_LOG_ERROR, line);
        } else if (ds.expired || ds.heaps_trimmed || ds.objects_deleted || ds.pending_swept) {
            char line[256];
            snprintf(line, sizeof line,
                     "retention: %llu diagnostic files expired, %llu heap dumps beyond the newest %u per pod,"
                     " %llu objects deleted, %llu orphaned uploads swept",
                     (unsigned long long)ds.expired, (unsigned long long)ds.heaps_trimmed, t->cfg.heap_keep,
                     (unsigned long long)ds.objects_deleted, (unsigned long long)ds.pending_swept);
            logf_(t, CP_LOG_INFO, line);
        }
    }
    cp_retention_stats rs;
    if (cp_retention_run(t->cat, t->cfg.store, now - t->cfg.retention_ms, &rs, err, sizeof err) != CP_OK) {
        char line[1100];
        snprintf(line, sizeof line, "retention failed (retried later): %s", err);
        logf_(t, CP_LOG_ERROR, line);
    } else if (rs.marked || rs.deleted) {
        char line[160];
        snprintf(line, sizeof line, "retention: %lld cold files past the retention marked, %lld deleted",
                 (long long)rs.marked, (long long)rs.deleted);
        logf_(t, CP_LOG_INFO, line);
    }
}

static void *task_main(void *arg)
{
    cp_coldtask *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        pthread_mutex_unlock(&t->mu);
        run_once(t);
        pthread_mutex_lock(&t->mu);
        if (t->stop) break;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        int64_t ns = (int64_t)until.tv_nsec + (t->cfg.every_ms % 1000) * 1000000;
        until.tv_sec += (time_t)(t->cfg.every_ms / 1000 + ns / 1000000000);
        until.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&t->cv, &t->mu, &until);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int cp_coldtask_start(const cp_coldtask_config *cfg, cp_coldtask **out, char *err, size_t errlen)
{
    *out = NULL;
    if (cfg->every_ms <= 0) return CP_OK;
    cp_coldtask *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    t->cfg = *cfg;
    int st = cp_catalog_open(cfg->catalog, &t->cat, err, errlen);
    if (st == CP_OK && cp_mkdirs(cfg->tmp_dir, 0755) != CP_OK) {
        snprintf(err, errlen, "cannot create %s", cfg->tmp_dir);
        st = CP_EIO;
    }
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    if (st == CP_OK && pthread_create(&t->thread, NULL, task_main, t) != 0) {
        snprintf(err, errlen, "cannot start the compaction thread");
        st = CP_EIO;
    }
    if (st != CP_OK) {
        cp_catalog_close(t->cat);
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
        free(t);
        return st;
    }
    *out = t;
    return CP_OK;
}

void cp_coldtask_stop(cp_coldtask *t)
{
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    t->stop = 1;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    cp_catalog_close(t->cat);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
}
