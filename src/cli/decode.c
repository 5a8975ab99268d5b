/* decode.c -- `cloudprof decode KIND FILE`: one stream file or a conversation capture to
 * JSON Lines, one record per line. The field names are a contract (issue #2). */
#include "cli/cp_cli.h"
#include "streams/cp_streams.h"
#include "wire/cp_wire.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define DECODE_MAX_FILE ((size_t)4 << 30)
#define OUT_FLUSH_AT 65536

typedef struct out {
    cp_buf b;
    FILE *f;
    int err;
} out;

static void out_flush(out *o)
{
    if (o->b.len && fwrite(o->b.data, 1, o->b.len, o->f) != o->b.len) o->err = 1;
    cp_buf_reset(&o->b);
}

static int out_line_end(out *o)
{
    cp_buf_puts(&o->b, "}\n");
    if (o->b.len >= OUT_FLUSH_AT) out_flush(o);
    return o->err;
}

static void put_key(cp_buf *b, const char *k)
{
    if (b->len && b->data[b->len - 1] != '{') cp_buf_putc(b, ',');
    cp_buf_putc(b, '"');
    cp_buf_puts(b, k);
    cp_buf_puts(b, "\":");
}
static void put_i64(cp_buf *b, const char *k, int64_t v)
{
    put_key(b, k);
    cp_buf_printf(b, "%lld", (long long)v);
}
static void put_bool(cp_buf *b, const char *k, int v)
{
    put_key(b, k);
    cp_buf_puts(b, v ? "true" : "false");
}
static void put_s16(cp_buf *b, const char *k, cp_str16 s)
{
    put_key(b, k);
    cp_json_str16(b, s);
}
static void put_str(cp_buf *b, const char *k, const char *s, size_t n)
{
    put_key(b, k);
    cp_json_str(b, s, n);
}

/* ---- stream records ------------------------------------------------------------------ */

static int on_word(void *ud, const cp_word_rec *r)
{
    out *o = ud;
    cp_buf_putc(&o->b, '{');
    put_i64(&o->b, "id", r->id);
    put_s16(&o->b, "word", r->word);
    return out_line_end(o);
}

static int on_param(void *ud, const cp_param_rec *r)
{
    out *o = ud;
    cp_buf_putc(&o->b, '{');
    put_s16(&o->b, "name", r->name);
    put_bool(&o->b, "index", r->index);
    put_bool(&o->b, "list", r->list);
    put_i64(&o->b, "order", r->order);
    put_s16(&o->b, "signature", r->signature);
    return out_line_end(o);
}

static int on_suspend(void *ud, const cp_suspend_rec *r)
{
    out *o = ud;
    cp_buf_putc(&o->b, '{');
    put_i64(&o->b, "end_ms", r->end_ms);
    put_i64(&o->b, "delta_ms", r->delta_ms);
    put_i64(&o->b, "duration_ms", r->duration_ms);
    return out_line_end(o);
}

/* params as {"id": [values...]}; a repeated id (not produced by the agent) is merged. */
static void put_call_params(cp_buf *b, const cp_call_rec *r)
{
    put_key(b, "params");
    cp_buf_putc(b, '{');
    for (uint32_t i = 0; i < r->nparams; i++) {
        int seen = 0;
        for (uint32_t j = 0; j < i && !seen; j++) seen = r->params[j].id == r->params[i].id;
        if (seen) continue;
        if (b->data[b->len - 1] != '{') cp_buf_putc(b, ',');
        cp_buf_printf(b, "\"%d\":[", r->params[i].id);
        int first = 1;
        for (uint32_t j = i; j < r->nparams; j++) {
            if (r->params[j].id != r->params[i].id) continue;
            for (uint32_t k = 0; k < r->params[j].nvalues; k++) {
                if (!first) cp_buf_putc(b, ',');
                first = 0;
                cp_json_str16(b, r->params[j].values[k]);
            }
        }
        cp_buf_putc(b, ']');
    }
    cp_buf_putc(b, '}');
}

static int on_call(void *ud, const cp_call_rec *r)
{
    out *o = ud;
    cp_buf *b = &o->b;
    cp_buf_putc(b, '{');
    put_i64(b, "start_ms", r->start_ms);
    put_i64(b, "time_delta", r->time_delta);
    put_i64(b, "method", r->method);
    put_i64(b, "duration_ms", r->duration_ms);
    put_i64(b, "calls", r->calls);
    put_i64(b, "thread_index", r->thread_index);
    put_s16(b, "thread_name", r->thread_name);
    put_i64(b, "logs_written", r->logs_written);
    put_i64(b, "logs_generated", r->logs_generated);
    put_i64(b, "trace_file_index", r->trace_file_index);
    put_i64(b, "buffer_offset", r->buffer_offset);
    put_i64(b, "record_index", r->record_index);
    put_i64(b, "cpu_time", r->cpu_time);
    put_i64(b, "wait_time", r->wait_time);
    put_i64(b, "memory_used", r->memory_used);
    put_i64(b, "file_read", r->file_read);
    put_i64(b, "file_written", r->file_written);
    put_i64(b, "net_read", r->net_read);
    put_i64(b, "net_written", r->net_written);
    put_i64(b, "transactions", r->transactions);
    put_i64(b, "queue_wait_ms", r->queue_wait_ms);
    put_call_params(b, r);
    return out_line_end(o);
}

static int on_trace(void *ud, const cp_trace_rec *r)
{
    static const char *const types[] = {[CP_TRACE_ENTER] = "enter", [CP_TRACE_EXIT] = "exit", [CP_TRACE_TAG] = "tag"};
    if (r->type != CP_TRACE_ENTER && r->type != CP_TRACE_EXIT && r->type != CP_TRACE_TAG) return 0;
    out *o = ud;
    cp_buf *b = &o->b;
    cp_buf_putc(b, '{');
    put_i64(b, "chunk_offset", (int64_t)r->chunk_offset);
    put_i64(b, "thread_id", r->thread_id);
    put_i64(b, "chunk_time_ms", r->chunk_time_ms);
    put_i64(b, "index", r->index);
    put_str(b, "type", types[r->type], strlen(types[r->type]));
    put_i64(b, "time_ms", r->time_ms);
    if (r->type != CP_TRACE_EXIT) put_i64(b, "id", r->id);
    if (r->type == CP_TRACE_TAG) {
        put_i64(b, "param_type", r->param_type);
        if (r->param_type == 0 || r->param_type == 2) {
            put_s16(b, "value", r->value);
        } else {
            put_i64(b, "ref_file", r->ref_file);
            put_i64(b, "ref_offset", r->ref_offset);
        }
    }
    return out_line_end(o);
}

static int on_value(void *ud, const cp_value_rec *r)
{
    out *o = ud;
    cp_buf_putc(&o->b, '{');
    put_i64(&o->b, "offset", (int64_t)r->offset);
    put_s16(&o->b, "value", r->value);
    return out_line_end(o);
}

static int decode_stream(cp_stream_kind kind, const cp_buf *data, out *o, const char *path)
{
    cp_dec_sink sink = {.ud = o,
                        .on_word = on_word,
                        .on_param = on_param,
                        .on_suspend = on_suspend,
                        .on_call = on_call,
                        .on_trace = on_trace,
                        .on_value = on_value};
    cp_dec *d = cp_dec_new(kind, NULL, &sink, 0);
    if (!d) {
        fprintf(stderr, "cloudprof decode: out of memory\n");
        return 1;
    }
    int st = cp_dec_feed(d, data->data, data->len);
    if (st == CP_OK) st = cp_dec_finish(d);
    out_flush(o);
    int rc = 0;
    if (o->err) {
        fprintf(stderr, "cloudprof decode: write error: %s\n", strerror(errno));
        rc = 1;
    } else if (st == CP_AGAIN) {
        fprintf(stderr, "cloudprof decode: %s: %llu trailing bytes after offset %llu do not form a whole record\n",
                path, (unsigned long long)(data->len - cp_dec_committed(d)),
                (unsigned long long)cp_dec_committed(d));
        rc = 1;
    } else if (st != CP_OK) {
        fprintf(stderr, "cloudprof decode: %s: %s\n", path, cp_dec_error(d));
        rc = 1;
    }
    cp_dec_free(d);
    return rc;
}

/* ---- conversations --------------------------------------------------------------------- */

#define MAX_HANDLES 256

typedef struct handle_map {
    uint8_t id[MAX_HANDLES][16];
    char name[MAX_HANDLES][64];
    uint64_t bytes[MAX_HANDLES];
    size_t n;
} handle_map;

static int handle_find(const handle_map *m, const uint8_t *id)
{
    for (size_t i = 0; i < m->n; i++)
        if (memcmp(m->id[i], id, 16) == 0) return (int)i;
    return -1;
}

static void put_uuid(cp_buf *b, const char *k, const uint8_t *u)
{
    char s[37];
    cp_uuid_str(u, s);
    put_str(b, k, s, 36);
}

static void put_field(cp_buf *b, const char *k, cp_field f) { put_str(b, k, (const char *)f.p, f.n); }

static void conv_item(out *o, handle_map *m, const cp_capture_item *it)
{
    cp_buf *b = &o->b;
    const cp_cmd *c = &it->cmd;
    cp_buf_putc(b, '{');
    put_i64(b, "offset", (int64_t)it->offset);
    put_str(b, "command", cp_wire_cmd_name(c->type), strlen(cp_wire_cmd_name(c->type)));
    switch (c->type) {
    case CP_CMD_HANDSHAKE:
        put_i64(b, "client_version", c->u.hs.version);
        put_field(b, "pod", c->u.hs.pod);
        put_field(b, "service", c->u.hs.service);
        put_field(b, "namespace", c->u.hs.ns);
        if (it->reply_len == 8) put_i64(b, "reply_version", (int64_t)cp_be64(it->reply));
        break;
    case CP_CMD_VERSION_LEGACY:
        if (it->reply_len == 8) put_i64(b, "reply_version", (int64_t)cp_be64(it->reply));
        break;
    case CP_CMD_INIT_LEGACY:
        put_field(b, "namespace", c->u.init.ns);
        put_field(b, "service", c->u.init.service);
        put_field(b, "pod", c->u.init.pod);
        /* fall through */
        __attribute__((fallthrough));
    case CP_CMD_INIT:
        put_field(b, "stream", c->u.init.stream);
        put_i64(b, "requested_seq", c->u.init.seq);
        put_i64(b, "reset_required", c->u.init.reset);
        if (it->reply_len == 36) {
            put_uuid(b, "handle", it->reply);
            put_i64(b, "rotation_period_ms", (int64_t)cp_be64(it->reply + 16));
            put_i64(b, "rotation_size", (int64_t)cp_be64(it->reply + 24));
            put_i64(b, "seq", (int32_t)cp_be32(it->reply + 32));
            if (m->n < MAX_HANDLES) {
                memcpy(m->id[m->n], it->reply, 16);
                size_t n = c->u.init.stream.n < 63 ? c->u.init.stream.n : 63;
                memcpy(m->name[m->n], c->u.init.stream.p, n);
                m->name[m->n][n] = 0;
                m->bytes[m->n] = 0;
                m->n++;
            }
        } else if (it->reply_len == 16) {
            put_key(b, "handle");
            cp_buf_puts(b, "null");
        }
        break;
    case CP_CMD_DATA: {
        put_uuid(b, "handle", c->u.data.handle);
        int h = handle_find(m, c->u.data.handle);
        if (h >= 0) {
            put_str(b, "stream", m->name[h], strlen(m->name[h]));
            put_i64(b, "stream_offset", (int64_t)m->bytes[h]);
            m->bytes[h] += c->u.data.payload.n;
        }
        put_i64(b, "length", c->u.data.payload.n);
        break;
    }
    case CP_CMD_REPORT:
        put_uuid(b, "command_id", c->u.report.id);
        put_i64(b, "success", c->u.report.success);
        break;
    default:
        break;
    }
    if (it->nacks) {
        put_key(b, "acks");
        cp_buf_putc(b, '[');
        for (size_t i = 0; i < it->nacks; i++) cp_buf_printf(b, i ? ",%u" : "%u", it->acks[i]);
        cp_buf_putc(b, ']');
    }
    out_line_end(o);
}

static int decode_conversation(const cp_buf *client, const cp_buf *server, out *o, const char *path)
{
    cp_capture cap;
    if (server) cp_capture_init_split(&cap, client->data, client->len, server->data, server->len);
    else cp_capture_init_concat(&cap, client->data, client->len);
    static handle_map m;
    m.n = 0;
    cp_capture_item it;
    int st;
    while ((st = cp_capture_next(&cap, &it)) == CP_OK) conv_item(o, &m, &it);
    out_flush(o);
    if (st != CP_AGAIN) {
        fprintf(stderr, "cloudprof decode: %s: %s\n", path, cap.err);
        return 1;
    }
    return o->err ? 1 : 0;
}

/* ---- command line ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: cloudprof decode KIND FILE\n"
            "       cloudprof decode conversation FILE [--replies SERVER_FILE]\n"
            "       cloudprof decode conversation DIR      (DIR holds client-to-server.bin, server-to-client.bin)\n"
            "\n"
            "Decodes one stream file as the agent sent it (phrase framing included) and prints\n"
            "one JSON object per record. FILE may be - for standard input.\n"
            "\n"
            "KIND: dictionary, posdictionary, params, suspend, calls, trace, sql, xml, conversation\n"
            "  conversation: a capture of a whole agent connection (protocol.md §6.2); with both\n"
            "  directions concatenated, or the client bytes plus --replies with the server's bytes.\n"
            "  One line per command with its request fields, reply fields and following acks.\n"
            "\n"
            "Exit status: 0 when the whole file decoded; 1 on malformed input or trailing bytes\n"
            "(the records before the problem are still printed); 2 on usage errors.\n");
}

static int load(const char *path, cp_buf *b)
{
    cp_buf_init(b);
    int st;
    if (strcmp(path, "-") == 0) {
        st = CP_OK;
        for (;;) {
            if (cp_buf_reserve(b, 65536) != CP_OK) return CP_ENOMEM;
            size_t n = fread(b->data + b->len, 1, 65536, stdin);
            b->len += n;
            if (n == 0) break;
            if (b->len > DECODE_MAX_FILE) return CP_ELIMIT;
        }
        if (ferror(stdin)) st = CP_EIO;
    } else {
        st = cp_read_file(path, DECODE_MAX_FILE, b);
    }
    if (st != CP_OK)
        fprintf(stderr, "cloudprof decode: cannot read %s: %s\n", path,
                st == CP_EIO || st == CP_ENOTFOUND ? strerror(errno) : cp_strstatus(st));
    return st;
}

int cp_cli_decode(int argc, char **argv)
{
    const char *kind_s = NULL, *path = NULL, *replies = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--replies") && i + 1 < argc) {
            replies = argv[++i];
        } else if (!kind_s) {
            kind_s = argv[i];
        } else if (!path) {
            path = argv[i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!kind_s || !path) {
        usage(stderr);
        return 2;
    }
    int conversation = strcmp(kind_s, "conversation") == 0;
    cp_stream_kind kind = conversation ? CP_STREAM_UNKNOWN : cp_stream_kind_parse(kind_s);
    if (!conversation && !cp_stream_kind_is_decoded(kind)) {
        fprintf(stderr, "cloudprof decode: unknown KIND '%s'\n\n", kind_s);
        usage(stderr);
        return 2;
    }
    char cpath[4096], spath[4096];
    struct stat sb;
    if (conversation && !replies && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(cpath, sizeof cpath, "%s/client-to-server.bin", path);
        snprintf(spath, sizeof spath, "%s/server-to-client.bin", path);
        path = cpath;
        replies = spath;
    }
    out o = {.f = stdout};
    cp_buf_init(&o.b);
    cp_buf data, srv;
    if (load(path, &data) != CP_OK) return 1;
    int rc;
    if (conversation) {
        cp_buf_init(&srv);
        if (replies && load(replies, &srv) != CP_OK) {
            cp_buf_free(&data);
            return 1;
        }
        rc = decode_conversation(&data, replies ? &srv : NULL, &o, path);
        cp_buf_free(&srv);
    } else {
        rc = decode_stream(kind, &data, &o, path);
    }
    fflush(stdout);
    cp_buf_free(&data);
    cp_buf_free(&o.b);
    return rc;
}
