/* audit_internal.h -- private to src/store: writing an audit entry on a connection the
 * caller holds, so that another store can record an action in the transaction that does
 * it (the dumps store records a deletion in the deletion's transaction: a file is never
 * deleted without its entry, and an entry never names a deletion that was rolled back).
 */
#ifndef CP_AUDIT_INTERNAL_H
#define CP_AUDIT_INTERNAL_H

#include "store/cp_audit.h"
#include "store/sql/sqldb.h"

/* Inserts e on db, inside whatever transaction db has open (none: on its own). e->time_ms
 * 0 becomes now; e->id is set. CP_OK or the statement's error (cp_sqldb_errmsg). */
int audit_insert_db(cp_sqldb *db, cp_audit_entry *e);

#endif
