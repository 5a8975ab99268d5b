/* api_stacks.c -- sampled stacks as call trees (ui.md §9.4, §10.7; issue 19 items 3, 4):
 *
 *   GET /api/v1/dumps/threads-profile?pod=..   a pod's thread dumps in a window, merged:
 *                                              one sample per thread per dump
 *   GET /api/v1/dumps/{id}/profile/tree        a Go pprof profile's samples, weighted by
 *                                              one sample type
 *
 * Both answer the JSON of the call trees (cp_stacktree_json, the shape of cp_tree_json),
 * so the UI's Tree / Flame / Icicle / Hotspots views open them as they open a call's
 * tree, plus a "sampled" object saying what a unit of `total` is. Files come through
 * cp_dumps (hot, cold or object) and are parsed by the dump viewers' parsers; the
 * asker's namespaces apply as on every /dumps endpoint.
 */
#include "http_internal.h"

#include "model/cp_stacktree.h"

#include <stdlib.h>
#include <string.h>

#define TP_MAX_DUMPS 500                   /* dumps one threads-profile merges (the newest) */
#define TP_MAX_BYTES ((uint64_t)256 << 20) /* ... and their bytes together */
#define TP_MAX_PODS 100                    /* names in `pods` (one listing each) */

/* A tree bounded like the call trees: a 413 beyond the server's node budget. */
static cp_stacktree *new_tree(const cp_http *h, http_out *o)
{
    cp_stacktree_limits lim;
    cp_stacktree_limits_default(&lim);
    lim.max_nodes = h->cfg->max_tree_nodes;
    cp_stacktree *t = cp_stacktree_new(&lim);
    if (!t) http_oom(o);
    return t;
}

/* The error of a failed cp_stacktree_add*: 413 over a budget, else out of memory. */
static void tree_error(http_out *o, int st, const char *err)
{
    if (st == CP_ELIMIT) http_error(o, 413, "tree_too_large", "the tree is over its budget: %s", err);
    else if (st == CP_ENOMEM) http_oom(o);
    else http_error(o, 503, "store_unavailable", "a thread dump cannot be read from the store: %s", err);
}

/* ---- GET /dumps/threads-profile ----------------------------------------------------------- */

/* The td records to merge: the newest TP_MAX_DUMPS + 1 of every pod asked, kept sorted
 * newest first without duplicates (a dump matches both its pod and its restart's name). */
typedef struct tp_files {
    cp_dump_meta *m;
    size_t n, cap;
    int oom;
} tp_files;

static int tp_row(void *ud, const cp_dump_meta *m)
{
    tp_files *f = ud;
    if (cp_grow((void **)&f->m, &f->cap, f->n + 1, sizeof *f->m, 64) != CP_OK) {
        f->oom = 1;
        return 1;
    }
    f->m[f->n++] = *m;
    return 0;
}

/* Newest first: the listing's order (dir_ms desc, id desc). */
static int newest_first(const void *a, const void *b)
{
    const cp_dump_meta *x = a, *y = b;
    if (x->dir_ms != y->dir_ms) return x->dir_ms > y->dir_ms ? -1 : 1;
    return x->id > y->id ? -1 : x->id < y->id;
}

/* Sorts, drops repeated ids, keeps the newest TP_MAX_DUMPS + 1 (one more tells that some
 * were left out). */
static void tp_trim(tp_files *f)
{
    if (f->n > 1) qsort(f->m, f->n, sizeof *f->m, newest_first);
    size_t u = 0;
    for (size_t i = 0; i < f->n; i++)
        if (!u || f->m[u - 1].id != f->m[i].id) f->m[u++] = f->m[i];
    f->n = u < TP_MAX_DUMPS + 1 ? u : TP_MAX_DUMPS + 1;
}

/* The pods asked: `pod` and the comma-separated `pods` (at most TP_MAX_PODS), each
 * 1..CP_DUMP_MAX_NAME bytes, into names[0..TP_MAX_PODS + 1). *text is a copy of `pods` the
 * names point into (split in place). 0, or -1 with the 400. */
static int tp_pods(const http_args *a, const char *pod, const char **names, size_t *n, char **text, http_out *o)
{
    *n = 0;
    *text = NULL;
    if (pod) names[(*n)++] = pod;
    const http_arg *x = http_arg_get(a, "pods");
    if (x && x->vlen) {
        *text = strndup(x->val, x->vlen);
        if (!*text) {
            http_oom(o);
            return -1;
        }
        size_t listed = 0;
        for (char *s = *text, *comma;; s = comma + 1) {
            comma = strchr(s, ',');
            if (comma) *comma = '\0';
            size_t len = strlen(s);
            if (!len || len > CP_DUMP_MAX_NAME || listed++ == TP_MAX_PODS) {
                http_bad_param(o, "pods", "bad_parameter", "'pods' takes 1..%d names of 1..%d bytes", TP_MAX_PODS,
                               CP_DUMP_MAX_NAME);
                return -1;
            }
            names[(*n)++] = s;
            if (!comma) break;
        }
    }
    if (!*n) {
        http_bad_param(o, "pod", "missing_parameter", "'pod' (or 'pods') is required");
        return -1;
    }
    return 0;
}

/* Lists the td files of every pod into f. 0, or -1 with the answer set. */
static int tp_list(cp_http *h, cp_dump_filter *flt, const char *const *pods, size_t npods, tp_files *f,
                   http_out *o)
{
    flt->kind = CP_DUMP_TD;
    flt->limit = TP_MAX_DUMPS + 1;
    for (size_t i = 0; i < npods; i++) {
        char err[512] = "";
        flt->pod = pods[i];
        int st = cp_dumps_list(h->cfg->dumps, flt, tp_row, f, err, sizeof err);
        if (f->oom) {
            http_oom(o);
            return -1;
        }
        if (st != CP_OK) {
            http_reader_error(o, st, "dump listing", err);
            return -1;
        }
        tp_trim(f);
    }
    return 0;
}

/* What a threads-profile merged. */
typedef struct tp_run {
    cp_td_sample_stats st;
    size_t dumps, unparsable;
    uint64_t bytes;
    int truncated;
    int64_t first_ms, last_ms;
} tp_run;

/* Adds one file: CP_OK merged or skipped (a file that does not parse, or whose stored bytes
 * do not match its record: counted), or a status with err set: of the tree (CP_ELIMIT,
 * CP_ENOMEM) or of the store that could not be read. */
static int tp_add(cp_http *h, cp_stacktree *t, const cp_dump_meta *m, int idle, tp_run *r, char *err, size_t errlen)
{
    uint8_t *p = NULL;
    size_t n = 0;
    cp_td *td = NULL;
    int st = cp_dumps_load(h->cfg->dumps, m, h->cfg->dump_parse_max, &p, &n, err, errlen);
    if (st == CP_ENOMEM || st == CP_EIO) return st; /* the store failed, not the file: out of memory / 503 */
    if (st != CP_OK || cp_td_parse((const char *)p, n, &td, err, errlen) != CP_OK) {
        /* one bad file does not spoil a series: counted, the others still merge */
        free(p);
        r->unparsable++;
        return CP_OK;
    }
    free(p);
    st = cp_stacktree_add_td(t, td, idle, &r->st, err, errlen);
    cp_td_free(td);
    if (st != CP_OK) return st;
    r->dumps++;
    if (r->dumps == 1 || m->dir_ms < r->first_ms) r->first_ms = m->dir_ms;
    if (r->dumps == 1 || m->dir_ms > r->last_ms) r->last_ms = m->dir_ms;
    return CP_OK;
}

/* The "sampled" object of a threads-profile: the unit of `total` and what was merged. */
static int tp_sampled(cp_buf *b, const tp_run *r)
{
    return cp_buf_printf(b,
                         "{\"unit\":\"samples\",\"dumps\":%zu,\"threads\":%zu,\"excluded_idle\":%zu,"
                         "\"dumps_unparsable\":%zu,\"truncated\":%s}",
                         r->dumps, r->st.threads, r->st.excluded_idle, r->unparsable, r->truncated ? "true" : "false");
}

/* Merges the files (newest first, so the byte budget keeps the newest) and answers. */
static void tp_merge(cp_http *h, const tp_files *f, int idle, http_out *o)
{
    cp_stacktree *t = new_tree(h, o);
    if (!t) return;
    tp_run r = {.truncated = f->n > TP_MAX_DUMPS};
    size_t n = f->n < TP_MAX_DUMPS ? f->n : TP_MAX_DUMPS;
    char err[512] = "";
    int st = CP_OK;
    for (size_t i = 0; i < n && st == CP_OK; i++) {
        const cp_dump_meta *m = &f->m[i];
        if (m->bytes > h->cfg->dump_parse_max) { /* never loaded, as /threads would refuse it */
            r.unparsable++;
            continue;
        }
        if (m->bytes > TP_MAX_BYTES - r.bytes) {
            r.truncated = 1;
            break;
        }
        r.bytes += m->bytes;
        st = tp_add(h, t, m, idle, &r, err, sizeof err);
    }
    cp_buf sampled;
    cp_buf_init(&sampled);
    char label[96];
    snprintf(label, sizeof label, "%zu thread%s in %zu dump%s", r.st.threads, r.st.threads == 1 ? "" : "s", r.dumps,
             r.dumps == 1 ? "" : "s");
    if (st != CP_OK) tree_error(o, st, err);
    else if (r.dumps == 0) http_error(o, 422, "unparsable", "none of the %zu thread dumps parses", r.unparsable);
    else if (tp_sampled(&sampled, &r) != CP_OK ||
             cp_stacktree_json(t, label, r.first_ms, r.last_ms, (const char *)sampled.data, sampled.len, &o->body) !=
                 CP_OK)
        http_oom(o);
    cp_buf_free(&sampled);
    cp_stacktree_free(t);
}

void http_api_threads_profile(cp_http *h, const http_args *a, http_out *o)
{
    static const char *const allowed[] = {"namespace", "service", "pod", "pods", "from", "to", "idle", NULL};
    cp_dump_filter flt;
    if (http_check_args(a, allowed, o)) return;
    if (!h->cfg->dumps) {
        http_error(o, 503, "unavailable", "diagnostic file storage is not configured");
        return;
    }
    int idle = 0;
    const http_arg *x = http_arg_get(a, "idle");
    if (x && x->vlen) {
        if (!strcmp(x->val, "1") || !strcmp(x->val, "true")) idle = 1;
        else if (strcmp(x->val, "0") && strcmp(x->val, "false")) {
            http_bad_param(o, "idle", "bad_parameter", "'idle' must be true or false");
            return;
        }
    }
    if (http_dump_filter(h, a, &flt, o)) return; /* window, names, the asker's namespaces */
    const char *pods[TP_MAX_PODS + 1];
    size_t npods;
    char *text;
    tp_files f = {0};
    if (tp_pods(a, flt.pod, pods, &npods, &text, o) == 0 && tp_list(h, &flt, pods, npods, &f, o) == 0) {
        if (f.n == 0) http_error(o, 404, "no_dumps", "no thread dump of the pod in the window");
        else tp_merge(h, &f, idle, o);
    }
    free(text);
    free(f.m);
}

/* ---- GET /dumps/{id}/profile/tree ------------------------------------------------------------- */

/* The "sampled" object of a pprof tree: the unit of `total`, the type, the counts. */
static int pp_sampled(cp_buf *b, const cp_pprof_value_type *vt, const cp_pprof_sample_stats *st)
{
    int bad = cp_buf_puts(b, "{\"unit\":") != CP_OK;
    bad |= cp_json_str(b, vt->unit, strlen(vt->unit)) != CP_OK;
    bad |= cp_buf_puts(b, ",\"sample_type\":") != CP_OK;
    bad |= cp_json_str(b, vt->type, strlen(vt->type)) != CP_OK;
    bad |= cp_buf_printf(b, ",\"samples\":%zu,\"skipped\":%zu}", st->samples, st->skipped) != CP_OK;
    return bad ? CP_ENOMEM : CP_OK;
}

/* The tree of a parsed profile for sample type sti. */
static void pp_answer(cp_http *h, const cp_dump_meta *m, const cp_pprof *pf, size_t sti, http_out *o)
{
    const cp_pprof_info *in = cp_pprof_get_info(pf);
    if (sti >= in->nsample_types) {
        http_error(o, 422, "unparsable", "the profile has no sample type");
        return;
    }
    cp_stacktree *t = new_tree(h, o);
    if (!t) return;
    cp_pprof_sample_stats st = {0};
    char err[512] = "";
    int rc = cp_stacktree_add_pprof(t, pf, sti, &st, err, sizeof err);
    /* capture time and duration when the profile says (a CPU profile), else the file's */
    int64_t start = in->time_nanos > 0 ? in->time_nanos / 1000000 : m->dir_ms;
    int64_t end = in->duration_nanos > 0 ? start + in->duration_nanos / 1000000 : start;
    const cp_pprof_value_type *vt = &in->sample_types[sti];
    char label[160];
    snprintf(label, sizeof label, "%.100s, %zu sample%s", vt->type, st.samples, st.samples == 1 ? "" : "s");
    cp_buf sampled;
    cp_buf_init(&sampled);
    if (rc != CP_OK) tree_error(o, rc, err);
    else if (pp_sampled(&sampled, vt, &st) != CP_OK ||
             cp_stacktree_json(t, label, start, end, (const char *)sampled.data, sampled.len, &o->body) != CP_OK)
        http_oom(o);
    cp_buf_free(&sampled);
    cp_stacktree_free(t);
}

void http_api_profile_tree(cp_http *h, const http_args *a, const char *id, http_out *o)
{
    static const char *const allowed[] = {"sample_type", NULL};
    cp_dump_meta m;
    cp_pprof *pf;
    size_t sti;
    if (http_check_args(a, allowed, o) || http_dump_get(h, a, id, &m, o) || http_dump_pprof(h, a, &m, &pf, &sti, o))
        return;
    pp_answer(h, &m, pf, sti, o);
    cp_pprof_free(pf);
}
