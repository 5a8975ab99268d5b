/* sfile.c -- one stream file of a connection: raw log append, incremental decoding, and
 * the catalog rows (streams, dictionary, params) it produces. */
#include "server_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <sys/uio.h>
#include <stdio.h>
#include <stdlib.h>

void cp_sfile_handle_str(const cp_sfile *f, char out[37]) { cp_uuid_str(f->handle, out); }

static void set_error(cp_sfile *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(cp_sfile *f, const char *fmt, ...)
{
    f->failed = 1;
    if (f->error) return; /* the first reason is the interesting one */
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    f->error = strdup(tmp);
}

/* Fills the catalog row shared by open and close. */
static void catalog_row(const cp_sfile *f, cp_catalog_stream *row, char handle[37])
{
    const cp_server_config *cfg = f->conn->srv->cfg;
    cp_sfile_handle_str(f, handle);
    memset(row, 0, sizeof *row);
    row->pod = &f->conn->pod;
    row->stream = cp_stream_kind_name(f->kind);
    row->file_index = (int64_t)f->seq + 1;
    row->handle = handle;
    row->rotation_period_ms = cfg->rotation_period_ms[f->kind];
    row->rotation_size = cfg->rotation_size[f->kind];
    row->opened_ms = f->opened_ms;
    row->path = f->raw.path;
}

/* Random v4 UUID: never null, and never one the connection already uses. */
static int new_handle(cp_conn *c, uint8_t h[16])
{
    for (int tries = 0; tries < 8; tries++) {
        if (cp_random_bytes(h, 16) != CP_OK) return CP_EIO;
        h[6] = (uint8_t)((h[6] & 0x0F) | 0x40);
        h[8] = (uint8_t)((h[8] & 0x3F) | 0x80);
        int dup = 0;
        for (size_t i = 0; i < CP_STREAM_KIND_COUNT; i++)
            if (c->slots[i].file && !memcmp(c->slots[i].file->handle, h, 16)) dup = 1;
        if (!dup) return CP_OK;
    }
    return CP_EIO;
}

int cp_sfile_open(cp_conn *c, cp_stream_kind kind, int32_t seq, int32_t first_word_id, cp_sfile **out)
{
    *out = NULL;
    cp_sfile *f = calloc(1, sizeof *f);
    if (!f) return CP_ENOMEM;
    f->conn = c;
    f->kind = kind;
    f->seq = seq;
    f->first_word_id = first_word_id;
    f->opened_ms = cp_now_ms();
    f->raw.fd = -1;
    int st = new_handle(c, f->handle);
    if (st == CP_OK)
        st = cp_rawlog_file_open(&c->srv->files, &c->restart, cp_stream_kind_name(kind), (int64_t)seq + 1, &f->raw);
    if (st != CP_OK) {
        cp_srv_log(c->srv, CP_LOG_ERROR, "%s: cannot open %s file %lld: %s", c->peer, cp_stream_kind_name(kind),
                   (long long)seq + 1, strerror(errno));
        free(f);
        return st;
    }
    cp_srv_asm_file_opened(f);
    char handle[37];
    cp_catalog_stream row;
    catalog_row(f, &row, handle);
    /* committed before the INIT is answered (its reply waits: proto.c): recovery finds
     * the file through its row */
    if (cp_catw_stream(c, &row, 1) != CP_OK) {
        cp_srv_log(c->srv, CP_LOG_ERROR, "%s: out of memory for the catalog row of %s file %lld", c->peer,
                   cp_stream_kind_name(kind), (long long)seq + 1);
        cp_rawlog_file_close(&f->raw);
        free(f);
        return CP_EIO;
    }
    *out = f;
    return CP_OK;
}

/* ---- decoder sink: metadata into the catalog ---------------------------------------------- */

static int on_word(void *ud, const cp_word_rec *r)
{
    cp_sfile *f = ud;
    cp_server *s = f->conn->srv;
    cp_buf_reset(&s->scratch);
    if (cp_str16_to_utf8(&s->scratch, r->word) != CP_OK) return 1;
    int st = cp_catw_word(f->conn, r->id, (const char *)s->scratch.data, s->scratch.len);
    if (st == CP_OK && f->conn->asm_ &&
        cp_asm_word(f->conn->asm_, r->id, (const char *)s->scratch.data, s->scratch.len) == CP_ENOMEM) {
        set_error(f, "out of memory for the dictionary");
        return 1;
    }
    if (st != CP_OK) set_error(f, "out of memory for the catalog writer");
    return st != CP_OK;
}

static int on_param(void *ud, const cp_param_rec *r)
{
    cp_sfile *f = ud;
    cp_server *s = f->conn->srv;
    cp_buf_reset(&s->scratch);
    /* both strings share the scratch buffer: remember where the signature starts */
    if (cp_str16_to_utf8(&s->scratch, r->name) != CP_OK) return 1;
    size_t name_len = s->scratch.len;
    if (cp_str16_to_utf8(&s->scratch, r->signature) != CP_OK || cp_buf_putc(&s->scratch, 0) != CP_OK) return 1;
    const char *base = (const char *)s->scratch.data;
    cp_catalog_param prm = {
        .name = base,
        .name_len = name_len,
        .index = r->index,
        .list = r->list,
        .order = r->order,
        .signature = base + name_len,
        .signature_len = s->scratch.len - 1 - name_len,
    };
    int st = cp_catw_param(f->conn, &prm);
    if (st != CP_OK) set_error(f, "out of memory for the catalog writer");
    return st != CP_OK;
}

static int ensure_decoder(cp_sfile *f)
{
    if (f->dec || !cp_stream_kind_is_decoded(f->kind)) return CP_OK;
    /* calls, trace and suspend feed the call assembly; sql/xml are only validated (the
     * assembly reads their values back from the stored file) */
    cp_dec_sink sink = cp_srv_asm_sink(f);
    sink.on_word = on_word;
    sink.on_param = on_param;
    f->dec = cp_dec_new(f->kind, NULL, &sink, f->first_word_id);
    return f->dec ? CP_OK : CP_ENOMEM;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* A torn tail that could not be cut (moving it aside needs a little space: a full disk)
 * stays until the recovery worker cuts it: the restart is left incomplete. */
static void cut_failed(cp_sfile *f)
{
    cp_srv_log(f->conn->srv, CP_LOG_ERROR, "%s: cannot cut %s: %s (recovery cuts it later)", f->conn->peer, f->raw.path,
               strerror(errno));
    f->conn->hot_lost = 1;
}

/* The decoder rejected bytes of a payload already appended: keep exactly the clean prefix
 * it committed (the rest goes to the .torn sidecar with the partial record it ended). */
static void cut_to_committed(cp_sfile *f)
{
    uint64_t keep = cp_dec_committed(f->dec);
    if (keep < f->raw.size && cp_rawlog_file_cut(&f->raw, keep) != CP_OK) cut_failed(f);
}

int cp_sfile_write(cp_sfile *f, const uint8_t *p, size_t n)
{
    struct iovec v = {(void *)p, n};
    size_t ok;
    return cp_sfile_writev(f, &v, 1, &ok);
}

int cp_sfile_writev(cp_sfile *f, const struct iovec *v, int nv, size_t *ok)
{
    *ok = 0;
    size_t n = 0;
    for (int i = 0; i < nv; i++) n += v[i].iov_len;
    if (f->failed) return CP_EIO;
    if (n && cp_rawlog_file_prepare(&f->raw) != CP_OK) {
        if (errno == EMFILE || errno == ENFILE) return CP_AGAIN; /* nothing changed: retry later */
        set_error(f, "open %s: %s", f->raw.path, strerror(errno));
        return CP_EIO;
    }
    int st = ensure_decoder(f);
    if (st != CP_OK) {
        set_error(f, "out of memory for the decoder");
        return st;
    }
    /* Stored first, decoded after: a call must reach the hot tier only if its bytes are in
     * the raw log (a payload the disk refused is sent again, on a new connection). */
    uint64_t clean = f->dec ? cp_dec_committed(f->dec) : f->raw.size; /* the last whole record stored */
    st = cp_rawlog_file_appendv(&f->raw, v, nv);
    if (st != CP_OK) {
        int saved = errno;
        set_error(f, "write %s: %s", f->raw.path, strerror(saved));
        /* the file fails (the agent gets 0xFF): the bytes of earlier payloads that began a
         * record this one was to finish are a torn tail now; cut it, so what stays decodes
         * whole */
        if (clean < f->raw.size && cp_rawlog_file_cut(&f->raw, clean) != CP_OK) cut_failed(f);
        errno = saved;
        return st;
    }
    for (int i = 0; i < nv; i++) {
        if (f->dec) {
            st = cp_dec_feed(f->dec, v[i].iov_base, v[i].iov_len);
            if (st != CP_OK) {
                set_error(f, "%s", cp_dec_error(f->dec));
                cut_to_committed(f);
                return st;
            }
        }
        (*ok)++;
    }
    f->last_write_ms = uv_now(&f->conn->srv->loop);
    /* the calls this payload completed can be read back now */
    if (f->kind != CP_STREAM_SUSPEND && f->kind != CP_STREAM_PARAMS) cp_srv_asm_pump(f->conn);
    return CP_OK;
}

/* ---- end of file ---------------------------------------------------------------------------- */

/* Drops a torn tail: the agent only rotates on record boundaries, so a partial record
 * at the end means the connection broke mid-record (protocol.md §4.2). */
static void drop_torn_tail(cp_sfile *f)
{
    if (!f->dec) return;
    int st = cp_dec_finish(f->dec);
    if (st == CP_AGAIN) {
        uint64_t keep = cp_dec_committed(f->dec);
        if (keep < f->raw.size) {
            cp_srv_log(f->conn->srv, CP_LOG_INFO, "%s: pod %s: %s file %lld: dropping a torn tail of %llu bytes",
                       f->conn->peer, f->conn->pod.pod_id, cp_stream_kind_name(f->kind), (long long)f->seq + 1,
                       (unsigned long long)(f->raw.size - keep));
            if (cp_rawlog_file_cut(&f->raw, keep) != CP_OK) cut_failed(f);
        }
    } else if (st < 0) {
        set_error(f, "%s", cp_dec_error(f->dec));
    }
}

void cp_sfile_finalize(cp_sfile *f)
{
    if (f->finalized) return;
    f->finalized = 1;
    if (!f->failed) drop_torn_tail(f);
    f->conn->slots[f->kind].next_word_id = f->dec ? cp_dec_next_word_id(f->dec) : f->first_word_id;
    cp_dec_free(f->dec);
    f->dec = NULL;
    char handle[37];
    cp_catalog_stream row;
    catalog_row(f, &row, handle);
    row.closed_ms = cp_now_ms();
    row.bytes = f->raw.size;
    row.status = f->failed ? "failed" : "closed";
    row.error = f->error;
    cp_catw_stream(f->conn, &row, 0);
}

void cp_sfile_free(cp_sfile *f)
{
    if (!f) return;
    cp_dec_free(f->dec);
    cp_rawlog_file_close(&f->raw);
    free(f->error);
    free(f);
}
