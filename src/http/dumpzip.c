/* dumpzip.c -- bulk download of diagnostic files (dumps-http.md §7.2, §6.5):
 *
 *   GET /api/v1/dumps/download?namespace=&service=&pod=&type=&from=&to=[&estimate=1]
 *   GET /cdt/v2/download?dateFrom=&dateTo=&type=td|top&namespace=[&service=][&podName=]
 *
 * A zip streamed as it is made: entries "<pod>/<original name>" (a name seen twice for a
 * pod gets its directory time in front: "<pod>/<YYYYMMDDTHHMMSS>-<name>"), text files
 * deflated, zips stored. Only the list of files (ids and names) is held; each file is read
 * in 256 KiB pieces while the client takes the previous ones. estimate=1 answers
 * {"files", "bytes"} instead, so a client can say how large the download will be.
 */
#include "http/cp_zipout.h"
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ZIP_PIECE (256u * 1024)

typedef struct zip_file {
    int64_t id, dir_ms;
    uint64_t bytes;
    cp_dump_kind kind;
    char *entry;            /* "<pod>/<name>" */
} zip_file;

typedef struct zip_list {
    zip_file *f;
    size_t n, cap, max;
    uint64_t bytes;
    int oom, too_many;
} zip_list;

typedef struct zip_state {
    cp_dumps *d;
    zip_list l;
    size_t i;               /* next file */
    cp_zipw *z;
    cp_dump_reader *r;      /* the file being written, or NULL */
    uint64_t off;
    cp_buf out;             /* archive bytes not yet taken by MHD */
    size_t out_pos;
    uint8_t *piece;
    int done, failed;
} zip_state;

static void stamp(int64_t ms, char out[20])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 20, "%Y%m%dT%H%M%S", &tm);
}

static int list_add(void *ud, const cp_dump_meta *m)
{
    zip_list *l = ud;
    if (l->n >= l->max) {
        l->too_many = 1;
        return 1;
    }
    if (cp_grow((void **)&l->f, &l->cap, l->n + 1, sizeof *l->f, 64) != CP_OK) {
        l->oom = 1;
        return 1;
    }
    size_t len = strlen(m->pod) + strlen(m->name) + 2;
    char *e = malloc(len);
    if (!e) {
        l->oom = 1;
        return 1;
    }
    snprintf(e, len, "%s/%s", m->pod, m->name);
    l->f[l->n++] = (zip_file){m->id, m->dir_ms, m->bytes, m->kind, e};
    l->bytes += m->bytes;
    return 0;
}

static void list_free(zip_list *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->f[i].entry);
    free(l->f);
    memset(l, 0, sizeof *l);
}

static int entry_cmp(const void *a, const void *b)
{
    const zip_file *x = *(zip_file *const *)a, *y = *(zip_file *const *)b;
    int c = strcmp(x->entry, y->entry);
    if (c) return c;
    return x->dir_ms < y->dir_ms ? 1 : x->dir_ms > y->dir_ms ? -1 : 0; /* the newest keeps the plain name */
}

/* Renames f to "<pod>/<stamp>-<name>". */
static int rename_entry(zip_file *f)
{
    char st[20];
    stamp(f->dir_ms, st);
    const char *slash = strchr(f->entry, '/');
    size_t pod_len = (size_t)(slash - f->entry), len = strlen(f->entry) + sizeof st + 2;
    char *e = malloc(len);
    if (!e) return CP_ENOMEM;
    snprintf(e, len, "%.*s/%s-%s", (int)pod_len, f->entry, st, slash + 1);
    free(f->entry);
    f->entry = e;
    return CP_OK;
}

/* Gives every entry a unique name (see the file comment): in each group of equal names
 * the newest keeps it. */
static int unique_names(zip_list *l)
{
    if (l->n < 2) return CP_OK;
    zip_file **s = malloc(l->n * sizeof *s);
    if (!s) return CP_ENOMEM;
    for (size_t i = 0; i < l->n; i++) s[i] = &l->f[i];
    qsort(s, l->n, sizeof *s, entry_cmp);
    int st = CP_OK;
    for (size_t i = 0; i < l->n && st == CP_OK;) {
        size_t j = i + 1;
        while (j < l->n && !strcmp(s[j]->entry, s[i]->entry)) j++;
        for (size_t k = i + 1; k < j && st == CP_OK; k++) st = rename_entry(s[k]);
        i = j;
    }
    free(s);
    return st;
}

static int is_text(cp_dump_kind k, const char *entry)
{
    if (k == CP_DUMP_TD || k == CP_DUMP_TOP || k == CP_DUMP_GC) return 1;
    size_t n = strlen(entry);
    return k == CP_DUMP_OTHER && n > 4 && (!strcmp(entry + n - 4, ".log") || !strcmp(entry + n - 4, ".txt"));
}

static int sink(void *ud, const void *p, size_t n)
{
    zip_state *s = ud;
    return cp_buf_append(&s->out, p, n);
}

/* Produces the next bytes of the archive into s->out. CP_OK, or an error (the response
 * ends with an error: the client sees a cut-off download, never a wrong archive). */
static int produce(zip_state *s)
{
    char err[512];
    if (!s->r) {
        while (s->i < s->l.n) { /* open the next file that still exists */
            zip_file *f = &s->l.f[s->i];
            cp_dump_meta m;
            int st = cp_dumps_get(s->d, f->id, &m, err, sizeof err);
            if (st == CP_ENOTFOUND) { /* deleted since the listing */
                s->i++;
                continue;
            }
            if (st != CP_OK) return st;
            if ((st = cp_dumps_reader_open(s->d, &m, &s->r, err, sizeof err)) != CP_OK) return st;
            s->off = 0;
            return cp_zipw_begin(s->z, f->entry, f->dir_ms, is_text(f->kind, f->entry));
        }
        s->done = 1;
        return cp_zipw_finish(s->z);
    }
    long n = cp_dump_reader_pread(s->r, s->piece, ZIP_PIECE, s->off);
    if (n < 0) return (int)n;
    if (n > 0) {
        s->off += (uint64_t)n;
        return cp_zipw_data(s->z, s->piece, (size_t)n);
    }
    cp_dump_reader_close(s->r);
    s->r = NULL;
    s->i++;
    return cp_zipw_end(s->z);
}

static ssize_t zip_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    zip_state *s = cls;
    (void)pos;
    while (s->out_pos >= s->out.len) {
        if (s->done) return MHD_CONTENT_READER_END_OF_STREAM;
        if (s->failed) return MHD_CONTENT_READER_END_WITH_ERROR;
        cp_buf_reset(&s->out);
        s->out_pos = 0;
        if (produce(s) != CP_OK) {
            s->failed = 1;
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    size_t n = s->out.len - s->out_pos;
    if (n > max) n = max;
    memcpy(buf, s->out.data + s->out_pos, n);
    s->out_pos += n;
    return (ssize_t)n;
}

static void zip_free(void *cls)
{
    zip_state *s = cls;
    cp_dump_reader_close(s->r);
    cp_zipw_free(s->z);
    list_free(&s->l);
    cp_buf_free(&s->out);
    free(s->piece);
    free(s);
}

/* The legacy /cdt/v2/download parameters as a filter (missing ones: 400, not 500 as the
 * older collector did). */
static int legacy_filter(const http_args *a, cp_dump_filter *f, http_out *o)
{
    static const char *const allowed[] = {"dateFrom", "dateTo", "type", "namespace", "service", "podName", NULL};
    if (http_check_args(a, allowed, o)) return -1;
    memset(f, 0, sizeof *f);
    const char *need[] = {"dateFrom", "dateTo", "type", "namespace"};
    for (size_t i = 0; i < CP_ARRAY_LEN(need); i++) {
        const http_arg *x = http_arg_get(a, need[i]);
        if (!x || !x->vlen) {
            http_bad_param(o, need[i], "missing_parameter", "'%s' is required", need[i]);
            return -1;
        }
    }
    uint64_t from, to;
    if (cp_parse_u64(http_arg_get(a, "dateFrom")->val, 253402300799999ULL, &from) != CP_OK ||
        cp_parse_u64(http_arg_get(a, "dateTo")->val, 253402300799999ULL, &to) != CP_OK || from >= to) {
        http_bad_param(o, "dateFrom", "bad_range", "dateFrom and dateTo must be epoch ms, dateFrom < dateTo");
        return -1;
    }
    f->from_ms = (int64_t)from;
    f->to_ms = (int64_t)to;
    const char *type = http_arg_get(a, "type")->val;
    if (!strcmp(type, "td")) f->kind = CP_DUMP_TD;
    else if (!strcmp(type, "top")) f->kind = CP_DUMP_TOP;
    else {
        http_bad_param(o, "type", "bad_parameter", "'type' must be td or top");
        return -1;
    }
    f->ns = http_arg_get(a, "namespace")->val;
    http_who_dump_scope(a->who, f); /* only the asker's namespaces (auth.c) */
    const http_arg *svc = http_arg_get(a, "service"), *pod = http_arg_get(a, "podName");
    f->service = svc && svc->vlen ? svc->val : NULL;
    f->pod = pod && pod->vlen ? pod->val : NULL;
    return 0;
}

void http_api_dumps_zip(cp_http *h, const http_args *a, int legacy, http_out *o)
{
    static const char *const allowed[] = {"namespace", "service", "pod", "type", "from", "to", "estimate", NULL};
    cp_dump_filter f;
    if (!h->cfg->dumps) {
        http_error(o, 503, "unavailable", "diagnostic file storage is not configured");
        return;
    }
    if (legacy ? legacy_filter(a, &f, o) : (http_check_args(a, allowed, o) || http_dump_filter(h, a, &f, o))) return;
    const http_arg *est = legacy ? NULL : http_arg_get(a, "estimate");
    zip_state *s = calloc(1, sizeof *s);
    if (!s) {
        http_oom(o);
        return;
    }
    s->d = h->cfg->dumps;
    s->l.max = h->cfg->dump_zip_max_files;
    cp_buf_init(&s->out);
    char err[512] = "";
    int st = cp_dumps_list(s->d, &f, list_add, &s->l, err, sizeof err);
    if (s->l.oom || (st != CP_OK && !s->l.too_many)) {
        if (s->l.oom) http_oom(o);
        else http_reader_error(o, st, "dump listing", err);
        zip_free(s);
        return;
    }
    if (s->l.too_many) {
        http_error(o, 413, "too_many_files", "more than %zu files match; narrow the window or the selection",
                   s->l.max);
        http_audit_dumps_zip(h, a, s->l.n, s->l.bytes, o->status);
        zip_free(s);
        return;
    }
    if (est && est->vlen && strcmp(est->val, "0") && strcmp(est->val, "false")) {
        o->json = json_pack("{s:I,s:I}", "files", (json_int_t)s->l.n, "bytes", (json_int_t)s->l.bytes);
        zip_free(s);
        if (!o->json) http_oom(o);
        return;
    }
    s->piece = malloc(ZIP_PIECE);
    if (!s->piece || unique_names(&s->l) != CP_OK || cp_zipw_new(sink, s, &s->z) != CP_OK) {
        zip_free(s);
        http_oom(o);
        return;
    }
    http_audit_dumps_zip(h, a, s->l.n, s->l.bytes, 200); /* before any byte leaves */
    o->stream = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, zip_read, s, zip_free);
    if (!o->stream) {
        zip_free(s);
        http_oom(o);
        return;
    }
    char a_[20], b_[20];
    stamp(f.from_ms, a_);
    stamp(f.to_ms, b_);
    const char *kind = f.kind ? cp_dump_kind_name(f.kind) : "all";
    o->content_type = "application/zip";
    snprintf(o->disposition, sizeof o->disposition, "attachment; filename=\"%sUTC-%sUTC.%s%s.zip\"", a_, b_, kind,
             legacy ? ".txt" : "");
}
