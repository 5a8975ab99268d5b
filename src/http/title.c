/* title.c -- the human title of a call (ui.md §3.3), as the calls list shows it, for the
 * exports' Title column (§3.11). Rules, the first that applies:
 *   1. the `profiler.title` param;
 *   2. `web.url`: "<web.method> <path>[?<web.query>]" (path without scheme and host), or
 *      "N pages: path1, path2" for several URLs, then ", client: <web.remote.addr>...";
 *   4. "Class.method" then the call's params as "name: v1, v2; name: v" (by name, without
 *      the error marker, the title/web params, thread, start stamp, XA id and `_` ones).
 * Rule 3 (JMS, Quartz, queue listeners) is the UI's (ui/src/calls/title.ts), from the
 * method's signature; the exports give those calls rule 4's form. */
#include "http_internal.h"

#include <jansson.h>
#include <string.h>

static const char *const skip_params[] = {"call.red", "profiler.title", "web.url", "web.method", "web.query",
                                          "web.remote.addr", "thread.name", "java.thread", "time.start",
                                          "call.start", "start.stamp", "xa.id", "xid", "transaction.xid", NULL};

static int skipped(const char *name)
{
    if (name[0] == '_') return 1;
    for (size_t i = 0; skip_params[i]; i++)
        if (!strcmp(name, skip_params[i])) return 1;
    return 0;
}

/* The distinct non-empty string values of params[name], in order, appended with sep. */
static int put_values(cp_buf *out, json_t *params, const char *name, const char *sep, size_t *count)
{
    json_t *vals = json_object_get(params, name);
    size_t i, n = 0;
    json_t *v;
    int st = CP_OK;
    json_array_foreach(vals, i, v) {
        const char *s = json_string_value(v);
        if (!s || !*s) continue;
        int dup = 0;
        for (size_t k = 0; k < i && !dup; k++) dup = json_equal(json_array_get(vals, k), v);
        if (dup) continue;
        if (n++) st = st ? st : cp_buf_puts(out, sep);
        st = st ? st : cp_buf_puts(out, s);
    }
    if (count) *count = n;
    return st;
}

/* A URL without scheme and host: "http://h:8080/a?b" -> "/a?b" ("/" when nothing is left). */
static const char *url_path(const char *url)
{
    const char *p = strstr(url, "://");
    if (!p) return url;
    for (const char *s = url; s < p; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || strchr("+.-", *s)))
            return url;
    const char *rest = p + 3 + strcspn(p + 3, "/?#");
    return *rest ? rest : "/";
}

static int web_title(cp_buf *out, json_t *params)
{
    json_t *urls = json_object_get(params, "web.url");
    size_t nurls = 0, i;
    json_t *v;
    json_array_foreach(urls, i, v) nurls += json_string_value(v) && *json_string_value(v);
    int st = CP_OK;
    if (nurls > 1) {
        st = cp_buf_printf(out, "%zu pages: ", nurls);
        size_t n = 0;
        json_array_foreach(urls, i, v) {
            const char *s = json_string_value(v);
            if (!s || !*s) continue;
            if (n++) st = st ? st : cp_buf_puts(out, ", ");
            st = st ? st : cp_buf_puts(out, url_path(s));
        }
    } else {
        const char *method = json_string_value(json_array_get(json_object_get(params, "web.method"), 0));
        const char *query = json_string_value(json_array_get(json_object_get(params, "web.query"), 0));
        const char *url = NULL;
        json_array_foreach(urls, i, v) if (json_string_value(v) && *json_string_value(v)) url = json_string_value(v);
        const char *path = url_path(url ? url : "");
        if (method && *method) st = cp_buf_printf(out, "%s ", method);
        st = st ? st : cp_buf_puts(out, path);
        if (query && *query && !strchr(path, '?')) st = st ? st : cp_buf_printf(out, "?%s", query);
    }
    size_t before = out->len, n = 0;
    st = st ? st : cp_buf_puts(out, ", client: ");
    st = st ? st : put_values(out, params, "web.remote.addr", ", ", &n);
    if (!n) out->len = before;
    return st;
}

/* "ret pkg.Class.method(args) (File.java:12) [jar]" -> "Class.method". */
static int short_method(cp_buf *out, const char *m, size_t len)
{
    size_t end = len;
    const char *paren = memchr(m, '(', len);
    if (paren) end = (size_t)(paren - m);
    while (end > 0 && m[end - 1] == ' ') end--;
    size_t start = end;
    while (start > 0 && m[start - 1] != ' ') start--;
    /* the last two dotted parts */
    size_t dots = 0, k = end;
    while (k > start) {
        if (m[k - 1] == '.' && ++dots == 2) break;
        k--;
    }
    return cp_buf_append(out, m + k, end - k);
}

int http_call_title(const cp_call *c, cp_buf *out)
{
    cp_buf_reset(out);
    json_t *params = c->params_json && c->params_json_len ? json_loadb(c->params_json, c->params_json_len, 0, NULL)
                                                          : NULL;
    int st = CP_OK;
    const char *given = json_string_value(json_array_get(json_object_get(params, "profiler.title"), 0));
    if (given && *given) {
        st = cp_buf_puts(out, given);
    } else if (json_array_size(json_object_get(params, "web.url"))) {
        st = web_title(out, params);
    } else {
        if (c->method_len && c->method[0] == '#') st = cp_buf_append(out, c->method, c->method_len);
        else st = short_method(out, c->method ? c->method : "", c->method ? c->method_len : 0);
        /* the params by name (a JSON object from the catalog is already in name order) */
        const char *name;
        json_t *vals;
        size_t n = 0;
        json_object_foreach(params, name, vals) {
            if (st || skipped(name)) continue;
            size_t at = out->len, k = 0;
            st = cp_buf_printf(out, "%s%s: ", n ? "; " : " ", name);
            st = st ? st : put_values(out, params, name, ", ", &k);
            if (!k) out->len = at;
            else n++;
        }
    }
    json_decref(params);
    return st;
}
