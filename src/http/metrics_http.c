/* metrics_http.c -- GET /metrics (README "Metrics", docs/API.md "GET /metrics"): the
 * registry (common/cp_metrics.h) in the Prometheus text format, open without a login like
 * /api/v1/health; and what the HTTP layer adds to it: every answer by route and status
 * (http.c's send_out), upload bytes (upload.c).
 *
 * Routes are named from a fixed list (cp_m_route), never from the URL itself, so a
 * client that walks random paths cannot make the series grow.
 */
#include "http_internal.h"

#include "common/cp_metrics.h"

#include <string.h>

void http_metrics_init(cp_http *h)
{
    /* without a shared registry (tests, tools) the HTTP server keeps its own */
    h->metrics = h->cfg->metrics;
    if (!h->metrics) h->metrics = h->own_metrics = cp_metrics_new();
}

void http_metrics_free(cp_http *h)
{
    cp_metrics_free(h->own_metrics);
    h->own_metrics = h->metrics = NULL;
}

/* ---- route names --------------------------------------------------------------------------- */

/* Splits what follows "/api/v1/" into at most 4 non-empty segments (pointers into buf);
 * returns their count, or -1 for more, empty ones, or a path too long. */
static int api_parts(const char *rest, char *buf, size_t buflen, const char *parts[4])
{
    size_t len = strlen(rest);
    if (len >= buflen) return -1;
    memcpy(buf, rest, len + 1);
    int n = 0;
    for (char *s = buf;;) {
        char *slash = strchr(s, '/');
        if (n == 4 || !*s) return -1;
        parts[n++] = s;
        if (!slash) return n;
        *slash = 0;
        s = slash + 1;
    }
}

static cp_m_route api_route(const char *rest)
{
    static const struct {
        const char *name;
        cp_m_route route;
    } one[] = {{"health", CP_M_ROUTE_HEALTH},       {"time", CP_M_ROUTE_TIME},   {"config", CP_M_ROUTE_CONFIG},
               {"me", CP_M_ROUTE_ME},               {"services", CP_M_ROUTE_SERVICES},
               {"calls", CP_M_ROUTE_CALLS},         {"calls.csv", CP_M_ROUTE_CALLS_CSV},
               {"calls.xlsx", CP_M_ROUTE_CALLS_XLSX},
               {"tree", CP_M_ROUTE_TREE},           {"import", CP_M_ROUTE_IMPORT},
               {"dumps", CP_M_ROUTE_DUMPS},         {"gc", CP_M_ROUTE_GC}};
    char buf[1024];
    const char *p[4];
    int n = api_parts(rest, buf, sizeof buf, p);
    if (n == 1) {
        for (size_t i = 0; i < CP_ARRAY_LEN(one); i++)
            if (!strcmp(p[0], one[i].name)) return one[i].route;
    } else if (n == 2 && !strcmp(p[0], "calls")) {
        return !strcmp(p[1], "stats") ? CP_M_ROUTE_CALLS_STATS : CP_M_ROUTE_CALL;
    } else if (n == 2 && !strcmp(p[0], "tree") && !strcmp(p[1], "export")) {
        return CP_M_ROUTE_TREE_EXPORT;
    } else if (n == 2 && !strcmp(p[0], "dumps")) {
        if (!strcmp(p[1], "summary")) return CP_M_ROUTE_DUMPS_SUMMARY;
        if (!strcmp(p[1], "threads-profile")) return CP_M_ROUTE_DUMP_VIEW; /* a parsed view of several */
        return !strcmp(p[1], "download") ? CP_M_ROUTE_DUMPS_DOWNLOAD : CP_M_ROUTE_DUMP;
    } else if (n == 3 && !strcmp(p[0], "calls")) {
        if (!strcmp(p[2], "tree")) return CP_M_ROUTE_CALL_TREE;
        if (!strcmp(p[2], "trace")) return CP_M_ROUTE_CALL_TRACE;
        if (!strcmp(p[2], "export")) return CP_M_ROUTE_CALL_EXPORT;
        if (!strcmp(p[2], "value")) return CP_M_ROUTE_CALL_TREE; /* the tree walked again for one value */
    } else if (n == 3 && !strcmp(p[0], "dumps")) {
        return CP_M_ROUTE_DUMP_VIEW;
    } else if (n == 4 && !strcmp(p[0], "dumps") && !strcmp(p[2], "profile") && !strcmp(p[3], "tree")) {
        return CP_M_ROUTE_DUMP_VIEW;
    }
    return CP_M_ROUTE_OTHER;
}

cp_m_route http_metrics_route(const char *url)
{
    if (!url || url[0] != '/') return CP_M_ROUTE_OTHER;
    if (!strcmp(url, "/metrics")) return CP_M_ROUTE_METRICS;
    if (!strncmp(url, "/api/v1/", 8)) return api_route(url + 8);
    if (!strncmp(url, "/diagnostic/", 12) || !strcmp(url, "/diagnostic")) return CP_M_ROUTE_UPLOAD;
    if (!strcmp(url, "/cdt/v2/download")) return CP_M_ROUTE_CDT_DOWNLOAD;
    if (!strncmp(url, "/auth/", 6)) return CP_M_ROUTE_AUTH;
    return http_ui_path(url) ? CP_M_ROUTE_UI : CP_M_ROUTE_OTHER;
}

/* ---- what the HTTP layer counts ------------------------------------------------------------- */

void http_metrics_request(cp_http *h, const char *url, unsigned status)
{
    cp_metrics_http_request(h->metrics, http_metrics_route(url), status);
}

void http_metrics_upload(cp_http *h, size_t n) { cp_metrics_add(h->metrics, CP_M_HTTP_UPLOAD_BYTES, 0, n); }

/* ---- GET /metrics ------------------------------------------------------------------------------ */

void http_metrics_serve(cp_http *h, const char *method, http_out *o)
{
    if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
        http_error(o, 405, "method_not_allowed", "method not allowed here");
        o->allow = "GET, HEAD";
        return;
    }
    if (cp_metrics_write(h->metrics, &o->body) != CP_OK) {
        http_oom(o);
        return;
    }
    o->content_type = CP_METRICS_CONTENT_TYPE;
}
