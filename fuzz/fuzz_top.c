/* fuzz_top.c -- libFuzzer target: the top-snapshot parser, cp_top_parse(), and its JSON,
 * http_top_json().
 *
 * The input is the snapshot text. The target checks:
 *   - the status is CP_OK or CP_ECORRUPT, *out set exactly on success, a reason on failure;
 *   - a parse is sane: every string non-NULL, numbers either -1 ("absent") or >= 0 and
 *     finite, row states one of "RSDTZI?", rows non-NULL when there are any;
 *   - determinism: a second parse gives the same digest;
 *   - line endings: without '\r' in the input, the CRLF text parses the same;
 *   - prefixes: a cut anywhere parses without crashing, to no more rows; a cut at a line
 *     end gives exactly the whole's first rows;
 *   - the JSON builds, dumps as valid UTF-8 and holds nrows rows.
 * Bytes 0..1 of the input choose the cut (the whole input is the text).
 */
#include "fuzz_common.h"
#include "http/dumpjson.h"
#include "model/cp_dumptext.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void hash_str(uint64_t *h, const char *s)
{
    FZ_CHECK(s != NULL, "NULL string");
    fz_hash(h, s, strlen(s));
}

/* Folds a figure in after checking it is -1 or a finite non-negative number. */
static void hash_num(uint64_t *h, double v, const char *what)
{
    FZ_CHECK(v == -1 || (v >= 0 && isfinite(v)), "%s = %g", what, v);
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    fz_mix(h, u);
}

static uint64_t row_digest(const cp_top_row *r)
{
    uint64_t h = 5;
    FZ_CHECK(r->pid >= 0, "row pid %lld", (long long)r->pid);
    FZ_HASHV(&h, r->pid);
    hash_str(&h, r->user);
    hash_str(&h, r->pr);
    FZ_HASHV(&h, r->ni);
    hash_num(&h, r->virt_kib, "virt");
    hash_num(&h, r->res_kib, "res");
    hash_num(&h, r->shr_kib, "shr");
    FZ_CHECK(r->state && memchr("RSDTZI?", r->state, 7), "row state 0x%02x", (unsigned char)r->state);
    FZ_HASHV(&h, r->state);
    hash_num(&h, r->cpu_pct, "%cpu");
    hash_num(&h, r->mem_pct, "%mem");
    hash_num(&h, r->time_s, "time");
    hash_str(&h, r->command);
    return h;
}

static uint64_t check_top(const cp_top *t)
{
    uint64_t h = 9;
    FZ_CHECK(t->pid >= -1 && t->users >= -1, "pid %lld users %d", (long long)t->pid, t->users);
    FZ_HASHV(&h, t->pid);
    hash_str(&h, t->clock);
    hash_str(&h, t->uptime);
    FZ_HASHV(&h, t->users);
    for (int i = 0; i < 3; i++) hash_num(&h, t->load[i], "load");
    const int64_t counts[] = {t->threads_total, t->running, t->sleeping, t->stopped, t->zombie};
    for (size_t i = 0; i < CP_ARRAY_LEN(counts); i++) {
        FZ_CHECK(counts[i] >= -1, "thread count %lld", (long long)counts[i]);
        FZ_HASHV(&h, counts[i]);
    }
    const double figs[] = {t->cpu_us,    t->cpu_sy,   t->cpu_ni,   t->cpu_id,         t->cpu_wa,     t->cpu_hi,
                           t->cpu_si,    t->cpu_st,   t->mem_total, t->mem_free,      t->mem_used,   t->mem_buff_cache,
                           t->swap_total, t->swap_free, t->swap_used, t->mem_avail};
    for (size_t i = 0; i < CP_ARRAY_LEN(figs); i++) hash_num(&h, figs[i], "summary figure");
    FZ_CHECK(t->nrows <= CP_TOP_MAX_ROWS, "%zu rows", t->nrows);
    FZ_CHECK(t->nrows == 0 || t->rows != NULL, "NULL rows");
    FZ_HASHV(&h, t->nrows);
    for (size_t i = 0; i < t->nrows; i++) fz_mix(&h, row_digest(&t->rows[i]));
    return h;
}

static int parse(const uint8_t *p, size_t n, cp_top **top)
{
    char err[128];
    *top = (cp_top *)1; /* must be overwritten */
    int st = cp_top_parse((const char *)p, n, top, err, sizeof err);
    FZ_CHECK(st == CP_OK || st == CP_ECORRUPT, "status %d (%s) for %zu bytes", st, err, n);
    FZ_CHECK(st == CP_OK ? *top != NULL : *top == NULL, "status %d with out %p", st, (void *)*top);
    if (st != CP_OK) FZ_CHECK(err[0] != '\0', "failure without a reason");
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cp_top *top, *again;
    int st = parse(data, size, &top);
    uint64_t h = st == CP_OK ? check_top(top) : 0;

    FZ_CHECK(parse(data, size, &again) == st, "second parse gave another status");
    if (again) {
        FZ_CHECK(check_top(again) == h, "second parse differs");
        cp_top_free(again);
    }

    if (!memchr(data, '\r', size)) {
        uint8_t *c = malloc(2 * size + 1);
        size_t n = 0;
        for (size_t i = 0; i < size; i++) {
            if (data[i] == '\n') c[n++] = '\r';
            c[n++] = data[i];
        }
        FZ_CHECK(parse(c, n, &again) == st, "CRLF changes the status");
        if (again) {
            FZ_CHECK(check_top(again) == h, "CRLF changes the parse");
            cp_top_free(again);
        }
        free(c);
    }

    size_t cut = size >= 2 ? (size_t)(data[0] | data[1] << 8) % (size + 1) : size;
    cp_top *pre;
    if (parse(data, cut, &pre) == CP_OK) {
        check_top(pre);
        FZ_CHECK(top && pre->nrows <= top->nrows, "a prefix has more rows");
        cp_top_free(pre);
    }
    while (cut > 0 && data[cut - 1] != '\n') cut--;
    if (parse(data, cut, &pre) == CP_OK) {
        check_top(pre);
        FZ_CHECK(top && pre->nrows <= top->nrows, "a prefix has more rows");
        for (size_t i = 0; i < pre->nrows; i++)
            FZ_CHECK(row_digest(&pre->rows[i]) == row_digest(&top->rows[i]), "row %zu differs in a prefix", i);
        cp_top_free(pre);
    }

    if (top) {
        json_t *j = http_top_json(top);
        FZ_CHECK(j != NULL, "http_top_json returned NULL");
        char *s = json_dumps(j, JSON_COMPACT);
        FZ_CHECK(s != NULL, "json_dumps failed");
        FZ_CHECK(fz_valid_utf8((const uint8_t *)s, strlen(s)), "JSON is not valid UTF-8");
        free(s);
        FZ_CHECK(json_array_size(json_object_get(j, "rows")) == top->nrows, "JSON rows differ");
        json_decref(j);
        cp_top_free(top);
    }
    return 0;
}
