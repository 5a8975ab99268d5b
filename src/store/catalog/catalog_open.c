/* catalog_open.c -- the catalog a spec names (cp_catalog.h): a libpq URI opens the
 * PostgreSQL catalog, anything else is a SQLite file path. */
#include "store/cp_catalog.h"

#include <sqlite3.h>
#include <string.h>

void cp_catalog_process_init(void) { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

int cp_catalog_is_postgres(const char *spec)
{
    return spec && (!strncmp(spec, "postgres://", 11) || !strncmp(spec, "postgresql://", 13));
}

int cp_catalog_open(const char *spec, cp_catalog **out, char *err, size_t errlen)
{
    if (cp_catalog_is_postgres(spec)) return cp_catalog_open_pg(spec, out, err, errlen);
    return cp_catalog_open_sqlite(spec, out, err, errlen);
}
