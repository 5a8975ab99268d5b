/* cp_wire.h -- the agent's command layer (protocol.md §1.2, §3): bytes <-> commands.
 *
 * cp_wire_parse() is zero-copy and incremental: give it whatever bytes are buffered; it
 * either returns one whole command (fields alias the input), CP_AGAIN (need more bytes;
 * nothing consumed), or an error (the connection must be failed). A command is at most
 * CP_WIRE_MAX_CMD bytes, so a connection never needs to buffer more than that.
 */
#ifndef CP_WIRE_H
#define CP_WIRE_H

#include "common/cp_common.h"

enum {
    CP_CMD_INIT_LEGACY = 0x01,
    CP_CMD_DATA = 0x02,
    CP_CMD_CLOSE = 0x04,
    CP_CMD_VERSION_LEGACY = 0x08,
    CP_CMD_ACK_FLUSH = 0x11,
    CP_CMD_REPORT = 0x13,
    CP_CMD_HANDSHAKE = 0x14,
    CP_CMD_INIT = 0x15,
};

#define CP_WIRE_MAX_FIELD 1024
/* legacy INIT: 1 + 4 strings + 2 ints */
#define CP_WIRE_MAX_CMD (1 + 4 * (4 + CP_WIRE_MAX_FIELD) + 8)

#define CP_PROTOCOL_V1 100505
#define CP_PROTOCOL_V2 100605
#define CP_PROTOCOL_V3 100705
#define CP_PROTOCOL_BLACKLISTED 88888888

#define CP_ACK_OK 0x00
#define CP_ACK_ERROR 0xFF

/* Extra parse errors beyond cp_common's. */
enum {
    CP_WIRE_EUNKNOWN = -100, /* unknown command byte */
    CP_WIRE_EFIELD = -101,   /* field length < 0 or > 1024 */
};

typedef struct cp_field {
    const uint8_t *p;
    uint32_t n;
} cp_field;

typedef struct cp_cmd {
    int type; /* CP_CMD_* */
    union {
        struct {
            int64_t version;
            cp_field pod, service, ns;
        } hs;
        struct {
            cp_field ns, service, pod; /* legacy 0x01 only */
            cp_field stream;
            int32_t seq;
            int32_t reset;
        } init;
        struct {
            const uint8_t *handle; /* 16 bytes */
            cp_field payload;
        } data;
        struct {
            const uint8_t *id; /* 16 bytes */
            uint8_t success;
        } report;
    } u;
} cp_cmd;

/* Parses one command from p[0..n). On CP_OK sets *used to its length. On error *used
 * is the offset where the problem was found. */
int cp_wire_parse(const uint8_t *p, size_t n, cp_cmd *cmd, size_t *used);
const char *cp_wire_cmd_name(int type);     /* "GET_PROTOCOL_VERSION_V2", ... */
const char *cp_wire_strerror(int status);    /* covers CP_WIRE_E* and cp_strstatus */

/* Reply encoders; they return the number of bytes written. */
size_t cp_wire_put_version(uint8_t out[8], int64_t version);
size_t cp_wire_put_init_ok(uint8_t out[36], const uint8_t handle[16], int64_t rotation_period_ms,
                           int64_t rotation_size, int32_t seq);
size_t cp_wire_put_init_fail(uint8_t out[16]);

/* Request encoders (used by the emulator and the tests' replay client). */
int cp_wire_put_handshake(cp_buf *b, int64_t version, const char *pod, const char *service, const char *ns);
int cp_wire_put_init(cp_buf *b, const char *stream, int32_t seq, int32_t reset);
int cp_wire_put_data(cp_buf *b, const uint8_t handle[16], const uint8_t *p, uint32_t n);

/* ---- capture files (protocol.md §6.2) -------------------------------------------------- */

/* One command of a capture, with the server's bytes that answer it. */
typedef struct cp_capture_item {
    uint64_t offset;          /* offset of the command byte in the client stream/capture */
    cp_cmd cmd;
    size_t cmd_len;
    const uint8_t *reply;     /* handshake (8), INIT (36 or 16) reply bytes, or NULL */
    size_t reply_len;
    const uint8_t *acks;      /* ack bytes that follow this command in the capture */
    size_t nacks;
} cp_capture_item;

typedef struct cp_capture {
    const uint8_t *c; size_t clen; size_t cpos;  /* client bytes (or the concatenated file) */
    const uint8_t *s; size_t slen; size_t spos;  /* server bytes, NULL for concatenated */
    int concatenated;
    int pending_acks;       /* split mode: acks owed for DATA/ACK_FLUSH not yet consumed */
    char err[160];
} cp_capture;

/* Concatenated conversation (parser.test.protocol): both directions in one file. */
void cp_capture_init_concat(cp_capture *cap, const uint8_t *p, size_t n);
/* Split directions (agent-v2/): client-to-server and server-to-client files. */
void cp_capture_init_split(cp_capture *cap, const uint8_t *c, size_t clen, const uint8_t *s, size_t slen);
/* CP_OK with the next item, CP_AGAIN at a clean end, or an error (cap->err says why). */
int cp_capture_next(cp_capture *cap, cp_capture_item *it);

#endif
