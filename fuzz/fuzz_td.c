/* fuzz_td.c -- libFuzzer target: the thread-dump parser, cp_td_parse(), and its JSON,
 * http_td_json().
 *
 * The input is the dump text. The target checks:
 *   - the status is CP_OK or CP_ECORRUPT (the input is far below every bound), with *out
 *     set exactly on success and a reason on failure;
 *   - a parse is sane: 1 <= nthreads, java_threads = threads with a #seq, every string
 *     non-NULL, slices non-NULL when non-empty, lock kinds valid, a lock's frame inside
 *     its thread (-1 for ownable synchronizers); the state counts sum to nthreads with
 *     distinct keys;
 *   - determinism: a second parse gives the same digest of every field;
 *   - line endings: when the input has no '\r', the same text with CRLF parses the same;
 *   - prefixes: a cut anywhere parses without crashing, to no more threads; a cut at a
 *     line end gives the whole's threads up to the last one identical (the last may miss
 *     lines that follow the cut), and that last one's header identical;
 *   - the JSON builds, dumps as valid UTF-8, and holds nthreads threads and states that
 *     sum to nthreads.
 * Bytes 0..1 of the input choose the cut (the whole input is the text).
 */
#include "fuzz_common.h"
#include "http/dumpjson.h"
#include "model/cp_dumptext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void hash_str(uint64_t *h, const char *s)
{
    FZ_CHECK(s != NULL, "NULL string");
    fz_hash(h, s, strlen(s));
}

static void hash_double(uint64_t *h, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    fz_mix(h, u);
}

/* Everything the header line decides. */
static uint64_t header_digest(const cp_td_thread *t)
{
    uint64_t h = 1;
    hash_str(&h, t->name);
    FZ_HASHV(&h, t->seq);
    FZ_HASHV(&h, t->daemon);
    FZ_HASHV(&h, t->prio);
    FZ_HASHV(&h, t->os_prio);
    hash_double(&h, t->cpu_ms);
    hash_double(&h, t->elapsed_s);
    FZ_HASHV(&h, t->tid);
    FZ_HASHV(&h, t->nid);
    hash_str(&h, t->header_state);
    return h;
}

static uint64_t thread_digest(const cp_td_thread *t)
{
    uint64_t h = header_digest(t);
    hash_str(&h, t->state);
    hash_str(&h, t->state_detail);
    FZ_HASHV(&h, t->nframes);
    for (size_t i = 0; i < t->nframes; i++) hash_str(&h, t->frames[i].text);
    FZ_HASHV(&h, t->nlocks);
    for (size_t i = 0; i < t->nlocks; i++) {
        FZ_HASHV(&h, t->locks[i].kind);
        hash_str(&h, t->locks[i].addr);
        hash_str(&h, t->locks[i].cls);
        FZ_HASHV(&h, t->locks[i].frame);
    }
    return h;
}

typedef struct sum_ctx {
    size_t total, keys, cap;
    uint64_t digest;
    const char **key; /* every key (they live as long as the dump) */
} sum_ctx;

static void on_state(void *ud, const char *key, size_t count)
{
    sum_ctx *c = ud;
    FZ_CHECK(key != NULL && count > 0, "state key %p with count %zu", (const void *)key, count);
    FZ_CHECK(c->keys < c->cap, "more state keys than threads");
    c->key[c->keys++] = key;
    c->total += count;
    hash_str(&c->digest, key);
    FZ_HASHV(&c->digest, count);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Checks the parse and returns a digest of all of it. */
static uint64_t check_td(const cp_td *td)
{
    FZ_CHECK(td->nthreads >= 1 && td->nthreads <= CP_TD_MAX_THREADS, "%zu threads", td->nthreads);
    FZ_CHECK(td->threads != NULL, "NULL threads");
    FZ_CHECK(td->vm != NULL, "NULL vm");
    FZ_CHECK(td->time_ms >= -1 && td->smr_length >= -1 && td->jni_global_refs >= -1 && td->jni_weak_refs >= -1,
             "negative top-level number");
    uint64_t h = 7;
    FZ_HASHV(&h, td->time_ms);
    hash_str(&h, td->vm);
    FZ_HASHV(&h, td->smr_length);
    FZ_HASHV(&h, td->jni_global_refs);
    FZ_HASHV(&h, td->jni_weak_refs);
    FZ_HASHV(&h, td->deadlocks);
    size_t java = 0, frames = 0;
    for (size_t i = 0; i < td->nthreads; i++) {
        const cp_td_thread *t = &td->threads[i];
        java += t->seq >= 0;
        FZ_CHECK(t->seq >= -1 && t->nid >= -1, "thread %zu: seq %lld nid %lld", i, (long long)t->seq,
                 (long long)t->nid);
        FZ_CHECK(t->cpu_ms == -1 || t->cpu_ms >= 0, "thread %zu: cpu %g", i, t->cpu_ms);
        FZ_CHECK(t->elapsed_s == -1 || t->elapsed_s >= 0, "thread %zu: elapsed %g", i, t->elapsed_s);
        FZ_CHECK(t->nframes == 0 || t->frames != NULL, "thread %zu: NULL frames", i);
        FZ_CHECK(t->nlocks == 0 || t->locks != NULL, "thread %zu: NULL locks", i);
        frames += t->nframes;
        for (size_t k = 0; k < t->nlocks; k++) {
            const cp_td_lock *l = &t->locks[k];
            FZ_CHECK(l->kind >= CP_TD_LOCKED && l->kind <= CP_TD_OWNABLE, "lock kind %d", (int)l->kind);
            FZ_CHECK(l->frame >= -1 && l->frame < (int)t->nframes, "lock frame %d of %zu", l->frame, t->nframes);
            if (l->kind == CP_TD_OWNABLE) FZ_CHECK(l->frame == -1, "ownable lock under frame %d", l->frame);
        }
        fz_mix(&h, thread_digest(t));
    }
    FZ_CHECK(java == td->java_threads, "java_threads %zu, threads with #seq %zu", td->java_threads, java);
    FZ_CHECK(frames <= CP_TD_MAX_FRAMES, "%zu frames", frames);
    sum_ctx c = {.digest = 3, .cap = td->nthreads, .key = malloc(td->nthreads * sizeof(char *))};
    cp_td_state_counts(td, on_state, &c);
    FZ_CHECK(c.total == td->nthreads, "state counts sum to %zu, %zu threads", c.total, td->nthreads);
    qsort(c.key, c.keys, sizeof *c.key, cmp_str);
    for (size_t i = 1; i < c.keys; i++) FZ_CHECK(strcmp(c.key[i - 1], c.key[i]) != 0, "state key \"%s\" twice", c.key[i]);
    free(c.key);
    fz_mix(&h, c.digest);
    return h;
}

static void check_json(const cp_td *td)
{
    json_t *j = http_td_json(td);
    FZ_CHECK(j != NULL, "http_td_json returned NULL");
    char *s = json_dumps(j, JSON_COMPACT);
    FZ_CHECK(s != NULL, "json_dumps failed");
    FZ_CHECK(fz_valid_utf8((const uint8_t *)s, strlen(s)), "JSON is not valid UTF-8");
    free(s);
    FZ_CHECK(json_array_size(json_object_get(j, "threads")) == td->nthreads, "JSON threads %zu != %zu",
             json_array_size(json_object_get(j, "threads")), td->nthreads);
    /* keys that repair to the same text merge, so only the sum is fixed */
    json_int_t sum = 0;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(j, "states"), k, v) sum += json_integer_value(v);
    FZ_CHECK(sum == (json_int_t)td->nthreads, "JSON states sum to %lld", (long long)sum);
    json_decref(j);
}

static int parse(const uint8_t *p, size_t n, cp_td **td)
{
    char err[128];
    *td = (cp_td *)1; /* must be overwritten */
    int st = cp_td_parse((const char *)p, n, td, err, sizeof err);
    FZ_CHECK(st == CP_OK || st == CP_ECORRUPT, "status %d (%s) for %zu bytes", st, err, n);
    FZ_CHECK(st == CP_OK ? *td != NULL : *td == NULL, "status %d with out %p", st, (void *)*td);
    if (st != CP_OK) FZ_CHECK(err[0] != '\0', "failure without a reason");
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cp_td *td, *again;
    int st = parse(data, size, &td);
    uint64_t h = st == CP_OK ? check_td(td) : 0;

    FZ_CHECK(parse(data, size, &again) == st, "second parse gave another status");
    if (again) {
        FZ_CHECK(check_td(again) == h, "second parse differs");
        cp_td_free(again);
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
            FZ_CHECK(check_td(again) == h, "CRLF changes the parse");
            cp_td_free(again);
        }
        free(c);
    }

    size_t cut = size >= 2 ? (size_t)(data[0] | data[1] << 8) % (size + 1) : size;
    cp_td *pre;
    if (parse(data, cut, &pre) == CP_OK) {
        check_td(pre);
        FZ_CHECK(td && pre->nthreads <= td->nthreads, "a prefix has more threads");
        cp_td_free(pre);
    }
    while (cut > 0 && data[cut - 1] != '\n') cut--;
    if (parse(data, cut, &pre) == CP_OK) {
        check_td(pre);
        FZ_CHECK(td && pre->nthreads <= td->nthreads, "a prefix has more threads");
        size_t last = pre->nthreads - 1;
        for (size_t i = 0; i < last; i++)
            FZ_CHECK(thread_digest(&pre->threads[i]) == thread_digest(&td->threads[i]),
                     "thread %zu differs in a prefix cut at a line end", i);
        FZ_CHECK(header_digest(&pre->threads[last]) == header_digest(&td->threads[last]),
                 "the last thread's header differs in a prefix");
        FZ_CHECK(pre->threads[last].nframes <= td->threads[last].nframes, "the last thread gained frames");
        cp_td_free(pre);
    }

    if (td) {
        check_json(td);
        cp_td_free(td);
    }
    return 0;
}
