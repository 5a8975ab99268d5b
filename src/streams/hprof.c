/* hprof.c -- the HPROF decoder (cp_hprof.h).
 *
 * A state machine over "steps": each state names a fixed-size part (a record header, a
 * sub-record's fixed fields, one constant-pool entry, ...) of need bytes. When a feed
 * holds the whole part it is read in place; otherwise its bytes are gathered in tmp
 * (at most CP_HPROF_MAX_STEP) until it is whole. Variable-size data that is not looked
 * at (record bodies, field values, array elements) is a skip: a byte count passed over
 * as it arrives, after which the machine enters `next`. Inside a record every step and
 * skip is checked against the bytes its record has left before it starts, so a
 * sub-record can never read past its record and rec_left never wraps.
 */
#include "streams/cp_hprof.h"

#include "common/cp_map.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Top-level record tags (OpenJDK hprof / heapDumper.cpp). */
enum {
    TAG_STRING = 0x01,
    TAG_LOAD_CLASS = 0x02,
    TAG_UNLOAD_CLASS = 0x03,
    TAG_STACK_FRAME = 0x04,
    TAG_STACK_TRACE = 0x05,
    TAG_ALLOC_SITES = 0x06,
    TAG_HEAP_SUMMARY = 0x07,
    TAG_START_THREAD = 0x0A,
    TAG_END_THREAD = 0x0B,
    TAG_HEAP_DUMP = 0x0C,
    TAG_CPU_SAMPLES = 0x0D,
    TAG_CONTROL_SETTINGS = 0x0E,
    TAG_HEAP_DUMP_SEGMENT = 0x1C,
    TAG_HEAP_DUMP_END = 0x2C,
};

/* Heap dump sub-record types; 0x89.. and 0xFE are Android's. */
enum {
    SUB_ROOT_JNI_GLOBAL = 0x01,
    SUB_ROOT_JNI_LOCAL = 0x02,
    SUB_ROOT_JAVA_FRAME = 0x03,
    SUB_ROOT_NATIVE_STACK = 0x04,
    SUB_ROOT_STICKY_CLASS = 0x05,
    SUB_ROOT_THREAD_BLOCK = 0x06,
    SUB_ROOT_MONITOR_USED = 0x07,
    SUB_ROOT_THREAD_OBJECT = 0x08,
    SUB_CLASS_DUMP = 0x20,
    SUB_INSTANCE_DUMP = 0x21,
    SUB_OBJ_ARRAY_DUMP = 0x22,
    SUB_PRIM_ARRAY_DUMP = 0x23,
    SUB_ROOT_INTERNED_STRING = 0x89,
    SUB_ROOT_FINALIZING = 0x8A,
    SUB_ROOT_DEBUGGER = 0x8B,
    SUB_ROOT_REFERENCE_CLEANUP = 0x8C,
    SUB_ROOT_VM_INTERNAL = 0x8D,
    SUB_ROOT_JNI_MONITOR = 0x8E,
    SUB_UNREACHABLE = 0x90,
    SUB_PRIM_ARRAY_NODATA = 0xC3,
    SUB_HEAP_DUMP_INFO = 0xFE,
    SUB_ROOT_UNKNOWN = 0xFF,
};

/* Basic types of fields and array elements. */
enum { T_OBJECT = 2, T_BOOLEAN = 4, T_CHAR, T_FLOAT, T_DOUBLE, T_BYTE, T_SHORT, T_INT, T_LONG, T_COUNT };

static const char *const prim_names[T_COUNT] = {
    [T_BOOLEAN] = "boolean", [T_CHAR] = "char", [T_FLOAT] = "float", [T_DOUBLE] = "double",
    [T_BYTE] = "byte",       [T_SHORT] = "short", [T_INT] = "int",    [T_LONG] = "long",
};

static const char MAGIC[] = "JAVA PROFILE 1.0."; /* then digits, then NUL */
#define MAGIC_LEN (sizeof MAGIC - 1)
#define MAX_NAME_CAP 65535u                      /* a kept string's length fits 16 bits */

/* What the next bytes are. The last two have no bytes of their own: they say where a
 * finished part leads (a sub-record's end, a record's end). */
typedef enum hp_state {
    S_MAGIC,        /* the format string, a byte at a time up to its NUL */
    S_HEADER,       /* u4 identifier size, u8 time */
    S_RECORD,       /* u1 tag, u4 time delta, u4 length */
    S_SKIP,         /* skip bytes to pass over, then next */
    S_STRING_ID,    /* STRING: id */
    S_STRING_TEXT,  /* its text, copied while it fits max_name */
    S_LOAD_CLASS,   /* u4 serial, id class, u4 stack serial, id name */
    S_SUB,          /* heap dump: u1 sub-record type */
    S_CLASS_HEAD,   /* CLASS_DUMP: id class, u4, 6 ids, u4 instance size, u2 pool count */
    S_CP_ENTRY,     /* u2 index, u1 type (then its value is skipped) */
    S_STATIC_COUNT, /* u2 */
    S_STATIC_FIELD, /* id name, u1 type (then its value is skipped) */
    S_FIELD_COUNT,  /* u2 */
    S_FIELD,        /* id name, u1 type */
    S_INSTANCE,     /* id, u4 serial, id class, u4 byte count (then the bytes) */
    S_OBJ_ARRAY,    /* id, u4 serial, u4 length, id array class (then the elements) */
    S_PRIM_ARRAY,   /* id, u4 serial, u4 length, u1 type (then the elements) */
    S_SUB_END,
    S_RECORD_END,
} hp_state;

typedef struct klass {
    uint64_t id, name_sid;
    uint64_t objects, bytes;
    uint8_t named;                  /* a LOAD_CLASS gave name_sid */
} klass;

typedef struct prim_stat {
    uint64_t objects, bytes;
} prim_stat;

struct cp_hprof_dec {
    cp_hprof_limits lim;
    int status;
    char err[256];
    cp_hprof_header hdr;
    cp_hprof_totals t;
    hp_state state, next;           /* next: where S_SKIP leads */
    size_t need;                    /* bytes of the current step */
    uint8_t tmp[CP_HPROF_MAX_STEP];
    size_t have;                    /* of them gathered so far (a step cut by a feed) */
    uint64_t off;                   /* input consumed: whole steps and skipped bytes */
    uint64_t skip;                  /* S_SKIP / S_STRING_TEXT: bytes still to come */
    int in_rec;                     /* inside a record's body: rec_left counts down */
    uint64_t rec_left;
    uint64_t rec_at, sub_at;        /* offsets of the current record and sub-record */
    uint8_t rec_tag, sub_tag;
    uint32_t rec_len;
    uint32_t id;                    /* identifier size; 0 before the header */
    size_t fmt_len;
    uint32_t cp_left, static_left, field_left;
    /* the STRING being read */
    uint64_t str_id;
    cp_buf str;
    /* strings kept: id -> (offset in arena << 16 | length) */
    cp_u64map strs;
    cp_buf arena;
    uint64_t strings_new;           /* kept since the last prune */
    /* the class table */
    cp_u64map cls_ix;               /* class id -> index in cls */
    klass *cls;
    size_t ncls, cap_cls;
    uint64_t last_cid;              /* the last class looked up, and its index + 1 */
    size_t last_ix1;
    prim_stat prim[T_COUNT];
};

void cp_hprof_limits_default(cp_hprof_limits *l)
{
    l->max_classes = 1000000;
    l->max_string_bytes = (uint64_t)64 << 20;
    l->max_name = 4096;
}

/* ---- errors ---------------------------------------------------------------------------- */

static int fail(cp_hprof_dec *d, int status, uint64_t at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(cp_hprof_dec *d, int status, uint64_t at, const char *fmt, ...)
{
    if (d->status < 0) return d->status;
    d->status = status;
    va_list ap;
    va_start(ap, fmt);
    cp_vset_err_at(d->err, sizeof d->err, at, fmt, ap);
    va_end(ap);
    return status;
}

static int oom(cp_hprof_dec *d, uint64_t at) { return fail(d, CP_ENOMEM, at, "out of memory"); }

/* ---- small readers --------------------------------------------------------------------- */

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static uint64_t rd_id(const cp_hprof_dec *d, const uint8_t *p) { return d->id == 4 ? cp_be32(p) : cp_be64(p); }

/* Bytes of a value of basic type t; 0 for a type that does not exist. */
static uint32_t type_size(const cp_hprof_dec *d, uint8_t t)
{
    switch (t) {
    case T_OBJECT: return d->id;
    case T_BOOLEAN:
    case T_BYTE: return 1;
    case T_CHAR:
    case T_SHORT: return 2;
    case T_FLOAT:
    case T_INT: return 4;
    case T_DOUBLE:
    case T_LONG: return 8;
    default: return 0;
    }
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* ---- moving between states ------------------------------------------------------------- */

static size_t need_of(const cp_hprof_dec *d, hp_state s)
{
    size_t id = d->id;
    switch (s) {
    case S_MAGIC:
    case S_SUB: return 1;
    case S_HEADER: return 12;
    case S_RECORD: return 9;
    case S_STRING_ID: return id;
    case S_LOAD_CLASS: return 8 + 2 * id;
    case S_CLASS_HEAD: return 7 * id + 10;
    case S_CP_ENTRY: return 3;
    case S_STATIC_COUNT:
    case S_FIELD_COUNT: return 2;
    case S_STATIC_FIELD:
    case S_FIELD: return id + 1;
    case S_INSTANCE:
    case S_OBJ_ARRAY: return 2 * id + 8;
    case S_PRIM_ARRAY: return id + 9;
    default: return 0;
    }
}

static int overrun(cp_hprof_dec *d, uint64_t want)
{
    return fail(d, CP_EPROTO, d->sub_at,
                "heap dump sub-record 0x%02x runs past the end of its record 0x%02x at %" PRIu64
                " (%" PRIu64 " more bytes needed, %" PRIu64 " left)",
                d->sub_tag, d->rec_tag, d->rec_at, want, d->rec_left);
}

/* Makes s the current state (resolving the two that have no bytes of their own). */
static int enter(cp_hprof_dec *d, hp_state s)
{
    if (s == S_SUB_END) s = d->rec_left ? S_SUB : S_RECORD_END;
    if (s == S_RECORD_END) {
        d->in_rec = 0;
        s = S_RECORD;
    }
    size_t n = need_of(d, s);
    if (d->in_rec && n > d->rec_left) return overrun(d, n);
    d->state = s;
    d->need = n;
    return CP_OK;
}

/* Passes over n bytes of the current record, then enters next. */
static int skip_then(cp_hprof_dec *d, uint64_t n, hp_state next)
{
    if (d->in_rec && n > d->rec_left) return overrun(d, n);
    if (n == 0) return enter(d, next);
    d->skip = n;
    d->next = next;
    d->state = S_SKIP;
    d->need = 0;
    return CP_OK;
}

/* ---- strings ----------------------------------------------------------------------------- */

static uint64_t string_bytes(const cp_hprof_dec *d)
{
    return d->arena.len + cp_u64map_count(&d->strs) * (uint64_t)CP_HPROF_STRING_COST;
}

static int put_string(cp_u64map *m, cp_buf *arena, uint64_t sid, const uint8_t *p, size_t n)
{
    uint64_t at = arena->len;
    if (cp_buf_append(arena, p, n) != CP_OK || cp_u64map_put(m, sid, at << 16 | n) != CP_OK) return CP_ENOMEM;
    return CP_OK;
}

/* The text of string sid, or NULL. */
static const uint8_t *get_string(const cp_hprof_dec *d, uint64_t sid, size_t *n)
{
    uint64_t v;
    if (!cp_u64map_get(&d->strs, sid, &v)) return NULL;
    *n = (size_t)(v & 0xFFFF);
    if (!*n) return (const uint8_t *)""; /* the arena may hold nothing yet (no buffer) */
    return d->arena.data + (v >> 16);
}

/* The STRING just read is kept if it fits the budget (see the header for why every
 * string is a candidate). */
static int keep_string(cp_hprof_dec *d)
{
    if (string_bytes(d) + d->str.len + CP_HPROF_STRING_COST > d->lim.max_string_bytes) {
        d->t.names_dropped++;
        return CP_OK;
    }
    if (put_string(&d->strs, &d->arena, d->str_id, d->str.data, d->str.len) != CP_OK) return oom(d, d->rec_at);
    d->strings_new++;
    return CP_OK;
}

/* Keeps only the strings a LOAD_CLASS names, in a new arena: called when a heap dump
 * record starts after new strings came, since HotSpot's LOAD_CLASS records all precede
 * its heap dump; this gives the rest of the run the memory of every other symbol. */
static int prune_strings(cp_hprof_dec *d)
{
    cp_u64map keep;
    cp_buf arena;
    cp_u64map_init(&keep);
    cp_buf_init(&arena);
    for (size_t i = 0; i < d->ncls; i++) {
        const klass *k = &d->cls[i];
        size_t n;
        const uint8_t *s = k->named ? get_string(d, k->name_sid, &n) : NULL;
        if (!s || cp_u64map_get(&keep, k->name_sid, NULL)) continue;
        if (put_string(&keep, &arena, k->name_sid, s, n) != CP_OK) {
            cp_u64map_free(&keep);
            cp_buf_free(&arena);
            return oom(d, d->rec_at);
        }
    }
    cp_u64map_free(&d->strs);
    cp_buf_free(&d->arena);
    d->strs = keep;
    d->arena = arena;
    d->strings_new = 0;
    return CP_OK;
}

/* The name text of class k, NULL when unknown (an empty name is as good as none). */
static const uint8_t *class_text(const cp_hprof_dec *d, const klass *k, size_t *n)
{
    const uint8_t *s = k->named ? get_string(d, k->name_sid, n) : NULL;
    return s && *n ? s : NULL;
}

/* ---- the class table ----------------------------------------------------------------------- */

/* The entry of class id cid, made on first sight. NULL after an error (limit, memory). */
static klass *class_get(cp_hprof_dec *d, uint64_t cid, uint64_t at)
{
    if (d->last_ix1 && d->last_cid == cid) return &d->cls[d->last_ix1 - 1];
    uint64_t ix;
    if (!cp_u64map_get(&d->cls_ix, cid, &ix)) {
        if (d->ncls >= d->lim.max_classes) {
            fail(d, CP_ELIMIT, at, "more than %" PRIu32 " classes", d->lim.max_classes);
            return NULL;
        }
        if (cp_grow((void **)&d->cls, &d->cap_cls, d->ncls + 1, sizeof *d->cls, 1024) != CP_OK ||
            cp_u64map_put(&d->cls_ix, cid, d->ncls) != CP_OK) {
            oom(d, at);
            return NULL;
        }
        ix = d->ncls++;
        memset(&d->cls[ix], 0, sizeof d->cls[ix]);
        d->cls[ix].id = cid;
        d->t.classes = d->ncls;
    }
    d->last_cid = cid;
    d->last_ix1 = (size_t)ix + 1;
    return &d->cls[ix];
}

static void add_object(cp_hprof_dec *d, uint64_t *objects, uint64_t *bytes, uint64_t shallow)
{
    (*objects)++;
    *bytes = sat_add(*bytes, shallow);
    d->t.objects++;
    d->t.shallow_bytes = sat_add(d->t.shallow_bytes, shallow);
}

static int count_object(cp_hprof_dec *d, uint64_t cid, uint64_t data)
{
    klass *k = class_get(d, cid, d->sub_at);
    if (!k) return d->status;
    add_object(d, &k->objects, &k->bytes, data + 2 * (uint64_t)d->id);
    return CP_OK;
}

/* ---- steps: one fixed-size part, whole in q ---------------------------------------------------- */

static int step_magic(cp_hprof_dec *d, uint8_t b)
{
    size_t i = d->fmt_len;
    if (b == 0 && i > MAGIC_LEN) {
        d->hdr.format[i] = 0;
        return enter(d, S_HEADER);
    }
    int ok = i < MAGIC_LEN ? b == (uint8_t)MAGIC[i] : b >= '0' && b <= '9' && i < CP_HPROF_MAX_FORMAT - 1;
    if (!ok) return fail(d, CP_EPROTO, 0, "not an HPROF heap dump: the file does not start with \"JAVA PROFILE 1.0.<n>\"");
    d->hdr.format[i] = (char)b;
    d->fmt_len++;
    return CP_OK;
}

static int step_header(cp_hprof_dec *d, const uint8_t *q, uint64_t at)
{
    uint32_t id = cp_be32(q);
    if (id != 4 && id != 8) return fail(d, CP_EPROTO, at, "identifier size %" PRIu32 " (only 4 and 8 exist)", id);
    d->id = id;
    d->hdr.id_size = id;
    d->hdr.time_ms = (int64_t)cp_be64(q + 4);
    return enter(d, S_RECORD);
}

static int step_record(cp_hprof_dec *d, const uint8_t *q, uint64_t at)
{
    uint8_t tag = q[0];
    uint32_t len = cp_be32(q + 5);
    d->rec_at = at;
    d->rec_tag = tag;
    d->rec_len = len;
    d->t.records++;
    d->in_rec = 1;
    d->rec_left = len;
    switch (tag) {
    case TAG_STRING:
        if (len < d->id) return fail(d, CP_EPROTO, at, "STRING record of %" PRIu32 " bytes has no room for its id", len);
        d->t.strings++;
        return enter(d, S_STRING_ID);
    case TAG_LOAD_CLASS:
        if (len != 8 + 2 * d->id)
            return fail(d, CP_EPROTO, at, "LOAD_CLASS record of %" PRIu32 " bytes (it has %" PRIu32 ")", len, 8 + 2 * d->id);
        d->t.classes_loaded++;
        return enter(d, S_LOAD_CLASS);
    case TAG_UNLOAD_CLASS:
        if (len != 4) return fail(d, CP_EPROTO, at, "UNLOAD_CLASS record of %" PRIu32 " bytes (it has 4)", len);
        return skip_then(d, len, S_RECORD_END);
    case TAG_HEAP_DUMP:
    case TAG_HEAP_DUMP_SEGMENT:
        d->t.heap_records++;
        if (d->strings_new && d->t.classes_loaded && prune_strings(d) != CP_OK) return d->status;
        return enter(d, S_SUB_END); /* an empty record ends at once */
    case TAG_STACK_FRAME:
    case TAG_STACK_TRACE:
    case TAG_ALLOC_SITES:
    case TAG_HEAP_SUMMARY:
    case TAG_START_THREAD:
    case TAG_END_THREAD:
    case TAG_CPU_SAMPLES:
    case TAG_CONTROL_SETTINGS:
    case TAG_HEAP_DUMP_END: return skip_then(d, len, S_RECORD_END);
    default: return fail(d, CP_EPROTO, at, "unknown record tag 0x%02x", tag);
    }
}

static int step_string_id(cp_hprof_dec *d, const uint8_t *q)
{
    d->str_id = rd_id(d, q);
    cp_buf_reset(&d->str);
    d->skip = d->rec_left;
    if (d->skip == 0) {
        if (keep_string(d) != CP_OK) return d->status;
        return enter(d, S_RECORD_END);
    }
    d->state = S_STRING_TEXT;
    d->need = 0;
    return CP_OK;
}

static int step_load_class(cp_hprof_dec *d, const uint8_t *q)
{
    klass *k = class_get(d, rd_id(d, q + 4), d->rec_at);
    if (!k) return d->status;
    k->name_sid = rd_id(d, q + 8 + d->id);
    k->named = 1;
    return enter(d, S_RECORD_END);
}

/* A GC root: counted, its fixed body passed over. */
static int root(cp_hprof_dec *d, uint64_t len)
{
    d->t.gc_roots++;
    return skip_then(d, len, S_SUB_END);
}

static int step_sub(cp_hprof_dec *d, uint8_t type, uint64_t at)
{
    uint64_t id = d->id;
    d->sub_at = at;
    d->sub_tag = type;
    switch (type) {
    case SUB_ROOT_UNKNOWN:
    case SUB_ROOT_STICKY_CLASS:
    case SUB_ROOT_MONITOR_USED:
    case SUB_ROOT_INTERNED_STRING:
    case SUB_ROOT_FINALIZING:
    case SUB_ROOT_DEBUGGER:
    case SUB_ROOT_REFERENCE_CLEANUP:
    case SUB_ROOT_VM_INTERNAL: return root(d, id);
    case SUB_ROOT_JNI_GLOBAL: return root(d, 2 * id);
    case SUB_ROOT_JNI_LOCAL:
    case SUB_ROOT_JAVA_FRAME:
    case SUB_ROOT_THREAD_OBJECT:
    case SUB_ROOT_JNI_MONITOR: return root(d, id + 8);
    case SUB_ROOT_NATIVE_STACK:
    case SUB_ROOT_THREAD_BLOCK: return root(d, id + 4);
    case SUB_UNREACHABLE: return skip_then(d, id, S_SUB_END);
    case SUB_HEAP_DUMP_INFO: return skip_then(d, 4 + id, S_SUB_END);
    case SUB_CLASS_DUMP: return enter(d, S_CLASS_HEAD);
    case SUB_INSTANCE_DUMP: return enter(d, S_INSTANCE);
    case SUB_OBJ_ARRAY_DUMP: return enter(d, S_OBJ_ARRAY);
    case SUB_PRIM_ARRAY_DUMP: return enter(d, S_PRIM_ARRAY);
    case SUB_PRIM_ARRAY_NODATA:
        return fail(d, CP_EPROTO, at, "Android's PRIMITIVE_ARRAY_NODATA sub-record (0xc3) is not supported");
    default: return fail(d, CP_EPROTO, at, "unknown heap dump sub-record type 0x%02x", type);
    }
}

static int bad_type(cp_hprof_dec *d, const char *what, uint8_t t)
{
    return fail(d, CP_EPROTO, d->sub_at, "%s of basic type %u, which does not exist", what, t);
}

static int step_class_head(cp_hprof_dec *d, const uint8_t *q)
{
    /* nothing of it counts: the name comes from LOAD_CLASS, the sizes from the objects;
     * it is read to find where it ends */
    d->t.class_dumps++;
    d->cp_left = be16(q + 7 * d->id + 8);
    return enter(d, d->cp_left ? S_CP_ENTRY : S_STATIC_COUNT);
}

static int step_cp_entry(cp_hprof_dec *d, const uint8_t *q)
{
    uint32_t n = type_size(d, q[2]);
    if (!n) return bad_type(d, "CLASS_DUMP constant pool entry", q[2]);
    d->cp_left--;
    return skip_then(d, n, d->cp_left ? S_CP_ENTRY : S_STATIC_COUNT);
}

static int step_static_field(cp_hprof_dec *d, const uint8_t *q)
{
    uint32_t n = type_size(d, q[d->id]);
    if (!n) return bad_type(d, "CLASS_DUMP static field", q[d->id]);
    d->static_left--;
    return skip_then(d, n, d->static_left ? S_STATIC_FIELD : S_FIELD_COUNT);
}

static int step_field(cp_hprof_dec *d, const uint8_t *q)
{
    if (!type_size(d, q[d->id])) return bad_type(d, "CLASS_DUMP instance field", q[d->id]);
    d->field_left--;
    return enter(d, d->field_left ? S_FIELD : S_SUB_END);
}

static int step_instance(cp_hprof_dec *d, const uint8_t *q)
{
    uint64_t bytes = cp_be32(q + 2 * d->id + 4);
    if (skip_then(d, bytes, S_SUB_END) != CP_OK) return d->status;
    return count_object(d, rd_id(d, q + d->id + 4), bytes);
}

static int step_obj_array(cp_hprof_dec *d, const uint8_t *q)
{
    uint64_t data = (uint64_t)cp_be32(q + d->id + 4) * d->id;
    if (skip_then(d, data, S_SUB_END) != CP_OK) return d->status;
    return count_object(d, rd_id(d, q + d->id + 8), data);
}

static int step_prim_array(cp_hprof_dec *d, const uint8_t *q)
{
    uint8_t t = q[d->id + 8];
    uint32_t size = t == T_OBJECT ? 0 : type_size(d, t);
    if (!size) return bad_type(d, "PRIM_ARRAY_DUMP", t);
    uint64_t data = (uint64_t)cp_be32(q + d->id + 4) * size;
    if (skip_then(d, data, S_SUB_END) != CP_OK) return d->status;
    add_object(d, &d->prim[t].objects, &d->prim[t].bytes, data + 2 * (uint64_t)d->id);
    return CP_OK;
}

/* The current state's part, whole in q, that started at offset at. */
static int step(cp_hprof_dec *d, const uint8_t *q, uint64_t at)
{
    switch (d->state) {
    case S_MAGIC: return step_magic(d, q[0]);
    case S_HEADER: return step_header(d, q, at);
    case S_RECORD: return step_record(d, q, at);
    case S_STRING_ID: return step_string_id(d, q);
    case S_LOAD_CLASS: return step_load_class(d, q);
    case S_SUB: return step_sub(d, q[0], at);
    case S_CLASS_HEAD: return step_class_head(d, q);
    case S_CP_ENTRY: return step_cp_entry(d, q);
    case S_STATIC_COUNT:
        d->static_left = be16(q);
        return enter(d, d->static_left ? S_STATIC_FIELD : S_FIELD_COUNT);
    case S_STATIC_FIELD: return step_static_field(d, q);
    case S_FIELD_COUNT:
        d->field_left = be16(q);
        return enter(d, d->field_left ? S_FIELD : S_SUB_END);
    case S_FIELD: return step_field(d, q);
    case S_INSTANCE: return step_instance(d, q);
    case S_OBJ_ARRAY: return step_obj_array(d, q);
    case S_PRIM_ARRAY: return step_prim_array(d, q);
    default: return fail(d, CP_EPROTO, at, "internal error: state %d has no fixed part", (int)d->state);
    }
}

/* ---- feeding ------------------------------------------------------------------------------ */

/* S_SKIP and S_STRING_TEXT: takes what this feed has of the bytes to pass over. */
static int bulk(cp_hprof_dec *d, const uint8_t **p, size_t *n)
{
    size_t k = *n < d->skip ? *n : (size_t)d->skip;
    if (d->state == S_STRING_TEXT && d->str.len < d->lim.max_name) {
        size_t room = d->lim.max_name - d->str.len;
        if (cp_buf_append(&d->str, *p, k < room ? k : room) != CP_OK) return oom(d, d->rec_at);
    }
    *p += k;
    *n -= k;
    d->skip -= k;
    d->off += k;
    if (d->in_rec) d->rec_left -= k;
    if (d->skip) return CP_OK;
    if (d->state == S_SKIP) return enter(d, d->next);
    if (keep_string(d) != CP_OK) return d->status;
    return enter(d, S_RECORD_END);
}

int cp_hprof_dec_feed(cp_hprof_dec *d, const uint8_t *p, size_t n)
{
    if (d->status < 0) return d->status;
    while (n) {
        int st;
        if (d->state == S_SKIP || d->state == S_STRING_TEXT) {
            if ((st = bulk(d, &p, &n)) < 0) return st;
            continue;
        }
        const uint8_t *q;
        if (!d->have && n >= d->need) { /* whole in this feed: read in place */
            q = p;
            p += d->need;
            n -= d->need;
        } else {
            size_t k = d->need - d->have < n ? d->need - d->have : n;
            memcpy(d->tmp + d->have, p, k);
            d->have += k;
            p += k;
            n -= k;
            if (d->have < d->need) break;
            q = d->tmp;
            d->have = 0;
        }
        uint64_t at = d->off;
        d->off += d->need;
        if (d->in_rec) d->rec_left -= d->need;
        if ((st = step(d, q, at)) < 0) return st;
    }
    return CP_OK;
}

int cp_hprof_dec_finish(cp_hprof_dec *d)
{
    if (d->status < 0) return d->status;
    uint64_t end = d->off + d->have;
    if (d->state == S_RECORD && !d->have) return CP_OK;
    if (end == 0) return fail(d, CP_EPROTO, 0, "empty input: no HPROF header");
    if (d->state == S_MAGIC || d->state == S_HEADER)
        return fail(d, CP_EPROTO, end, "truncated: the input ends inside the HPROF header");
    if (d->state == S_RECORD) return fail(d, CP_EPROTO, end, "truncated: the input ends inside a record header");
    return fail(d, CP_EPROTO, end,
                "truncated: the input ends inside record 0x%02x of %" PRIu32 " bytes that starts at %" PRIu64,
                d->rec_tag, d->rec_len, d->rec_at);
}

/* ---- life and results ----------------------------------------------------------------------- */

cp_hprof_dec *cp_hprof_dec_new(const cp_hprof_limits *limits)
{
    cp_hprof_dec *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    if (limits) d->lim = *limits;
    else cp_hprof_limits_default(&d->lim);
    if (d->lim.max_name > MAX_NAME_CAP) d->lim.max_name = MAX_NAME_CAP;
    cp_buf_init(&d->str);
    cp_buf_init(&d->arena);
    cp_u64map_init(&d->strs);
    cp_u64map_init(&d->cls_ix);
    d->state = S_MAGIC;
    d->need = 1;
    return d;
}

void cp_hprof_dec_free(cp_hprof_dec *d)
{
    if (!d) return;
    cp_buf_free(&d->str);
    cp_buf_free(&d->arena);
    cp_u64map_free(&d->strs);
    cp_u64map_free(&d->cls_ix);
    free(d->cls);
    free(d);
}

const char *cp_hprof_dec_error(const cp_hprof_dec *d) { return d->status < 0 ? d->err : ""; }

const cp_hprof_header *cp_hprof_dec_header(const cp_hprof_dec *d) { return &d->hdr; }

void cp_hprof_dec_totals(const cp_hprof_dec *d, cp_hprof_totals *out)
{
    *out = d->t;
    out->bytes = d->off;
}

size_t cp_hprof_dec_memory(const cp_hprof_dec *d)
{
    return sizeof *d + d->str.cap + d->arena.cap + cp_u64map_bytes(&d->strs) + cp_u64map_bytes(&d->cls_ix) +
           d->cap_cls * sizeof *d->cls;
}

/* Histogram order: more shallow bytes, then more objects, then primitive arrays (by type)
 * before classes (by id). Negative when a ranks before b. */
static int rank_cmp(const cp_hprof_class *a, const cp_hprof_class *b)
{
    if (a->shallow_bytes != b->shallow_bytes) return a->shallow_bytes > b->shallow_bytes ? -1 : 1;
    if (a->objects != b->objects) return a->objects > b->objects ? -1 : 1;
    if (a->id != b->id) return a->id < b->id ? -1 : 1;
    return (a->prim_type > b->prim_type) - (a->prim_type < b->prim_type);
}

static int rank_qsort(const void *a, const void *b) { return rank_cmp(a, b); }

/* A bounded min-heap (the worst row on top) keeps the n best rows seen. */
typedef struct top_heap {
    cp_hprof_class *a;
    size_t len, cap;
} top_heap;

static void heap_down(top_heap *h, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < h->len && rank_cmp(&h->a[l], &h->a[w]) > 0) w = l;
        if (r < h->len && rank_cmp(&h->a[r], &h->a[w]) > 0) w = r;
        if (w == i) return;
        cp_hprof_class t = h->a[i];
        h->a[i] = h->a[w];
        h->a[w] = t;
        i = w;
    }
}

static void heap_offer(top_heap *h, const cp_hprof_class *c)
{
    if (h->len < h->cap) {
        size_t i = h->len++;
        h->a[i] = *c;
        while (i && rank_cmp(&h->a[(i - 1) / 2], &h->a[i]) < 0) { /* parent better: swap up */
            cp_hprof_class t = h->a[i];
            h->a[i] = h->a[(i - 1) / 2];
            h->a[(i - 1) / 2] = t;
            i = (i - 1) / 2;
        }
        return;
    }
    if (h->cap && rank_cmp(c, &h->a[0]) < 0) {
        h->a[0] = *c;
        heap_down(h, 0);
    }
}

int cp_hprof_dec_top(const cp_hprof_dec *d, size_t n, cp_hprof_class *out, size_t *nout, uint64_t *with_objects)
{
    top_heap h = {out, 0, n};
    uint64_t count = 0;
    for (uint8_t t = 0; t < T_COUNT; t++) {
        if (!d->prim[t].objects) continue;
        cp_hprof_class c = {0, t, 1, d->prim[t].objects, d->prim[t].bytes};
        heap_offer(&h, &c);
        count++;
    }
    for (size_t i = 0; i < d->ncls; i++) {
        const klass *k = &d->cls[i];
        if (!k->objects) continue;
        size_t len;
        cp_hprof_class c = {k->id, 0, class_text(d, k, &len) != NULL, k->objects, k->bytes};
        heap_offer(&h, &c);
        count++;
    }
    if (h.len) qsort(out, h.len, sizeof *out, rank_qsort);
    *nout = h.len;
    if (with_objects) *with_objects = count;
    return CP_OK;
}

int cp_hprof_dec_class_name(const cp_hprof_dec *d, const cp_hprof_class *c, cp_buf *out)
{
    if (c->prim_type) {
        const char *p = c->prim_type < T_COUNT ? prim_names[c->prim_type] : NULL;
        return cp_buf_printf(out, "%s[]", p ? p : "?");
    }
    uint64_t ix;
    size_t n;
    const uint8_t *s = NULL;
    if (cp_u64map_get(&d->cls_ix, c->id, &ix)) s = class_text(d, &d->cls[ix], &n);
    if (!s) return cp_buf_printf(out, "class@0x%" PRIx64, c->id);
    return cp_hprof_java_name(out, (const char *)s, n);
}

/* Appends s as valid UTF-8 with '/' as '.' (internal names to binary names). */
static int dotted(cp_buf *out, const char *s, size_t n)
{
    size_t from = out->len;
    if (cp_utf8_repair(out, s, n) != CP_OK) return CP_ENOMEM;
    for (size_t i = from; i < out->len; i++)
        if (out->data[i] == '/') out->data[i] = '.';
    return CP_OK;
}

static const char *prim_of_descriptor(char c)
{
    switch (c) {
    case 'Z': return "boolean";
    case 'C': return "char";
    case 'F': return "float";
    case 'D': return "double";
    case 'B': return "byte";
    case 'S': return "short";
    case 'I': return "int";
    case 'J': return "long";
    default: return NULL;
    }
}

int cp_hprof_java_name(cp_buf *out, const char *s, size_t n)
{
    size_t dims = 0;
    while (dims < n && s[dims] == '[') dims++;
    const char *e = s + dims;
    size_t en = n - dims;
    int st;
    if (!dims) return dotted(out, s, n);
    if (en == 1 && prim_of_descriptor(e[0])) st = cp_buf_puts(out, prim_of_descriptor(e[0]));
    else if (en >= 3 && e[0] == 'L' && e[en - 1] == ';') st = dotted(out, e + 1, en - 2);
    else return dotted(out, s, n); /* not a descriptor: shown as it is */
    for (size_t i = 0; st == CP_OK && i < dims; i++) st = cp_buf_puts(out, "[]");
    return st;
}
