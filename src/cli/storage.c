/* storage.c -- what `serve` and `compact` share: where the catalog and the cold store
 * are (--data, --catalog, --store, --s3-endpoint, --s3-region; S3 credentials only from
 * the environment, never from flags, so they stay out of `ps`) and time spans ("14d"). */
#include "cli/cli_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cp_cli_parse_span(const char *s, int64_t *ms)
{
    char *end;
    unsigned long long n = strtoull(s, &end, 10);
    if (end == s || n > 100000) return CP_EINVAL;
    int64_t unit;
    if (!strcmp(end, "d")) unit = 86400000;
    else if (!strcmp(end, "h")) unit = 3600000;
    else if (!strcmp(end, "m")) unit = 60000;
    else if (!strcmp(end, "s")) unit = 1000;
    else if (!*end && n == 0) unit = 1;
    else return CP_EINVAL;
    *ms = (int64_t)n * unit;
    return CP_OK;
}

int cp_cli_storage_resolve(cp_cli_storage *s, char *err, size_t errlen)
{
    if (!s->catalog || !*s->catalog) {
        if ((size_t)snprintf(s->catalog_buf, sizeof s->catalog_buf, "%s/catalog.db", s->data_dir) >=
            sizeof s->catalog_buf) {
            snprintf(err, errlen, "data directory path too long");
            return CP_EINVAL;
        }
        s->catalog = s->catalog_buf;
    }
    if (!s->store || !*s->store) {
        if ((size_t)snprintf(s->store_buf, sizeof s->store_buf, "%s/cold", s->data_dir) >= sizeof s->store_buf) {
            snprintf(err, errlen, "data directory path too long");
            return CP_EINVAL;
        }
        s->store = s->store_buf;
    }
    if (!strncmp(s->store, "s3://", 5) && (!s->s3_endpoint || !*s->s3_endpoint)) {
        snprintf(err, errlen, "--store %s needs --s3-endpoint (or CLOUDPROF_S3_ENDPOINT)", s->store);
        return CP_EINVAL;
    }
    return CP_OK;
}

int cp_cli_storage_open_store(const cp_cli_storage *s, cp_ostore **out, char *err, size_t errlen)
{
    cp_ostore_config c;
    memset(&c, 0, sizeof c);
    c.url = s->store;
    c.endpoint = s->s3_endpoint;
    c.region = s->s3_region;
    c.access_key = getenv("CLOUDPROF_S3_ACCESS_KEY");
    c.secret_key = getenv("CLOUDPROF_S3_SECRET_KEY");
    if (!strncmp(s->store, "s3://", 5) && (!c.access_key || !c.secret_key)) {
        snprintf(err, errlen, "set CLOUDPROF_S3_ACCESS_KEY and CLOUDPROF_S3_SECRET_KEY");
        return CP_EINVAL;
    }
    return cp_ostore_open(&c, out, err, errlen);
}

const char *cp_cli_storage_help =
    "  --catalog SPEC           the catalog: a SQLite file, or postgres://user@host:port/db\n"
    "                           shared by several collectors (CLOUDPROF_CATALOG,\n"
    "                           default <data>/catalog.db)\n"
    "  --store URL              the cold tier's object store: a directory, or\n"
    "                           s3://bucket[/prefix] (CLOUDPROF_STORE, default <data>/cold);\n"
    "                           S3 credentials come from CLOUDPROF_S3_ACCESS_KEY and\n"
    "                           CLOUDPROF_S3_SECRET_KEY\n"
    "  --s3-endpoint URL        S3 endpoint, http(s)://host:port, path-style requests\n"
    "                           (CLOUDPROF_S3_ENDPOINT)\n"
    "  --s3-region NAME         SigV4 region (CLOUDPROF_S3_REGION, default us-east-1)\n";

int cp_cli_open_catalog_for(const char *spec, int64_t window_ms, const char *const *idle, size_t nidle,
                            cp_catalog **out, char *err, size_t errlen)
{
    cp_catalog *c = NULL;
    int st = cp_catalog_open(spec, &c, err, errlen);
    if (st != CP_OK) return st;
    if (idle) cp_catalog_set_idle(c, idle, nidle);
    st = cp_catalog_set_windows(c, window_ms > 0 ? window_ms : 300000, 0);
    if (st != CP_OK) {
        snprintf(err, errlen, "catalog: %s", cp_catalog_errmsg(c));
        cp_catalog_close(c);
        return st;
    }
    *out = c;
    return CP_OK;
}
