/* hprofsum.c -- a stored heap dump's summary (cp_hprofsum.h): the zip entry found, its
 * bytes read in pieces, inflated when deflated, and fed to the HPROF decoder. */
#include "model/cp_hprofsum.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#define PIECE (256u << 10)   /* bytes read at once, and inflated at once */
#define LFH_LEN 30           /* zip local file header, fixed part */

typedef struct sum_run {
    cp_dump_pread_fn pread;
    void *ud;
    const cp_hprof_sum_opts *o;
    cp_hprof_dec *dec;
    uint8_t *in, *out;       /* PIECE bytes each */
    char *err;
    size_t errlen;
    char what[320];          /* "the HPROF" or "the HPROF in entry <name>", for messages */
} sum_run;

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p) { return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16; }

static int cancelled(const sum_run *r)
{
    if (!r->o->cancel || !r->o->cancel(r->o->cancel_ud)) return 0;
    cp_set_err(r->err, r->errlen, "cancelled");
    return 1;
}

static int read_at(sum_run *r, void *dst, size_t n, uint64_t off)
{
    int st = r->pread(r->ud, dst, n, off);
    if (st == CP_OK) return CP_OK;
    cp_set_err(r->err, r->errlen, "cannot read %zu bytes at offset %" PRIu64 " of the file: %s", n, off,
               cp_strstatus(st));
    return st < 0 ? st : CP_EIO;
}

/* Hands HPROF bytes to the decoder; a refusal becomes the run's error. */
static int feed(sum_run *r, const uint8_t *p, size_t n)
{
    int st = cp_hprof_dec_feed(r->dec, p, n);
    if (st == CP_OK) return CP_OK;
    cp_set_err(r->err, r->errlen, "%s: %s", r->what, cp_hprof_dec_error(r->dec));
    return st == CP_EPROTO ? CP_ECORRUPT : st;
}

/* The HPROF is the bytes [off, off + n) as they are. */
static int feed_stored(sum_run *r, uint64_t off, uint64_t n)
{
    while (n) {
        size_t k = n < PIECE ? (size_t)n : PIECE;
        if (cancelled(r)) return CP_EABORT;
        int st = read_at(r, r->in, k, off);
        if (st == CP_OK) st = feed(r, r->in, k);
        if (st != CP_OK) return st;
        off += k;
        n -= k;
    }
    return CP_OK;
}

static int inflate_fail(sum_run *r, const char *why, uint64_t at)
{
    cp_set_err(r->err, r->errlen, "the zip entry's deflate stream %s (at compressed byte %" PRIu64 ")", why, at);
    return CP_ECORRUPT;
}

/* Drains what inflate made of the current input into the decoder. */
static int inflate_piece(sum_run *r, z_stream *z, uint64_t *made, int *end)
{
    do {
        z->next_out = r->out;
        z->avail_out = PIECE;
        int zs = inflate(z, Z_NO_FLUSH);
        if (zs == Z_MEM_ERROR) return CP_ENOMEM;
        if (zs != Z_OK && zs != Z_STREAM_END && zs != Z_BUF_ERROR) return inflate_fail(r, "is corrupt", z->total_in);
        size_t got = PIECE - z->avail_out;
        *made += got;
        int st = got ? feed(r, r->out, got) : CP_OK;
        if (st != CP_OK) return st;
        if (zs == Z_STREAM_END) {
            *end = 1;
            return CP_OK;
        }
        if (zs == Z_BUF_ERROR) return CP_OK; /* no progress without the next piece */
    } while (z->avail_out == 0 || z->avail_in);
    return CP_OK;
}

/* The HPROF is the raw deflate stream in [off, off + n) inflating to usize bytes. */
static int feed_deflated(sum_run *r, uint64_t off, uint64_t n, uint64_t usize)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return CP_ENOMEM;
    uint64_t made = 0;
    int end = 0, st = CP_OK;
    while (st == CP_OK && !end && n) {
        size_t k = n < PIECE ? (size_t)n : PIECE;
        if (cancelled(r)) st = CP_EABORT;
        else st = read_at(r, r->in, k, off);
        if (st != CP_OK) break;
        off += k;
        n -= k;
        z.next_in = r->in;
        z.avail_in = (uInt)k;
        st = inflate_piece(r, &z, &made, &end);
    }
    uint64_t at = z.total_in;
    inflateEnd(&z);
    if (st != CP_OK) return st;
    if (!end) return inflate_fail(r, "ends before its last block", at);
    if (made != usize) {
        cp_set_err(r->err, r->errlen, "the zip entry inflates to %" PRIu64 " bytes, its directory says %" PRIu64, made,
                   usize);
        return CP_ECORRUPT;
    }
    return CP_OK;
}

/* Finds the first entry's data through the central directory and its local header. */
static int feed_zip(sum_run *r, uint64_t size, cp_hprof_summary *out)
{
    cp_zip_info zi;
    char zerr[256] = "";
    int st = cp_zip_probe(r->pread, r->ud, size, &zi, zerr, sizeof zerr);
    if (st != CP_OK) {
        cp_set_err(r->err, r->errlen, "the heap dump is no readable zip: %s", zerr);
        return st == CP_ENOMEM ? st : CP_ECORRUPT;
    }
    if (zi.entries == 0) {
        cp_set_err(r->err, r->errlen, "the heap dump's zip has no entry");
        return CP_ECORRUPT;
    }
    snprintf(out->entry, sizeof out->entry, "%s", zi.first_name);
    snprintf(r->what, sizeof r->what, "the HPROF in entry %s", out->entry);
    if (zi.first_method != 0 && zi.first_method != 8) {
        cp_set_err(r->err, r->errlen, "zip entry %s is compressed with method %u (only stored and deflate are read)",
                   zi.first_name, zi.first_method);
        return CP_ECORRUPT;
    }
    uint8_t h[LFH_LEN];
    if ((st = read_at(r, h, LFH_LEN, zi.first_offset)) != CP_OK) return st;
    uint64_t data = zi.first_offset + LFH_LEN + le16(h + 26) + le16(h + 28);
    if (le32(h) != 0x04034b50u || data > size || zi.first_comp_size > size - data) {
        cp_set_err(r->err, r->errlen, "zip entry %s: no local header at offset %" PRIu64 ", or its data overruns the file",
                   zi.first_name, zi.first_offset);
        return CP_ECORRUPT;
    }
    if (zi.first_method == 0) return feed_stored(r, data, zi.first_comp_size);
    return feed_deflated(r, data, zi.first_comp_size, zi.first_size);
}

/* The decoder's histogram, top first, with names. */
static int collect(sum_run *r, cp_hprof_summary *out)
{
    size_t top = r->o->top;
    cp_hprof_class *rows = top ? calloc(top, sizeof *rows) : NULL;
    if (top && !rows) return CP_ENOMEM;
    size_t n = 0;
    cp_hprof_dec_top(r->dec, top, rows, &n, &out->classes_with_objects);
    out->classes = n ? calloc(n, sizeof *out->classes) : NULL;
    cp_buf name;
    cp_buf_init(&name);
    int st = n && !out->classes ? CP_ENOMEM : CP_OK;
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        cp_buf_reset(&name);
        st = cp_hprof_dec_class_name(r->dec, &rows[i], &name);
        if (st == CP_OK) st = cp_buf_putc(&name, 0);
        cp_hprof_sum_class *c = &out->classes[i];
        if (st == CP_OK && !(c->name = strdup((const char *)name.data))) st = CP_ENOMEM;
        if (st != CP_OK) break;
        c->named = rows[i].named;
        c->objects = rows[i].objects;
        c->shallow_bytes = rows[i].shallow_bytes;
        out->nclasses = i + 1;
        if (!c->named) out->names_incomplete = 1;
    }
    cp_buf_free(&name);
    free(rows);
    return st;
}

int cp_hprof_summarize(cp_dump_pread_fn pread, void *ud, uint64_t size, const cp_hprof_sum_opts *opts,
                       cp_hprof_summary *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    cp_set_err(err, errlen, "%s", "");
    out->file_bytes = size;
    sum_run r = {pread, ud, opts, cp_hprof_dec_new(opts->limits), malloc(PIECE), malloc(PIECE), err, errlen, "the HPROF"};
    int st = r.dec && r.in && r.out ? CP_OK : CP_ENOMEM;
    if (st == CP_OK) {
        if (opts->zipped) st = feed_zip(&r, size, out);
        else st = feed_stored(&r, 0, size);
    }
    int dst = st == CP_OK ? cp_hprof_dec_finish(r.dec) : CP_OK;
    if (dst != CP_OK) {
        cp_set_err(err, errlen, "%s: %s", r.what, cp_hprof_dec_error(r.dec));
        st = dst == CP_EPROTO ? CP_ECORRUPT : dst;
    }
    if (st == CP_OK) {
        out->hdr = *cp_hprof_dec_header(r.dec);
        cp_hprof_dec_totals(r.dec, &out->totals);
        out->decoder_memory = cp_hprof_dec_memory(r.dec);
        st = collect(&r, out);
    }
    if (st == CP_ENOMEM) cp_set_err(err, errlen, "out of memory");
    cp_hprof_dec_free(r.dec);
    free(r.in);
    free(r.out);
    if (st != CP_OK) cp_hprof_summary_free(out);
    return st;
}

void cp_hprof_summary_free(cp_hprof_summary *s)
{
    for (size_t i = 0; i < s->nclasses; i++) free(s->classes[i].name);
    free(s->classes);
    s->classes = NULL;
    s->nclasses = 0;
}
