/* export.c -- `cloudprof export`: calls of a data directory (hot or cold) written as one
 * TPTP trace, .trcbin or .trcxml (model/cp_import.h), to stdout or a file. */
#include "cli/cli_internal.h"
#include "common/cp_fsutil.h"
#include "cli/cp_cli.h"
#include "model/cp_import.h"
#include "query/cp_query.h"
#include "store/cp_cold.h"
#include "store/cp_hot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: cloudprof export --call ID [--call ID...] --format trcbin|trcxml [options]\n"
    "\n"
    "Writes calls (their call trees, times, threads and params) as one TPTP trace that\n"
    "TPTP tools read and `cloudprof import` takes back. IDs are the API's call ids.\n"
    "\n"
    "  --data DIR               data directory (CLOUDPROF_DATA, default ./data)\n"
    "%s"
    "  --call ID                a call (repeat for several; at most 1000)\n"
    "  --format trcbin|trcxml   the file's form\n"
    "  --out FILE               write to FILE (default: stdout); written whole or not at all\n"
    "  --help                   this text\n";

#define MAX_CALLS 1000

static void usage(FILE *f) { fprintf(f, usage_text, cp_cli_storage_help); }

typedef struct export_opts {
    cp_cli_storage s;
    int xml, have_format;
    const char *out;
    cp_call_ref refs[MAX_CALLS];
    size_t nrefs;
} export_opts;

static int parse(export_opts *o, int argc, char **argv, char *why, size_t whylen)
{
    o->s.data_dir = getenv("CLOUDPROF_DATA") ? getenv("CLOUDPROF_DATA") : "./data";
    o->s.catalog = getenv("CLOUDPROF_CATALOG");
    o->s.store = getenv("CLOUDPROF_STORE");
    o->s.s3_endpoint = getenv("CLOUDPROF_S3_ENDPOINT");
    o->s.s3_region = getenv("CLOUDPROF_S3_REGION");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) {
            snprintf(why, whylen, "%s: unknown option or missing value", a);
            return CP_EINVAL;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--data")) o->s.data_dir = v;
        else if (!strcmp(a, "--catalog")) o->s.catalog = v;
        else if (!strcmp(a, "--store")) o->s.store = v;
        else if (!strcmp(a, "--s3-endpoint")) o->s.s3_endpoint = v;
        else if (!strcmp(a, "--s3-region")) o->s.s3_region = v;
        else if (!strcmp(a, "--out")) o->out = v;
        else if (!strcmp(a, "--format")) {
            if (strcmp(v, "trcbin") && strcmp(v, "trcxml")) {
                snprintf(why, whylen, "--format: '%s' is not trcbin or trcxml", v);
                return CP_EINVAL;
            }
            o->xml = !strcmp(v, "trcxml");
            o->have_format = 1;
        } else if (!strcmp(a, "--call")) {
            if (o->nrefs == MAX_CALLS) {
                snprintf(why, whylen, "at most %d calls", MAX_CALLS);
                return CP_EINVAL;
            }
            if (cp_call_id_parse(v, strlen(v), &o->refs[o->nrefs]) != CP_OK) {
                snprintf(why, whylen, "--call: '%s' is not a call id", v);
                return CP_EINVAL;
            }
            o->nrefs++;
        } else {
            snprintf(why, whylen, "unknown option '%s'", a);
            return CP_EINVAL;
        }
    }
    if (!o->nrefs || !o->have_format) {
        snprintf(why, whylen, "--call and --format are required");
        return CP_EINVAL;
    }
    return cp_cli_storage_resolve(&o->s, why, whylen);
}

/* The file's bytes to stdout, or to out through a temporary file renamed into place. */
static int write_all(const char *out, const cp_buf *b)
{
    if (!out) return fwrite(b->data, 1, b->len, stdout) == b->len && fflush(stdout) == 0 ? 0 : -1;
    return cp_write_file_atomic(out, (const char *)b->data, b->len) == CP_OK ? 0 : -1;
}

int cp_cli_export(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    export_opts *o = calloc(1, sizeof *o);
    if (!o) return 1;
    char why[512] = "", err[1024] = "";
    if (parse(o, argc, argv, why, sizeof why) != CP_OK) {
        fprintf(stderr, "cloudprof export: %s\n\n", why);
        usage(stderr);
        free(o);
        return 2;
    }
    cp_ostore *store = NULL;
    cp_reader *hot = NULL, *r = NULL;
    cp_export *exp = cp_export_new(o->xml);
    cp_fetched f;
    cp_fetched_init(&f);
    cp_buf file;
    cp_buf_init(&file);
    char cache[4200];
    snprintf(cache, sizeof cache, "%s/cache", o->s.data_dir);
    int rc = 1;
    if (!exp || cp_cli_storage_open_store(&o->s, &store, err, sizeof err) != CP_OK ||
        cp_reader_open(o->s.catalog, &hot, err, sizeof err) != CP_OK) {
        fprintf(stderr, "cloudprof export: %s\n", err[0] ? err : "out of memory");
        goto out;
    }
    cp_tiered_config tc = {store, strncmp(o->s.store, "s3://", 5) ? NULL : cache, 0};
    if (cp_reader_open_tiered(hot, &tc, &r, err, sizeof err) != CP_OK) {
        fprintf(stderr, "cloudprof export: %s\n", err);
        goto out;
    }
    hot = NULL; /* the tiered reader owns it */
    for (size_t i = 0; i < o->nrefs; i++) {
        char id[CP_CALL_ID_MAX];
        cp_call_id_format(&o->refs[i], id);
        int st = cp_reader_fetch(r, &o->refs[i], &f, err, sizeof err);
        if (st == CP_OK && !f.found) {
            fprintf(stderr, "cloudprof export: no call with id %s\n", id);
            goto out;
        }
        if (st == CP_OK) st = cp_export_add(exp, &f.call, f.blob, &file, err, sizeof err);
        if (st != CP_OK) {
            fprintf(stderr, "cloudprof export: call %s: %s\n", id, err[0] ? err : cp_reader_errmsg(r));
            goto out;
        }
    }
    if (cp_export_end(exp, &file, err, sizeof err) != CP_OK) {
        fprintf(stderr, "cloudprof export: %s\n", err);
        goto out;
    }
    if (write_all(o->out, &file) != 0) {
        fprintf(stderr, "cloudprof export: writing %s: %s\n", o->out ? o->out : "stdout", strerror(errno));
        goto out;
    }
    rc = 0;
out:
    cp_fetched_free(&f);
    cp_buf_free(&file);
    cp_export_free(exp);
    cp_reader_close(r);
    cp_reader_close(hot);
    cp_ostore_close(store);
    free(o);
    return rc;
}
