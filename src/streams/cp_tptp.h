/* cp_tptp.h -- the TPTP binary trace (.trcbin) and its XML form (.trcxml): pure,
 * incremental decoders (bytes in, messages out) and encoders (messages in, bytes out).
 *
 * The contract is ../shared/spec/foreign-formats.md §2 (it wins over seed 001). One
 * message model serves both forms: a message is its id and its attributes in the order
 * of the spec's tables (cp_tptp_def_of), each a typed value. Strings are UTF-8 whatever
 * the file's encoding; `time` attributes are ticks (long) in both forms: the XML decoder
 * turns decimal seconds into ticks at the frequency in effect (message 2, else 10^9),
 * the XML encoder does the reverse.
 *
 * Decoders are fed bytes in any slicing and deliver each message once it is complete and
 * checked, in file order; a file cut at any byte boundary gives exactly the messages of
 * the whole file up to the cut. Nothing is allocated by a length from the file before the
 * length is checked against the limits. No I/O, no clocks, no globals. Pointers in a
 * delivered message (strings, arrays) are valid only during the callback.
 */
#ifndef CP_TPTP_H
#define CP_TPTP_H

#include "common/cp_common.h"

#include <stdint.h>

/* ---- the message schema (spec §2.3, §2.4) ------------------------------------------- */

typedef enum cp_tptp_type {
    CP_TPTP_BYTE,      /* 1 byte, signed */
    CP_TPTP_SHORT,     /* 2 */
    CP_TPTP_INT,       /* 4 */
    CP_TPTP_LONG,      /* 8 */
    CP_TPTP_DOUBLE,    /* 8, IEEE 754 */
    CP_TPTP_STRING,    /* bytes up to a NUL, in the stream's encoding */
    CP_TPTP_STRINGS,   /* String[]: as many strings as the last INT attribute before it */
    CP_TPTP_LONGS,     /* Long[]: likewise (in 1032..1035 both follow stackDepth) */
} cp_tptp_type;

typedef struct cp_tptp_attr_def {
    const char *name;   /* the XML attribute name */
    cp_tptp_type type;
} cp_tptp_attr_def;

/* System messages (ids 0..1000) and data messages (1001..32767). */
enum {
    CP_TPTP_ENCODING = 1,          /* string name */
    CP_TPTP_FREQUENCY = 2,         /* long ticksPerSecond */
    CP_TPTP_NODE = 1001,
    CP_TPTP_PROCESS_CREATE = 1002,
    CP_TPTP_AGENT_CREATE = 1003,
    CP_TPTP_AGENT_DESTROY = 1004,
    CP_TPTP_TRACE_START = 1005,
    CP_TPTP_TRACE_END = 1006,
    CP_TPTP_FILTER = 1007,
    CP_TPTP_OPTION = 1008,
    CP_TPTP_THREAD_START = 1009,
    CP_TPTP_THREAD_END = 1010,
    CP_TPTP_CLASS_DEF = 1011,
    CP_TPTP_METHOD_DEF = 1012,
    CP_TPTP_OBJ_ALLOC = 1014,
    CP_TPTP_METHOD_ENTRY = 1015,
    CP_TPTP_METHOD_EXIT = 1016,
    CP_TPTP_GC_START = 1023,
    CP_TPTP_OBJ_FREE = 1024,
    CP_TPTP_GC_FINISH = 1027,
    CP_TPTP_RUNTIME_INIT_DONE = 1030,
    CP_TPTP_RUNTIME_SHUTDOWN = 1031,
    CP_TPTP_MON_WAIT = 1032,
    CP_TPTP_MON_WAITED = 1033,
    CP_TPTP_MON_CONTENDED_ENTER = 1034,
    CP_TPTP_MON_CONTENDED_ENTERED = 1035,
    CP_TPTP_AGG_METHOD_ENTRY = 1036,
    CP_TPTP_AGG_METHOD_EXIT = 1037,
    CP_TPTP_HEAP_DUMP_DEF = 1038,
    CP_TPTP_GC_ROOT = 1039,
    CP_TPTP_OBJ_REFERENCE = 1040,
    CP_TPTP_CUSTOM = 1041,         /* string body: the XML element's text */
};

#define CP_TPTP_MAX_ATTRS 20 /* classDef has 19 */

typedef struct cp_tptp_def {
    uint16_t id;
    const char *element;            /* XML element name ("methodEntry", "encoding", ...) */
    size_t nattrs;
    const cp_tptp_attr_def *attrs;  /* in file order */
} cp_tptp_def;

/* NULL for an unknown id / element name. */
const cp_tptp_def *cp_tptp_def_of(uint16_t id);
const cp_tptp_def *cp_tptp_def_by_element(const char *name, size_t len);
/* Index of the named attribute in def->attrs, or -1. */
int cp_tptp_attr_index(const cp_tptp_def *def, const char *name);

/* ---- a decoded message ------------------------------------------------------------- */

typedef struct cp_tptp_text {
    const char *p;      /* UTF-8, not NUL-terminated */
    size_t len;
} cp_tptp_text;

typedef struct cp_tptp_value {
    int64_t i;                 /* BYTE, SHORT, INT, LONG (sign-extended) */
    double d;                  /* DOUBLE */
    cp_tptp_text s;            /* STRING */
    uint32_t n;                /* STRINGS, LONGS: element count */
    const cp_tptp_text *strs;  /* STRINGS */
    const int64_t *longs;      /* LONGS */
} cp_tptp_value;

typedef struct cp_tptp_msg {
    uint16_t id;
    const cp_tptp_def *def;    /* NULL: an unknown message (skipped; only id and size are known) */
    uint64_t offset;           /* byte offset of the message (.trcbin: its id field; .trcxml:
                                * the element's start tag) in the input */
    uint32_t size;             /* .trcbin: the size field; .trcxml: the size attribute of an
                                * <unknown> element, else 0 */
    uint32_t extra;            /* .trcbin: attribute bytes after the last known attribute
                                * (skipped: a newer minor version) */
    int64_t frequency;         /* ticks per second in effect for this message's times */
    cp_tptp_value v[CP_TPTP_MAX_ATTRS]; /* def->attrs order; defaults (0, "") for attributes
                                * an XML element lacks */
} cp_tptp_msg;

/* The 12-byte .trcbin header (spec §2.1). */
typedef struct cp_tptp_header {
    uint8_t major, minor, platform;
    uint8_t big_endian;        /* the file's byte order (0 = little-endian) */
    uint32_t data_offset;
} cp_tptp_header;

/* ---- decoding ---------------------------------------------------------------------- */

typedef enum cp_tptp_form { CP_TPTP_BIN, CP_TPTP_XML } cp_tptp_form;

typedef struct cp_tptp_limits {
    uint32_t max_message;      /* .trcbin size field; .trcxml: bytes of one piece of markup
                                * (a tag) the parser holds (default 16 MiB) */
    uint32_t max_string;       /* bytes of one string / attribute value (default 4 MiB) */
    uint32_t max_stack_depth;  /* elements of a String[] / Long[] (default 65536) */
    uint32_t max_depth;        /* .trcxml element nesting (default 64) */
} cp_tptp_limits;

void cp_tptp_limits_default(cp_tptp_limits *l);

/* Any callback may be NULL; a non-zero return stops decoding with CP_EABORT. on_header
 * is called once (.trcbin only) before the first message. */
typedef struct cp_tptp_sink {
    void *ud;
    int (*on_header)(void *ud, const cp_tptp_header *h);
    int (*on_msg)(void *ud, const cp_tptp_msg *m);
} cp_tptp_sink;

typedef struct cp_tptp_dec cp_tptp_dec;

/* limits may be NULL for the defaults. NULL on ENOMEM. */
cp_tptp_dec *cp_tptp_dec_new(cp_tptp_form form, const cp_tptp_limits *limits, const cp_tptp_sink *sink);
void cp_tptp_dec_free(cp_tptp_dec *d);
/* CP_OK (everything consumed or kept for the next feed) or a negative status; after an
 * error the decoder stays failed and every later call returns the same status. */
int cp_tptp_dec_feed(cp_tptp_dec *d, const uint8_t *p, size_t n);
/* End of input: CP_OK if it ended after a whole message (.trcxml: after </TRACE>... or,
 * leniently, after the last complete element), else CP_EPROTO with the error set
 * ("truncated ..."), or the stored error. */
int cp_tptp_dec_finish(cp_tptp_dec *d);
/* "<what> at offset N": the reason for the error (empty while there is none). */
const char *cp_tptp_dec_error(const cp_tptp_dec *d);
/* Byte offset where decoding stopped: after the last delivered message, or of the bad one. */
uint64_t cp_tptp_dec_offset(const cp_tptp_dec *d);
uint64_t cp_tptp_dec_messages(const cp_tptp_dec *d);   /* delivered, unknown ones included */
uint64_t cp_tptp_dec_unknown(const cp_tptp_dec *d);    /* unknown ids / elements skipped */

/* ---- encoding ---------------------------------------------------------------------- */

/* Writes what cloudprof writes: .trcbin little-endian, version 1.0, platform 1, data
 * offset 12; .trcxml as spec §2.5 (one element per line). The encoder follows the
 * encoding (message 1) and frequency (message 2) messages it writes: later strings are
 * written in that encoding (.trcbin; a character it cannot hold is CP_EINVAL) and later
 * times converted at that frequency (.trcxml). .trcbin -> .trcxml -> .trcbin through
 * these is byte-identical for files cloudprof writes (XML times have 9 fraction digits:
 * exact at frequencies up to 10^9 ticks/s, rounded to the nanosecond above). */
typedef struct cp_tptp_enc {
    cp_tptp_form form;
    int latin1;                /* encoding in effect is ISO-8859-1 */
    int64_t frequency;
    char err[160];
} cp_tptp_enc;

void cp_tptp_enc_init(cp_tptp_enc *e, cp_tptp_form form);
/* .trcbin: the 12-byte header; .trcxml: the XML declaration and <TRACE>. */
int cp_tptp_enc_begin(cp_tptp_enc *e, cp_buf *out);
/* One message (m->def set, values in def order; m->offset, size, extra, frequency are
 * ignored). An unknown message (def NULL) is written as <unknown id= size=/> in XML and
 * not at all in .trcbin (its bytes are not kept). CP_EINVAL with e->err on a value the
 * form cannot hold (a STRINGS count that differs from its stackDepth, a NUL inside a
 * .trcbin string, ...). */
int cp_tptp_enc_msg(cp_tptp_enc *e, const cp_tptp_msg *m, cp_buf *out);
/* .trcxml: </TRACE> and a newline; .trcbin: nothing. */
int cp_tptp_enc_end(cp_tptp_enc *e, cp_buf *out);

#endif
