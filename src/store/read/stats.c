/* stats.c -- the stats plan and its run (cp_stats.h). */
#include "store/cp_stats.h"

#include <stdlib.h>
#include <string.h>

static int64_t cell_ceil(int64_t t)
{
    int64_t c = cp_rollup_cell_of(t);
    return c == t ? c : c + CP_ROLLUP_CELL_MS;
}

void cp_stats_plan_of(const cp_call_filter *f, cp_stats_plan *p)
{
    memset(p, 0, sizeof *p);
    int answerable = !f->method_substr && (!f->match || (f->sel && !f->sel->opaque));
    if (!answerable || f->from_ms >= f->to_ms || f->from_ms > INT64_MAX - CP_ROLLUP_CELL_MS) return;
    int64_t a = cell_ceil(f->from_ms), b = cp_rollup_cell_of(f->to_ms);
    if (a >= b) return;
    /* the filter's bounds as the search applies them: min <= 0 and max INT64_MAX are none */
    int64_t lo = f->min_duration_ms > 0 ? f->min_duration_ms : INT64_MIN;
    int64_t hi = f->max_duration_ms;
    for (int c = 0; c < CP_ROLLUP_CLASSES; c++) {
        int64_t cl = cp_rollup_class_lo(c), ch = cp_rollup_class_hi(c);
        int64_t chi = ch == INT64_MAX ? INT64_MAX : ch - 1; /* inclusive */
        if (chi < lo || cl > hi) continue;
        if (cl >= lo && chi <= hi) p->full |= 1u << c;
        else p->partial |= 1u << c;
    }
    p->rollups = 1;
    p->a = a;
    p->b = b;
}

static int name_eq(const char *a, size_t al, const char *b, size_t bl) { return al == bl && !memcmp(a, b, al); }

static int name_cmp(const void *x, const void *y)
{
    const cp_name *a = x, *b = y;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->p, b->p, n) : 0;
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

int cp_stats_entry_matches(const cp_call_filter *f, const cp_stats_plan *p, const cp_rollup_entry *e)
{
    if (e->cell_ms < p->a || e->cell_ms >= p->b) return 0;
    if (e->cls < 0 || e->cls >= CP_ROLLUP_CLASSES || !(p->full & (1u << e->cls))) return 0;
    if (f->ns && !name_eq(e->ns, e->ns_len, f->ns, strlen(f->ns))) return 0;
    if (!cp_call_filter_ns_ok(f, e->ns, e->ns_len)) return 0;
    if (f->service && !name_eq(e->service, e->service_len, f->service, strlen(f->service))) return 0;
    if (f->pod && !name_eq(e->pod, e->pod_len, f->pod, strlen(f->pod))) return 0;
    if (f->errors_only && !(e->flags & CP_ROLLUP_F_ERROR)) return 0;
    const cp_rollup_sel *s = f->sel;
    if (s && s->pods) {
        cp_name k = {e->pod, e->pod_len};
        if (!bsearch(&k, s->pods, s->npods, sizeof *s->pods, name_cmp)) return 0;
    }
    if (s && s->hide_system) {
        if (e->idle_fp != s->idle_fp) return -1;
        if (e->flags & CP_ROLLUP_F_SYSTEM) return 0;
    }
    return 1;
}

int cp_stats_scans(const cp_call_filter *f, const cp_stats_plan *p, int covered,
                   int (*fn)(void *ud, const cp_call_filter *sub), void *ud)
{
    if (!p->rollups || !covered) return fn(ud, f);
    cp_call_filter sub = *f;
    int r;
    if (f->from_ms < p->a) {
        sub.to_ms = p->a;
        if ((r = fn(ud, &sub))) return r;
    }
    if (p->b < f->to_ms) {
        sub = *f;
        sub.from_ms = p->b;
        if ((r = fn(ud, &sub))) return r;
    }
    for (int c = 0; c < CP_ROLLUP_CLASSES; c++) {
        if (!(p->partial & (1u << c))) continue;
        sub = *f;
        sub.from_ms = p->a;
        sub.to_ms = p->b;
        int64_t cl = cp_rollup_class_lo(c), ch = cp_rollup_class_hi(c);
        if (cl > sub.min_duration_ms) sub.min_duration_ms = cl;
        if (ch != INT64_MAX && ch - 1 < sub.max_duration_ms) sub.max_duration_ms = ch - 1;
        if ((r = fn(ud, &sub))) return r;
    }
    return 0;
}

/* ---- without a stats operation: every matching call, paged in time order ----------------- */

typedef struct page_ctx {
    cp_stats *s;
    int64_t last_ts;
    cp_call_ref last_ref;
} page_ctx;

static int page_row(void *ud, const cp_call *c)
{
    page_ctx *k = ud;
    cp_stats_add_call(k->s, c);
    k->last_ts = c->ts_ms;
    cp_call_ref_of(c, &k->last_ref);
    return 0;
}

static int stats_by_search(cp_reader *r, const cp_call_filter *f0, cp_stats *s, cp_stats_info *info)
{
    cp_call_filter f = *f0;
    f.sort = CP_SORT_TS;
    f.desc = 0;
    f.limit = 10000;
    f.after = NULL;
    cp_sort_key after;
    page_ctx k = {s, 0, {0}};
    for (;;) {
        cp_search_stats one;
        memset(&one, 0, sizeof one);
        f.max_scan = f0->max_scan ? (f0->max_scan > info->scanned ? f0->max_scan - info->scanned : 1) : 0;
        uint64_t before = s->total;
        int st = cp_reader_search(r, &f, page_row, &k, &one);
        info->scanned += one.scanned;
        info->scanned_calls += s->total - before;
        if (st != CP_OK) return st;
        if (one.partial) {
            info->partial = 1;
            return CP_OK;
        }
        if (!one.more || s->total == before) return CP_OK;
        memset(&after, 0, sizeof after);
        after.col = CP_SORT_TS;
        after.num = k.last_ts;
        after.ref = k.last_ref;
        f.after = &after;
    }
}

int cp_stats_run(cp_reader *r, const cp_call_filter *f, unsigned columns, cp_stats *out, cp_stats_info *info)
{
    memset(info, 0, sizeof *info);
    int st = cp_stats_init(out, f->from_ms, f->to_ms, columns);
    if (st != CP_OK) return st;
    cp_stats_plan p;
    cp_stats_plan_of(f, &p);
    if (r->ops->stats) return r->ops->stats(r, f, &p, out, info);
    return stats_by_search(r, f, out, info);
}
