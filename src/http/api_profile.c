/* api_profile.c -- GET /api/v1/profile: the aggregate profile of the calls matching a
 * filter (ui.md §10.2, issue 19 item 1), server-side.
 *
 * The /calls filter (namespace, service, pod(s), duration, q, hide_system, from/to, and
 * the asker's namespaces) selects the calls, newest first; up to max_calls of them are
 * merged into one tree (cp_tree: the synthetic root "<N> calls" over each call's root,
 * merged by method text), within the tree's node budget. The answer is the tree's JSON
 * without the per-call list, and a "profile" object: how many calls matched (up to the
 * cap), how many were merged, how many had no trace, and why it stopped early (null, or
 * "max_calls", "max_nodes", "scan_budget").
 *
 * With stream=1 it runs on a query worker (stream.c) and reports its progress: the
 * search's (files, windows, rows) and then the merge's (calls merged of those found). */
#include "http_internal.h"

#include "model/cp_tree.h"

#include <stdlib.h>
#include <string.h>

#define PROFILE_PAGE 1000              /* refs per search round */
#define PROFILE_MAX_CALLS_CAP 100000   /* max_calls may not ask for more (refs: 4.8 MB) */
#define PROFILE_REPORT_EVERY 64        /* calls merged between two progress reports */

static const char *const profile_params[] = {"from", "to", "namespace", "service", "pod", "pods", "hide_system",
                                             "duration", "method", "q", "error", "max_calls", "stream", NULL};

typedef struct refs_ctx {
    cp_call_ref *refs;
    size_t n, cap, max;
    cp_sort_key last;
    size_t page_rows;
    int oom;
} refs_ctx;

static int collect(void *ud, const cp_call *c)
{
    refs_ctx *x = ud;
    if (x->n >= x->max) return 1;
    if (cp_grow((void **)&x->refs, &x->cap, x->n + 1, sizeof *x->refs, 1024) != CP_OK) {
        x->oom = 1;
        return 1;
    }
    cp_call_ref_of(c, &x->refs[x->n++]);
    cp_sort_key_of(c, CP_SORT_TS, 1, &x->last);
    x->page_rows++;
    return 0;
}

/* max_calls: the default (cfg) when absent; 0 and -1 with the 400 set when bad. */
static size_t parse_max_calls(const cp_http *h, const http_args *a, http_out *o)
{
    const http_arg *m = http_arg_get(a, "max_calls");
    if (!m) return h->cfg->max_profile_calls;
    uint64_t v;
    if (cp_parse_u64(m->val, PROFILE_MAX_CALLS_CAP, &v) != CP_OK || v == 0) {
        http_bad_param(o, "max_calls", "bad_parameter", "'max_calls' must be 1..%d", PROFILE_MAX_CALLS_CAP);
        return 0;
    }
    return (size_t)v;
}

/* Every matching ref, newest first, up to x->max; *partial when the scan budget cut it. */
static int find_refs(cp_reader *r, cp_call_filter *f, refs_ctx *x, int *partial)
{
    cp_sort_key after;
    for (;;) {
        cp_search_stats st;
        memset(&st, 0, sizeof st);
        x->page_rows = 0;
        f->limit = x->max - x->n < PROFILE_PAGE ? x->max - x->n : PROFILE_PAGE;
        int rc = cp_reader_search(r, f, collect, x, &st);
        if (rc < 0 && !(rc == CP_EABORT && !x->oom)) return x->oom ? CP_ENOMEM : rc;
        if (st.partial) *partial = 1;
        if (x->n >= x->max || !st.more || st.partial || x->page_rows == 0) return CP_OK;
        after = x->last;
        f->after = &after;
    }
}

/* Appends ,"profile":{...} inside the tree's object (its closing brace is taken back). */
static int profile_tail(cp_buf *out, size_t matched, size_t merged, size_t untraced, const char *stopped)
{
    if (!out->len || out->data[out->len - 1] != '}') return CP_ENOMEM;
    out->len--;
    int bad = cp_buf_printf(out, ",\"profile\":{\"matched\":%zu,\"merged\":%zu,\"without_trace\":%zu,\"stopped\":",
                            matched, merged, untraced) != CP_OK;
    bad |= (stopped ? cp_json_str(out, stopped, strlen(stopped)) : cp_buf_puts(out, "null")) != CP_OK;
    bad |= cp_buf_puts(out, "}}") != CP_OK;
    return bad ? CP_ENOMEM : CP_OK;
}

/* The merge, call by call as the reader hands them over (in any order). */
typedef struct merge_ctx {
    cp_tree *tree;
    const cp_call_ref *refs;            /* the calls, by the reader's index */
    const cp_tree_limits *lim;
    http_profile_progress_fn fn;
    void *ud;
    size_t seen, merged, untraced, to_merge;
    const char *stopped;                /* why no further call is added (NULL: none) */
    int cancelled, failed;              /* failed: a CP_ status, with err */
    char err[256];
} merge_ctx;

static int merge_one(void *ud, size_t i, cp_fetched *fe)
{
    merge_ctx *m = ud;
    if (m->stopped || m->cancelled || m->failed) return 1;
    if (m->fn && m->seen % PROFILE_REPORT_EVERY == 0 && m->fn(m->ud, m->seen, m->to_merge, cp_tree_nodes(m->tree))) {
        m->cancelled = 1;
        return 1;
    }
    m->seen++;
    if (!fe->blob) {
        m->untraced++;
        return 0;
    }
    /* past three quarters of the node budget no further call is added: one call cannot
     * usually take the rest, and a call the budget cut would be merged in part */
    if (cp_tree_nodes(m->tree) > m->lim->max_nodes / 4 * 3) {
        m->stopped = "max_nodes";
        return 1;
    }
    /* a trimmed value's "source": the profile lists no calls to fetch it whole from */
    char id[CP_CALL_ID_MAX];
    cp_call_id_format(&m->refs[i], id);
    int st = cp_tree_set_source(m->tree, id, strlen(id));
    if (st == CP_OK) st = cp_tree_add(m->tree, fe->blob, m->err, sizeof m->err);
    if (st != CP_OK) {
        m->failed = st;
        return 1;
    }
    m->merged++;
    return 0;
}

/* Merges the refs' trees (read together: cold calls file by file); the answer (tree +
 * profile tail) or an error in o. */
static void merge_refs(cp_http *h, cp_reader *r, const refs_ctx *x, const char *stopped, http_profile_progress_fn fn,
                       void *ud, http_out *o, int *failed)
{
    cp_tree_limits lim;
    cp_tree_limits_default(&lim);
    lim.max_nodes = h->cfg->max_tree_nodes;
    merge_ctx m;
    memset(&m, 0, sizeof m);
    m.tree = cp_tree_new(&lim);
    if (!m.tree) {
        http_oom(o);
        return;
    }
    m.lim = &lim;
    m.refs = x->refs;
    m.fn = fn;
    m.ud = ud;
    m.to_merge = x->n;
    char err[256] = "";
    int st = cp_reader_fetch_many(r, x->refs, x->n, merge_one, &m, err, sizeof err);
    if (m.cancelled) {
        http_error(o, 503, "cancelled", "the profile was cancelled");
    } else if (m.failed == CP_ELIMIT) {
        http_error(o, 413, "tree_too_large", "the profile is over its budget: %s", m.err);
    } else if (m.failed) {
        http_error(o, 500, "corrupt_trace", "a stored trace cannot be read: %s", m.err);
    } else if (st < 0 && st != CP_EABORT) {
        *failed = st != CP_ECORRUPT && st != CP_ENOMEM;
        if (st == CP_ENOMEM) http_oom(o);
        else if (st == CP_ECORRUPT) http_error(o, 500, "corrupt_trace", "%s", err);
        else http_reader_error(o, st, "get", cp_reader_errmsg(r));
    }
    if (m.stopped) stopped = m.stopped;
    if (o->status == 200) {
        if (m.merged == 0 && x->n == 0) {
            http_error(o, 404, "no_calls", "no call matches the filter");
        } else if (m.merged == 0) {
            http_error(o, 410, "trace_unavailable", "none of the %zu matching calls has a trace", x->n);
        } else if (cp_tree_json(m.tree, "[]", 2, &o->body) != CP_OK ||
                   profile_tail(&o->body, x->n, m.merged, m.untraced, stopped) != CP_OK) {
            http_oom(o);
        }
    }
    cp_tree_free(m.tree);
}

void http_profile_answer(cp_http *h, const http_query *q, const cp_call_filter *filter, http_profile_progress_fn fn,
                         void *ud, http_out *o)
{
    refs_ctx x;
    memset(&x, 0, sizeof x);
    x.max = q->profile_max ? q->profile_max : h->cfg->max_profile_calls;
    cp_call_filter f = *filter;
    f.sort = CP_SORT_TS;
    f.desc = 1;
    f.after = NULL;
    cp_reader *r;
    if (http_reader_take(h, o, &r)) return;
    int partial = 0, failed = 0;
    int rc = find_refs(r, &f, &x, &partial);
    if (rc == CP_ENOMEM) {
        http_oom(o);
    } else if (rc < 0) {
        failed = 1;
        http_reader_error(o, rc, "search", cp_reader_errmsg(r));
    }
    if (o->status == 200)
        merge_refs(h, r, &x, partial ? "scan_budget" : x.n >= x.max ? "max_calls" : NULL, fn, ud, o, &failed);
    http_pool_release(h, r, failed);
    free(x.refs);
}

void http_api_profile(cp_http *h, struct MHD_Connection *conn, const http_args *a, http_out *o)
{
    http_query q;
    memset(&q, 0, sizeof q);
    if (http_check_args(a, profile_params, o) || http_query_parse(h, a, HTTP_Q_STREAM, &q, o)) {
        http_query_free(&q);
        return;
    }
    q.profile_max = parse_max_calls(h, a, o);
    if (!q.profile_max) {
        http_query_free(&q);
        return;
    }
    if (q.stream) {
        http_stream_start(h, conn, HTTP_STREAM_PROFILE, &q, o);
        return;
    }
    cp_call_filter f;
    http_query_filter(h, &q, &f);
    http_profile_answer(h, &q, &f, NULL, NULL, o);
    http_query_free(&q);
}
