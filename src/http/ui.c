/* ui.c -- the web UI's files, served from the table compiled into the binary
 * (cp_ui_assets.h, generated from ui/dist by tools/embed_ui.c).
 *
 * Every GET/HEAD path outside /api, /diagnostic and /cdt belongs to the UI:
 *  - "/" and "/index.html" are the page; an exact asset path is that file;
 *  - any other path whose last segment has no '.' is a client route of the single-page
 *    app (/calls, /tree, /dump/td/12...) and gets the page too: the app reads the URL;
 *  - a path with a '.' that is no asset is a 404 like the API's.
 * Other methods are a 405. Query strings play no part (the app reads them).
 *
 * Hashed files under /assets/ never change and are cached for a year; the page itself is
 * revalidated on each load (no-cache + ETag, answered 304 when unchanged), so a new
 * build reaches browsers at once. A gzip variant, made at build time, is sent to clients
 * that accept it. With no table (the UI was not built) the page is a 503 saying how to
 * build it; the API is unaffected.
 */
#include "http_internal.h"
#include "http/cp_ui_assets.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The app loads its own script and style only, talks to its own origin only, and may
 * not be framed; inline styles are allowed (style attributes the app renders). */
static const char ui_csp[] = "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
                             "script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
                             "frame-ancestors 'none'";

static const char not_built_page[] =
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>cloudprof: web UI not built</title>"
    "</head>\n<body style=\"font-family:sans-serif;max-width:40em;margin:3em auto\">\n"
    "<h1>cloudprof</h1>\n<p>The web UI was not built into this binary.</p>\n"
    "<p>Run <code>scripts/ui-build.sh</code>, then rebuild cloudprof (<code>cmake --build build</code>).</p>\n"
    "<p>The HTTP API under <a href=\"/api/v1/health\">/api/v1</a> works without it.</p>\n</body></html>\n";

int http_ui_path(const char *url)
{
    static const char *const other[] = {"/api", "/diagnostic", "/cdt"};
    if (url[0] != '/') return 0; /* "*" or an absolute URL: the router's 404 */
    for (size_t i = 0; i < CP_ARRAY_LEN(other); i++) {
        size_t n = strlen(other[i]);
        if (!strncmp(url, other[i], n) && (url[n] == 0 || url[n] == '/')) return 0;
    }
    return 1;
}

static int cmp_asset(const void *key, const void *elem)
{
    return strcmp(key, ((const cp_ui_asset *)elem)->path);
}

static const cp_ui_asset *find_asset(const char *path)
{
    return bsearch(path, cp_ui_assets, cp_ui_asset_count, sizeof cp_ui_assets[0], cmp_asset);
}

/* 1 if a qvalue ("1", "0.5", "0.000") is above zero; a malformed one counts as zero. */
static int q_positive(const char *s, const char *e)
{
    if (s == e || (*s != '0' && *s != '1')) return 0;
    int nonzero = 0;
    for (const char *p = s; p < e; p++) {
        if (*p == '.' && p == s + 1) continue;
        if (*p < '0' || *p > '9') return 0;
        nonzero |= *p != '0';
    }
    return nonzero;
}

static const char *skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    return p;
}

/* 1 if Accept-Encoding allows gzip: "gzip" (or "x-gzip") with q > 0, or, when gzip is not
 * named, "*" with q > 0. "gzip;q=0" refuses it even if "*" is listed. */
static int accepts_gzip(const char *ae)
{
    int gzip = -1, star = -1; /* -1: not named; else whether its q is above zero */
    while (ae && *ae) {
        const char *e = strchr(ae, ',');
        if (!e) e = ae + strlen(ae);
        const char *p = skip_ws(ae, e), *name = p;
        while (p < e && *p != ';' && *p != ' ' && *p != '\t') p++;
        size_t nlen = (size_t)(p - name);
        int ok = 1;
        while (p < e) { /* parameters: only q matters */
            p = strchr(p, ';');
            if (!p || p >= e) break;
            p = skip_ws(p + 1, e);
            if (e - p >= 2 && (*p == 'q' || *p == 'Q') && p[1] == '=') {
                const char *v = p + 2, *ve = v;
                while (ve < e && *ve != ';' && *ve != ' ' && *ve != '\t') ve++;
                ok = q_positive(v, ve);
            }
        }
        if ((nlen == 4 && !strncasecmp(name, "gzip", 4)) || (nlen == 6 && !strncasecmp(name, "x-gzip", 6)))
            gzip = gzip == 1 ? 1 : ok;
        else if (nlen == 1 && *name == '*')
            star = ok;
        ae = *e ? e + 1 : e;
    }
    return gzip >= 0 ? gzip : star == 1;
}

/* 1 if If-None-Match lists etag ("*" lists any; W/ is ignored: weak comparison). */
static int etag_listed(const char *inm, const char *etag)
{
    size_t n = strlen(etag);
    const char *p = inm;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        if (!*p) return 0;
        if (*p == '*') return 1;
        if (p[0] == 'W' && p[1] == '/') p += 2;
        if (*p != '"') return 0; /* malformed: not a match */
        const char *q = strchr(p + 1, '"');
        if (!q) return 0;
        if ((size_t)(q + 1 - p) == n && !memcmp(p, etag, n)) return 1;
        p = q + 1;
    }
}

/* Headers every UI answer carries (Content-Type and nosniff come from http.c). */
static void common_headers(struct MHD_Response *r, const char *content_type)
{
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    if (!strncmp(content_type, "text/html", 9)) MHD_add_response_header(r, "Content-Security-Policy", ui_csp);
}

static void send_asset(struct MHD_Connection *conn, const cp_ui_asset *a, http_out *o)
{
    int gz = a->gz && accepts_gzip(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
    /* the gzip bytes are another representation: their own entity tag */
    char etag[96];
    size_t n = strlen(a->etag);
    if (!gz || n < 2 || n + 4 > sizeof etag) {
        snprintf(etag, sizeof etag, "%s", a->etag);
    } else {
        memcpy(etag, a->etag, n - 1);
        memcpy(etag + n - 1, "-gz\"", 5);
    }
    const char *inm = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    int fresh = inm && etag_listed(inm, etag);
    const unsigned char *body = fresh ? (const unsigned char *)"" : gz ? a->gz : a->data;
    size_t len = fresh ? 0 : gz ? a->gz_len : a->len;
    /* the table is static: MHD sends from it without a copy */
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_PERSISTENT);
    if (!r) {
        http_oom(o);
        return;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, etag);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL,
                            !strncmp(a->path, "/assets/", 8) ? "public, max-age=31536000, immutable" : "no-cache");
    if (a->gz) MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    if (gz && !fresh) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    common_headers(r, a->content_type);
    o->status = fresh ? 304 : 200;
    o->content_type = a->content_type;
    o->stream = r;
}

/* The page of a binary built without the UI. */
static void send_not_built(http_out *o)
{
    static const char type[] = "text/html; charset=utf-8";
    struct MHD_Response *r =
        MHD_create_response_from_buffer(sizeof not_built_page - 1, (void *)not_built_page, MHD_RESPMEM_PERSISTENT);
    if (!r) {
        http_oom(o);
        return;
    }
    common_headers(r, type);
    o->status = 503;
    o->content_type = type;
    o->stream = r;
}

void http_ui_serve(struct MHD_Connection *conn, const char *url, const char *method, http_out *o)
{
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        http_error(o, 405, "method_not_allowed", "method not allowed here");
        o->allow = "GET, HEAD";
        return;
    }
    int page = !strcmp(url, "/") || !strcmp(url, "/index.html");
    const cp_ui_asset *a = page ? NULL : find_asset(url);
    if (!a) {
        if (!page && strchr(strrchr(url, '/') + 1, '.')) { /* a file name that is not ours */
            http_error(o, 404, "not_found", "no such file");
            return;
        }
        a = find_asset("/index.html"); /* the app's own routes */
        if (!a) {
            send_not_built(o);
            return;
        }
    }
    send_asset(conn, a, o);
}
