/* cp_importer.h -- a foreign-trace import (model/cp_import.h) written into the hot tier.
 *
 * The calls an import hands over go into the catalog like an agent's: the pod restart is
 * registered at the first call, each call is put into its window (created on the spot
 * for old data, compacted later like any other), and the write transaction is committed
 * every CP_IMPORTER_BATCH calls or CP_IMPORTER_BATCH_BYTES of them (the connection keeps
 * a transaction's pages in memory until it commits) and at the end, so a failed import keeps the calls
 * completed before the failure and nothing half-built. A call the hot tier already has
 * (the same id: the same file imported again) is skipped and counted as a duplicate.
 *
 * The catalog is the caller's and used from the caller's thread only; give it the hot
 * window length and the idle list the server uses (cp_catalog_set_windows / set_idle).
 */
#ifndef CP_IMPORTER_H
#define CP_IMPORTER_H

#include "model/cp_import.h"
#include "store/cp_catalog.h"

#define CP_IMPORTER_BATCH 2000
#define CP_IMPORTER_BATCH_BYTES (4u << 20)

typedef struct cp_importer cp_importer;

/* NULL on ENOMEM or an unknown format. */
cp_importer *cp_importer_new(cp_catalog *cat, const cp_import_opts *o);
void cp_importer_free(cp_importer *ip);
/* CP_OK or a negative status (the report says why). */
int cp_importer_feed(cp_importer *ip, const uint8_t *p, size_t n);
/* Ends the input, stores the last calls and commits. */
int cp_importer_finish(cp_importer *ip);
/* Stops without ending the input (the client went away, or a failure elsewhere): commits
 * the calls already handed over; what is still open is dropped, never stored half-built. */
int cp_importer_abort(cp_importer *ip);
/* The import's report plus the store's counts (valid until the next call). */
void cp_importer_report(const cp_importer *ip, cp_import_report *r, uint64_t *duplicates);
/* The report as JSON (cp_import_report_json with "duplicates" added). */
int cp_importer_report_json(const cp_importer *ip, cp_buf *out);

#endif
