/* cp_zipout.h -- a streaming zip writer for bulk downloads (dumps-http.md §7.2): entries
 * are written as their bytes come, sizes and CRC-32 in a data descriptor after each
 * entry (general-purpose flag bit 3), ZIP64 records wherever a size, an offset or the
 * entry count needs them, so archives above 4 GiB and entries of unknown size work.
 *
 * Pure code: the archive's bytes go to a sink callback in order; nothing is buffered
 * beyond zlib's state and one output chunk. Readers that must work: Info-ZIP unzip,
 * Python's zipfile, libarchive (bsdtar), and cp_zip_probe (cp_dumpfmt.h).
 */
#ifndef CP_ZIPOUT_H
#define CP_ZIPOUT_H

#include "common/cp_common.h"

#include <stddef.h>
#include <stdint.h>

/* Receives archive bytes in order; non-zero return aborts (returned by the call). */
typedef int (*cp_zipw_sink_fn)(void *ud, const void *p, size_t n);

typedef struct cp_zipw cp_zipw;

int cp_zipw_new(cp_zipw_sink_fn sink, void *ud, cp_zipw **out);
/* Makes the archive a classic (non-ZIP64) one: no ZIP64 extra in the local headers,
 * version needed 2.0, 4-byte sizes in the data descriptors. For archives whose readers may
 * not take ZIP64 fields where none is needed (Office Open XML documents: .xlsx). Every
 * entry and the whole archive must then stay below 4 GiB: data that would make a size,
 * an offset or the central directory need 8 bytes fails with CP_ELIMIT (sticky, like any
 * error), as does a 65535th entry. Call before the first cp_zipw_begin. */
void cp_zipw_classic(cp_zipw *z);
/* The zlib level (1 fastest .. 9 smallest) of the entries deflated from the next
 * cp_zipw_begin on; default 6. A streamed export that must write a million rows within
 * its time limit takes 1 (a third of level 6's CPU for a quarter more bytes on XML). */
void cp_zipw_level(cp_zipw *z, int level);
/* Starts an entry: name (UTF-8, 1..65535 bytes, '/'-separated; flag bit 11 set), its
 * modification time (epoch ms, written as the DOS time in UTC plus the extended-timestamp
 * extra 0x5455), and deflate (1: method 8 at the archive's level, cp_zipw_level; 0: stored). The previous entry
 * must have been ended. CP_EINVAL on a bad name. */
int cp_zipw_begin(cp_zipw *z, const char *name, int64_t mtime_ms, int deflate);
int cp_zipw_data(cp_zipw *z, const void *p, size_t n);
/* Ends the entry: flushes the deflate stream and writes the data descriptor. */
int cp_zipw_end(cp_zipw *z);
/* Writes the central directory (ZIP64 end records when needed) and the end record. No
 * call is valid after it but free. An archive with no entries is valid (22 bytes). */
int cp_zipw_finish(cp_zipw *z);
uint64_t cp_zipw_bytes(const cp_zipw *z);   /* bytes given to the sink so far */
void cp_zipw_free(cp_zipw *z);

#endif
