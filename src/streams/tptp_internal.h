/* tptp_internal.h -- private to the TPTP codec (tptp_*.c): the decoder's state, shared
 * by the form-independent frame (tptp_dec.c) and the two forms (tptp_bin.c, tptp_xml.c),
 * and the small rules both decoders and the encoders apply. */
#ifndef CP_TPTP_INTERNAL_H
#define CP_TPTP_INTERNAL_H

#include "cp_tptp.h"

#include <stdint.h>

#define CP_TPTP_ERR_LEN 256
#define CP_TPTP_DEFAULT_FREQUENCY 1000000000 /* spec §2.3: no message 2 -> nanoseconds */
#define CP_TPTP_XML_HEAD 4                           /* .trcxml bytes expat gets at once first */

/* .trcbin: where in the file the decoder is. */
typedef enum tptp_bin_phase {
    TPTP_BIN_HEADER,   /* the 12-byte header */
    TPTP_BIN_PAD,      /* bytes between 12 and the header's data offset */
    TPTP_BIN_MSGHDR,   /* a message's id and size */
    TPTP_BIN_BODY,     /* a known message's attributes */
    TPTP_BIN_SKIP,     /* an unknown message's bytes */
} tptp_bin_phase;

typedef struct tptp_bin_state {
    tptp_bin_phase phase;
    cp_tptp_header hdr;
    int latin1;              /* the stream's encoding is ISO-8859-1 (else UTF-8) */
    uint16_t id;             /* the current message */
    uint32_t size;
    uint64_t msg_off;
    uint64_t skip_left;      /* PAD / SKIP: bytes still to skip */
    cp_buf pend;             /* the one unit (header or message) split across feeds */
} tptp_bin_state;

typedef struct tptp_xml_state {
    void *parser;            /* XML_Parser (expat stays out of this header) */
    uint32_t depth;          /* open elements, TRACE = 1 */
    int root_seen;
    int in_msg;              /* depth-2 element: 0 none, 1 known, 2 <unknown>, 3 skipped */
    int in_custom;
    uint64_t msg_off;        /* its start tag's offset */
    uint64_t mark;           /* byte after the last markup or text expat reported */
    uint64_t chunk;          /* feeds go to expat cut at multiples of this (see tptp_xml.c) */
    uint8_t head[CP_TPTP_XML_HEAD];  /* the first bytes, held until there are CP_TPTP_XML_HEAD of them */
    size_t head_len;
    cp_buf body;             /* custom's text */
} tptp_xml_state;

struct cp_tptp_dec {
    cp_tptp_form form;
    cp_tptp_limits lim;
    cp_tptp_sink sink;
    int status;              /* CP_OK or the sticky error */
    int finished;
    int finish_status;
    char err[CP_TPTP_ERR_LEN];
    uint64_t err_off;
    uint64_t fed;            /* bytes fed so far */
    uint64_t done;           /* byte after the last delivered (or skipped) message */
    uint64_t messages, unknown;
    int64_t frequency;       /* ticks per second in effect */
    cp_tptp_msg msg;         /* the message being built */
    cp_buf scratch;          /* converted strings of msg (never reallocated while msg is built) */
    cp_tptp_text *texts;     /* String[] elements of msg */
    size_t texts_cap;
    int64_t *longs;          /* Long[] elements of msg */
    size_t longs_cap;
    tptp_bin_state bin;
    tptp_xml_state xml;
};

/* Records the first error ("<what> at offset N") and returns the (sticky) status. */
int cp_tptp_fail(cp_tptp_dec *d, int status, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Hands d->msg to the sink and counts it; end = the byte after it. CP_OK or CP_EABORT. */
int cp_tptp_deliver(cp_tptp_dec *d, uint64_t end);
/* Makes room for n String[] / Long[] elements of msg (n already checked against limits). */
int cp_tptp_reserve_texts(cp_tptp_dec *d, size_t n);
int cp_tptp_reserve_longs(cp_tptp_dec *d, size_t n);

int cp_tptp_bin_feed(cp_tptp_dec *d, const uint8_t *p, size_t n);
int cp_tptp_bin_finish(cp_tptp_dec *d);
int cp_tptp_xml_init(cp_tptp_dec *d);
int cp_tptp_xml_feed(cp_tptp_dec *d, const uint8_t *p, size_t n);
int cp_tptp_xml_finish(cp_tptp_dec *d);
void cp_tptp_xml_free(cp_tptp_dec *d);

/* An encoding name (message 1) -> 0 UTF-8, 1 ISO-8859-1, -1 unsupported. Case, '-', '_'
 * and spaces are ignored: "UTF8", "utf-8", "ISO8859_1", "latin1" all name one of the two. */
int cp_tptp_encoding_kind(const char *name, size_t len);
/* A `time` attribute: ticks in .trcbin, decimal seconds in .trcxml (spec §2.3). */
static inline int cp_tptp_is_time(const cp_tptp_attr_def *a)
{
    return a->type == CP_TPTP_LONG && strcmp(a->name, "time") == 0;
}

#endif
