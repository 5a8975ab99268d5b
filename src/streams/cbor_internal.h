/* cbor_internal.h -- the generic CBOR layer under cbortrace.c (RFC 8949), private to
 * src/streams/.
 *
 * Two halves. The scanner reads a stream of bytes that may stop anywhere and says where
 * one top-level data item ends, checking that it is well-formed and within the limits on
 * the way; it keeps its place between calls, so an item fed in tiny slices is scanned once
 * (not once per slice). The readers then walk an item the scanner accepted: they are
 * bounds-checked anyway, so a caller's mistake is an error, never a read past the end.
 * Nothing here recurses: nesting lives in an explicit stack bounded by max_depth. */
#ifndef CP_CBOR_INTERNAL_H
#define CP_CBOR_INTERNAL_H

#include "common/cp_common.h"

#include <stdint.h>

/* Major types (RFC 8949 §3.1). */
enum {
    CP_CBOR_UINT = 0,
    CP_CBOR_NINT = 1,
    CP_CBOR_BYTES = 2,
    CP_CBOR_TEXT = 3,
    CP_CBOR_ARRAY = 4,
    CP_CBOR_MAP = 5,
    CP_CBOR_TAG = 6,
    CP_CBOR_SIMPLE = 7,
};
#define CP_CBOR_BREAK 0xffu

/* One open container, tag or indefinite-length string of the item being scanned. */
typedef struct cp_cbt_level {
    uint64_t left;          /* definite: items still to come; indefinite map: items seen;
                               indefinite string: bytes so far */
    uint8_t kind;
} cp_cbt_level;

typedef struct cp_cbt_scan {
    uint64_t max_item, max_string;
    uint32_t max_depth;
    cp_cbt_level *stk;      /* at most max_depth levels */
    size_t cap, depth;
    uint64_t pos;           /* offset of the next head from the item's first byte; after a
                               string head it may pass the bytes present (payload to come) */
    int done;               /* the item's structure is complete (its bytes may not all be here) */
    uint64_t err_pos;       /* on error: offset in the item the error is about */
    char why[112];          /* on error: what was wrong (no offset) */
} cp_cbt_scan;

void cp_cbt_scan_init(cp_cbt_scan *s, uint64_t max_item, uint64_t max_string, uint32_t max_depth);
void cp_cbt_scan_free(cp_cbt_scan *s);
/* Forgets the current item (keeps the stack's memory). */
void cp_cbt_scan_reset(cp_cbt_scan *s);
/* Continues scanning p[0..len): the bytes of one item present so far, from its first byte
 * (the same bytes as at the last call, maybe more). CP_OK: the item is complete and
 * s->pos is its length (bytes after it are not looked at); CP_AGAIN: more bytes are
 * needed; CP_EPROTO (not well-formed), CP_ELIMIT (past a limit) or CP_ENOMEM with
 * s->why and s->err_pos set. Never reads past len. */
int cp_cbt_scan_step(cp_cbt_scan *s, const uint8_t *p, size_t len);

/* "array", "text string", ... for messages. */
const char *cp_cbt_major_name(uint8_t major);

/* ---- readers over an item the scanner accepted ---------------------------------------- */

typedef struct cp_cbt_head {
    uint8_t major;
    uint8_t indef;          /* additional information 31 */
    uint64_t val;           /* value, length, count, tag number, simple value or float bits */
    uint8_t ai;             /* additional information (floats: 25 half, 26 single, 27 double) */
    size_t off;             /* offset of the initial byte */
} cp_cbt_head;

/* Reads one head at r->pos (a break reads as major 7 with indef set). CP_OK or CP_EPROTO. */
int cp_cbt_head_read(cp_rd *r, cp_cbt_head *h);
static inline int cp_cbt_at_break(const cp_rd *r) { return r->pos < r->len && r->p[r->pos] == CP_CBOR_BREAK; }
/* Appends the raw bytes of the string whose head is h (chunks joined if indefinite) and
 * moves past it. CP_OK, CP_EPROTO or CP_ENOMEM. */
int cp_cbt_str_append(cp_rd *r, const cp_cbt_head *h, cp_buf *out);
/* Moves past one whole item at r->pos, scanning with s (its limits bound the item).
 * CP_OK, CP_EPROTO or CP_ENOMEM. */
int cp_cbt_skip(cp_rd *r, cp_cbt_scan *s);

/* The value of an IEEE 754 half-precision float. */
double cp_cbt_half(uint16_t bits);
/* Writes the shortest decimal text that reads back as the float of head h (major 7, ai
 * 25..27) at its own precision ("1.5", "0.1", "1e+300", "-0"); NaN and infinities as
 * "NaN", "Infinity", "-Infinity". Returns the length. out must hold 32 bytes. */
size_t cp_cbt_float_text(const cp_cbt_head *h, char out[32]);

#endif
