/* cp_model.h -- the product's data model: a pod restart's dictionary, an assembled call
 * (one row of the hot tier / of a calls Parquet file) and the call's trace blob.
 *
 * Pure: no I/O, no clocks, no globals. Strings are UTF-8 with explicit lengths.
 */
#ifndef CP_MODEL_H
#define CP_MODEL_H

#include "common/cp_common.h"

#include <stdint.h>

/* ---- dictionary of one pod restart (protocol.md §5.1) -------------------------------- */

/* Words shared by the dictionaries of many pod restarts: each distinct word once, counted
 * by the dictionaries that hold it. Replicas of one service send the same method and
 * class names, so a collector with hundreds of pods keeps each name once instead of once
 * per pod. Not thread-safe: one pool per thread. */
typedef struct cp_wordpool cp_wordpool;
typedef struct cp_pword cp_pword;

/* NULL on ENOMEM. Free it after every dictionary using it. */
cp_wordpool *cp_wordpool_new(void);
void cp_wordpool_free(cp_wordpool *p);
/* Distinct words held, and the bytes they take with the pool's table. */
size_t cp_wordpool_words(const cp_wordpool *p);
size_t cp_wordpool_bytes(const cp_wordpool *p);

/* id -> word. Ids are dense from 0 (the agent numbers words in arrival order); a re-sent
 * id replaces the word. Words are kept in the dictionary's own text, or in a pool. */
typedef struct cp_dict {
    cp_buf text;        /* words back to back, each NUL-terminated (no pool) */
    uint32_t *off;      /* off[id] = offset in text + 1; 0 = unknown (no pool) */
    uint32_t *len;
    cp_wordpool *pool;  /* or NULL */
    cp_pword **pw;      /* pw[id] = the pooled word, NULL = unknown (pool) */
    size_t cap;         /* entries of off/len or pw */
    size_t count;       /* ids known */
} cp_dict;

#define CP_DICT_MAX_ID (1 << 24) /* protocol.md §5.5: method ids are < 2^24 */

void cp_dict_init(cp_dict *d);
/* A dictionary whose words live in pool (which must outlive it). */
void cp_dict_init_pooled(cp_dict *d, cp_wordpool *pool);
void cp_dict_free(cp_dict *d);
/* CP_ELIMIT for an id outside [0, CP_DICT_MAX_ID), CP_ENOMEM. */
int cp_dict_put(cp_dict *d, int32_t id, const char *word, size_t len);
/* NULL if the id is unknown. The pointer is valid until the next put. */
const char *cp_dict_get(const cp_dict *d, int32_t id, size_t *len);
/* Bytes held by this dictionary (for memory accounting; pooled words count in the pool). */
size_t cp_dict_bytes(const cp_dict *d);

/* ---- an assembled call ----------------------------------------------------------------- */

/* Why a call has no trace (NULL = it has one). Stable strings: they are stored. */
#define CP_TRACE_INCOMPLETE "trace_incomplete"   /* the depth-0 EXIT never arrived */
#define CP_TRACE_NOT_FOUND "trace_not_found"     /* no trace chunk at the call's pointer */
#define CP_TRACE_BAD_POINTER "bad_pointer"       /* the pointer is not on the call's root ENTER */
#define CP_TRACE_TOO_LARGE "too_large"           /* over the per-call trace budget */
#define CP_TRACE_BACKLOG "backlog"               /* too many calls waiting for their traces */

/* One call as the hot tier stores it (storage.md "Hot tier"; seed 004 "Calls temp table")
 * and the API returns it. Every pointer is borrowed: valid only for the callback that
 * hands the call over. */
typedef struct cp_call {
    int64_t ts_ms;               /* start, epoch ms */
    int32_t duration_ms;
    int64_t cpu_time;
    int64_t wait_time;
    int64_t memory_used;
    int64_t non_blocking;        /* seed column; the agent sends nothing for it: 0 */
    int32_t queue_wait_ms;
    int32_t suspend_ms;          /* pauses overlapping [ts, ts + duration] (protocol.md §7) */
    int32_t calls;
    int64_t transactions;
    int32_t logs_generated;
    int32_t logs_written;
    int64_t file_read, file_written, net_read, net_written;
    const char *ns, *service, *pod;
    size_t ns_len, service_len, pod_len;
    int64_t restart_ms;
    int32_t method_id;           /* dictionary id of the root method */
    const char *method;          /* resolved; "#<id>" if the dictionary lacks it */
    size_t method_len;
    const char *thread;
    size_t thread_len;
    /* {"name":["v1","v2"],...}: names resolved, sorted by name; values in record order.
     * Written with cp_json_str (UTF-8 kept, only " \ and control characters escaped). */
    const char *params_json;
    size_t params_json_len;
    int error;                   /* a `call.red` param is present */
    int sql;                     /* the trace references a value of the `sql` stream (the
                                  * deduplicated big values: SQL text), ui.md §3.3's tag */
    int32_t trace_file_index, buffer_offset, record_index;
    const uint8_t *trace;        /* trace blob (below); NULL when there is none */
    size_t trace_len;
    const char *trace_reason;    /* CP_TRACE_* when trace is NULL, else NULL */
} cp_call;

/* ---- what queries see of a call ------------------------------------------------------ */

/* What a search looks at in one call. params_json is cp_call.params_json. */
typedef struct cp_call_view {
    const char *method;
    size_t method_len;
    const char *pod;
    size_t pod_len;
    const char *params_json;
    size_t params_json_len;
} cp_call_view;

/* Sort columns of the calls API (ui.md §3.7). */
typedef enum cp_sort_col {
    CP_SORT_TS = 0,      /* ts_ms */
    CP_SORT_DURATION,    /* duration_ms */
    CP_SORT_CPU,         /* cpu_time */
    CP_SORT_WAIT,        /* wait_time */
    CP_SORT_MEMORY,      /* memory_used */
    CP_SORT_SUSPEND,     /* suspend_ms */
    CP_SORT_CALLS,       /* calls */
    CP_SORT_TRANSACTIONS,/* transactions */
    CP_SORT_QUEUE,       /* queue_wait_ms */
    CP_SORT_LOGS_GENERATED,
    CP_SORT_LOGS_WRITTEN,
    CP_SORT_FILE_READ,
    CP_SORT_FILE_WRITTEN,
    CP_SORT_NET_READ,
    CP_SORT_NET_WRITTEN,
    CP_SORT_METHOD,      /* text columns sort by byte order */
    CP_SORT_NAMESPACE,
    CP_SORT_SERVICE,
    CP_SORT_POD,
    CP_SORT_RESTART,     /* restart_ms */
    CP_SORT_THREAD,
    CP_SORT_ERROR,
    CP_SORT_COUNT
} cp_sort_col;

int cp_sort_is_text(cp_sort_col col); /* method, namespace, service, pod, thread */

/* A call's identity: data-derived, the same hot or cold (its text form is the API's
 * call id, cp_query.h). */
typedef struct cp_call_ref {
    int64_t ts_ms;
    int64_t restart_ms;
    int32_t trace_file_index, buffer_offset, record_index;
    uint64_t pod_hash;   /* cp_pod_hash(namespace, pod) */
} cp_call_ref;

void cp_call_ref_of(const cp_call *c, cp_call_ref *out);
/* A copy of src that owns its strings and trace (in mem, reset first): for keeping a call
 * past the callback that handed it over. CP_OK or CP_ENOMEM. */
int cp_call_copy(const cp_call *src, cp_call *dst, cp_buf *mem);

/* A row's position in a sort order: the sort column in its direction, then ts_ms desc,
 * then the ref (restart_ms, pod_hash, trace_file_index, buffer_offset, record_index)
 * desc. Keyset paging starts strictly after such a key. */
typedef struct cp_sort_key {
    cp_sort_col col;
    int desc;
    int64_t num;            /* value of a numeric column */
    char text[1024];        /* value of a text column (cut at 1023 bytes) */
    size_t text_len;
    cp_call_ref ref;
} cp_sort_key;

/* A call's value in a numeric sort column (0 for a text column), and in a text column
 * (NULL for a numeric one). */
int64_t cp_call_sort_num(const cp_call *c, cp_sort_col col);
const char *cp_call_sort_text(const cp_call *c, cp_sort_col col, size_t *len);
/* The call's position in the order (col, desc): its key for keyset paging. */
void cp_sort_key_of(const cp_call *c, cp_sort_col col, int desc, cp_sort_key *k);

/* FNV-1a 64 of "<namespace>/<pod>": the pod part of a call id. */
uint64_t cp_pod_hash(const char *ns, size_t ns_len, const char *pod, size_t pod_len);

/* ---- the trace blob ------------------------------------------------------------------
 *
 * Everything needed to draw one call's tree, with no other lookup (so it survives
 * compaction and dictionary cleanup, and several pods' calls can be merged):
 *
 *   "CPT1"
 *   vu trace_len, trace bytes: a valid trace *file* (protocol.md §5.5) -- i64 timer start,
 *      then the call's events re-framed as chunks of its thread: the first chunk starts
 *      at the root ENTER (its delta rewritten to the absolute timer offset), the last
 *      ends at the depth-0 EXIT; each chunk ends with 0x03. So the root is event 0 of
 *      the chunk at offset 8.
 *   vu nwords,  nwords  x (vu id, vu len, UTF-8)           dictionary words used
 *   vu nvalues, nvalues x (u8 kind 1=xml 3=sql, vu file, vu offset, u8 resolved,
 *                          vu len, UTF-8)                 big values referenced
 *   vu npauses, npauses x (vu64 end_ms, vu duration_ms)    pauses overlapping the call
 *
 * vu = unsigned LEB128 varint (32 bits), vu64 = 64 bits. Entries sorted by id, by
 * (kind, file, offset) and by end_ms. An unresolved value has resolved = 0 and its text
 * is "<kind>:<file>:<offset>". */

#define CP_BLOB_MAGIC "CPT1"
#define CP_BLOB_MAX (256u << 20)  /* a blob above this is refused by the reader */

typedef struct cp_blob_word {
    int32_t id;
    const char *text;
    size_t len;
} cp_blob_word;

typedef struct cp_blob_value {
    uint8_t kind;       /* 1 xml, 3 sql (the TAG's paramType) */
    uint8_t resolved;
    int32_t file;
    int32_t offset;
    const char *text;
    size_t len;
} cp_blob_value;

typedef struct cp_blob_pause {
    int64_t end_ms;
    int32_t duration_ms;
} cp_blob_pause;

/* Writing: collect, then cp_blob_build. The builder copies what it is given. */
typedef struct cp_blob_builder {
    cp_buf trace;
    cp_buf strings;
    struct cp_blob_bword { int32_t id; size_t off, len; } *words;
    size_t nwords, capwords;
    struct cp_blob_bvalue { uint8_t kind, resolved; int32_t file, offset; size_t off, len; } *values;
    size_t nvalues, capvalues;
    cp_blob_pause *pauses;
    size_t npauses, cappauses;
} cp_blob_builder;

void cp_blob_builder_init(cp_blob_builder *b);
void cp_blob_builder_reset(cp_blob_builder *b);
void cp_blob_builder_free(cp_blob_builder *b);
/* Adding an id / a (kind, file, offset) that is already there is a no-op. */
int cp_blob_add_word(cp_blob_builder *b, int32_t id, const char *text, size_t len);
int cp_blob_add_value(cp_blob_builder *b, uint8_t kind, int32_t file, int32_t offset, int resolved,
                      const char *text, size_t len);
int cp_blob_add_pause(cp_blob_builder *b, int64_t end_ms, int32_t duration_ms);
/* Appends the blob to out (b->trace holds the trace bytes). */
int cp_blob_build(cp_blob_builder *b, cp_buf *out);

/* Reading: cp_blob_open validates the whole blob (CP_ECORRUPT with a reason) and indexes
 * it; the result aliases p, which must outlive it. */
typedef struct cp_blob {
    const uint8_t *trace;
    size_t trace_len;
    cp_blob_word *words;
    size_t nwords;
    cp_blob_value *values;
    size_t nvalues;
    cp_blob_pause *pauses;
    size_t npauses;
} cp_blob;

int cp_blob_open(const uint8_t *p, size_t n, cp_blob **out, char *err, size_t errlen);
void cp_blob_free(cp_blob *b);
/* NULL if absent. */
const cp_blob_word *cp_blob_find_word(const cp_blob *b, int32_t id);

/* The distinct dictionary ids the blob's trace uses (entered methods and tag names),
 * ascending, into a malloc'ed *ids (NULL when none). For looking them up in the catalog
 * when the blob carries no words (the assembler does not copy them: storage.md hot
 * tier, ARCHITECTURE.md). CP_ECORRUPT if the trace does not decode. */
int cp_blob_word_ids(const cp_blob *b, int32_t **ids, size_t *n);
/* Gives an opened blob the words it lacks: w[0..n) are copied (their texts are not, so
 * they must outlive b) and sorted; ids the blob already has keep their text. */
int cp_blob_attach_words(cp_blob *b, const cp_blob_word *w, size_t n);
const cp_blob_value *cp_blob_find_value(const cp_blob *b, uint8_t kind, int32_t file, int32_t offset);

/* ---- suspend timeline ---------------------------------------------------------------- */

/* Total overlap of [from, to] with the pauses [end - duration, end], overlapping pauses
 * merged first (protocol.md §7 suspendOverlapMs). pauses sorted by end_ms. */
int64_t cp_pause_overlap(const cp_blob_pause *pauses, size_t n, int64_t from, int64_t to);

#endif
