/* capture.c -- walks recorded agent conversations (protocol.md §6.2). */
#include "cp_wire.h"

#include <stdio.h>

void cp_capture_init_concat(cp_capture *cap, const uint8_t *p, size_t n)
{
    memset(cap, 0, sizeof *cap);
    cap->c = p;
    cap->clen = n;
    cap->concatenated = 1;
}

void cp_capture_init_split(cp_capture *cap, const uint8_t *c, size_t clen, const uint8_t *s, size_t slen)
{
    memset(cap, 0, sizeof *cap);
    cap->c = c;
    cap->clen = clen;
    cap->s = s;
    cap->slen = slen;
}

/* Size of the server's reply to a command (0 for acked or silent commands). An INIT
 * reply is 16 bytes when the handle is null (failure), else 36. */
static size_t reply_size(const cp_cmd *cmd, const uint8_t *p, size_t left)
{
    switch (cmd->type) {
    case CP_CMD_HANDSHAKE:
    case CP_CMD_VERSION_LEGACY:
        return 8;
    case CP_CMD_INIT:
    case CP_CMD_INIT_LEGACY: {
        static const uint8_t zero[16];
        if (left >= 16 && memcmp(p, zero, 16) == 0) return 16;
        return 36;
    }
    default:
        return 0;
    }
}

static int acked(int type) { return type == CP_CMD_DATA || type == CP_CMD_ACK_FLUSH; }

int cp_capture_next(cp_capture *cap, cp_capture_item *it)
{
    memset(it, 0, sizeof *it);
    if (cap->concatenated) /* ack bytes (0x00/0xFF) sit between commands: skip them */
        while (cap->cpos < cap->clen && (cap->c[cap->cpos] == CP_ACK_OK)) cap->cpos++;
    if (cap->cpos >= cap->clen) {
        if (!cap->concatenated && cap->spos != cap->slen) {
            snprintf(cap->err, sizeof cap->err, "server bytes left over: %zu of %zu used", cap->spos, cap->slen);
            return CP_EPROTO;
        }
        return CP_AGAIN;
    }
    size_t used;
    int st = cp_wire_parse(cap->c + cap->cpos, cap->clen - cap->cpos, &it->cmd, &used);
    if (st != CP_OK) {
        snprintf(cap->err, sizeof cap->err, "at offset %zu: %s", cap->cpos + used,
                 st == CP_AGAIN ? "capture ends inside a command" : cp_wire_strerror(st));
        return st == CP_AGAIN ? CP_EPROTO : st;
    }
    it->offset = cap->cpos;
    it->cmd_len = used;
    cap->cpos += used;

    const uint8_t *src = cap->concatenated ? cap->c : cap->s;
    size_t *pos = cap->concatenated ? &cap->cpos : &cap->spos;
    size_t len = cap->concatenated ? cap->clen : cap->slen;
    size_t rs = reply_size(&it->cmd, src + *pos, len - *pos);
    if (rs) {
        if (len - *pos < rs) {
            snprintf(cap->err, sizeof cap->err, "capture ends inside the reply to the command at %zu",
                     (size_t)it->offset);
            return CP_EPROTO;
        }
        it->reply = src + *pos;
        it->reply_len = rs;
        *pos += rs;
    }
    if (cap->concatenated) {
        /* the acks that follow this command in the conversation */
        size_t a = cap->cpos;
        while (a < cap->clen && cap->c[a] == CP_ACK_OK) a++;
        it->acks = cap->c + cap->cpos;
        it->nacks = a - cap->cpos;
        cap->cpos = a;
    } else if (acked(it->cmd.type)) {
        if (cap->spos >= cap->slen) {
            snprintf(cap->err, sizeof cap->err, "no ack byte left for the command at %zu", (size_t)it->offset);
            return CP_EPROTO;
        }
        it->acks = cap->s + cap->spos;
        it->nacks = 1;
        cap->spos++;
    }
    return CP_OK;
}
