/* import_internal.h -- what import.c, import_tptp.c and import_cbor.c share: the word
 * table, the call under construction (its agent-format trace, words and params) and the
 * importer's state. */
#ifndef CP_IMPORT_INTERNAL_H
#define CP_IMPORT_INTERNAL_H

#include "common/cp_map.h"
#include "model/cp_import.h"
#include "streams/cp_cbortrace.h"
#include "streams/cp_tptp.h"

#define IMP_MAX_WORDS (1u << 24)   /* the trace format's method ids are < 2^24 */
#define IMP_MAX_STACK 65536        /* open entries per thread */
#define IMP_MAX_PARAMS 4096        /* params of one call */

/* ---- words: text -> dense id, for the blobs' dictionaries ---------------------------- */

typedef struct imp_words {
    cp_buf text;            /* words back to back */
    uint32_t *off, *len;
    uint64_t *stamp;        /* the call that last listed the word (see imp_call_word) */
    size_t count, cap;
    cp_u64map by_hash;      /* FNV-1a 64 (+ probe) -> id */
} imp_words;

void imp_words_init(imp_words *w);
void imp_words_free(imp_words *w);
/* The id of text, added if new. CP_ELIMIT past IMP_MAX_WORDS. */
int imp_words_id(imp_words *w, const char *s, size_t n, int32_t *id);
static inline const char *imp_words_text(const imp_words *w, int32_t id, size_t *len)
{
    *len = w->len[id];
    return (const char *)w->text.data + w->off[id];
}

/* ---- a call being built -------------------------------------------------------------- */

typedef struct imp_param {
    size_t name_off, name_len, val_off, val_len; /* in imp_call.pstr */
} imp_param;

typedef struct imp_call {
    int active;
    uint64_t serial;        /* stamps the words it listed */
    int64_t start_ticks;    /* root entry, in the format's ticks */
    int64_t ts_ms;
    int64_t last_rel_ms;    /* time of the last event written, relative to ts_ms */
    uint64_t offset;        /* byte offset of the root in the input */
    cp_buf trace;           /* agent trace file: timer start, one chunk header, events */
    int32_t *wids;          /* word ids used (may repeat) */
    size_t nwids, capwids;
    cp_buf pstr;            /* call params (name/value texts) */
    imp_param *params;
    size_t nparams, capparams;
    int too_large;          /* the trace was dropped */
    size_t counted;         /* trace bytes counted in cp_import.open_bytes */
    int error;
    uint64_t entries;       /* method entries, root included */
    int32_t root_word;      /* the root's method */
} imp_call;

struct cp_import;
void imp_call_init(imp_call *c);
void imp_call_free(imp_call *c);
/* Starts a call: root at start_ticks = ts_ms, thread id of the chunk header. */
int imp_call_begin(struct cp_import *im, imp_call *c, int64_t ts_ms, int64_t thread_id, uint64_t offset);
/* Trace events at rel_ms after the call's start (clamped to be non-decreasing). */
int imp_call_enter(struct cp_import *im, imp_call *c, int64_t rel_ms, int32_t word);
int imp_call_exit(struct cp_import *im, imp_call *c, int64_t rel_ms);
int imp_call_tag(struct cp_import *im, imp_call *c, int32_t word, const char *v, size_t n);
/* A call param (the list's params_json). */
int imp_call_param(struct cp_import *im, imp_call *c, const char *name, const char *v, size_t n);

/* What a finished call hands over besides its trace. */
typedef struct imp_done {
    int64_t duration_ms;
    int32_t method_word;
    const char *thread;
    size_t thread_len;
    int64_t cpu_ms, wait_ms, memory, suspend_ms;
    int64_t calls;
    const cp_blob_pause *pauses;  /* absolute, sorted by end */
    size_t npauses;
    int32_t record_index;
} imp_done;

/* Builds the blob and the cp_call and hands it to the sink; resets c. */
int imp_call_finish(struct cp_import *im, imp_call *c, const imp_done *d);
/* Drops what a call holds (budget released) and resets it. */
void imp_call_drop(struct cp_import *im, imp_call *c);

/* ---- the importer ---------------------------------------------------------------------- */

typedef struct imp_tptp imp_tptp; /* import_tptp.c */
typedef struct imp_cbor imp_cbor; /* import_cbor.c */

struct cp_import {
    cp_import_opts o;
    cp_import_sink sink;
    imp_words words;
    uint64_t next_serial;
    size_t open_bytes;         /* trace bytes of the open calls */
    int failed;
    int status;
    char err[320];
    /* identity, fixed at the first call */
    int identity_fixed;
    cp_buf id_ns, id_service, id_pod;
    int64_t restart_ms;
    /* what the file said about it (TPTP) */
    cp_buf file_host, file_agent, file_process;
    int64_t file_process_ms;
    int has_process_ms;
    /* scratch */
    cp_blob_builder bb;
    cp_buf blob, params_json, tmp;
    int32_t *sort_tmp;             /* sort_ids' scratch */
    size_t sort_cap;
    uint64_t calls_out, threads, methods, events, skipped, unknown, too_large, incomplete;
    uint64_t bytes, stopped_at;
    int64_t first_ms, last_ms;     /* of the calls handed over */
    int64_t record_ordinal;
    cp_tptp_dec *tptp_dec;
    imp_tptp *tptp;
    cp_cbt_dec *cbor_dec;
    imp_cbor *cbor;
};

/* Fails the import with a reason; returns the status. */
int imp_fail(struct cp_import *im, int st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* floor(ticks * num / den) without overflow for any int64 ticks (den > 0). */
int64_t imp_scale(int64_t ticks, int64_t num, int64_t den);

int imp_tptp_new(struct cp_import *im, cp_tptp_form form);
void imp_tptp_free(struct cp_import *im);
int imp_tptp_finish(struct cp_import *im);
int imp_cbor_new(struct cp_import *im);
void imp_cbor_free(struct cp_import *im);

#endif
