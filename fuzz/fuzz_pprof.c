/* fuzz_pprof.c -- libFuzzer target: Go pprof profiles (cp_dumpfmt.h, dumps-http.md
 * §8.5): cp_pprof_parse, then cp_pprof_get_info / cp_pprof_top / cp_pprof_guess_kind /
 * http_pprof_json on every profile that parses.
 *
 * The input is the uploaded file (gzip, or a raw protobuf when it does not start with the
 * gzip magic), parsed with a 1 MiB inflate cap. Checked properties:
 *   1. Status is CP_OK, CP_ECORRUPT or CP_ELIMIT (a failure has a reason, *out NULL).
 *   2. Counts are consistent: at most 16 sample types with strings, the default index
 *      in range, the period type both strings or neither; the kind guessed is a pprof kind.
 *   3. Totals: for every sample type, cp_pprof_top returns every function (cap larger
 *      than the count), sorted by flat descending then name, and equals a reference
 *      computed here by a second, naive decoder of the same protobuf (flat = leaf
 *      frame, cum = once per sample); a smaller cap returns a prefix; sums saturate
 *      instead of overflowing.
 *   4. Wrapping is transparent: a raw input gzipped (one member, or two members split
 *      at a point picked by the input) parses to the same status and totals; the cap
 *      is exact (the raw size passes, one byte less is CP_ELIMIT).
 *   5. http_pprof_json returns an object whose text is valid UTF-8, with as many top
 *      rows as asked (bounded by the functions) and the info's counts.
 */
#include "fuzz_common.h"

#include "http/dumpjson.h"
#include "model/cp_dumpfmt.h"

#include <zlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_INFLATED (1u << 20)

/* ---- a naive reference decoder ------------------------------------------------------------ */

typedef struct rd {
    const uint8_t *p;
    size_t n, pos;
} rd;

static uint64_t rd_varint(rd *r)
{
    uint64_t v = 0;
    for (int i = 0; i < 10 && r->pos < r->n; i++) {
        uint8_t b = r->p[r->pos++];
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (b < 0x80) break;
    }
    return v;
}

/* Next field of r (only called on bytes cp_pprof_parse accepted). sub is set for
 * length-delimited fields, v for varints. Returns 0 at the end. */
static int rd_field(rd *r, uint32_t *f, int *wt, uint64_t *v, rd *sub)
{
    if (r->pos >= r->n) return 0;
    uint64_t k = rd_varint(r);
    *f = (uint32_t)(k >> 3);
    *wt = (int)(k & 7);
    if (*wt == 0) *v = rd_varint(r);
    else if (*wt == 1) r->pos += 8;
    else if (*wt == 5) r->pos += 4;
    else {
        uint64_t len = rd_varint(r);
        *sub = (rd){r->p + r->pos, (size_t)len, 0};
        r->pos += (size_t)len;
    }
    return 1;
}

/* Repeated numeric field value(s) into arr. */
static void rd_rep(int wt, uint64_t v, rd *sub, uint64_t **arr, size_t *n)
{
    if (wt == 0) {
        *arr = realloc(*arr, (*n + 1) * sizeof **arr);
        (*arr)[(*n)++] = v;
        return;
    }
    while (sub->pos < sub->n) {
        uint64_t x = rd_varint(sub);
        *arr = realloc(*arr, (*n + 1) * sizeof **arr);
        (*arr)[(*n)++] = x;
    }
}

typedef struct ref {
    const uint8_t **str;
    size_t *strlen_, nstr;
    uint64_t *fid, *fname, *ffile;
    size_t nf;
    uint64_t *lid;
    size_t *lfirst, *lcount, nl;
    uint64_t *lines;
    size_t nlines;
    size_t *sfirst, *scount, *vfirst, ns;
    uint64_t *slocs, *vals;
    size_t nslocs, nvals;
    size_t nmappings, ntypes;
} ref;

static void ref_resolve(const uint64_t *ids, size_t n, uint64_t *refs, size_t nrefs);

static void ref_decode(const uint8_t *p, size_t n, ref *R)
{
    memset(R, 0, sizeof *R);
    rd r = {p, n, 0}, sub, sub2, sub3;
    uint32_t f;
    int wt;
    uint64_t v = 0;
    while (rd_field(&r, &f, &wt, &v, &sub)) {
        if (f == 1 && wt == 2) R->ntypes++;
        else if (f == 3 && wt == 2) R->nmappings++;
        else if (f == 6 && wt == 2) {
            R->str = realloc(R->str, (R->nstr + 1) * sizeof *R->str);
            R->strlen_ = realloc(R->strlen_, (R->nstr + 1) * sizeof *R->strlen_);
            R->str[R->nstr] = sub.p;
            R->strlen_[R->nstr++] = sub.n;
        } else if (f == 5 && wt == 2) {
            uint64_t id = 0, name = 0, file = 0;
            while (rd_field(&sub, &f, &wt, &v, &sub2)) {
                if (wt != 0) continue;
                if (f == 1) id = v;
                if (f == 2) name = v;
                if (f == 4) file = v;
            }
            R->fid = realloc(R->fid, (R->nf + 1) * sizeof *R->fid);
            R->fname = realloc(R->fname, (R->nf + 1) * sizeof *R->fname);
            R->ffile = realloc(R->ffile, (R->nf + 1) * sizeof *R->ffile);
            R->fid[R->nf] = id, R->fname[R->nf] = name, R->ffile[R->nf++] = file;
        } else if (f == 4 && wt == 2) {
            uint64_t id = 0;
            size_t first = R->nlines;
            while (rd_field(&sub, &f, &wt, &v, &sub2)) {
                if (f == 1 && wt == 0) id = v;
                if (f == 4 && wt == 2) {
                    uint64_t fn = 0;
                    while (rd_field(&sub2, &f, &wt, &v, &sub3))
                        if (f == 1 && wt == 0) fn = v;
                    R->lines = realloc(R->lines, (R->nlines + 1) * sizeof *R->lines);
                    R->lines[R->nlines++] = fn;
                }
            }
            R->lid = realloc(R->lid, (R->nl + 1) * sizeof *R->lid);
            R->lfirst = realloc(R->lfirst, (R->nl + 1) * sizeof *R->lfirst);
            R->lcount = realloc(R->lcount, (R->nl + 1) * sizeof *R->lcount);
            R->lid[R->nl] = id, R->lfirst[R->nl] = first, R->lcount[R->nl++] = R->nlines - first;
        } else if (f == 2 && wt == 2) {
            size_t sf = R->nslocs, vf = R->nvals;
            while (rd_field(&sub, &f, &wt, &v, &sub2)) {
                if (f == 1) rd_rep(wt, v, &sub2, &R->slocs, &R->nslocs);
                if (f == 2) rd_rep(wt, v, &sub2, &R->vals, &R->nvals);
            }
            R->sfirst = realloc(R->sfirst, (R->ns + 1) * sizeof *R->sfirst);
            R->scount = realloc(R->scount, (R->ns + 1) * sizeof *R->scount);
            R->vfirst = realloc(R->vfirst, (R->ns + 1) * sizeof *R->vfirst);
            R->sfirst[R->ns] = sf, R->scount[R->ns] = R->nslocs - sf, R->vfirst[R->ns++] = vf;
        }
    }
    /* ids to indexes, once */
    ref_resolve(R->lid, R->nl, R->slocs, R->nslocs);
    ref_resolve(R->fid, R->nf, R->lines, R->nlines);
}

static void ref_free(ref *R)
{
    free(R->str), free(R->strlen_), free(R->fid), free(R->fname), free(R->ffile), free(R->lid);
    free(R->lfirst), free(R->lcount), free(R->lines), free(R->sfirst), free(R->scount), free(R->vfirst);
    free(R->slocs), free(R->vals);
}

/* id -> index through a sorted copy (the parser accepted the ids: unique, all present). */
typedef struct ref_id {
    uint64_t id;
    size_t idx;
} ref_id;

static int ref_id_cmp(const void *a, const void *b)
{
    const ref_id *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Replaces every id in refs[0..nrefs) by the index of that id in ids[0..n). */
static void ref_resolve(const uint64_t *ids, size_t n, uint64_t *refs, size_t nrefs)
{
    ref_id *m = malloc((n ? n : 1) * sizeof *m);
    for (size_t i = 0; i < n; i++) m[i] = (ref_id){ids[i], i};
    qsort(m, n, sizeof *m, ref_id_cmp);
    for (size_t i = 0; i < nrefs; i++) {
        ref_id key = {refs[i], 0};
        ref_id *hit = n ? bsearch(&key, m, n, sizeof *m, ref_id_cmp) : NULL;
        FZ_CHECK(hit != NULL, "id %llu accepted by the parser but not found", (unsigned long long)refs[i]);
        refs[i] = hit->idx;
    }
    free(m);
}

static int64_t ref_sat(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b) return INT64_MIN;
    return a + b;
}

typedef cp_pprof_fn_total ref_row;

static int ref_cmp(const void *a, const void *b)
{
    const ref_row *x = a, *y = b;
    if (x->flat != y->flat) return x->flat > y->flat ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    c = strcmp(x->file, y->file);
    if (c) return c;
    if (x->cum != y->cum) return x->cum > y->cum ? -1 : 1;
    return 0;
}

/* Compares cp_pprof_top with the reference for sample type st. */
static void check_top(const cp_pprof *pf, const ref *R, size_t st, uint64_t *digest)
{
    const cp_pprof_info *in = cp_pprof_get_info(pf);
    size_t nf = (size_t)in->functions, n = 7;
    cp_pprof_fn_total *t = malloc((nf + 2) * sizeof *t);
    ref_row *w = calloc(nf + 1, sizeof *w);
    FZ_CHECK(cp_pprof_top(pf, st, t, nf + 2, &n) == CP_OK, "cp_pprof_top(%zu)", st);
    FZ_CHECK(n == nf, "top returned %zu of %zu functions", n, nf);
    /* the reference: a per-function "last counted in sample s + 1" stamp */
    size_t *seen = calloc(nf + 1, sizeof *seen);
    for (size_t s = 0; s < R->ns; s++) {
        int64_t v = (int64_t)R->vals[R->vfirst[s] + st];
        for (size_t k = 0; k < R->scount[s]; k++) {
            size_t li = (size_t)R->slocs[R->sfirst[s] + k];
            for (size_t j = 0; j < R->lcount[li]; j++) {
                size_t fi = (size_t)R->lines[R->lfirst[li] + j];
                if (k == 0 && j == 0) w[fi].flat = ref_sat(w[fi].flat, v);
                if (seen[fi] != s + 1) {
                    seen[fi] = s + 1;
                    w[fi].cum = ref_sat(w[fi].cum, v);
                }
            }
        }
    }
    /* names as the library sees them: C strings cut at a NUL byte */
    char **names = calloc(2 * nf + 1, sizeof *names);
    for (size_t i = 0; i < nf; i++) {
        for (int k = 0; k < 2; k++) {
            uint64_t idx = k ? R->ffile[i] : R->fname[i];
            FZ_CHECK(idx < R->nstr, "string index %llu accepted", (unsigned long long)idx);
            names[2 * i + k] = strndup((const char *)R->str[idx], R->strlen_[idx]);
        }
        w[i].name = names[2 * i];
        w[i].file = names[2 * i + 1];
    }
    qsort(w, nf, sizeof *w, ref_cmp);
    for (size_t i = 0; i < nf; i++) {
        FZ_CHECK(t[i].name && t[i].file, "row %zu without strings", i);
        FZ_CHECK(strcmp(t[i].name, w[i].name) == 0 && strcmp(t[i].file, w[i].file) == 0 && t[i].flat == w[i].flat &&
                     t[i].cum == w[i].cum,
                 "type %zu row %zu: %s flat %lld cum %lld, reference %s flat %lld cum %lld", st, i, t[i].name,
                 (long long)t[i].flat, (long long)t[i].cum, w[i].name, (long long)w[i].flat, (long long)w[i].cum);
        if (i > 0) FZ_CHECK(ref_cmp(&t[i - 1], &t[i]) <= 0, "top not sorted at %zu", i);
        FZ_HASHV(digest, t[i].flat);
        FZ_HASHV(digest, t[i].cum);
        fz_hash(digest, t[i].name, strlen(t[i].name));
    }
    /* a smaller cap: a prefix */
    size_t cap = nf / 2, m = 99;
    FZ_CHECK(cp_pprof_top(pf, st, t, cap, &m) == CP_OK && m == cap, "top with cap %zu gave %zu", cap, m);
    for (size_t i = 0; i < m; i++)
        FZ_CHECK(strcmp(t[i].name, w[i].name) == 0 && t[i].flat == w[i].flat, "capped top differs at %zu", i);
    for (size_t i = 0; i < 2 * nf; i++) free(names[i]);
    free(names);
    free(seen);
    free(w);
    free(t);
}

/* ---- one parse ------------------------------------------------------------------------------ */

typedef struct outcome {
    int status;
    uint64_t digest;      /* info + every top row */
} outcome;

static void check_json(const cp_pprof *pf, size_t st, size_t top)
{
    const cp_pprof_info *in = cp_pprof_get_info(pf);
    json_t *j = http_pprof_json(pf, st, top);
    FZ_CHECK(j != NULL && json_is_object(j), "http_pprof_json returned no object");
    json_t *rows = json_object_get(j, "top");
    size_t want = st < in->nsample_types ? (top < in->functions ? top : (size_t)in->functions) : 0;
    FZ_CHECK(json_array_size(rows) == want, "%zu top rows, expected %zu", json_array_size(rows), want);
    FZ_CHECK(json_integer_value(json_object_get(j, "samples")) == (json_int_t)in->samples, "samples");
    FZ_CHECK(json_array_size(json_object_get(j, "sample_types")) == in->nsample_types, "sample_types");
    char *text = json_dumps(j, JSON_COMPACT);
    FZ_CHECK(text != NULL, "json_dumps failed (invalid UTF-8 inside?)");
    FZ_CHECK(fz_valid_utf8((const uint8_t *)text, strlen(text)), "JSON text is not UTF-8");
    free(text);
    json_decref(j);
}

/* Parses p (gzip or raw); on success checks everything and, for raw bytes, compares
 * with the reference decoder. */
static void parse_check(const uint8_t *p, size_t n, size_t max, const uint8_t *raw, size_t raw_n, int deep,
                        outcome *o)
{
    static char sentinel;
    cp_pprof *pf = (cp_pprof *)(void *)&sentinel; /* must become NULL on failure */
    char err[256];
    o->status = cp_pprof_parse(p, n, max, &pf, err, sizeof err);
    o->digest = 0xCBF29CE484222325ull;
    FZ_CHECK(o->status == CP_OK || o->status == CP_ECORRUPT || o->status == CP_ELIMIT, "status %d", o->status);
    if (o->status != CP_OK) {
        FZ_CHECK(pf == NULL, "failed parse left a profile");
        FZ_CHECK(err[0] != '\0', "failure %d without a reason", o->status);
        return;
    }
    const cp_pprof_info *in = cp_pprof_get_info(pf);
    FZ_CHECK(in->nsample_types <= 16, "%zu sample types", in->nsample_types);
    FZ_CHECK(in->default_sample_type >= -1 && in->default_sample_type < (int)in->nsample_types, "default %d",
             in->default_sample_type);
    for (size_t i = 0; i < in->nsample_types; i++)
        FZ_CHECK(in->sample_types[i].type && in->sample_types[i].unit, "sample type %zu without strings", i);
    FZ_CHECK(!in->period_type.type == !in->period_type.unit, "half a period type");
    FZ_CHECK(cp_dump_kind_is_pprof(cp_pprof_guess_kind(pf)), "guessed kind is not pprof");
    FZ_HASHV(&o->digest, in->nsample_types);
    FZ_HASHV(&o->digest, in->default_sample_type);
    FZ_HASHV(&o->digest, in->period);
    FZ_HASHV(&o->digest, in->time_nanos);
    FZ_HASHV(&o->digest, in->duration_nanos);
    FZ_HASHV(&o->digest, in->samples);
    FZ_HASHV(&o->digest, in->locations);
    FZ_HASHV(&o->digest, in->functions);
    FZ_HASHV(&o->digest, in->mappings);
    size_t none = 5;
    FZ_CHECK(cp_pprof_top(pf, in->nsample_types, NULL, 0, &none) == CP_EINVAL && none == 0, "top of a bad type");
    if (deep) {
        ref R;
        ref_decode(raw, raw_n, &R);
        FZ_CHECK(R.ns == in->samples && R.nl == in->locations && R.nf == in->functions && R.nmappings == in->mappings &&
                     R.ntypes == in->nsample_types,
                 "counts differ from the reference");
        for (size_t st = 0; st < in->nsample_types; st++) check_top(pf, &R, st, &o->digest);
        ref_free(&R);
        check_json(pf, 0, (size_t)(raw_n % 7));
        check_json(pf, in->nsample_types, 3);
    }
    cp_pprof_free(pf);
}

static void gzip_to(const uint8_t *p, size_t n, cp_buf *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    FZ_CHECK(deflateInit2(&z, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
    size_t bound = deflateBound(&z, (uLong)n);
    FZ_CHECK(cp_buf_reserve(out, bound) == CP_OK, "reserve");
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)n;
    z.next_out = out->data + out->len;
    z.avail_out = (uInt)bound;
    FZ_CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate");
    out->len += bound - z.avail_out;
    deflateEnd(&z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    int gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    outcome a, b;
    parse_check(copy, size, FZ_MAX_INFLATED, copy, size, !gz, &a);
    if (!gz && size > 0) {
        /* the cap is exact */
        outcome c;
        parse_check(copy, size, size, copy, size, 0, &c);
        FZ_CHECK(c.status == a.status, "cap = size changed the status %d -> %d", a.status, c.status);
        parse_check(copy, size, size - 1 ? size - 1 : 1, copy, size, 0, &c);
        FZ_CHECK(size == 1 ? c.status == a.status : c.status == CP_ELIMIT, "cap = size - 1 gave %d", c.status);
        /* gzip is transparent, in one member or two */
        cp_buf z;
        cp_buf_init(&z);
        gzip_to(copy, size, &z);
        parse_check(z.data, z.len, FZ_MAX_INFLATED, copy, size, a.status == CP_OK, &b);
        FZ_CHECK(b.status == a.status && b.digest == a.digest, "gzipped: %d, raw: %d (or totals differ)", b.status,
                 a.status);
        cp_buf_reset(&z);
        size_t cut = data[size - 1] % (size + 1);
        gzip_to(copy, cut, &z);
        gzip_to(copy + cut, size - cut, &z);
        parse_check(z.data, z.len, FZ_MAX_INFLATED, copy, size, 0, &b);
        FZ_CHECK(b.status == a.status, "two gzip members: %d, raw: %d", b.status, a.status);
        cp_buf_free(&z);
    }
    free(copy);
    return 0;
}
