/* cli_internal.h -- private to src/cli: storage options shared by serve and compact. */
#ifndef CP_CLI_INTERNAL_H
#define CP_CLI_INTERNAL_H

#include "common/cp_common.h"
#include "store/cp_catalog.h"
#include "store/cp_ostore.h"

#include <stdint.h>

typedef struct cp_cli_storage {
    const char *data_dir;
    const char *catalog;          /* NULL: <data>/catalog.db */
    const char *store;            /* NULL: <data>/cold */
    const char *s3_endpoint, *s3_region;
    char catalog_buf[4096], store_buf[4096];
} cp_cli_storage;

/* Fills the defaults from data_dir; checks that s3:// comes with an endpoint. */
int cp_cli_storage_resolve(cp_cli_storage *s, char *err, size_t errlen);
/* Opens the object store (credentials from CLOUDPROF_S3_ACCESS_KEY / _SECRET_KEY). */
int cp_cli_storage_open_store(const cp_cli_storage *s, cp_ostore **out, char *err, size_t errlen);
/* "14d", "36h", "90m", "30s", "0" -> milliseconds. */
int cp_cli_parse_span(const char *s, int64_t *ms);
/* Opens the catalog `spec` for writing calls the way serve writes them: hot windows of
 * window_ms (0 = 5 min), the idle list (NULL = the built-in one). */
int cp_cli_open_catalog_for(const char *spec, int64_t window_ms, const char *const *idle, size_t nidle,
                            cp_catalog **out, char *err, size_t errlen);
/* The options' lines for --help. */
extern const char *cp_cli_storage_help;

#endif
