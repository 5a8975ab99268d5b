/* audit.c -- the audit log's HTTP side (ui.md §10.8, issue 19; store/cp_audit.h): the
 * entry of an audited request, filled from who asks and from where, and
 * GET /api/v1/audit, the log for administrators.
 *
 * When an entry is written:
 *  - a deletion: by the dumps store, in the deletion's own transaction (a failed entry
 *    fails the deletion: no file is ever deleted unrecorded);
 *  - an export or download: before its first byte leaves; a streamed one (CSV, XLSX) gets
 *    its rows, bytes and completeness when its stream ends (cp_audit_finish);
 *  - an import: by its worker once its calls are committed, before the answer.
 * Any other failed write does not fail the request: it is served and the failure logged
 * as a warning (refusing service because the log's table is unreachable would turn an
 * audit problem into an outage; the warning says what went unrecorded).
 *
 * Secrets never reach an entry: the user is the principal's name (never the
 * Authorization header, a cookie or a token), the target the decoded query parameters
 * the endpoint took or an id, none of which carry credentials. HEAD requests are not
 * recorded: no data leaves.
 */
#include "http_internal.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUDIT_PAGE_DEFAULT 100

/* ---- filling an entry ------------------------------------------------------------------------- */

/* The role as the log names it: an upload credential is "uploader" (it has no role). */
static const char *role_of(const http_who *who)
{
    if (!who) return cp_role_name(CP_ROLE_ADMIN); /* --auth none: everyone is an admin */
    return who->p.uploader ? "uploader" : cp_role_name(who->p.role);
}

int http_audit_begin(cp_http *h, const http_who *who, struct MHD_Connection *conn, const char *method,
                     const char *action, cp_audit_entry *e)
{
    if (!h->cfg->audit || (method && !strcmp(method, MHD_HTTP_METHOD_HEAD))) return 0;
    memset(e, 0, sizeof *e);
    e->time_ms = cp_now_ms();
    cp_audit_sets(e->user, sizeof e->user, who && who->p.user[0] ? who->p.user : "anonymous");
    cp_audit_sets(e->role, sizeof e->role, role_of(who));
    char ip[INET6_ADDRSTRLEN + 1];
    http_client_ip(conn, ip, sizeof ip, "");
    cp_audit_sets(e->remote, sizeof e->remote, ip);
    cp_audit_sets(e->action, sizeof e->action, action);
    cp_audit_sets(e->outcome, sizeof e->outcome, CP_AUDIT_OK);
    snprintf(e->detail, sizeof e->detail, "{}");
    return 1;
}

/* Appends s[0..n) percent-encoded except RFC 3986's unreserved characters. */
static int put_encoded(cp_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    int st = CP_OK;
    for (size_t i = 0; i < n && st == CP_OK; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("-._~", c))
            st = cp_buf_putc(b, c);
        else
            st = cp_buf_printf(b, "%%%c%c", hex[c >> 4], hex[c & 15]);
    }
    return st;
}

void http_audit_target_query(cp_audit_entry *e, const http_args *a)
{
    cp_buf b;
    cp_buf_init(&b);
    int st = CP_OK;
    /* past the field's size the rest would be cut anyway: stop building there */
    for (size_t i = 0; i < a->n && st == CP_OK && b.len < CP_AUDIT_MAX_TARGET; i++) {
        if (i) st = cp_buf_putc(&b, '&');
        if (st == CP_OK) st = put_encoded(&b, a->a[i].key, a->a[i].klen);
        if (st == CP_OK) st = cp_buf_putc(&b, '=');
        if (st == CP_OK) st = put_encoded(&b, a->a[i].val, a->a[i].vlen);
    }
    cp_audit_set(e->target, sizeof e->target, st == CP_OK ? (const char *)b.data : "", st == CP_OK ? b.len : 0);
    cp_buf_free(&b);
}

void http_audit_ns_of(cp_audit_entry *e, const http_args *a)
{
    const http_arg *ns = http_arg_get(a, "namespace");
    if (ns && ns->vlen) cp_audit_set(e->ns, sizeof e->ns, ns->val, ns->vlen);
    else if (a->who && !a->who->p.all_namespaces && a->who->p.nns == 1) cp_audit_sets(e->ns, sizeof e->ns, a->who->p.ns[0]);
    else e->ns[0] = 0;
}

/* "ok" below 400, else the status's three digits. */
static void outcome_text(unsigned status, char out[CP_AUDIT_MAX_OUTCOME])
{
    if (status < 400 || status > 999)
        snprintf(out, CP_AUDIT_MAX_OUTCOME, "%s", status < 400 ? CP_AUDIT_OK : "500");
    else
        snprintf(out, CP_AUDIT_MAX_OUTCOME, "%u", status % 1000u);
}

void http_audit_outcome(cp_audit_entry *e, unsigned status) { outcome_text(status, e->outcome); }

/* detail's compact text into dst[0..cap); one too long becomes {"truncated":true}. */
static void detail_text(json_t *detail, char *dst, size_t cap)
{
    char *text = detail ? json_dumps(detail, JSON_COMPACT) : NULL;
    if (!text) snprintf(dst, cap, "{}");
    else if (strlen(text) >= cap) snprintf(dst, cap, "{\"truncated\":true}");
    else snprintf(dst, cap, "%s", text); /* jansson's text: valid UTF-8, controls escaped */
    free(text);
}

void http_audit_detail(cp_audit_entry *e, json_t *detail)
{
    detail_text(detail, e->detail, sizeof e->detail);
    json_decref(detail);
}

int64_t http_audit_record(cp_http *h, cp_audit_entry *e)
{
    char err[512] = "";
    if (!h->cfg->audit) return 0;
    if (cp_audit_record(h->cfg->audit, e, err, sizeof err) == CP_OK) return e->id;
    http_log(h, HTTP_LOG_WARN, "audit: %.32s by %.64s on %.100s not recorded: %s", e->action, e->user, e->target, err);
    return 0;
}

void http_audit_finish(cp_http *h, int64_t id, unsigned status, json_t *detail)
{
    char err[512] = "", oc[CP_AUDIT_MAX_OUTCOME], text[CP_AUDIT_MAX_DETAIL];
    outcome_text(status, oc);
    detail_text(detail, text, sizeof text);
    json_decref(detail);
    if (!h->cfg->audit || id <= 0) return;
    if (cp_audit_finish(h->cfg->audit, id, oc, text, err, sizeof err) != CP_OK)
        http_log(h, HTTP_LOG_WARN, "audit: the end of entry %lld not recorded: %s", (long long)id, err);
}

/* ---- the endpoints' entries ---------------------------------------------------------------------- */

int64_t http_audit_export_start(cp_http *h, const http_args *a, const char *ext, unsigned status)
{
    cp_audit_entry e;
    char action[CP_AUDIT_MAX_ACTION];
    snprintf(action, sizeof action, "%s%s", CP_AUDIT_EXPORT_PREFIX, ext);
    if (!http_audit_begin(h, a->who, a->conn, a->method, action, &e)) return 0;
    http_audit_target_query(&e, a);
    http_audit_ns_of(&e, a);
    http_audit_outcome(&e, status);
    return http_audit_record(h, &e);
}

void http_audit_export_end(cp_http *h, int64_t id, uint64_t rows, uint64_t bytes, int complete, const char *cut)
{
    if (id <= 0) return;
    json_t *d = json_pack("{s:I,s:I,s:b}", "rows", (json_int_t)rows, "bytes", (json_int_t)bytes, "complete", complete);
    if (d && cut) json_object_set_new(d, "truncated", json_string(cut));
    http_audit_finish(h, id, 200, d);
}

void http_audit_dump_download(cp_http *h, const http_args *a, const cp_dump_meta *m, uint64_t start, uint64_t end,
                              int ranged)
{
    cp_audit_entry e;
    if (!http_audit_begin(h, a->who, a->conn, a->method, CP_AUDIT_DUMP_DOWNLOAD, &e)) return;
    snprintf(e.target, sizeof e.target, "%lld", (long long)m->id);
    cp_audit_sets(e.ns, sizeof e.ns, m->ns);
    json_t *d = json_pack("{s:s,s:s,s:s,s:I}", "name", m->name, "pod", m->pod, "type", cp_dump_kind_name(m->kind),
                          "bytes", (json_int_t)m->bytes);
    if (d && ranged) {
        char r[64];
        snprintf(r, sizeof r, "%llu-%llu", (unsigned long long)start, (unsigned long long)end);
        json_object_set_new(d, "range", json_string(r));
    }
    http_audit_detail(&e, d);
    http_audit_record(h, &e);
}

void http_audit_dumps_zip(cp_http *h, const http_args *a, size_t files, uint64_t bytes, unsigned status)
{
    cp_audit_entry e;
    if (!http_audit_begin(h, a->who, a->conn, a->method, CP_AUDIT_DUMPS_DOWNLOAD, &e)) return;
    http_audit_target_query(&e, a);
    http_audit_ns_of(&e, a);
    http_audit_outcome(&e, status);
    http_audit_detail(&e, json_pack("{s:I,s:I}", "files", (json_int_t)files, "bytes", (json_int_t)bytes));
    http_audit_record(h, &e);
}

void http_audit_tree_export(cp_http *h, const http_args *a, const cp_call_ref *refs, size_t n, const char *format,
                            const char *ns, size_t calls, size_t bytes, unsigned status)
{
    cp_audit_entry e;
    if (!http_audit_begin(h, a->who, a->conn, a->method, CP_AUDIT_TREE_EXPORT, &e)) return;
    /* the ids, as many as fit, then how many more there were */
    size_t off = 0, i = 0;
    for (; i < n; i++) {
        char id[CP_CALL_ID_MAX];
        cp_call_id_format(&refs[i], id);
        size_t len = strlen(id) + (i ? 1 : 0);
        if (off + len + 24 >= sizeof e.target) break; /* room for ",(+N more)" */
        off += (size_t)snprintf(e.target + off, sizeof e.target - off, "%s%s", i ? "," : "", id);
    }
    if (i < n) snprintf(e.target + off, sizeof e.target - off, "%s(+%zu more)", i ? "," : "", n - i);
    cp_audit_sets(e.ns, sizeof e.ns, ns);
    http_audit_outcome(&e, status);
    http_audit_detail(&e, json_pack("{s:s,s:I,s:I,s:I}", "format", format, "ids", (json_int_t)n, "calls",
                                    (json_int_t)calls, "bytes", (json_int_t)bytes));
    http_audit_record(h, &e);
}

/* ---- GET /api/v1/audit --------------------------------------------------------------------------- */

static const char *const audit_params[] = {"from", "to", "action", "user", "limit", "cursor", NULL};

/* An epoch-ms parameter: 0 if absent, 1 with *v set, -1 with the 400 in o. */
static int ms_param(const http_args *a, const char *key, int64_t *v, http_out *o)
{
    const http_arg *x = http_arg_get(a, key);
    uint64_t u;
    if (!x || !x->vlen) return 0;
    if (cp_parse_u64(x->val, INT64_MAX, &u) != CP_OK) {
        http_bad_param(o, key, "bad_parameter", "'%s' must be epoch milliseconds", key);
        return -1;
    }
    *v = (int64_t)u;
    return 1;
}

/* A text parameter of at most max bytes (NULL when absent), or -1 with the 400 in o. */
static int text_param(const http_args *a, const char *key, size_t max, const char **out, http_out *o)
{
    const http_arg *x = http_arg_get(a, key);
    *out = NULL;
    if (!x || !x->vlen) return 0;
    if (x->vlen > max) {
        http_bad_param(o, key, "parameter_too_long", "'%s' is longer than %zu bytes", key, max);
        return -1;
    }
    *out = x->val;
    return 0;
}

/* The filter of the request, limited to what the asker may see. 0, or -1 with the 400. */
static int audit_filter(cp_http *h, const http_args *a, cp_audit_filter *f, size_t *limit, http_out *o)
{
    memset(f, 0, sizeof *f);
    int has_from = ms_param(a, "from", &f->from_ms, o), has_to = ms_param(a, "to", &f->to_ms, o);
    if (has_from < 0 || has_to < 0) return -1;
    if (has_from && has_to && f->from_ms >= f->to_ms) {
        http_bad_param(o, "from", "bad_range", "'from' must be before 'to'");
        return -1;
    }
    if (text_param(a, "action", CP_AUDIT_MAX_ACTION - 1, &f->action, o) ||
        text_param(a, "user", CP_AUDIT_MAX_USER - 1, &f->user, o) ||
        http_time_id_cursor(a, &f->before_ms, &f->before_id, o))
        return -1;
    uint64_t l = AUDIT_PAGE_DEFAULT < h->cfg->max_limit ? AUDIT_PAGE_DEFAULT : h->cfg->max_limit;
    const http_arg *x = http_arg_get(a, "limit");
    if (x && x->vlen && (cp_parse_u64(x->val, h->cfg->max_limit, &l) != CP_OK || l == 0)) {
        http_bad_param(o, "limit", "limit_too_large", "'limit' must be 1..%u", h->cfg->max_limit);
        return -1;
    }
    *limit = (size_t)l;
    f->limit = (size_t)l + 1; /* one more tells whether a next page exists */
    /* an admin limited to some namespaces sees only the entries about them (auth.c) */
    if (a->who && !a->who->p.all_namespaces) {
        f->ns_limited = 1;
        f->ns_in = a->who->ns_ptrs;
        f->nns_in = a->who->p.nns;
    }
    return 0;
}

typedef struct audit_page {
    json_t *arr;
    size_t n, limit;
    int64_t last_ms, last_id; /* of the last entry kept */
    int more, oom;
} audit_page;

static json_t *entry_json(const cp_audit_entry *e)
{
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)e->id);
    json_t *detail = json_loads(e->detail, 0, NULL);
    if (detail && !json_is_object(detail)) {
        json_decref(detail);
        detail = NULL;
    }
    return json_pack("{s:s,s:I,s:s,s:s,s:s,s:s,s:o,s:s,s:s,s:o}", "id", id, "time_ms", (json_int_t)e->time_ms, "user",
                     e->user, "role", e->role, "action", e->action, "target", e->target, "namespace",
                     e->ns[0] ? json_string(e->ns) : json_null(), "outcome", e->outcome, "remote", e->remote,
                     "detail", detail ? detail : json_object());
}

static int page_entry(void *ud, const cp_audit_entry *e)
{
    audit_page *p = ud;
    if (p->n == p->limit) { /* the probe entry: there is a next page */
        p->more = 1;
        return 1;
    }
    json_t *j = entry_json(e);
    if (!j || json_array_append_new(p->arr, j) != 0) {
        p->oom = 1;
        return 1;
    }
    p->n++;
    p->last_ms = e->time_ms;
    p->last_id = e->id;
    return 0;
}

void http_api_audit(cp_http *h, const http_args *a, http_out *o)
{
    /* the role first: a viewer learns nothing, not even which parameters exist */
    if (a->who && (a->who->p.uploader || !cp_principal_can(&a->who->p, CP_ROLE_ADMIN))) {
        http_error(o, 403, "forbidden", "the audit log needs the admin role");
        return;
    }
    cp_audit_filter f;
    size_t limit;
    if (http_check_args(a, audit_params, o) || audit_filter(h, a, &f, &limit, o)) return;
    if (!h->cfg->audit) {
        http_error(o, 503, "unavailable", "this server keeps no audit log");
        return;
    }
    audit_page p = {json_array(), 0, limit, 0, 0, 0, 0};
    if (!p.arr) {
        http_oom(o);
        return;
    }
    char err[512] = "";
    int st = cp_audit_list(h->cfg->audit, &f, page_entry, &p, err, sizeof err);
    if (p.oom || (st != CP_OK && !p.more)) {
        json_decref(p.arr);
        if (p.oom) http_oom(o);
        else http_reader_error(o, st, "audit listing", err);
        return;
    }
    json_t *next = json_null();
    if (p.more) {
        char cur[64];
        snprintf(cur, sizeof cur, "%lld_%lld", (long long)p.last_ms, (long long)p.last_id);
        json_decref(next);
        next = json_string(cur);
    }
    o->json = json_pack("{s:o,s:o}", "entries", p.arr, "next_cursor", next);
    if (!o->json) http_oom(o);
}
