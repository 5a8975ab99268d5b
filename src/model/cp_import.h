/* cp_import.h -- foreign traces (TPTP .trcbin / .trcxml, CBOR raw traces) turned into
 * cloudprof calls, and calls turned back into TPTP traces.
 *
 * Import (../shared/spec/foreign-formats.md §2.6, §3.3): bytes go in through the pure
 * decoders of src/streams (cp_tptp.h, cp_cbortrace.h); an assembler pairs method
 * entries and exits per thread (TPTP) or walks trace records (CBOR) and hands over each
 * finished call as a cp_call whose trace is a self-contained blob (cp_model.h): the
 * call's events re-encoded as an agent trace (protocol.md §5.5) with the words it uses,
 * its node parameters as inline TAGs and the GC pauses it overlaps. So an imported call
 * is stored, listed, searched, compacted and drawn exactly like a live agent's.
 *
 * Times: every millisecond figure is computed in ticks and converted once, rounding
 * down; event times inside a blob are relative to the call's start (so the root's
 * EXIT - ENTER equals duration_ms).
 *
 * Identity of an import's calls (one pod restart per import): namespace / service / pod
 * from the request when given, else from the file (TPTP: agentName, hostname_processCreate
 * ms; CBOR: none), else the defaults (tptp / cbor, <format>_<import ms>). It is fixed when
 * the first call is handed over. A call's id part (trace_file_index 0, buffer_offset =
 * the low 31 bits of the root's byte offset in the input, record_index = its ordinal) is
 * a function of the file, so importing a file again gives the same call ids.
 *
 * Params: each call gets `import.format` (trcbin | trcxml | cbor); a TPTP entry still open
 * at the end `import.incomplete` = true; a CBOR record's attributes and exception
 * (`exception`, and then `call.red`, the agent's error marker that every tier reads).
 * TPTP files carry node parameters as custom (1041) messages whose body is
 * <cloudprof.param threadIdRef=".." ticket=".." name=".." value=".."/> right after the
 * entry they belong to (what cp_export writes; parsed with libexpat).
 *
 * Bounds: a call's trace over max_call_bytes is dropped (the call is kept without a tree,
 * reason too_large); the traces of all open calls together stay under max_open_bytes
 * (the call that would pass it loses its trace); thread, method and class tables are
 * bounded (an error when a file needs more). No I/O, no clocks (the import time is given).
 */
#ifndef CP_IMPORT_H
#define CP_IMPORT_H

#include "common/cp_common.h"
#include "model/cp_model.h"

#include <stdint.h>

typedef enum cp_import_format {
    CP_IMPORT_UNKNOWN = 0,
    CP_IMPORT_TRCBIN,
    CP_IMPORT_TRCXML,
    CP_IMPORT_CBOR,
} cp_import_format;

const char *cp_import_format_name(cp_import_format f); /* "trcbin", "trcxml", "cbor", "unknown" */
cp_import_format cp_import_format_parse(const char *s); /* CP_IMPORT_UNKNOWN if none */
/* From the first bytes (at least 1; 16 is plenty): "0TBF" -> trcbin; optional BOM and
 * whitespace then '<' -> trcxml; a CBOR tag or array initial byte -> cbor. */
cp_import_format cp_import_detect(const uint8_t *p, size_t n);

typedef struct cp_import_opts {
    cp_import_format format;       /* required (see cp_import_detect) */
    const char *ns, *service, *pod;/* NULL or "" = from the file / defaults */
    int64_t now_ms;                /* the import time */
    size_t max_call_bytes;         /* default 16 MiB */
    size_t max_open_bytes;         /* default 48 MiB */
    size_t max_threads;            /* default 100 000 */
    size_t max_methods;            /* method + class definitions, default 1 Mi */
    size_t max_def_bytes;          /* their names, signatures, sources and thread names,
                                    * default 64 MiB */
} cp_import_opts;

void cp_import_opts_default(cp_import_opts *o);

/* Where the calls go. The identity and the call are valid during the callback only; a
 * non-zero return stops the import (CP_EABORT, or the status returned if negative). */
typedef struct cp_import_sink {
    void *ud;
    int (*on_call)(void *ud, const cp_call *c);
} cp_import_sink;

/* What the API and the CLI report (spec §4: how many calls, where it stopped). */
typedef struct cp_import_report {
    cp_import_format format;
    uint64_t calls;            /* handed over */
    uint64_t threads;          /* distinct threads that had calls (or thread starts) */
    uint64_t methods;          /* method definitions */
    uint64_t events;           /* messages (TPTP) / trace records (CBOR) decoded */
    uint64_t skipped;          /* unknown messages / CBOR items that made no call */
    uint64_t unknown_messages; /* TPTP: unknown ids / elements; CBOR: unknown top-level items */
    uint64_t too_large;        /* calls kept without their tree */
    uint64_t incomplete;       /* calls closed at the end of the file */
    uint64_t stopped_at;       /* byte offset where decoding stopped (the end on success) */
    uint64_t bytes;            /* bytes fed */
    const char *error;         /* NULL on success, else the reason with its offset */
    const char *ns, *service, *pod; /* the identity (NULL before the first call) */
    int64_t restart_ms;
    int has_span;               /* calls were handed over (duplicates included) */
    int64_t first_ms, last_ms;  /* their earliest start and latest end */
} cp_import_report;

typedef struct cp_import cp_import;

/* NULL on ENOMEM or an unknown format. */
cp_import *cp_import_new(const cp_import_opts *o, const cp_import_sink *sink);
void cp_import_free(cp_import *im);
/* CP_OK or a negative status (the error is in the report; later calls return it). */
int cp_import_feed(cp_import *im, const uint8_t *p, size_t n);
/* End of input: closes what is still open (TPTP) and hands the last calls over. */
int cp_import_finish(cp_import *im);
/* Valid until the next feed/finish/free. */
void cp_import_get_report(const cp_import *im, cp_import_report *r);
/* Appends the report as one JSON object: {"format","calls","threads","methods","events",
 * "skipped","unknown_messages","too_large","incomplete","stopped_at","bytes","error",
 * "namespace","service","pod","first_ms","last_ms"} (the last two null without calls; a
 * file imported again keeps its span although its calls are duplicates). */
int cp_import_report_json(const cp_import_report *r, cp_buf *out);

/* ---- export ------------------------------------------------------------------------ */

/* Calls written as one TPTP trace (.trcbin or .trcxml), streamed call by call: first a
 * frequency message (µs) and node / process / agent / trace messages for the first call's
 * identity (hostname and process time from a pod named "<host>_<ms>", else the pod and
 * its restart), then per call a threadStart for a new (pod, thread), class and method
 * definitions for method texts not seen yet (split into class, name, signature, source
 * and line so that the import's rule (spec §2.6) gives the text back), the entries and
 * exits of its blob (tickets, times to the ms, its cpu time as threadCpuTime), its memory
 * as one objAlloc and its wait as one monWait / monWaited pair, its pauses as gcStart /
 * gcFinish, and its parameters as custom messages
 * <cloudprof.param threadIdRef ticket scope name value/> (scope "call" for the call's
 * params, "node" for the tree's TAGs; import.* params are left out: an import adds them
 * again). */
typedef struct cp_export cp_export;

cp_export *cp_export_new(int xml);
void cp_export_free(cp_export *e);
/* Appends the call's messages to out. b is the call's opened blob with every word it uses
 * (cp_blob_attach_words), or NULL: the root alone (entry and exit). CP_ECORRUPT for a
 * trace that does not decode, CP_EINVAL for text the form cannot hold; err says why. */
int cp_export_add(cp_export *e, const cp_call *c, const cp_blob *b, cp_buf *out, char *err, size_t errlen);
/* Appends the end (the trace / agent / process end messages, and </TRACE> for XML); a
 * file with no call gets its prelude too. */
int cp_export_end(cp_export *e, cp_buf *out, char *err, size_t errlen);

#endif
