/* cp_hprofsum.h -- the summary of a stored heap dump (ui.md §10.5, dumps-http.md §8.4):
 * header, identifier size, dump time, totals and the classes with the most shallow
 * bytes.
 *
 * The stored file is a .hprof.zip (its first entry, stored or deflated, is the HPROF;
 * sizes and the entry's place come from the central directory, so ZIP64 and data
 * descriptors are fine) or a bare .hprof. It is read through a pread callback in 256 KiB
 * pieces, inflated into a 256 KiB buffer and fed to the streaming decoder
 * (streams/cp_hprof.h): memory is the decoder's bound (class table, names kept) plus
 * about 1 MiB, whatever the dump's size. No I/O of its own, no globals.
 */
#ifndef CP_HPROFSUM_H
#define CP_HPROFSUM_H

#include "model/cp_dumpfmt.h"
#include "streams/cp_hprof.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cp_hprof_sum_class {
    char *name;                    /* Java form ("java.lang.String", "int[]"); malloc'd */
    int named;                     /* 0: the dump did not give its name ("class@0x<id>") */
    uint64_t objects;
    uint64_t shallow_bytes;        /* cp_hprof.h's definition */
} cp_hprof_sum_class;

typedef struct cp_hprof_summary {
    cp_hprof_header hdr;
    cp_hprof_totals totals;        /* totals.bytes: the HPROF's (uncompressed) size */
    char entry[256];               /* the zip entry read; "" for a bare HPROF */
    uint64_t file_bytes;           /* the stored file's size */
    uint64_t classes_with_objects; /* classes (and primitive array types) with objects */
    cp_hprof_sum_class *classes;   /* the top ones, most shallow bytes first */
    size_t nclasses;
    int names_incomplete;          /* a listed class has no name */
    size_t decoder_memory;         /* what the decoder held at the end */
} cp_hprof_summary;

typedef struct cp_hprof_sum_opts {
    const cp_hprof_limits *limits; /* NULL: the decoder's defaults */
    size_t top;                    /* classes listed */
    int zipped;                    /* 1: a zip whose first entry is the HPROF; 0: a bare HPROF */
    /* Asked before each piece is read: non-zero stops with CP_EABORT. May be NULL. */
    int (*cancel)(void *ud);
    void *cancel_ud;
} cp_hprof_sum_opts;

/* Reads the size-byte file through pread. CP_OK with *out filled (free it with
 * cp_hprof_summary_free), or, with a reason in err: CP_ECORRUPT (not a zip, an entry
 * that is not stored or deflated, a bad deflate stream, or HPROF the decoder refuses:
 * its message with the offset inside the HPROF), CP_ELIMIT (a decoder limit), CP_EABORT
 * (cancelled), CP_ENOMEM, or the status of a read that failed. */
int cp_hprof_summarize(cp_dump_pread_fn pread, void *ud, uint64_t size, const cp_hprof_sum_opts *opts,
                       cp_hprof_summary *out, char *err, size_t errlen);
void cp_hprof_summary_free(cp_hprof_summary *s);

#endif
