/* hprof_gen.c -- see hprof_gen.h. */
#include "hprof_gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLUSH_AT (1u << 20)
#define STR_BASE 0x100u       /* string ids: STR_BASE + 8 k */
#define OBJ_BASE 0x100000u    /* object (and class object) ids: OBJ_BASE + 8 k */

enum { T_OBJ = 2, T_BOOL = 4, T_CHAR, T_FLOAT, T_DOUBLE, T_BYTE, T_SHORT, T_INT, T_LONG };

typedef struct gen {
    const hg_spec *s;
    hg_write_fn w;
    void *ud;
    int status;
    cp_buf out;               /* records waiting for the writer */
    cp_buf seg;               /* the body of the open HEAP_DUMP_SEGMENT */
    uint64_t pos;             /* bytes handed to out so far */
    uint64_t next_obj, next_str;
    hg_layout *lay;
    long first_cd_rel, first_inst_rel; /* offsets inside the open segment, -1 once placed */
} gen;

static uint32_t tsize(uint32_t id, uint8_t t)
{
    switch (t) {
    case T_OBJ: return id;
    case T_BOOL:
    case T_BYTE: return 1;
    case T_CHAR:
    case T_SHORT: return 2;
    case T_FLOAT:
    case T_INT: return 4;
    default: return 8;
    }
}

static uint64_t field_bytes(const hg_spec *s, const hg_class *c)
{
    uint64_t n = 0;
    for (size_t i = 0; i < c->nfields; i++) n += tsize(s->id_size, c->fields[i]);
    return n;
}

static void put_u1(cp_buf *b, uint8_t v) { cp_buf_putc(b, v); }
static void put_u2(cp_buf *b, uint16_t v)
{
    uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    cp_buf_append(b, x, 2);
}
static void put_u4(cp_buf *b, uint32_t v)
{
    uint8_t x[4];
    cp_put_be32(x, v);
    cp_buf_append(b, x, 4);
}
static void put_u8(cp_buf *b, uint64_t v)
{
    uint8_t x[8];
    cp_put_be64(x, v);
    cp_buf_append(b, x, 8);
}
static void put_id(gen *g, cp_buf *b, uint64_t v)
{
    if (g->s->id_size == 4) put_u4(b, (uint32_t)v);
    else put_u8(b, v);
}
/* n bytes of a cheap deterministic pattern (field values, array elements) */
static void put_fill(cp_buf *b, uint64_t n, uint64_t seed)
{
    if (cp_buf_reserve(b, (size_t)n) != CP_OK) return;
    uint8_t *p = b->data + b->len;
    for (uint64_t i = 0; i < n; i++) p[i] = (uint8_t)((seed + i * 7) >> (i & 3));
    b->len += (size_t)n;
}

static void flush(gen *g, int force)
{
    if (g->status || (!force && g->out.len < FLUSH_AT) || !g->out.len) return;
    g->status = g->w(g->ud, g->out.data, g->out.len);
    cp_buf_reset(&g->out);
}

/* A top-level record header; the body follows in out. */
static void rec_head(gen *g, uint8_t tag, uint32_t len)
{
    put_u1(&g->out, tag);
    put_u4(&g->out, 0);
    put_u4(&g->out, len);
    g->lay->records++;
}

static void rec_done(gen *g, size_t start)
{
    g->pos += g->out.len - start;
    flush(g, 0);
}

static uint64_t string_rec(gen *g, const char *text)
{
    uint64_t sid = g->next_str;
    g->next_str += 8;
    size_t start = g->out.len, n = strlen(text);
    rec_head(g, 0x01, (uint32_t)(g->s->id_size + n));
    put_id(g, &g->out, sid);
    cp_buf_append(&g->out, text, n);
    rec_done(g, start);
    return sid;
}

static void load_class(gen *g, uint32_t serial, uint64_t cid, uint64_t name_sid)
{
    size_t start = g->out.len;
    rec_head(g, 0x02, 8 + 2 * g->s->id_size);
    put_u4(&g->out, serial);
    put_id(g, &g->out, cid);
    put_u4(&g->out, 1);
    put_id(g, &g->out, name_sid);
    rec_done(g, start);
}

/* Closes the open segment (if it has anything) as one HEAP_DUMP_SEGMENT record. */
static void seg_close(gen *g)
{
    if (!g->seg.len) return;
    if (!g->lay->segments) g->lay->first_segment = g->pos;
    if (g->first_cd_rel >= 0) g->lay->first_class_dump = g->pos + 9 + (uint64_t)g->first_cd_rel, g->first_cd_rel = -1;
    if (g->first_inst_rel >= 0) g->lay->first_instance = g->pos + 9 + (uint64_t)g->first_inst_rel, g->first_inst_rel = -1;
    g->lay->segments++;
    size_t start = g->out.len;
    rec_head(g, 0x1C, (uint32_t)g->seg.len);
    cp_buf_append(&g->out, g->seg.data, g->seg.len);
    cp_buf_reset(&g->seg);
    rec_done(g, start);
}

/* Called after each sub-record: a full segment is closed (sub-records never straddle). */
static void sub_done(gen *g)
{
    if (g->s->segment_bytes && g->seg.len >= g->s->segment_bytes) seg_close(g);
}

static uint64_t new_obj(gen *g)
{
    uint64_t id = g->next_obj;
    g->next_obj += 8;
    return id;
}

static void roots(gen *g, uint64_t some_obj)
{
    cp_buf *b = &g->seg;
    put_u1(b, 0xFF), put_id(g, b, some_obj);                                    /* ROOT_UNKNOWN */
    put_u1(b, 0x01), put_id(g, b, some_obj), put_id(g, b, 0x77);                /* ROOT_JNI_GLOBAL */
    put_u1(b, 0x02), put_id(g, b, some_obj), put_u4(b, 1), put_u4(b, 0);        /* ROOT_JNI_LOCAL */
    put_u1(b, 0x03), put_id(g, b, some_obj), put_u4(b, 1), put_u4(b, 2);        /* ROOT_JAVA_FRAME */
    put_u1(b, 0x04), put_id(g, b, some_obj), put_u4(b, 1);                      /* ROOT_NATIVE_STACK */
    put_u1(b, 0x05), put_id(g, b, some_obj);                                    /* ROOT_STICKY_CLASS */
    put_u1(b, 0x06), put_id(g, b, some_obj), put_u4(b, 1);                      /* ROOT_THREAD_BLOCK */
    put_u1(b, 0x07), put_id(g, b, some_obj);                                    /* ROOT_MONITOR_USED */
    put_u1(b, 0x08), put_id(g, b, some_obj), put_u4(b, 1), put_u4(b, 1);        /* ROOT_THREAD_OBJECT */
    sub_done(g);
}

static void class_dump(gen *g, uint64_t cid, const hg_class *c, uint64_t field_sid)
{
    static const uint8_t statics[] = {T_OBJ, T_BOOL, T_CHAR, T_FLOAT, T_DOUBLE, T_BYTE, T_SHORT, T_INT, T_LONG};
    cp_buf *b = &g->seg;
    if (g->lay->first_class_dump == 0 && g->first_cd_rel < 0) g->first_cd_rel = (long)b->len;
    put_u1(b, 0x20);
    put_id(g, b, cid);
    put_u4(b, 1);
    for (int i = 0; i < 6; i++) put_id(g, b, 0); /* super, loader, signers, domain, reserved x2 */
    put_u4(b, (uint32_t)field_bytes(g->s, c));
    put_u2(b, 2); /* constant pool: an int and a long */
    put_u2(b, 1), put_u1(b, T_INT), put_u4(b, 42);
    put_u2(b, 2), put_u1(b, T_LONG), put_u8(b, 43);
    put_u2(b, (uint16_t)sizeof statics);
    for (size_t i = 0; i < sizeof statics; i++) {
        put_id(g, b, field_sid);
        put_u1(b, statics[i]);
        put_fill(b, tsize(g->s->id_size, statics[i]), i);
    }
    put_u2(b, (uint16_t)c->nfields);
    for (size_t i = 0; i < c->nfields; i++) put_id(g, b, field_sid), put_u1(b, c->fields[i]);
    sub_done(g);
}

static void instances(gen *g, uint64_t cid, const hg_class *c)
{
    uint64_t fb = field_bytes(g->s, c);
    for (uint64_t k = 0; k < c->instances && !g->status; k++) {
        cp_buf *b = &g->seg;
        if (g->lay->first_instance == 0 && g->first_inst_rel < 0) g->first_inst_rel = (long)b->len;
        put_u1(b, 0x21);
        put_id(g, b, new_obj(g));
        put_u4(b, 1);
        put_id(g, b, cid);
        put_u4(b, (uint32_t)fb);
        put_fill(b, fb, k);
        sub_done(g);
    }
}

static void prim_arrays(gen *g, uint64_t count, uint64_t len, uint8_t type)
{
    for (uint64_t k = 0; k < count && !g->status; k++) {
        cp_buf *b = &g->seg;
        put_u1(b, 0x23);
        put_id(g, b, new_obj(g));
        put_u4(b, 1);
        put_u4(b, (uint32_t)len);
        put_u1(b, type);
        put_fill(b, len * tsize(g->s->id_size, type), k);
        sub_done(g);
    }
}

static void obj_arrays(gen *g, uint64_t array_cid)
{
    for (uint64_t k = 0; k < g->s->obj_arrays && !g->status; k++) {
        cp_buf *b = &g->seg;
        put_u1(b, 0x22);
        put_id(g, b, new_obj(g));
        put_u4(b, 1);
        put_u4(b, (uint32_t)g->s->obj_len);
        put_id(g, b, array_cid);
        for (uint64_t i = 0; i < g->s->obj_len; i++) put_id(g, b, OBJ_BASE + 8 * i);
        sub_done(g);
    }
}

int hg_write(const hg_spec *s, hg_write_fn w, void *ud, hg_layout *layout)
{
    hg_layout lay_local;
    gen g = {.s = s, .w = w, .ud = ud, .next_obj = OBJ_BASE, .next_str = STR_BASE, .first_cd_rel = -1,
             .first_inst_rel = -1};
    g.lay = layout ? layout : &lay_local;
    memset(g.lay, 0, sizeof *g.lay);
    cp_buf_init(&g.out);
    cp_buf_init(&g.seg);
    /* header */
    const char *fmt = s->format ? s->format : "JAVA PROFILE 1.0.2";
    cp_buf_append(&g.out, fmt, strlen(fmt) + 1);
    put_u4(&g.out, s->id_size);
    put_u8(&g.out, (uint64_t)s->time_ms);
    g.pos = g.out.len;
    /* unrelated symbols, as HotSpot writes every symbol it has */
    char text[64];
    for (uint32_t i = 0; i < s->symbols; i++) {
        snprintf(text, sizeof text, i % 2 ? "(Ljava/lang/String;I)V" : "method%u", (unsigned)i);
        string_rec(&g, text);
    }
    uint64_t field_sid = string_rec(&g, "value");
    /* classes: ids first, then names and LOAD_CLASS */
    uint64_t *cids = calloc(s->nclasses + 1, sizeof *cids);
    uint32_t serial = 1;
    for (size_t i = 0; i < s->nclasses; i++) {
        cids[i] = new_obj(&g);
        load_class(&g, serial++, cids[i], string_rec(&g, s->classes[i].name));
    }
    uint64_t array_cid = new_obj(&g);
    if (s->nclasses) {
        snprintf(text, sizeof text, "[L%.50s;", s->classes[0].name);
        load_class(&g, serial++, array_cid, string_rec(&g, text));
    }
    load_class(&g, serial++, new_obj(&g), string_rec(&g, "[I"));
    load_class(&g, serial++, new_obj(&g), string_rec(&g, "[B"));
    /* a record the decoder passes over */
    size_t start = g.out.len;
    rec_head(&g, 0x05, 12);
    put_u4(&g.out, 1), put_u4(&g.out, 1), put_u4(&g.out, 0);
    rec_done(&g, start);
    /* the heap */
    roots(&g, cids[0]);
    for (size_t i = 0; i < s->nclasses; i++) class_dump(&g, cids[i], &s->classes[i], field_sid);
    for (size_t i = 0; i < s->nclasses; i++) instances(&g, cids[i], &s->classes[i]);
    prim_arrays(&g, s->int_arrays, s->int_len, T_INT);
    prim_arrays(&g, s->byte_arrays, s->byte_len, T_BYTE);
    if (s->nclasses) obj_arrays(&g, array_cid);
    seg_close(&g);
    start = g.out.len;
    rec_head(&g, 0x2C, 0);
    rec_done(&g, start);
    flush(&g, 1);
    g.lay->bytes = g.pos;
    free(cids);
    cp_buf_free(&g.out);
    cp_buf_free(&g.seg);
    return g.status;
}

static int to_buf(void *ud, const void *p, size_t n) { return cp_buf_append(ud, p, n); }

int hg_write_buf(const hg_spec *s, cp_buf *out, hg_layout *layout) { return hg_write(s, to_buf, out, layout); }

static void java_name(char *out, size_t cap, const char *internal, const char *suffix)
{
    snprintf(out, cap, "%s%s", internal, suffix);
    for (char *p = out; *p; p++)
        if (*p == '/') *p = '.';
}

size_t hg_expected(const hg_spec *s, hg_expect *out, size_t cap)
{
    size_t n = 0;
    uint64_t hdr = 2 * (uint64_t)s->id_size;
#define ROW(NAME_INTERNAL, SUFFIX, OBJS, EACH)                                                                         \
    do {                                                                                                               \
        if ((OBJS) && n < cap) {                                                                                       \
            java_name(out[n].name, sizeof out[n].name, NAME_INTERNAL, SUFFIX);                                         \
            out[n].objects = (OBJS);                                                                                   \
            out[n].shallow_bytes = (OBJS) * ((EACH) + hdr);                                                            \
        }                                                                                                              \
        if (OBJS) n++;                                                                                                 \
    } while (0)
    for (size_t i = 0; i < s->nclasses; i++)
        ROW(s->classes[i].name, "", s->classes[i].instances, field_bytes(s, &s->classes[i]));
    if (s->nclasses) ROW(s->classes[0].name, "[]", s->obj_arrays, s->obj_len * s->id_size);
    ROW("int", "[]", s->int_arrays, s->int_len * 4);
    ROW("byte", "[]", s->byte_arrays, s->byte_len);
#undef ROW
    return n;
}

void hg_spec_small(hg_spec *s, uint32_t id_size)
{
    static const uint8_t order[] = {T_OBJ, T_LONG, T_INT, T_BOOL, T_DOUBLE};
    static const uint8_t customer[] = {T_OBJ, T_OBJ, T_SHORT, T_CHAR, T_FLOAT};
    static const uint8_t string[] = {T_OBJ, T_INT, T_BYTE, T_BOOL};
    static const hg_class classes[] = {
        {"com/shop/Order", 37, order, sizeof order},
        {"com/shop/Customer", 11, customer, sizeof customer},
        {"java/lang/String", 120, string, sizeof string},
        {"com/shop/Empty$Inner", 5, NULL, 0},
        {"com/shop/Unused", 0, string, sizeof string},
    };
    memset(s, 0, sizeof *s);
    s->id_size = id_size;
    s->time_ms = 1702966654123LL;
    s->classes = classes;
    s->nclasses = sizeof classes / sizeof classes[0];
    s->int_arrays = 13, s->int_len = 7;
    s->byte_arrays = 9, s->byte_len = 100;
    s->obj_arrays = 4, s->obj_len = 3;
    s->segment_bytes = 1500;
    s->symbols = 50;
}
