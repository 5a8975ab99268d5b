/* api_value.c -- GET /calls/{id}/value?param=&key=[&format=json]: the whole text of one
 * value the call's tree trimmed (ui.md §4.5 and §4.6 "view full value", §8.5
 * calls/{ref}/value).
 *
 * The tree (api_tree.c) cuts every value longer than trim_chars and gives it a "key", a
 * hash of the whole text (cp_tree.h). Here the call is fetched as for its tree and walked
 * again by cp_tree_add with cp_tree_want_value set: the walk looks at every value anyway,
 * and copies only the one whose param and key match, so memory is the blob, the tree
 * (bounded by max_tree_nodes) and that one value (bounded by VALUE_MAX_BYTES) -- not every
 * value whole, which a tree built with no trim limit would keep once per node.
 *
 * Access is the tree's: a call of a namespace the asker may not see is a 404 like an
 * unknown id.
 */
#include "http_internal.h"
#include "model/cp_tree.h"

#include <stdio.h>
#include <string.h>

/* The largest value answered (bytes of UTF-8): what a browser dialog can still show, and
 * above what an agent's big-value stream holds in practice. Larger ones get a 413. */
#define VALUE_MAX_BYTES (16u << 20)

/* What the request asks for. */
typedef struct value_req {
    cp_call_ref ref;
    const char *param;           /* URL-decoded, plen bytes (points into the request) */
    size_t plen;
    uint64_t key;
    int json;                    /* format=json */
} value_req;

/* Exactly 16 hex digits (either case), as the tree writes a key. */
static int parse_key(const char *s, size_t n, uint64_t *out)
{
    if (n != 16) return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                          : 16u;
        if (d == 16) return -1;
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* The id, param, key and format: 0, or -1 with the 400 set. */
static int parse_request(const http_args *a, const char *id, value_req *q, http_out *o)
{
    static const char *const allowed[] = {"param", "key", "format", NULL};
    memset(q, 0, sizeof *q);
    if (http_check_args(a, allowed, o)) return -1;
    size_t idlen = strlen(id);
    if (idlen == 0 || idlen >= CP_CALL_ID_MAX || cp_call_id_parse(id, idlen, &q->ref) != CP_OK) {
        http_error(o, 400, "bad_id", "malformed call id");
        return -1;
    }
    const http_arg *p = http_arg_get(a, "param"), *k = http_arg_get(a, "key"), *f = http_arg_get(a, "format");
    if (!p || p->vlen == 0) {
        http_bad_param(o, "param", "bad_parameter", "'param' is required (the param's name)");
        return -1;
    }
    if (p->vlen > HTTP_MAX_NAME_BYTES) {
        http_bad_param(o, "param", "parameter_too_long", "'param' is longer than %d bytes", HTTP_MAX_NAME_BYTES);
        return -1;
    }
    if (!k || parse_key(k->val, k->vlen, &q->key)) {
        http_bad_param(o, "key", "bad_parameter", "'key' must be the group's key: 16 hex digits");
        return -1;
    }
    if (f && f->vlen && strcmp(f->val, "text") && strcmp(f->val, "json")) {
        http_bad_param(o, "format", "bad_parameter", "'format' must be text or json");
        return -1;
    }
    q->param = p->val;
    q->plen = p->vlen;
    q->json = f && !strcmp(f->val, "json");
    return 0;
}

/* Characters as the tree counts them for "length" (every byte that does not continue a
 * UTF-8 sequence), so the two numbers agree. */
static size_t count_chars(const char *p, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)p[i] & 0xC0) != 0x80;
    return c;
}

/* The 200: the text as it is (made valid UTF-8 like the tree's JSON makes it), or the
 * {"param","value","length"} object. */
static void answer_value(const value_req *q, const char *text, size_t len, http_out *o)
{
    int st;
    cp_buf_reset(&o->body);
    if (!q->json) {
        o->content_type = "text/plain; charset=utf-8";
        st = cp_utf8_repair(&o->body, text, len);
    } else {
        st = cp_buf_puts(&o->body, "{\"param\":");
        st = st ? st : cp_json_str(&o->body, q->param, q->plen);
        st = st ? st : cp_buf_puts(&o->body, ",\"value\":");
        st = st ? st : cp_json_str(&o->body, text, len);
        st = st ? st : cp_buf_printf(&o->body, ",\"length\":%zu}", count_chars(text, len));
    }
    if (st != CP_OK) {
        cp_buf_reset(&o->body);
        http_oom(o);
    }
}

/* Walks the call's trace for the value and answers it (or the error). */
static void find_in_call(cp_http *h, const value_req *q, const cp_blob *blob, http_out *o)
{
    cp_tree_limits lim;
    cp_tree_limits_default(&lim);
    lim.max_nodes = h->cfg->max_tree_nodes;
    cp_tree *t = cp_tree_new(&lim);
    char err[256] = "";
    int st = t ? cp_tree_want_value(t, q->param, q->plen, q->key, VALUE_MAX_BYTES) : CP_ENOMEM;
    if (st == CP_OK) st = cp_tree_add(t, blob, err, sizeof err);
    const char *text = NULL;
    size_t len = 0;
    int found = t ? cp_tree_find_value(t, &text, &len) : CP_ENOMEM;
    /* a value met before a budget ran out is still that value: answer it */
    if (found == CP_OK && (st == CP_OK || st == CP_ELIMIT)) answer_value(q, text, len, o);
    else if (found == CP_ELIMIT)
        http_error(o, 413, "value_too_large", "the value has %zu bytes, more than the %u this server answers", len,
                   VALUE_MAX_BYTES);
    else if (st == CP_ELIMIT) http_error(o, 413, "tree_too_large", "the tree is over its budget: %s", err);
    else if (st == CP_ENOMEM) http_oom(o);
    else if (st != CP_OK) http_error(o, 500, "corrupt_trace", "a stored trace cannot be read: %s", err);
    else http_error(o, 404, "value_not_found", "the call has no value of this param with this key");
    cp_tree_free(t);
}

/* Fetches the call as GET /calls/{id}/tree does and answers from its trace. */
static void fetch_and_find(cp_http *h, const http_who *who, const value_req *q, http_out *o)
{
    cp_reader *r = NULL;
    if (http_reader_take(h, o, &r)) return;
    cp_fetched f;
    cp_fetched_init(&f);
    char err[256] = "";
    int rc = cp_reader_fetch(r, &q->ref, &f, err, sizeof err);
    int failed = rc < 0 && rc != CP_ECORRUPT && rc != CP_ENOMEM;
    if (failed) http_reader_error(o, rc, "get", cp_reader_errmsg(r));
    /* the call owns its strings and blob: the reader goes back before the walk */
    http_pool_release(h, r, failed);
    if (failed) {
        /* the error is set */
    } else if (rc == CP_ECORRUPT) {
        http_error(o, 500, "corrupt_trace", "a stored trace cannot be read: %s", err);
    } else if (rc == CP_ENOMEM) {
        http_oom(o);
    } else if (!f.found || !http_who_sees(who, f.call.ns ? f.call.ns : "", f.call.ns ? f.call.ns_len : 0)) {
        char id[CP_CALL_ID_MAX]; /* another namespace's call reads as an unknown one */
        cp_call_id_format(&q->ref, id);
        http_error(o, 404, "call_not_found", "no call with id %s", id);
        http_error_field(o, "id", id);
    } else if (!f.blob) {
        const char *reason = f.call.trace_reason ? f.call.trace_reason : "trace_not_found";
        http_error(o, 410, "trace_unavailable", "no trace available (%s)", reason);
        http_error_field(o, "reason", reason);
    } else {
        find_in_call(h, q, f.blob, o);
    }
    cp_fetched_free(&f);
}

void http_api_call_value(cp_http *h, const http_args *a, const char *id, http_out *o)
{
    value_req q;
    if (parse_request(a, id, &q, o)) return;
    fetch_and_find(h, a->who, &q, o);
}
