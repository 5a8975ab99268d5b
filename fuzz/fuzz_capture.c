/* fuzz_capture.c -- libFuzzer target: the capture walker (cp_capture_*, protocol.md §6.2).
 *
 * Input layout (byte 0 picks the mode):
 *   byte 0 even: concatenated capture = data[1..]            (like parser.test.protocol)
 *   byte 0 odd:  split capture: data[1..2] = server length S (big-endian, clipped),
 *                server bytes = data[3 .. 3+S), client bytes = the rest   (like agent-v2/)
 *
 * Checks for every item: the command lies inside the client bytes, re-parses to the
 * same command, offsets grow, the reply and acks lie inside their buffer (and are read,
 * so ASan sees any overrun), concatenated acks are 0x00 bytes, split acks are one per
 * RCV_DATA / REQUEST_ACK_FLUSH, and the server bytes consumed add up. A clean end
 * (CP_AGAIN) means all bytes were used. A split capture that walks cleanly with all-OK
 * acks is also rebuilt as a concatenated one, which must walk to the same items.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ITEMS 8192

/* What the cross-check compares: one walked item, without its capture offsets. */
typedef struct item_sum {
    int type;
    size_t cmd_len;
    size_t reply_len;
    size_t nacks;
    uint64_t cmd_off;   /* in the client bytes */
    uint64_t reply_off; /* in the server bytes (split) */
    uint64_t ack_off;   /* in the server bytes (split) */
} item_sum;

static item_sum items[MAX_ITEMS];

static int inside(const uint8_t *p, size_t n, const uint8_t *base, size_t len)
{
    return n == 0 || (p != NULL && p >= base && p + n <= base + len);
}

/* Walks a capture; returns the final status and fills items[] (up to MAX_ITEMS). */
static int walk(cp_capture *cap, size_t *nitems)
{
    int split = !cap->concatenated;
    size_t server_used = 0;
    size_t last_end = 0;
    size_t n = 0;
    uint64_t h = 0;
    int st;
    for (;;) {
        size_t cpos_before = cap->cpos;
        cp_capture_item it;
        st = cp_capture_next(cap, &it);
        FZ_CHECK(strnlen(cap->err, sizeof cap->err) < sizeof cap->err, "error text not terminated");
        if (st != CP_OK) break;
        FZ_CHECK(cap->cpos > cpos_before, "capture_next made no progress at %zu", cpos_before);
        FZ_CHECK(it.offset >= last_end && it.cmd_len >= 1 && it.offset + it.cmd_len <= cap->clen,
                 "command [%llu, +%zu) outside the client bytes (%zu)", (unsigned long long)it.offset, it.cmd_len,
                 cap->clen);
        cp_cmd again;
        size_t used;
        int st2 = cp_wire_parse(cap->c + it.offset, cap->clen - it.offset, &again, &used);
        FZ_CHECK(st2 == CP_OK && used == it.cmd_len && same_cmd(&it.cmd, &again),
                 "item at %llu does not re-parse to the same command", (unsigned long long)it.offset);
        const uint8_t *rbase = split ? cap->s : cap->c;
        size_t rlen = split ? cap->slen : cap->clen;
        FZ_CHECK(inside(it.reply, it.reply_len, rbase, rlen), "reply outside its buffer");
        FZ_CHECK(it.reply_len == 0 || it.reply_len == 8 || it.reply_len == 16 || it.reply_len == 36,
                 "reply of %zu bytes", it.reply_len);
        FZ_CHECK(inside(it.acks, it.nacks, rbase, rlen), "acks outside their buffer");
        if (it.reply_len) fz_hash(&h, it.reply, it.reply_len);
        if (it.nacks) fz_hash(&h, it.acks, it.nacks);
        if (split) {
            int acked = it.cmd.type == CP_CMD_DATA || it.cmd.type == CP_CMD_ACK_FLUSH;
            FZ_CHECK(it.nacks == (size_t)acked, "%zu acks for a %s", it.nacks, cp_wire_cmd_name(it.cmd.type));
            server_used += it.reply_len + it.nacks;
            FZ_CHECK(server_used == cap->spos, "server bytes: items account for %zu, walker at %zu", server_used,
                     cap->spos);
        } else {
            for (size_t i = 0; i < it.nacks; i++) FZ_CHECK(it.acks[i] == CP_ACK_OK, "concatenated ack byte 0x%02x", it.acks[i]);
        }
        last_end = (size_t)it.offset + it.cmd_len;
        if (n < MAX_ITEMS) {
            items[n].type = it.cmd.type;
            items[n].cmd_len = it.cmd_len;
            items[n].reply_len = it.reply_len;
            items[n].nacks = it.nacks;
            items[n].cmd_off = it.offset;
            items[n].reply_off = it.reply ? (uint64_t)(it.reply - rbase) : 0;
            items[n].ack_off = it.acks ? (uint64_t)(it.acks - rbase) : 0;
        }
        n++;
        FZ_CHECK(n <= cap->clen, "more items than client bytes");
    }
    if (st == CP_AGAIN) {
        FZ_CHECK(cap->cpos == cap->clen, "clean end with client bytes left (%zu of %zu)", cap->cpos, cap->clen);
        if (split) FZ_CHECK(cap->spos == cap->slen, "clean end with server bytes left");
    } else {
        FZ_CHECK(st < 0, "cp_capture_next returned %d", st);
        FZ_CHECK(cap->err[0] != '\0', "failed (%d) without an error text", st);
    }
    *nitems = n;
    return st;
}

/* Rebuilds a cleanly walked split capture as one concatenated stream: each command,
 * then its reply, then its ack. Returns 0 if an ack is not 0x00 (not representable). */
static int to_concat(const uint8_t *c, const uint8_t *s, size_t n, cp_buf *out)
{
    for (size_t i = 0; i < n; i++) {
        const item_sum *x = &items[i];
        for (size_t k = 0; k < x->nacks; k++)
            if (s[x->ack_off + k] != CP_ACK_OK) return 0;
        cp_buf_append(out, c + x->cmd_off, x->cmd_len);
        if (x->reply_len) cp_buf_append(out, s + x->reply_off, x->reply_len);
        for (size_t k = 0; k < x->nacks; k++) cp_buf_putc(out, CP_ACK_OK);
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    cp_capture cap;
    size_t n;
    if ((data[0] & 1) == 0) {
        cp_capture_init_concat(&cap, data + 1, size - 1);
        walk(&cap, &n);
        return 0;
    }
    size_t slen = size >= 3 ? ((size_t)data[1] << 8 | data[2]) : 0;
    size_t hdr = size >= 3 ? 3 : size;
    if (slen > size - hdr) slen = size - hdr;
    const uint8_t *s = data + hdr;
    const uint8_t *c = s + slen;
    size_t clen = size - hdr - slen;
    cp_capture_init_split(&cap, c, clen, s, slen);
    int st = walk(&cap, &n);
    if (st != CP_AGAIN || n > MAX_ITEMS) return 0;

    /* the same conversation, concatenated, must walk to the same commands */
    cp_buf cat;
    cp_buf_init(&cat);
    if (to_concat(c, s, n, &cat)) {
        item_sum *split_items = malloc(n * sizeof *split_items + 1);
        FZ_CHECK(split_items != NULL, "out of memory");
        memcpy(split_items, items, n * sizeof *split_items);
        cp_capture cc;
        size_t m;
        cp_capture_init_concat(&cc, cat.data, cat.len);
        int st2 = walk(&cc, &m);
        FZ_CHECK(st2 == CP_AGAIN && m == n, "split capture: %zu items; concatenated: %zu items (status %d: %s)", n, m,
                 st2, cc.err);
        for (size_t i = 0; i < n; i++)
            FZ_CHECK(items[i].type == split_items[i].type && items[i].cmd_len == split_items[i].cmd_len &&
                         items[i].reply_len == split_items[i].reply_len && items[i].nacks == split_items[i].nacks,
                     "item %zu differs between split and concatenated walks", i);
        free(split_items);
    }
    cp_buf_free(&cat);
    return 0;
}
