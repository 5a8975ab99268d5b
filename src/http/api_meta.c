/* api_meta.c -- the small endpoints: /health, /time, /config and the discovery tree
 * /services (namespaces -> services -> pods -> restarts with call counts). Built with
 * jansson: nothing here embeds model-layer JSON.
 */
#include "http_internal.h"
#include "cp_ui_assets.h"

#include <string.h>
#include <strings.h>

static const char *const window_params[] = {"from", "to", NULL};

/* {"status":"ok"|"degraded", ...the server's fields}: open to every client (no secrets). */
void http_api_health(cp_http *h, const http_args *a, http_out *o)
{
    if (http_check_args(a, NULL, o)) return;
    const char *status = "ok";
    cp_buf fields;
    cp_buf_init(&fields);
    if (h->cfg->health) h->cfg->health(h->cfg->state_ud, &fields, &status);
    if (cp_buf_printf(&o->body, "{\"status\":\"%s\"", status) != CP_OK ||
        cp_buf_append(&o->body, fields.data, fields.len) != CP_OK || cp_buf_putc(&o->body, '}') != CP_OK)
        http_oom(o);
    cp_buf_free(&fields);
}

int http_disk_low(const cp_http *h) { return h->cfg->disk_low && h->cfg->disk_low(h->cfg->state_ud); }

void http_api_time(cp_http *h, const http_args *a, http_out *o)
{
    (void)h;
    if (http_check_args(a, NULL, o)) return;
    o->json = json_pack("{s:I}", "now_ms", (json_int_t)cp_now_ms());
}

/* The UI builds links from it (the id URL-encoded in place of {id}, the param's name in
 * place of {name}), so only an http(s) URL of printable ASCII is taken: a javascript: or
 * data: URL, or a quote breaking out of an attribute, cannot come from it. */
int http_trace_link_check(const char *t, char *err, size_t errlen)
{
    size_t n = strlen(t);
    if (strncasecmp(t, "http://", 7) && strncasecmp(t, "https://", 8)) {
        snprintf(err, errlen, "--trace-link: '%.80s' is not an http:// or https:// URL", t);
        return CP_EINVAL;
    }
    if (n > 2048) {
        snprintf(err, errlen, "--trace-link: %zu bytes, at most 2048", n);
        return CP_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>') {
            snprintf(err, errlen, "--trace-link: byte %zu is not allowed in a URL (percent-encode it)", i);
            return CP_EINVAL;
        }
    }
    if (!strstr(t, "{id}")) {
        snprintf(err, errlen, "--trace-link: '%.80s' has no {id} to put the id in", t);
        return CP_EINVAL;
    }
    return CP_OK;
}

void http_api_config(cp_http *h, const http_args *a, http_out *o)
{
    const cp_http_config *c = h->cfg;
    if (http_check_args(a, NULL, o)) return;
    o->json = json_pack("{s:s,s:{s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:s},s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I},s:s}",
                        "version", c->version ? c->version : "",
                        "features",
                        "calls", 1, "stats", 1, "tree", 1, "merged_tree", 1, "trace_download", 1,
                        "export_csv", 1, "export_xlsx", 1, "dumps", c->dumps != NULL, "hide_system", 1,
                        "ui", cp_ui_asset_count > 0, "stream", 1, "import", c->open_catalog != NULL,
                        "export_tptp", 1, "auth", cp_auth_mode_name(c->auth_mode),
                        "limits",
                        "max_span_ms", (json_int_t)c->max_span_ms,
                        "default_limit", (json_int_t)(c->max_limit < 100 ? c->max_limit : 100),
                        "max_limit", (json_int_t)c->max_limit,
                        "max_scan", (json_int_t)c->max_scan,
                        "max_tree_calls", (json_int_t)c->max_tree_calls,
                        "max_tree_nodes", (json_int_t)c->max_tree_nodes,
                        "max_export_rows", (json_int_t)c->max_export_rows,
                        "cursor_ttl_ms", (json_int_t)c->cursor_ttl_ms,
                        "import_max_bytes", (json_int_t)c->import_max_bytes,
                        "default_duration", ">=500ms");
    if (o->json) json_object_set_new(o->json, "auth", json_string(cp_auth_mode_name(c->auth_mode)));
    /* the aggregate profile (issue 19): a feature and its default cap */
    json_t *feat = o->json ? json_object_get(o->json, "features") : NULL;
    json_t *lim = o->json ? json_object_get(o->json, "limits") : NULL;
    if (feat && lim &&
        (json_object_set_new(feat, "profile", json_true()) ||
         json_object_set_new(lim, "max_profile_calls", json_integer((json_int_t)c->max_profile_calls)))) {
        json_decref(o->json);
        o->json = NULL;
    }
    /* sampled stacks as trees (issue 19 items 3, 4: api_stacks.c), served with the dumps */
    if (o->json && feat && (json_object_set_new(feat, "threads_profile", json_boolean(c->dumps != NULL)) ||
                            json_object_set_new(feat, "pprof_tree", json_boolean(c->dumps != NULL)))) {
        json_decref(o->json);
        o->json = NULL;
    }
    /* a heap dump's summary (issue 19 item 9: api_hprof.c), served with the dumps */
    if (o->json && feat && json_object_set_new(feat, "hprof_summary", json_boolean(c->dumps != NULL))) {
        json_decref(o->json);
        o->json = NULL;
    }
    /* the audit log (issue 19 item 10: audit.c): GET /audit, for admins */
    if (o->json && feat && json_object_set_new(feat, "audit", json_boolean(c->audit != NULL))) {
        json_decref(o->json);
        o->json = NULL;
    }
    /* the ids chip's links (ui.md §3.3, MAY): the operator's template, checked at start */
    if (o->json && json_object_set_new(o->json, "trace_link", c->trace_link ? json_string(c->trace_link) : json_null())) {
        json_decref(o->json);
        o->json = NULL;
    }
    /* a trimmed value's whole text (issue 19 item 8: api_value.c, GET /calls/{id}/value) */
    if (o->json && feat && json_object_set_new(feat, "full_values", json_true())) {
        json_decref(o->json);
        o->json = NULL;
    }
    if (!o->json) http_oom(o);
}

/* ---- /services ------------------------------------------------------------------------ */

/* Builds the nested tree from rows ordered by namespace, service, pod, restart: a new
 * level object starts whenever its name changes. */
typedef struct services_ctx {
    json_t *namespaces;
    json_t *ns, *svc, *pod;           /* the open objects of each level (borrowed) */
    json_int_t ns_calls, svc_calls, pod_calls;
    size_t rows;
    int oom, truncated;
    const http_who *who;              /* rows of namespaces it may not see are left out */
} services_ctx;

static int same_name(json_t *obj, const char *key, const char *s)
{
    return obj && !strcmp(json_string_value(json_object_get(obj, key)), s ? s : "");
}

/* Stores the running counts of the open levels into their objects. */
static void services_flush(services_ctx *x)
{
    if (x->pod) json_object_set_new(x->pod, "calls", json_integer(x->pod_calls));
    if (x->svc) json_object_set_new(x->svc, "calls", json_integer(x->svc_calls));
    if (x->ns) json_object_set_new(x->ns, "calls", json_integer(x->ns_calls));
}

/* Opens a level object {key: name, "calls": 0, child: []} appended to parent_list. */
static json_t *open_level(services_ctx *x, json_t *parent_list, const char *key, const char *name,
                          const char *child)
{
    json_t *obj = json_pack("{s:s,s:I,s:[]}", key, name ? name : "", "calls", (json_int_t)0, child);
    if (!obj || json_array_append_new(parent_list, obj) != 0) {
        x->oom = 1;
        return NULL;
    }
    return obj;
}

static int services_row(void *ud, const cp_pod_row *p)
{
    services_ctx *x = ud;
    if (!http_who_sees(x->who, p->ns ? p->ns : "", p->ns ? strlen(p->ns) : 0)) return 0;
    if (++x->rows > HTTP_SERVICES_MAX_ROWS) {
        x->truncated = 1;
        return 1;
    }
    if (!same_name(x->ns, "namespace", p->ns)) {
        services_flush(x);
        x->ns = open_level(x, x->namespaces, "namespace", p->ns, "services");
        x->svc = x->pod = NULL;
        x->ns_calls = 0;
    }
    if (x->ns && !same_name(x->svc, "service", p->service)) {
        services_flush(x);
        x->svc = open_level(x, json_object_get(x->ns, "services"), "service", p->service, "pods");
        x->pod = NULL;
        x->svc_calls = 0;
    }
    if (x->svc && !same_name(x->pod, "pod", p->pod)) {
        services_flush(x);
        x->pod = open_level(x, json_object_get(x->svc, "pods"), "pod", p->pod, "restarts");
        x->pod_calls = 0;
    }
    if (!x->pod) return 1; /* out of memory */
    json_t *r = json_pack("{s:I,s:I,s:I,s:I}", "restart_ms", (json_int_t)p->restart_ms, "first_ms",
                          (json_int_t)p->first_ms, "last_ms", (json_int_t)p->last_ms, "calls", (json_int_t)p->calls);
    if (!r || json_array_append_new(json_object_get(x->pod, "restarts"), r) != 0) {
        x->oom = 1;
        return 1;
    }
    x->pod_calls += p->calls;
    x->svc_calls += p->calls;
    x->ns_calls += p->calls;
    return 0;
}

void http_api_services(cp_http *h, const http_args *a, http_out *o)
{
    int64_t from, to;
    if (http_check_args(a, window_params, o) || http_parse_window(h, a, &from, &to, o)) return;
    services_ctx x;
    memset(&x, 0, sizeof x);
    x.who = a->who;
    x.namespaces = json_array();
    cp_reader *r;
    if (http_reader_take(h, o, &r)) {
        json_decref(x.namespaces);
        return;
    }
    int rc = x.namespaces ? cp_reader_pods(r, from, to, services_row, &x) : CP_ENOMEM;
    int failed = rc < 0 && !x.oom && !x.truncated;
    if (failed) http_reader_error(o, rc, "pods", cp_reader_errmsg(r));
    http_pool_release(h, r, failed);
    if (!failed) {
        services_flush(&x);
        o->json = x.oom ? NULL : json_pack("{s:O,s:b}", "namespaces", x.namespaces, "partial", x.truncated);
        if (!o->json) http_oom(o);
    }
    json_decref(x.namespaces);
}
