/* fuzz_wire.c -- libFuzzer target: the command parser, cp_wire_parse().
 *
 * The input is what an agent connection would send. It is parsed the way a connection
 * does: parse, advance by `used`, stop at the first error or CP_AGAIN. For every
 * command the target checks:
 *   - `used` is in 1..min(left, CP_WIRE_MAX_CMD) and every field lies inside the command;
 *   - incrementality: each shorter prefix of the command gives CP_AGAIN, and the
 *     command cut exactly at its end parses to the same command;
 *   - the request encoders (cp_wire_put_*) rebuild exactly the parsed bytes.
 * For the final error or CP_AGAIN, every prefix gives CP_AGAIN or the same result.
 */
#include "fuzz_common.h"
#include "wire/cp_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_field(const char *name, cp_field f, const uint8_t *base, size_t used)
{
    FZ_CHECK(f.n <= CP_WIRE_MAX_FIELD, "%s field of %u bytes", name, f.n);
    if (f.n == 0) return;
    FZ_CHECK(f.p >= base && f.p + f.n <= base + used, "%s field outside its command", name);
}

/* Copies a field into a C string; returns 0 if it holds a NUL (the encoders take C strings). */
static int cstr(cp_field f, char out[CP_WIRE_MAX_FIELD + 1])
{
    if (f.n && memchr(f.p, 0, f.n)) return 0;
    if (f.n) memcpy(out, f.p, f.n);
    out[f.n] = '\0';
    return 1;
}

/* Re-encodes a parsed request and compares with the bytes it came from. */
static void check_roundtrip(const cp_cmd *cmd, const uint8_t *p, size_t used)
{
    static char a[CP_WIRE_MAX_FIELD + 1], b[CP_WIRE_MAX_FIELD + 1], c[CP_WIRE_MAX_FIELD + 1];
    cp_buf out;
    cp_buf_init(&out);
    int st = CP_EINVAL; /* no encoder for this command */
    switch (cmd->type) {
    case CP_CMD_HANDSHAKE:
        if (cstr(cmd->u.hs.pod, a) && cstr(cmd->u.hs.service, b) && cstr(cmd->u.hs.ns, c))
            st = cp_wire_put_handshake(&out, cmd->u.hs.version, a, b, c);
        break;
    case CP_CMD_INIT:
        if (cstr(cmd->u.init.stream, a)) st = cp_wire_put_init(&out, a, cmd->u.init.seq, cmd->u.init.reset);
        break;
    case CP_CMD_DATA:
        st = cp_wire_put_data(&out, cmd->u.data.handle, cmd->u.data.payload.p, cmd->u.data.payload.n);
        break;
    default:
        break;
    }
    if (st != CP_EINVAL) {
        FZ_CHECK(st == CP_OK, "encoder for %s failed: %d", cp_wire_cmd_name(cmd->type), st);
        FZ_CHECK(out.len == used && memcmp(out.data, p, used) == 0,
                 "%s re-encodes to %zu bytes that differ from the %zu parsed", cp_wire_cmd_name(cmd->type), out.len,
                 used);
    }
    cp_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t pos = 0, ncmds = 0;
    for (;;) {
        const uint8_t *p = data + pos;
        size_t left = size - pos;
        cp_cmd cmd, again;
        size_t used = 0, used2 = 0;
        int st = cp_wire_parse(p, left, &cmd, &used);
        FZ_CHECK(cp_wire_strerror(st) != NULL, "no text for status %d", st);
        if (st == CP_OK) {
            FZ_CHECK(used >= 1 && used <= left, "command of %zu bytes with %zu left", used, left);
            FZ_CHECK(used <= CP_WIRE_MAX_CMD, "command of %zu bytes > CP_WIRE_MAX_CMD", used);
            FZ_CHECK(cmd.type == p[0], "type %d for command byte 0x%02x", cmd.type, p[0]);
            FZ_CHECK(strcmp(cp_wire_cmd_name(cmd.type), "UNKNOWN") != 0, "parsed a command with no name");
            switch (cmd.type) {
            case CP_CMD_HANDSHAKE:
                check_field("pod", cmd.u.hs.pod, p, used);
                check_field("service", cmd.u.hs.service, p, used);
                check_field("namespace", cmd.u.hs.ns, p, used);
                break;
            case CP_CMD_INIT_LEGACY:
            case CP_CMD_INIT:
                check_field("ns", cmd.u.init.ns, p, used);
                check_field("service", cmd.u.init.service, p, used);
                check_field("pod", cmd.u.init.pod, p, used);
                check_field("stream", cmd.u.init.stream, p, used);
                break;
            case CP_CMD_DATA:
                FZ_CHECK(cmd.u.data.handle > p && cmd.u.data.handle + 16 <= p + used, "handle outside the command");
                check_field("payload", cmd.u.data.payload, p, used);
                break;
            case CP_CMD_REPORT:
                FZ_CHECK(cmd.u.report.id > p && cmd.u.report.id + 16 <= p + used, "id outside the command");
                break;
            default:
                break;
            }
            /* incremental: a strict prefix is never a command, nor an error. Every prefix
             * of the first commands and short ones; a sample (always with used-1) later,
             * so that inputs of many long commands stay fast. */
            int all = ncmds < 4 || used <= 64;
            uint64_t rng = pos + 1;
            for (size_t k = 0; k < (all ? used : 17); k++) {
                size_t m = all ? k : k == 0 ? used - 1 : (size_t)(fz_rand(&rng) % used);
                int st2 = cp_wire_parse(p, m, &again, &used2);
                FZ_CHECK(st2 == CP_AGAIN, "prefix %zu of a %zu-byte %s gives %d", m, used, cp_wire_cmd_name(cmd.type),
                         st2);
            }
            ncmds++;
            /* cut exactly at its end: the same command */
            int st2 = cp_wire_parse(p, used, &again, &used2);
            FZ_CHECK(st2 == CP_OK && used2 == used && same_cmd(&cmd, &again),
                     "command cut at its end parses differently (%d, %zu)", st2, used2);
            check_roundtrip(&cmd, p, used);
            pos += used;
            continue;
        }
        /* the connection stops here: incomplete (AGAIN) or failed */
        FZ_CHECK(st == CP_AGAIN || st == CP_WIRE_EUNKNOWN || st == CP_WIRE_EFIELD,
                 "unexpected status %d from cp_wire_parse", st);
        if (st == CP_AGAIN) FZ_CHECK(left < CP_WIRE_MAX_CMD, "CP_AGAIN with %zu bytes buffered (max command %d)", left,
                                     (int)CP_WIRE_MAX_CMD);
        if (st < 0) FZ_CHECK(used < left, "error offset %zu with %zu bytes", used, left);
        /* (past the failing offset plus one field length, longer prefixes add nothing) */
        size_t upto = st == CP_AGAIN ? left : (used + 8 < left ? used + 8 : left);
        for (size_t m = 0; m < upto; m++) {
            int st2 = cp_wire_parse(p, m, &again, &used2);
            FZ_CHECK(st2 == CP_AGAIN || (st2 == st && used2 == used),
                     "prefix %zu gives %d (used %zu), the whole gives %d (used %zu)", m, st2, used2, st, used);
        }
        break;
    }
    return 0;
}
