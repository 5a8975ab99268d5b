/* wire.c -- command parser and reply/request encoders (protocol.md §1.2, §3). */
#include "cp_wire.h"

/* Reads a command-layer field: int32 BE length (0..1024) then the bytes. */
static int rd_field(cp_rd *r, cp_field *f)
{
    int32_t n;
    int st = cp_rd_i32(r, &n);
    if (st != CP_OK) return st;
    if (n < 0 || n > CP_WIRE_MAX_FIELD) {
        r->pos -= 4;
        return CP_WIRE_EFIELD;
    }
    if (cp_rd_left(r) < (size_t)n) return CP_AGAIN;
    f->p = r->p + r->pos;
    f->n = (uint32_t)n;
    r->pos += (size_t)n;
    return CP_OK;
}

static int rd_fixed(cp_rd *r, size_t n, const uint8_t **p)
{
    if (cp_rd_left(r) < n) return CP_AGAIN;
    *p = r->p + r->pos;
    r->pos += n;
    return CP_OK;
}

#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        int st_ = (x);                                                                                                 \
        if (st_ != CP_OK) {                                                                                            \
            *used = r.pos;                                                                                             \
            return st_;                                                                                                \
        }                                                                                                              \
    } while (0)

int cp_wire_parse(const uint8_t *p, size_t n, cp_cmd *cmd, size_t *used)
{
    cp_rd r;
    cp_rd_init(&r, p, n);
    *used = 0;
    uint8_t type;
    if (cp_rd_u8(&r, &type) != CP_OK) return CP_AGAIN;
    memset(cmd, 0, sizeof *cmd);
    cmd->type = type;
    switch (type) {
    case CP_CMD_HANDSHAKE:
        TRY(cp_rd_i64(&r, &cmd->u.hs.version));
        TRY(rd_field(&r, &cmd->u.hs.pod));
        TRY(rd_field(&r, &cmd->u.hs.service));
        TRY(rd_field(&r, &cmd->u.hs.ns));
        break;
    case CP_CMD_INIT_LEGACY:
        TRY(rd_field(&r, &cmd->u.init.ns));
        TRY(rd_field(&r, &cmd->u.init.service));
        TRY(rd_field(&r, &cmd->u.init.pod));
        /* the reference collector then reads an INIT_STREAM_V2 body */
        __attribute__((fallthrough));
    case CP_CMD_INIT:
        TRY(rd_field(&r, &cmd->u.init.stream));
        TRY(cp_rd_i32(&r, &cmd->u.init.seq));
        TRY(cp_rd_i32(&r, &cmd->u.init.reset));
        break;
    case CP_CMD_DATA:
        TRY(rd_fixed(&r, 16, &cmd->u.data.handle));
        TRY(rd_field(&r, &cmd->u.data.payload));
        break;
    case CP_CMD_REPORT:
        TRY(rd_fixed(&r, 16, &cmd->u.report.id));
        TRY(cp_rd_u8(&r, &cmd->u.report.success));
        break;
    case CP_CMD_ACK_FLUSH:
    case CP_CMD_CLOSE:
    case CP_CMD_VERSION_LEGACY:
        break;
    default:
        return CP_WIRE_EUNKNOWN;
    }
    *used = r.pos;
    return CP_OK;
}

const char *cp_wire_cmd_name(int type)
{
    switch (type) {
    case CP_CMD_INIT_LEGACY: return "INIT_STREAM";
    case CP_CMD_DATA: return "RCV_DATA";
    case CP_CMD_CLOSE: return "CLOSE";
    case CP_CMD_VERSION_LEGACY: return "GET_PROTOCOL_VERSION";
    case CP_CMD_ACK_FLUSH: return "REQUEST_ACK_FLUSH";
    case CP_CMD_REPORT: return "REPORT_COMMAND_RESULT";
    case CP_CMD_HANDSHAKE: return "GET_PROTOCOL_VERSION_V2";
    case CP_CMD_INIT: return "INIT_STREAM_V2";
    default: return "UNKNOWN";
    }
}

const char *cp_wire_strerror(int status)
{
    switch (status) {
    case CP_WIRE_EUNKNOWN: return "unknown command byte";
    case CP_WIRE_EFIELD: return "field length out of range (0..1024)";
    default: return cp_strstatus(status);
    }
}

size_t cp_wire_put_version(uint8_t out[8], int64_t version)
{
    cp_put_be64(out, (uint64_t)version);
    return 8;
}

size_t cp_wire_put_init_ok(uint8_t out[36], const uint8_t handle[16], int64_t rotation_period_ms,
                           int64_t rotation_size, int32_t seq)
{
    memcpy(out, handle, 16);
    cp_put_be64(out + 16, (uint64_t)rotation_period_ms);
    cp_put_be64(out + 24, (uint64_t)rotation_size);
    cp_put_be32(out + 32, (uint32_t)seq);
    return 36;
}

size_t cp_wire_put_init_fail(uint8_t out[16])
{
    memset(out, 0, 16);
    return 16;
}

static int put_field(cp_buf *b, const void *p, size_t n)
{
    if (n > CP_WIRE_MAX_FIELD) return CP_ELIMIT;
    uint8_t len[4];
    cp_put_be32(len, (uint32_t)n);
    if (cp_buf_append(b, len, 4) != CP_OK || cp_buf_append(b, p, n) != CP_OK) return CP_ENOMEM;
    return CP_OK;
}

static int put_i32(cp_buf *b, int32_t v)
{
    uint8_t x[4];
    cp_put_be32(x, (uint32_t)v);
    return cp_buf_append(b, x, 4);
}

int cp_wire_put_handshake(cp_buf *b, int64_t version, const char *pod, const char *service, const char *ns)
{
    uint8_t x[9];
    x[0] = CP_CMD_HANDSHAKE;
    cp_put_be64(x + 1, (uint64_t)version);
    int st = cp_buf_append(b, x, 9);
    if (st == CP_OK) st = put_field(b, pod, strlen(pod));
    if (st == CP_OK) st = put_field(b, service, strlen(service));
    if (st == CP_OK) st = put_field(b, ns, strlen(ns));
    return st;
}

int cp_wire_put_init(cp_buf *b, const char *stream, int32_t seq, int32_t reset)
{
    int st = cp_buf_putc(b, CP_CMD_INIT);
    if (st == CP_OK) st = put_field(b, stream, strlen(stream));
    if (st == CP_OK) st = put_i32(b, seq);
    if (st == CP_OK) st = put_i32(b, reset);
    return st;
}

int cp_wire_put_data(cp_buf *b, const uint8_t handle[16], const uint8_t *p, uint32_t n)
{
    int st = cp_buf_putc(b, CP_CMD_DATA);
    if (st == CP_OK) st = cp_buf_append(b, handle, 16);
    if (st == CP_OK) st = put_field(b, p, n);
    return st;
}
