/* upload.c -- the agent's diagnostic-file uploads (dumps-http.md §3, §4):
 *
 *   PUT    /diagnostic/{ns}/{YYYY}/{MM}/{DD}/{HH}/{mm}/{ss}/{pod}/{file}   raw body
 *   POST   the same path, multipart/form-data, one or more "file" parts
 *   DELETE the same path
 *
 * The body streams to a temporary file (cp_dumps) as MHD hands it over, whether it came
 * with a Content-Length or chunked. When it has ended, the connection is suspended and a
 * worker thread commits it (fsync, catalog, object store); the answer (201 new, 204
 * replaced) goes out only after the commit returned, so a 2xx means durable. A body cut
 * off never reaches the commit: MHD ends the request with an error and http_diag_free
 * drops the upload, leaving nothing. An error in the middle of a body (a size limit, a
 * full disk, a malformed multipart) drops what was received and discards the rest, then
 * answers the error once the body has ended.
 */
#include "http_internal.h"
#include "http/cp_multipart.h"

#include <errno.h>
#include <stdarg.h>
#include <strings.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIAG_PREFIX "/diagnostic/"
#define DIAG_MAX_FILES 16 /* "file" parts stored from one multipart request */

enum { UP_PUT = 1, UP_POST, UP_DELETE };
enum { ST_RECEIVING, ST_RUNNING, ST_DONE };

typedef struct up_file {
    cp_dump_path path;
    cp_dump_kind kind;       /* by its name */
    cp_dump_upload *up;      /* NULL once committed or dropped */
    cp_dump_meta meta;       /* after a commit */
    int created;
} up_file;

struct http_upload {
    cp_http *h;
    struct MHD_Connection *conn;
    int method;
    cp_dump_path path;       /* from the URL */
    /* the first error: answered when the body has ended */
    unsigned err_status;
    char err_code[32];
    char err_msg[320];
    up_file files[DIAG_MAX_FILES];
    size_t nfiles;
    up_file *cur;            /* receiving into (PUT: files[0]; POST: the current "file" part) */
    cp_mp *mp;               /* POST multipart parser */
    int state;               /* ST_*: written by the worker before it resumes the connection */
    int deleted;             /* DELETE: 1 deleted, 0 absent */
    int audited;             /* DELETE: audit holds its audit log entry (audit.c) */
    cp_audit_entry audit;
};

/* ---- errors ------------------------------------------------------------------------- */

static void up_fail(http_upload *u, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void up_fail(http_upload *u, unsigned status, const char *code, const char *fmt, ...)
{
    if (u->err_status) return; /* the first error is the one answered */
    u->err_status = status;
    snprintf(u->err_code, sizeof u->err_code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->err_msg, sizeof u->err_msg, fmt, ap);
    va_end(ap);
}

/* An error of the storage as an HTTP status: 413 over a limit, 507 when the disk is full
 * (the client retries later, §4.5), 503 when out of memory, 500 otherwise. */
static void up_fail_store(http_upload *u, int st, int err_no, const char *what, const char *msg)
{
    if (st == CP_ELIMIT)
        up_fail(u, 413, "too_large", "%s: %s", what, msg && *msg ? msg : "over the size limit");
    else if (err_no == ENOSPC || err_no == EDQUOT)
        up_fail(u, 507, "storage_full", "%s: no space left for the file", what);
    else if (st == CP_ENOMEM)
        up_fail(u, 503, "overloaded", "%s: out of memory", what);
    else if (st == CP_EINVAL)
        up_fail(u, 400, "bad_upload", "%s: %s", what, msg && *msg ? msg : "invalid");
    else
        up_fail(u, 500, "store_error", "%s: %s", what, msg && *msg ? msg : cp_strstatus(st));
}

static void drop_files(http_upload *u)
{
    for (size_t i = 0; i < u->nfiles; i++)
        if (u->files[i].up) {
            cp_dumps_upload_abort(u->files[i].up);
            u->files[i].up = NULL;
        }
    u->cur = NULL;
}

/* ---- receiving ---------------------------------------------------------------------------- */

static int is_blacklisted(const cp_http *h, const char *ns)
{
    for (size_t i = 0; i < h->cfg->nblacklist; i++)
        if (!strcmp(h->cfg->blacklist[i], ns)) return 1;
    return 0;
}

static uint64_t kind_max(const cp_http *h, cp_dump_kind k)
{
    uint64_t m = k >= 1 && k <= CP_DUMP_KIND_MAX ? h->cfg->dump_max[k] : 0;
    return m ? m : CP_HTTP_DUMP_MAX_DEFAULT;
}

/* Starts receiving a file for path. 0, or -1 with the error recorded. */
static int file_begin(http_upload *u, const cp_dump_path *path)
{
    char err[300] = "";
    cp_dump_name nm;
    if (cp_dump_name_classify(path->file, &nm, err, sizeof err) != CP_OK) {
        up_fail(u, 400, "bad_file_name", "file '%s': %s", path->file, err);
        return -1;
    }
    if (u->nfiles >= DIAG_MAX_FILES) {
        up_fail(u, 400, "too_many_files", "more than %d files in one request", DIAG_MAX_FILES);
        return -1;
    }
    for (size_t i = 0; i < u->nfiles; i++)
        if (!strcmp(u->files[i].path.file, path->file)) {
            up_fail(u, 400, "duplicate_file", "file '%s' is given twice", path->file);
            return -1;
        }
    up_file *f = &u->files[u->nfiles];
    memset(f, 0, sizeof *f);
    f->path = *path;
    f->kind = nm.kind;
    errno = 0;
    int st = cp_dumps_upload_begin(u->h->cfg->dumps, path, kind_max(u->h, nm.kind), &f->up, err, sizeof err);
    if (st != CP_OK) {
        up_fail_store(u, st, errno, "cannot receive the file", err);
        return -1;
    }
    u->nfiles++;
    u->cur = f;
    return 0;
}

static void file_write(http_upload *u, const void *p, size_t n)
{
    if (!u->cur || u->err_status) return;
    errno = 0;
    int st = cp_dumps_upload_write(u->cur->up, p, n);
    if (st == CP_OK) return;
    int e = errno;
    char what[300];
    snprintf(what, sizeof what, "file '%s'", u->cur->path.file);
    if (st == CP_ELIMIT)
        up_fail(u, 413, "too_large", "%s is larger than the limit of %llu bytes for a %s file", what,
                (unsigned long long)kind_max(u->h, u->cur->kind), cp_dump_kind_name(u->cur->kind));
    else
        up_fail_store(u, st, e, what, "cannot write the file");
    drop_files(u);
}

/* multipart callbacks (POST, §4.2): the first "file" part is stored under the URL's
 * name, further ones under their own part file names in the same directory; other
 * fields are ignored. */
static int mp_begin(void *ud, const char *field, const char *filename, const char *content_type)
{
    http_upload *u = ud;
    (void)content_type;
    u->cur = NULL;
    if (u->err_status || strcmp(field, "file") != 0) return CP_OK;
    cp_dump_path p = u->path;
    if (u->nfiles > 0) { /* a further part: its own name, by the rules of a path segment */
        char err[160];
        size_t n = strlen(filename);
        if (cp_dump_segment_check("its file name", filename, n, err, sizeof err) != CP_OK) {
            up_fail(u, 400, "bad_file_name", "part %zu: %s", u->nfiles + 1, err);
            return CP_OK;
        }
        memcpy(p.file, filename, n + 1);
    }
    if (file_begin(u, &p) != 0) drop_files(u);
    return CP_OK;
}

static int mp_data(void *ud, const void *p, size_t n)
{
    file_write(ud, p, n);
    return CP_OK;
}

static int mp_end(void *ud)
{
    ((http_upload *)ud)->cur = NULL;
    return CP_OK;
}

static const cp_mp_callbacks mp_cb = {mp_begin, mp_data, mp_end};

static int is_multipart(const char *ct)
{
    return ct && !strncasecmp(ct, "multipart/", 10);
}

void http_diag_data(http_upload *u, const char *p, size_t n)
{
    if (u) http_metrics_upload(u->h, n);
    if (!u || u->err_status) return; /* after an error the rest of the body is discarded */
    if (u->mp) {
        int st = cp_mp_feed(u->mp, p, n);
        if (st != CP_OK && !u->err_status) {
            up_fail(u, 400, "bad_multipart", "malformed multipart body: %s", cp_mp_errmsg(u->mp));
            drop_files(u);
        }
        return;
    }
    file_write(u, p, n);
}

/* ---- the first call -------------------------------------------------------------------------- */

static int answer_now(http_upload *u, http_out *o)
{
    http_error(o, u->err_status, u->err_code, "%s", u->err_msg);
    if (u->err_status == 503 || u->err_status == 507) o->retry_after = 60;
    return 1;
}

int http_diag_begin(cp_http *h, struct MHD_Connection *conn, const char *raw_url, const char *method,
                    const http_who *who, http_upload **out, http_out *o)
{
    *out = NULL;
    http_upload *u = calloc(1, sizeof *u);
    if (!u) {
        http_oom(o);
        return 1;
    }
    u->h = h;
    u->conn = conn;
    *out = u; /* freed by http_diag_free when the request ends, whatever happens */
    if (!strcmp(method, MHD_HTTP_METHOD_PUT)) u->method = UP_PUT;
    else if (!strcmp(method, MHD_HTTP_METHOD_POST)) u->method = UP_POST;
    else if (!strcmp(method, MHD_HTTP_METHOD_DELETE)) u->method = UP_DELETE;
    if (!u->method) { /* GET/HEAD too: stored files are downloaded through the API (§4.4) */
        http_error(o, 405, "method_not_allowed", "uploads take PUT, POST or DELETE; download through /api/v1/dumps");
        o->allow = "PUT, POST, DELETE";
        return 1;
    }
    char err[300] = "";
    const char *path = raw_url + (strncmp(raw_url, DIAG_PREFIX, sizeof DIAG_PREFIX - 1) ? strlen(raw_url)
                                                                                          : sizeof DIAG_PREFIX - 1);
    size_t plen = strcspn(path, "?#");
    if (cp_dump_path_parse(path, plen, &u->path, err, sizeof err) != CP_OK) {
        http_error(o, 400, "bad_path", "bad upload path: %s", err);
        return 1;
    }
    /* a logged-in operator uploads (and deletes) only in its namespaces (auth.c) */
    if (!http_who_sees(who, u->path.ns, strlen(u->path.ns))) {
        http_error(o, 403, "forbidden", "namespace '%s' is not one of yours", u->path.ns);
        return 1;
    }
    if (is_blacklisted(h, u->path.ns)) {
        http_error(o, 403, "blacklisted", "namespace '%s' is blacklisted", u->path.ns);
        return 1;
    }
    if (!h->cfg->dumps) {
        http_error(o, 503, "unavailable", "diagnostic file storage is not configured");
        o->retry_after = 60;
        return 1;
    }
    if (u->method != UP_DELETE && http_disk_low(h)) { /* a full disk tears files: nothing is taken */
        http_error(o, 507, "storage_full", "the server's data directory is below its free-space floor");
        o->retry_after = 60;
        return 1;
    }
    uint64_t len = 0;
    int body = http_body_declared(conn, &len);
    if (u->method == UP_DELETE) {
        if (body) { /* answered before any of it is read */
            http_error(o, 413, "body_not_allowed", "a DELETE takes no body");
            return 1;
        }
        /* the entry goes into the deletion's transaction (finish_job); its target is the
         * path as sent below /diagnostic/ */
        u->audited = http_audit_begin(h, who, conn, method, CP_AUDIT_DUMP_DELETE, &u->audit);
        if (u->audited) {
            cp_audit_set(u->audit.target, sizeof u->audit.target, path, plen);
            cp_audit_sets(u->audit.ns, sizeof u->audit.ns, u->path.ns);
        }
        return 0;
    }
    cp_dump_name nm;
    if (cp_dump_name_classify(u->path.file, &nm, err, sizeof err) != CP_OK) {
        http_error(o, 400, "bad_file_name", "file '%s': %s", u->path.file, err);
        return 1;
    }
    const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (u->method == UP_POST && is_multipart(ct)) {
        /* its parts may be files of any type, at most DIAG_MAX_FILES of them: a declared
         * length beyond that many of the largest is refused at once */
        uint64_t most = 0;
        for (int k = 1; k <= CP_DUMP_KIND_MAX; k++)
            if (kind_max(h, (cp_dump_kind)k) > most) most = kind_max(h, (cp_dump_kind)k);
        uint64_t cap = most > (UINT64_MAX >> 5) ? UINT64_MAX : most * DIAG_MAX_FILES + (1u << 20);
        if (body == 1 && len > cap) {
            http_error(o, 413, "too_large", "%llu bytes is more than %d files of the largest type allowed",
                       (unsigned long long)len, DIAG_MAX_FILES);
            return 1;
        }
        if (cp_mp_new(ct, &mp_cb, u, &u->mp, err, sizeof err) != CP_OK) {
            http_error(o, 400, "bad_multipart", "%s", err);
            return 1;
        }
        return 0;
    }
    /* PUT, or a POST of a raw body: the body is the file */
    if (body == 1 && len > kind_max(h, nm.kind)) { /* answered before any of it is read */
        http_error(o, 413, "too_large", "%llu bytes is more than the limit of %llu bytes for a %s file",
                   (unsigned long long)len, (unsigned long long)kind_max(h, nm.kind), cp_dump_kind_name(nm.kind));
        return 1;
    }
    if (file_begin(u, &u->path) != 0) return answer_now(u, o);
    return 0;
}

/* ---- finishing (on a worker) -------------------------------------------------------------------- */

static void finish_job(void *arg)
{
    http_upload *u = arg;
    cp_dumps *d = u->h->cfg->dumps;
    char err[512] = "";
    int64_t now = cp_now_ms();
    if (u->method == UP_DELETE) {
        int st = cp_dumps_delete_path_audited(d, &u->path, now, u->audited ? &u->audit : NULL, err, sizeof err);
        if (st == CP_OK) u->deleted = 1;
        else if (st != CP_ENOTFOUND) up_fail_store(u, st, 0, "cannot delete the file", err);
        if (st != CP_OK && u->audited) { /* the attempt that deleted nothing, best effort */
            http_audit_outcome(&u->audit, u->err_status ? u->err_status : 404);
            http_audit_record(u->h, &u->audit);
        }
    } else {
        for (size_t i = 0; i < u->nfiles; i++) {
            up_file *f = &u->files[i];
            if (!f->up) continue;
            if (u->err_status) { /* an earlier part failed: the rest is dropped */
                cp_dumps_upload_abort(f->up);
                f->up = NULL;
                continue;
            }
            errno = 0;
            int st = cp_dumps_upload_commit(f->up, now, &f->meta, &f->created, err, sizeof err);
            int e = errno;
            f->up = NULL; /* freed by the commit whatever the result */
            if (st != CP_OK) {
                char what[300];
                snprintf(what, sizeof what, "file '%s'", f->path.file);
                up_fail_store(u, st, e, what, err);
            }
        }
    }
    u->state = ST_DONE;
    MHD_resume_connection(u->conn);
}

static int answer(http_upload *u, http_out *o)
{
    if (u->err_status) return answer_now(u, o);
    if (u->method == UP_DELETE) {
        if (u->deleted) o->status = 204;
        else http_error(o, 404, "not_found", "no such file");
        return 1;
    }
    int created = 0;
    for (size_t i = 0; i < u->nfiles; i++) created |= u->files[i].created;
    if (!created) { /* every file replaced one: 204 has no body */
        o->status = 204;
        return 1;
    }
    o->status = 201;
    /* {"stored": "<path below /diagnostic>", "bytes": N, "id", "type"} (+ "files" for several) */
    json_t *root = json_object();
    json_t *files = json_array();
    for (size_t i = 0; root && files && i < u->nfiles; i++) {
        const up_file *x = &u->files[i];
        char path[1200], xid[32];
        struct tm tm;
        time_t t = (time_t)(x->path.dir_ms / 1000);
        gmtime_r(&t, &tm);
        snprintf(path, sizeof path, "%s/%04d/%02d/%02d/%02d/%02d/%02d/%s/%s", x->path.ns, tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, x->path.pod, x->path.file);
        snprintf(xid, sizeof xid, "%lld", (long long)x->meta.id);
        json_t *e = json_pack("{s:s%,s:I,s:s,s:s,s:b}", "stored", path, strlen(path), "bytes",
                              (json_int_t)x->meta.bytes, "id", xid, "type", cp_dump_kind_name(x->meta.kind),
                              "created", x->created);
        if (!e) continue;
        if (i == 0) json_object_update(root, e);
        json_array_append_new(files, e);
    }
    if (!root || !files) {
        json_decref(root);
        json_decref(files);
        http_oom(o);
        return 1;
    }
    if (u->nfiles > 1) json_object_set_new(root, "files", files);
    else json_decref(files);
    o->json = root;
    return 1;
}

int http_diag_finish(cp_http *h, http_upload *u, http_out *o)
{
    if (!u) {
        http_oom(o);
        return 1;
    }
    if (u->state == ST_DONE) return answer(u, o);
    if (u->state == ST_RUNNING) return 0; /* a spurious call while the worker runs */
    if (u->mp && !u->err_status) {
        if (cp_mp_finish(u->mp) != CP_OK) {
            up_fail(u, 400, "bad_multipart", "malformed or truncated multipart body: %s", cp_mp_errmsg(u->mp));
        } else if (u->nfiles == 0) {
            up_fail(u, 400, "no_file", "the multipart body has no \"file\" part");
        }
    }
    if (u->err_status) {
        drop_files(u);
        return answer_now(u, o);
    }
    u->state = ST_RUNNING;
    MHD_suspend_connection(u->conn);
    if (http_jobs_submit(h, finish_job, u) != CP_OK) {
        drop_files(u);
        up_fail(u, 503, "unavailable", "the server is stopping");
        u->state = ST_DONE;
        MHD_resume_connection(u->conn);
    }
    return 0;
}

void http_diag_free(http_upload *u)
{
    if (!u) return;
    drop_files(u);
    cp_mp_free(u->mp);
    free(u);
}
