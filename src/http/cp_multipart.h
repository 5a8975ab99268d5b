/* cp_multipart.h -- a streaming multipart/form-data parser (RFC 7578, RFC 2046 §5.1) for
 * heap-dump uploads by POST (dumps-http.md §4.2): bytes in as they arrive, parts out
 * through callbacks, nothing buffered beyond one part's headers and a boundary's length.
 *
 * Pure code (no I/O), fed with untrusted bytes in chunks of any size, including 1 byte.
 * Bounds: boundary 1..70 bytes; part headers at most CP_MP_MAX_HEADER bytes; at most
 * CP_MP_MAX_PARTS parts. Anything malformed is CP_ECORRUPT (or CP_ELIMIT) with a reason.
 */
#ifndef CP_MULTIPART_H
#define CP_MULTIPART_H

#include "common/cp_common.h"

#include <stddef.h>

#define CP_MP_MAX_HEADER (16u << 10)
#define CP_MP_MAX_PARTS 1000

typedef struct cp_mp_callbacks {
    /* A part starts. field = the Content-Disposition "name" ("" if none), filename = its
     * "filename" ("" if none; quoted-string escapes resolved; filename*=UTF-8''... is
     * percent-decoded and preferred when both are given), content_type = the part's
     * Content-Type ("" if none). Strings are valid during the call only. Non-zero return
     * aborts the parse with that status. */
    int (*part_begin)(void *ud, const char *field, const char *filename, const char *content_type);
    /* Body bytes of the current part, in order (any chunking). */
    int (*part_data)(void *ud, const void *p, size_t n);
    /* The current part ended (its delimiter was seen). */
    int (*part_end)(void *ud);
} cp_mp_callbacks;

typedef struct cp_mp cp_mp;

/* content_type: the request's Content-Type header value, e.g.
 * `multipart/form-data; boundary=----x` (the boundary may be quoted; parameters in any
 * order; the media type is case-insensitive). CP_EINVAL with a reason when it is not
 * multipart/form-data or has no valid boundary. */
int cp_mp_new(const char *content_type, const cp_mp_callbacks *cb, void *ud, cp_mp **out, char *err, size_t errlen);
/* Feeds the next bytes. Once an error was returned every later call returns it again. */
int cp_mp_feed(cp_mp *m, const void *p, size_t n);
/* The body ended: CP_OK only if the close delimiter ("--boundary--") was seen (bytes after
 * it, the epilogue, are ignored); CP_ECORRUPT "truncated" otherwise -- a part whose end was
 * never seen gets no part_end call. */
int cp_mp_finish(cp_mp *m);
/* Reason for the last error ("" if none). */
const char *cp_mp_errmsg(const cp_mp *m);
void cp_mp_free(cp_mp *m);

#endif
