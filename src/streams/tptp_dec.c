/* tptp_dec.c -- the TPTP decoder's form-independent frame: creation, the sticky error,
 * delivery and counters. The forms themselves are tptp_bin.c and tptp_xml.c. */
#include "tptp_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void cp_tptp_limits_default(cp_tptp_limits *l)
{
    l->max_message = 16u << 20;
    l->max_string = 4u << 20;
    l->max_stack_depth = 65536;
    l->max_depth = 64;
}

cp_tptp_dec *cp_tptp_dec_new(cp_tptp_form form, const cp_tptp_limits *limits, const cp_tptp_sink *sink)
{
    if (form != CP_TPTP_BIN && form != CP_TPTP_XML) return NULL;
    cp_tptp_dec *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->form = form;
    if (limits) d->lim = *limits;
    else cp_tptp_limits_default(&d->lim);
    if (sink) d->sink = *sink;
    d->frequency = CP_TPTP_DEFAULT_FREQUENCY;
    cp_buf_init(&d->scratch);
    cp_buf_init(&d->bin.pend);
    cp_buf_init(&d->xml.body);
    if (form == CP_TPTP_XML && cp_tptp_xml_init(d) != CP_OK) {
        cp_tptp_dec_free(d);
        return NULL;
    }
    return d;
}

void cp_tptp_dec_free(cp_tptp_dec *d)
{
    if (!d) return;
    if (d->form == CP_TPTP_XML) cp_tptp_xml_free(d);
    cp_buf_free(&d->scratch);
    cp_buf_free(&d->bin.pend);
    cp_buf_free(&d->xml.body);
    free(d->texts);
    free(d->longs);
    free(d);
}

int cp_tptp_dec_feed(cp_tptp_dec *d, const uint8_t *p, size_t n)
{
    if (d->status < 0) return d->status;
    if (d->finished) return cp_tptp_fail(d, CP_EINVAL, d->fed, "bytes fed after the end of input");
    if (n == 0) return CP_OK;
    return d->form == CP_TPTP_BIN ? cp_tptp_bin_feed(d, p, n) : cp_tptp_xml_feed(d, p, n);
}

int cp_tptp_dec_finish(cp_tptp_dec *d)
{
    if (d->finished) return d->status < 0 ? d->status : d->finish_status;
    d->finished = 1;
    if (d->status < 0) return d->finish_status = d->status;
    d->finish_status = d->form == CP_TPTP_BIN ? cp_tptp_bin_finish(d) : cp_tptp_xml_finish(d);
    return d->finish_status;
}

const char *cp_tptp_dec_error(const cp_tptp_dec *d) { return d->err; }
uint64_t cp_tptp_dec_offset(const cp_tptp_dec *d) { return d->status < 0 ? d->err_off : d->done; }
uint64_t cp_tptp_dec_messages(const cp_tptp_dec *d) { return d->messages; }
uint64_t cp_tptp_dec_unknown(const cp_tptp_dec *d) { return d->unknown; }

int cp_tptp_fail(cp_tptp_dec *d, int status, uint64_t off, const char *fmt, ...)
{
    if (d->status < 0) return d->status;
    d->status = status;
    d->err_off = off;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof d->err)
        snprintf(d->err + n, sizeof d->err - (size_t)n, " at offset %llu", (unsigned long long)off);
    return status;
}

int cp_tptp_deliver(cp_tptp_dec *d, uint64_t end)
{
    if (!d->msg.def) d->unknown++;
    if (d->sink.on_msg && d->sink.on_msg(d->sink.ud, &d->msg) != 0) {
        if (!d->msg.def) d->unknown--; /* like the message, not counted */
        return cp_tptp_fail(d, CP_EABORT, d->msg.offset, "stopped by the consumer");
    }
    d->messages++;
    d->done = end;
    return CP_OK;
}

int cp_tptp_reserve_texts(cp_tptp_dec *d, size_t n)
{
    return cp_grow((void **)&d->texts, &d->texts_cap, n, sizeof *d->texts, 16);
}

int cp_tptp_reserve_longs(cp_tptp_dec *d, size_t n)
{
    return cp_grow((void **)&d->longs, &d->longs_cap, n, sizeof *d->longs, 16);
}
