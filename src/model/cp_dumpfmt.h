/* cp_dumpfmt.h -- diagnostic files: what an upload's path and name say, and the binary
 * formats whose metadata the collector reads (dumps-http.md §3, §5, §8.4, §8.5).
 *
 * Pure code: bytes in, values out, no I/O (a zip is read through a pread callback so a
 * heap dump of several GB is never loaded). Everything parsed is untrusted: lengths,
 * counts and offsets are checked, and bad input gives CP_EINVAL / CP_ECORRUPT /
 * CP_ELIMIT with a reason in err, never a crash.
 */
#ifndef CP_DUMPFMT_H
#define CP_DUMPFMT_H

#include "common/cp_common.h"

#include <stddef.h>
#include <stdint.h>

/* ---- kinds --------------------------------------------------------------------------------
 * The API's "type" names (issue 6 is the contract; dumps-http.md §7.1's names in brackets):
 * td, top, gc (gc, gc_rotated: one kind, gc_rotation tells them apart), heap (a zipped
 * HPROF), alloc / pprof_heap / goroutine / profile (Go pprof: pprof_alloc, pprof_heap,
 * pprof_goroutine, pprof_profile -- "heap" is taken by heap dumps), other. */
typedef enum cp_dump_kind {
    CP_DUMP_TD = 1,
    CP_DUMP_TOP,
    CP_DUMP_GC,
    CP_DUMP_HEAP,
    CP_DUMP_ALLOC,
    CP_DUMP_PPROF_HEAP,
    CP_DUMP_GOROUTINE,
    CP_DUMP_PROFILE,
    CP_DUMP_OTHER,
    CP_DUMP_KIND_MAX = CP_DUMP_OTHER
} cp_dump_kind;

/* "td", "top", ... ; NULL for a value outside the enum. */
const char *cp_dump_kind_name(cp_dump_kind k);
/* The kind called s[0..n) (exact, lower case); CP_EINVAL if none. */
int cp_dump_kind_parse(const char *s, size_t n, cp_dump_kind *out);
/* 1 for pprof kinds (alloc, pprof_heap, goroutine, profile). */
int cp_dump_kind_is_pprof(cp_dump_kind k);

/* ---- upload path (dumps-http.md §3) ---------------------------------------------------- */

#define CP_DUMP_MAX_NAME 253          /* bytes of a namespace, pod or file segment */

typedef struct cp_dump_path {
    char ns[CP_DUMP_MAX_NAME + 1];    /* percent-decoded, NUL-terminated */
    char pod[CP_DUMP_MAX_NAME + 1];
    char file[CP_DUMP_MAX_NAME + 1];
    int64_t dir_ms;                   /* the date segments as UTC epoch ms */
} cp_dump_path;

/* Parses the raw (still percent-encoded) path after "/diagnostic/" -- no query string:
 * "{ns}/{YYYY}/{MM}/{DD}/{HH}/{mm}/{ss}/{pod}/{file}". Each segment is percent-decoded
 * once (a bad escape is an error). Rules: exactly nine segments (a trailing "/" makes a
 * tenth, empty one); date parts all digits, zero-padded to their width (4/2/2/2/2/2), in
 * range and a real calendar date (2023/02/30 fails); ns, pod and file non-empty, at most
 * CP_DUMP_MAX_NAME bytes after decoding, without '/', '\\', NUL or control characters
 * (< 0x20, 0x7f), not "." or "..". CP_OK, or CP_EINVAL with the reason in err (it names
 * the segment: "month 13 is out of range", "10 segments, expected 9"...). */
int cp_dump_path_parse(const char *raw, size_t n, cp_dump_path *out, char *err, size_t errlen);

/* The rules above for one already decoded namespace, pod or file name s[0..n) (a
 * multipart part's file name); what names it in the reason. CP_OK or CP_EINVAL. */
int cp_dump_segment_check(const char *what, const char *s, size_t n, char *err, size_t errlen);

/* ---- file name (dumps-http.md §3 "File names") --------------------------------------------- */

typedef struct cp_dump_name {
    cp_dump_kind kind;
    int64_t stamp_ms;                 /* YYYYMMDDTHHMMSS[UTC] at the start of the name, as
                                       * UTC epoch ms; -1 when the name has none */
    int gc_rotation;                  /* gc.log.<N>: N; any other gc file (gc.log, <stamp>.gc.log): -1 */
    int pprof_from_name;              /* pprof: 1 if the name said which kind; 0 = guess
                                       * from the content (cp_pprof_guess_kind), kind is
                                       * CP_DUMP_PROFILE until then */
} cp_dump_name;

/* Classifies a file name. Known names ("known extensions only", issue 6):
 *   *.td.txt -> td; *.top.txt -> top; *.hprof.zip -> heap;
 *   gc.log, gc.log.<N>, *.gc.log -> gc;
 *   *.pprof -> pprof, the kind from the last name token before ".pprof" split at '.', '-'
 *     or '_': alloc -> alloc, heap -> pprof_heap, goroutine -> goroutine, profile or cpu ->
 *     profile, else pprof_from_name = 0;
 *   other crash artefacts -> other: hs_err_pid<N>.log, core, core.<N>, *.log, *.txt,
 *     *.hprof, *.jfr, *.zip.
 * Extensions compare case-sensitively (the uploader's names are lower case). An optional
 * "UTC" may follow the stamp (20231219T061734UTC.td.txt). CP_EINVAL with a reason for
 * any other name. */
int cp_dump_name_classify(const char *file, cp_dump_name *out, char *err, size_t errlen);

/* ---- pod string (dumps-http.md §5) ----------------------------------------------------------- */

/* Splits a pod segment: restart_ms = the `_<digits>` suffix (13 digits or fewer, as epoch
 * ms), or 0 when there is none (restart unknown); base = the pod string without that
 * suffix; service = base with the final "-<x>" segment dropped, then one more "-<hex>"
 * segment (6 to 10 lower-case hex digits: the ReplicaSet hash) if present. No '-' at all
 * keeps base. Examples: "test-service-1-5cbcd847d-l2t7t_1719318147399" -> base
 * "test-service-1-5cbcd847d-l2t7t", service "test-service-1", restart 1719318147399;
 * "db-0" -> service "db"; "orders-x" -> service "orders". The outputs are
 * NUL-terminated and truncated to their caps (at least CP_DUMP_MAX_NAME + 1 is enough). */
void cp_dump_pod_split(const char *pod, char *base, size_t base_cap, char *service, size_t service_cap,
                       int64_t *restart_ms);

/* ---- zip archives: the central directory (dumps-http.md §8.4) ---------------------------------- */

/* Reads exactly n bytes at offset; CP_OK or a negative status. */
typedef int (*cp_dump_pread_fn)(void *ud, void *dst, size_t n, uint64_t offset);

typedef struct cp_zip_info {
    uint64_t entries;                 /* entries in the central directory */
    char first_name[256];             /* first entry's name, truncated, control bytes as '?' */
    uint64_t first_size;              /* its uncompressed size (ZIP64 extra when 0xFFFFFFFF) */
    uint64_t first_comp_size;
    uint16_t first_method;            /* 0 stored, 8 deflate */
    uint64_t first_offset;            /* its local file header (ZIP64 extra when 0xFFFFFFFF) */
    uint64_t total_size;              /* sum of uncompressed sizes */
} cp_zip_info;

/* Reads the end-of-central-directory record (searching the last 64 KiB + 22 bytes), the
 * ZIP64 locator and record when present, and the central directory entries (at most
 * 1 000 000; only the first is kept). Never reads file data. CP_ECORRUPT if it is not a
 * zip or any size/offset is inconsistent with `size`. */
int cp_zip_probe(cp_dump_pread_fn pread, void *ud, uint64_t size, cp_zip_info *out, char *err, size_t errlen);

/* ---- Go pprof profiles (dumps-http.md §8.5) ------------------------------------------------------ */

#define CP_PPROF_MAX_INFLATED (256u << 20) /* default cap on the decompressed protobuf */

typedef struct cp_pprof_value_type {
    const char *type;                 /* string-table entries (owned by the profile) */
    const char *unit;
} cp_pprof_value_type;

typedef struct cp_pprof_info {
    cp_pprof_value_type sample_types[16];
    size_t nsample_types;             /* more than 16 is CP_ELIMIT */
    int default_sample_type;          /* index into sample_types, -1 if unset/unknown */
    cp_pprof_value_type period_type;  /* NULL strings when absent */
    int64_t period;
    int64_t time_nanos, duration_nanos;
    uint64_t samples, locations, functions, mappings;
} cp_pprof_info;

/* Per-function totals for one sample type (flat: samples whose leaf frame is the function;
 * cum: samples with the function anywhere on the stack, counted once per sample). */
typedef struct cp_pprof_fn_total {
    const char *name;                 /* owned by the profile */
    const char *file;
    int64_t flat, cum;
} cp_pprof_fn_total;

typedef struct cp_pprof cp_pprof;

/* Decodes a profile: gzip (or raw protobuf when the bytes do not start with the gzip
 * magic), inflated to at most max_inflated bytes (0: CP_PPROF_MAX_INFLATED), repeated
 * numeric fields packed or not, a location's lines in inlined order (the last is the
 * outer caller). Unknown fields are skipped. */
int cp_pprof_parse(const uint8_t *p, size_t n, size_t max_inflated, cp_pprof **out, char *err, size_t errlen);
const cp_pprof_info *cp_pprof_get_info(const cp_pprof *pf);
/* The kind its sample types suggest: goroutine ("goroutine"), profile ("cpu" or
 * "samples"), pprof_heap (inuse_space without alloc_space first...), else alloc. Only for
 * names that do not say (cp_dump_name.pprof_from_name == 0). */
cp_dump_kind cp_pprof_guess_kind(const cp_pprof *pf);
/* Totals for sample type st, sorted by flat descending (ties: name); at most cap written,
 * *n = written. Every function of the profile is considered. */
int cp_pprof_top(const cp_pprof *pf, size_t st, cp_pprof_fn_total *out, size_t cap, size_t *n);
/* One frame of a sample's stack. */
typedef struct cp_pprof_frame {
    const char *name;                 /* the function's name (owned by the profile); "" for a
                                       * location without lines (or a function without one) */
    uint64_t address;                 /* the location's address, 0 when the profile has none */
} cp_pprof_frame;

/* Sample i (< info.samples): *value = its value of sample type st, frames[0..min(cap,
 * *depth)) = its stack root first -- the locations from the outermost (the profile lists
 * them leaf first), each location's lines from the outer caller to the innermost inlined
 * function, a location without lines one frame -- and *depth = the stack's whole length
 * (more than cap: the frames past cap, on the leaf side, were not written). CP_EINVAL
 * when i or st is out of range. */
int cp_pprof_sample_stack(const cp_pprof *pf, size_t i, size_t st, int64_t *value, cp_pprof_frame *frames,
                          size_t cap, size_t *depth);
void cp_pprof_free(cp_pprof *pf);

#endif
