/* compact.c -- `cloudprof compact`: closed hot windows -> Parquet in the cold store, on
 * demand (serve does the same on a timer). */
#include "cli/cli_internal.h"
#include "cli/cp_cli.h"
#include "store/cp_catalog.h"
#include "store/cp_cold.h"
#include "store/cp_dumps.h"
#include "query/cp_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: cloudprof compact [options]\n"
    "\n"
    "Compacts the hot tier's closed windows into Parquet files in the cold store: every\n"
    "window that ends at or before --until, one hour at a time, per namespace and duration\n"
    "range (storage.md). Then the diagnostic files kept in the catalog (thread dumps, top,\n"
    "GC logs, pprof) with a directory time before --until go the same way, one Parquet\n"
    "file per hour, namespace and type. Safe to run while `serve` runs and to run again\n"
    "after a crash: a claim left unfinished by a dead compactor is redone to the same\n"
    "objects and rows.\n"
    "Each option can also be given by the environment variable shown; a flag wins.\n"
    "\n"
    "  --data DIR               data directory (CLOUDPROF_DATA, default ./data)\n"
    "%s"
    "  --until EPOCH_MS         compact windows ending at or before this time; windows still\n"
    "                           open then are closed early (default: now)\n"
    "  --take-over              redo claims of other compactors at once instead of after\n"
    "                           their 30-minute lease (only when no other compactor runs)\n"
    "  --retention SPAN         afterwards, delete cold files and diagnostic files older\n"
    "                           than SPAN (e.g. 14d)\n"
    "  --heap-keep N            with --retention: heap dumps kept per pod, newest first,\n"
    "                           0 = all (default 10)\n"
    "  --node NAME              this compactor's name in the catalog (default host-pid)\n"
    "  --idle-methods SUBSTR[,SUBSTR...]\n"
    "                           the idle-loop methods `serve --idle-methods` adds to the\n"
    "                           built-in list (CLOUDPROF_IDLE_METHODS): the rollups written\n"
    "                           then answer \"hide system calls\" without reading the calls\n"
    "  --quiet                  no progress lines\n"
    "  --help                   this text\n";

static void usage(FILE *f) { fprintf(f, usage_text, cp_cli_storage_help); }

static void progress(void *ud, const char *line)
{
    (void)ud;
    fprintf(stderr, "%s\n", line);
}

/* Test hook (tests/integration/cold_test.c): CLOUDPROF_TEST_CRASH_AT=<step> makes the
 * process die at that step of the first claim, as a kill would. */
static int crash_at(void *ud, const char *step, const cp_compact_job *job)
{
    (void)job;
    return !strcmp((const char *)ud, step);
}

typedef struct compact_opts {
    cp_cli_storage s;
    int64_t until_ms;
    int take_over, quiet;
    int64_t retention_ms;
    unsigned heap_keep;
    const char *node;
    char *idle_text;                  /* --idle-methods, split in place */
    const char **idle;                /* the built-in list, then --idle-methods */
    size_t nidle;
} compact_opts;

/* The built-in idle list plus the comma-separated substrings of list (as serve). */
static int set_idle(compact_opts *o, const char *list)
{
    free(o->idle_text);
    free(o->idle);
    o->idle_text = strdup(list);
    size_t n = cp_system_idle_default_count + 1;
    for (const char *p = list; *p; p++) n += *p == ',';
    o->idle = malloc(n * sizeof *o->idle);
    if (!o->idle_text || !o->idle) return CP_ENOMEM;
    o->nidle = 0;
    for (size_t i = 0; i < cp_system_idle_default_count; i++) o->idle[o->nidle++] = cp_system_idle_default[i];
    for (char *save = NULL, *m = strtok_r(o->idle_text, ",", &save); m; m = strtok_r(NULL, ",", &save))
        o->idle[o->nidle++] = m;
    return CP_OK;
}

static int parse(compact_opts *o, int argc, char **argv, char *why, size_t whylen)
{
    o->s.data_dir = getenv("CLOUDPROF_DATA") ? getenv("CLOUDPROF_DATA") : "./data";
    o->s.catalog = getenv("CLOUDPROF_CATALOG");
    o->s.store = getenv("CLOUDPROF_STORE");
    o->s.s3_endpoint = getenv("CLOUDPROF_S3_ENDPOINT");
    o->s.s3_region = getenv("CLOUDPROF_S3_REGION");
    o->until_ms = cp_now_ms();
    o->retention_ms = -1;
    o->heap_keep = 10;
    const char *idle_env = getenv("CLOUDPROF_IDLE_METHODS");
    if (idle_env && *idle_env && set_idle(o, idle_env) != CP_OK) {
        snprintf(why, whylen, "out of memory");
        return CP_ENOMEM;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--take-over")) {
            o->take_over = 1;
            continue;
        }
        if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
            continue;
        }
        static const char *const valued[] = {"--data", "--catalog", "--store", "--s3-endpoint", "--s3-region",
                                              "--until", "--retention", "--node", "--heap-keep", "--idle-methods"};
        size_t k = 0;
        while (k < CP_ARRAY_LEN(valued) && strcmp(a, valued[k])) k++;
        if (k == CP_ARRAY_LEN(valued)) {
            snprintf(why, whylen, "unknown option '%s'", a);
            return CP_EINVAL;
        }
        if (i + 1 >= argc) {
            snprintf(why, whylen, "%s needs a value", a);
            return CP_EINVAL;
        }
        const char *v = argv[++i];
        uint64_t n;
        switch (k) {
        case 0: o->s.data_dir = v; break;
        case 1: o->s.catalog = v; break;
        case 2: o->s.store = v; break;
        case 3: o->s.s3_endpoint = v; break;
        case 4: o->s.s3_region = v; break;
        case 5:
            if (cp_parse_u64(v, INT64_MAX, &n) != CP_OK) {
                snprintf(why, whylen, "--until: '%s' is not a time in epoch milliseconds", v);
                return CP_EINVAL;
            }
            o->until_ms = (int64_t)n;
            break;
        case 6:
            if (cp_cli_parse_span(v, &o->retention_ms) != CP_OK || o->retention_ms == 0) {
                snprintf(why, whylen, "--retention: '%s' is not a span like 14d, 36h or 90m", v);
                return CP_EINVAL;
            }
            break;
        case 7: o->node = v; break;
        case 8:
            if (cp_parse_u64(v, 1000000, &n) != CP_OK) {
                snprintf(why, whylen, "--heap-keep: '%s' is not a count (0 = keep all)", v);
                return CP_EINVAL;
            }
            o->heap_keep = (unsigned)n;
            break;
        case 9:
            if (set_idle(o, v) != CP_OK) {
                snprintf(why, whylen, "out of memory");
                return CP_ENOMEM;
            }
            break;
        }
    }
    return cp_cli_storage_resolve(&o->s, why, whylen);
}

int cp_cli_compact(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    compact_opts o;
    memset(&o, 0, sizeof o);
    char why[512] = "";
    if (parse(&o, argc, argv, why, sizeof why) != CP_OK) {
        fprintf(stderr, "cloudprof compact: %s\n\n", why);
        usage(stderr);
        free(o.idle);
        free(o.idle_text);
        return 2;
    }
    char node[128], tmp[4200], dtmp[4200], err[1024];
    if (!o.node) {
        char host[64] = "host";
        gethostname(host, sizeof host - 1);
        snprintf(node, sizeof node, "%s-%d-compact", host, (int)getpid());
        o.node = node;
    }
    snprintf(tmp, sizeof tmp, "%s/tmp", o.s.data_dir);
    snprintf(dtmp, sizeof dtmp, "%s/dumps-tmp", o.s.data_dir); /* serve's */
    cp_catalog *cat = NULL;
    cp_ostore *store = NULL;
    cp_dumps *dumps = NULL;
    int rc = 1;
    if (cp_catalog_open(o.s.catalog, &cat, err, sizeof err) != CP_OK) {
        fprintf(stderr, "cloudprof compact: %s\n", err);
        goto out;
    }
    if (cp_cli_storage_open_store(&o.s, &store, err, sizeof err) != CP_OK) {
        fprintf(stderr, "cloudprof compact: store %s: %s\n", o.s.store, err);
        goto out;
    }
    if (cp_mkdirs(tmp, 0755) != CP_OK) {
        fprintf(stderr, "cloudprof compact: cannot create %s\n", tmp);
        goto out;
    }
    cp_dumps_config dc = {.catalog = o.s.catalog, .store = store, .tmp_dir = dtmp, .connections = 2, .node = o.node};
    if (cp_dumps_open(&dc, &dumps, err, sizeof err) != CP_OK) {
        fprintf(stderr, "cloudprof compact: diagnostic files: %s\n", err);
        goto out;
    }
    cp_compactor_config cfg = {.cat = cat,
                               .store = store,
                               .tmp_dir = tmp,
                               .node = o.node,
                               .lease_ms = o.take_over ? 0 : CP_COMPACT_LEASE_MS,
                               .progress = o.quiet ? NULL : progress,
                               .idle = o.idle ? o.idle : cp_system_idle_default,
                               .nidle = o.idle ? o.nidle : cp_system_idle_default_count};
    const char *crash = getenv("CLOUDPROF_TEST_CRASH_AT");
    if (crash && *crash) {
        cfg.crash = crash_at;
        cfg.crash_ud = (void *)crash;
    }
    cp_compact_stats st;
    if (cp_compact_run(&cfg, o.until_ms, cp_now_ms(), 0, &st, err, sizeof err) != CP_OK) {
        fprintf(stderr, "cloudprof compact: %s\n", err);
        goto out;
    }
    printf("compacted %llu claims (%llu taken over): %llu windows, %llu calls -> %llu files, %llu bytes,"
           " %llu index rows\n",
           (unsigned long long)st.claims, (unsigned long long)st.taken_over, (unsigned long long)st.windows,
           (unsigned long long)st.calls, (unsigned long long)st.files, (unsigned long long)st.bytes,
           (unsigned long long)st.index_rows);
    cp_dumps_compact_stats ds;
    if (cp_dumps_compact(dumps, o.until_ms, cp_now_ms(), o.take_over, o.quiet ? NULL : progress, NULL, &ds, err,
                         sizeof err) != CP_OK) {
        fprintf(stderr, "cloudprof compact: %s\n", err);
        goto out;
    }
    printf("compacted %llu diagnostic files -> %llu files, %llu bytes\n", (unsigned long long)ds.dumps_moved,
           (unsigned long long)ds.files_written, (unsigned long long)ds.bytes_written);
    if (o.retention_ms > 0) {
        /* diagnostic files first: their records go before their Parquet files do */
        cp_dumps_retention_stats drs;
        if (cp_dumps_retention(dumps, cp_now_ms() - o.retention_ms, o.heap_keep, 0, cp_now_ms(), &drs, err,
                               sizeof err) != CP_OK) {
            fprintf(stderr, "cloudprof compact: %s\n", err);
            goto out;
        }
        printf("retention: %llu diagnostic files expired, %llu heap dumps trimmed, %llu objects deleted,"
               " %llu orphaned uploads swept\n",
               (unsigned long long)drs.expired, (unsigned long long)drs.heaps_trimmed,
               (unsigned long long)drs.objects_deleted, (unsigned long long)drs.pending_swept);
        cp_retention_stats rs;
        if (cp_retention_run(cat, store, cp_now_ms() - o.retention_ms, &rs, err, sizeof err) != CP_OK) {
            fprintf(stderr, "cloudprof compact: %s\n", err);
            goto out;
        }
        printf("retention: %lld files marked, %lld deleted\n", (long long)rs.marked, (long long)rs.deleted);
    }
    rc = 0;
out:
    cp_dumps_close(dumps);
    cp_catalog_close(cat);
    cp_ostore_close(store);
    free(o.idle);
    free(o.idle_text);
    return rc;
}
