/* emulate_test.c -- `cloudprof emulate` against a live `cloudprof serve`: everything the
 * emulator saw acknowledged is stored.
 *
 * Each run drives a fixed amount of work: a handful of agents, each making exactly
 * MAX_CALLS root calls, PER_FLUSH of them after every flush cycle (--max-calls,
 * --calls-per-flush). So what every flush carries, and how often the files rotate by
 * size, does not depend on how fast the machine is: no count here is a rate times a
 * duration. Each run stops the server gracefully and then checks the summary (no errors,
 * no missing acks, every call acknowledged), that the raw files of every stream
 * add up to exactly the acknowledged payload bytes of that stream, that every stored file
 * decodes cleanly, and that the stored calls files hold exactly `calls_sent` records. With
 * small rotation sizes the files rotate, and every calls record is checked against the
 * stored trace files (its ENTER at recordIndex in chunk bufferOffset of trace file
 * traceFileIndex). With --reconnect-every the pods get several restart directories and
 * the counts still match. */
#include "server_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "streams/cp_streams.h"

static const char *const stream_names[] = {"trace",         "calls",   "xml",   "sql", "dictionary",
                                           "posDictionary", "suspend", "params"};

typedef struct summary {
    json_t *root;
    long long calls_sent, bytes_sent, errors, missing, acks, reconnects, rotations, agents;
    long long stream[CP_ARRAY_LEN(stream_names)];
} summary;

static long long json_int(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!v || !json_is_integer(v)) fail_msg("summary: no integer '%s'", key);
    return (long long)json_integer_value(v);
}

/* Runs the emulator against s with extra arguments and parses its JSON summary (the last
 * line of stdout). */
static void run_emulator(const test_server *s, const char *const *extra, summary *sum)
{
    sum->root = cli_emulate(s, extra);
    sum->agents = json_int(sum->root, "agents");
    sum->calls_sent = json_int(sum->root, "calls_sent");
    sum->bytes_sent = json_int(sum->root, "bytes_sent");
    sum->errors = json_int(sum->root, "errors");
    sum->missing = json_int(sum->root, "missing_acks");
    sum->acks = json_int(sum->root, "acks");
    sum->reconnects = json_int(sum->root, "reconnects");
    sum->rotations = json_int(sum->root, "rotations");
    for (const char *k = "duration_s\0ack_p50_ms\0ack_p99_ms\0"; *k; k += strlen(k) + 1)
        if (!json_is_number(json_object_get(sum->root, k))) fail_msg("summary: no number '%s'", k);
    json_t *sb = json_object_get(sum->root, "stream_bytes");
    if (!json_is_object(sb)) fail_msg("summary: no stream_bytes object");
    for (size_t i = 0; i < CP_ARRAY_LEN(stream_names); i++) sum->stream[i] = json_int(sb, stream_names[i]);
}

/* ---- cross-checking stored calls against stored traces ------------------------------------ */

typedef struct tev {
    uint64_t chunk;
    uint32_t index;
    uint8_t type;
    int32_t id;
    int64_t time;
} tev;

typedef struct tfile {
    char restart[32];
    char pod[256];
    int index;
    tev *ev;
    size_t n, cap;
} tfile;

typedef struct xcheck {
    tfile *files;
    size_t nfiles;
    tfile *cur;
    const raw_entry *calls_entry;
    uint64_t checked;
} xcheck;

static int collect_event(void *ud, const cp_trace_rec *t)
{
    tfile *f = ud;
    if (t->type != CP_TRACE_ENTER && t->type != CP_TRACE_EXIT && t->type != CP_TRACE_TAG) return 0;
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 1024;
        f->ev = realloc(f->ev, f->cap * sizeof *f->ev);
        assert_non_null(f->ev);
    }
    f->ev[f->n++] = (tev){t->chunk_offset, t->index, (uint8_t)t->type, t->id, t->time_ms};
    return 0;
}

static const tfile *find_trace(const xcheck *x, const char *pod, const char *restart, int index)
{
    for (size_t i = 0; i < x->nfiles; i++)
        if (x->files[i].index == index && !strcmp(x->files[i].restart, restart) && !strcmp(x->files[i].pod, pod))
            return &x->files[i];
    return NULL;
}

/* The event at (chunk, index) of a trace file: events are in (chunk, index) order. */
static long find_tev(const tfile *f, uint64_t chunk, uint32_t index)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const tev *e = &f->ev[mid];
        if (e->chunk == chunk && e->index == index) return (long)mid;
        if (e->chunk < chunk || (e->chunk == chunk && e->index < index)) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

static int check_call(void *ud, const cp_call_rec *r)
{
    xcheck *x = ud;
    const raw_entry *c = x->calls_entry;
    const tfile *f = find_trace(x, c->pod, c->restart, r->trace_file_index);
    if (!f) fail_msg("%s/%s calls %d: trace file %d not stored", c->pod, c->restart, c->index, r->trace_file_index);
    long at = find_tev(f, (uint64_t)r->buffer_offset, (uint32_t)r->record_index);
    if (at < 0)
        fail_msg("%s calls %d: no event %d in chunk %d of trace %d", c->pod, c->index, r->record_index,
                 r->buffer_offset, r->trace_file_index);
    const tev *e = &f->ev[at];
    if (e->type != CP_TRACE_ENTER || e->id != r->method || e->time != r->start_ms)
        fail_msg("%s calls %d: record at %llu does not point at its root ENTER", c->pod, c->index,
                 (unsigned long long)r->offset);
    int depth = 0, enters = 0;
    for (size_t j = (size_t)at; j < f->n && f->ev[j].chunk == e->chunk; j++) {
        if (f->ev[j].type == CP_TRACE_ENTER) {
            depth++;
            enters++;
        } else if (f->ev[j].type == CP_TRACE_EXIT && --depth == 0) {
            assert_int_equal(f->ev[j].time, r->start_ms + r->duration_ms);
            break;
        }
    }
    assert_int_equal(depth, 0);
    assert_int_equal(enters, r->calls);
    x->checked++;
    return 0;
}

static void load_entry(const test_server *s, const raw_entry *e, cp_buf *out)
{
    char path[4096];
    raw_tree_path(s, e->ns, e->pod, e->restart, e->stream, e->index, path, sizeof path);
    load_file(path, out);
    assert_int_equal((long long)out->len, e->bytes);
}

/* Every stored calls record points at its root in a stored trace file. Returns the
 * number of records checked. */
static uint64_t cross_check(const test_server *s, const raw_entry *e, size_t n)
{
    xcheck x = {0};
    x.files = calloc(n, sizeof *x.files);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(e[i].stream, "trace")) continue;
        tfile *f = &x.files[x.nfiles++];
        snprintf(f->restart, sizeof f->restart, "%s", e[i].restart);
        snprintf(f->pod, sizeof f->pod, "%s", e[i].pod);
        f->index = e[i].index;
        cp_buf b;
        load_entry(s, &e[i], &b);
        cp_dec_sink sink = {.ud = f, .on_trace = collect_event};
        cp_dec *d = cp_dec_new(CP_STREAM_TRACE, NULL, &sink, 0);
        assert_int_equal(cp_dec_feed(d, b.data, b.len), CP_OK);
        assert_int_equal(cp_dec_finish(d), CP_OK);
        cp_dec_free(d);
        cp_buf_free(&b);
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(e[i].stream, "calls")) continue;
        x.calls_entry = &e[i];
        cp_buf b;
        load_entry(s, &e[i], &b);
        cp_dec_sink sink = {.ud = &x, .on_call = check_call};
        cp_dec *d = cp_dec_new(CP_STREAM_CALLS, NULL, &sink, 0);
        assert_int_equal(cp_dec_feed(d, b.data, b.len), CP_OK);
        assert_int_equal(cp_dec_finish(d), CP_OK);
        cp_dec_free(d);
        cp_buf_free(&b);
    }
    for (size_t i = 0; i < x.nfiles; i++) free(x.files[i].ev);
    free(x.files);
    return x.checked;
}

/* ---- the checks every run makes ----------------------------------------------------------- */

typedef struct stored {
    long long stream[CP_ARRAY_LEN(stream_names)];
    uint64_t calls_records;
    size_t files, pods, restarts;
} stored;

static int stream_slot(const char *name)
{
    for (size_t i = 0; i < CP_ARRAY_LEN(stream_names); i++)
        if (!strcmp(stream_names[i], name)) return (int)i;
    fail_msg("unexpected stored stream '%s'", name);
    return -1;
}

/* Counts distinct values of (pod) and (pod, restart) among the entries. */
static void count_pods(const raw_entry *e, size_t n, stored *st)
{
    for (size_t i = 0; i < n; i++) {
        int new_pod = 1, new_restart = 1;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(e[j].pod, e[i].pod) || strcmp(e[j].ns, e[i].ns)) continue;
            new_pod = 0;
            if (!strcmp(e[j].restart, e[i].restart)) new_restart = 0;
        }
        st->pods += (size_t)new_pod;
        st->restarts += (size_t)new_restart;
    }
}

/* Stops the server and compares what it stored with the summary. Returns the raw list
 * (caller frees) for further checks. */
static size_t check_stored(test_server *s, const summary *sum, stored *st, raw_entry **out)
{
    server_stop(s);
    memset(st, 0, sizeof *st);
    raw_entry *e;
    size_t n = raw_list(s, &e);
    for (size_t i = 0; i < n; i++) {
        st->stream[stream_slot(e[i].stream)] += e[i].bytes;
        cp_buf b;
        load_entry(s, &e[i], &b);
        uint64_t records;
        char why[256];
        int rc = decode_file(e[i].stream, b.data, b.len, &records, why, sizeof why);
        if (rc != CP_OK)
            fail_msg("stored %s/%s/%s/%d does not decode cleanly: %s", e[i].pod, e[i].restart, e[i].stream,
                     e[i].index, why);
        if (!strcmp(e[i].stream, "calls")) st->calls_records += records;
        cp_buf_free(&b);
    }
    st->files = n;
    count_pods(e, n, st);
    assert_int_equal(sum->errors, 0);
    assert_int_equal(sum->missing, 0);
    assert_true(sum->calls_sent > 0 && sum->acks > 0);
    long long total = 0;
    for (size_t i = 0; i < CP_ARRAY_LEN(stream_names); i++) {
        if (st->stream[i] != sum->stream[i])
            fail_msg("stream %s: %lld bytes stored, %lld acknowledged", stream_names[i], st->stream[i],
                     sum->stream[i]);
        total += st->stream[i];
    }
    assert_int_equal(total, sum->bytes_sent);
    assert_int_equal((long long)st->calls_records, sum->calls_sent);
    assert_int_equal((long long)st->pods, sum->agents);
    print_message("stored: %zu files, %zu pods, %zu restarts, %llu calls records, %lld bytes\n", st->files, st->pods,
                  st->restarts, (unsigned long long)st->calls_records, total);
    *out = e;
    return n;
}

/* ---- tests ---------------------------------------------------------------------------------- */

#define AGENTS 4
#define MAX_CALLS 600 /* root calls per agent */
#define PER_FLUSH 50  /* ... made after each flush cycle */
#define STR_(x) #x
#define STR(x) STR_(x)
/* --duration only bounds a run that hangs: every agent ends after its MAX_CALLS */
static const char *const base_args[] = {"--agents", STR(AGENTS), "--duration", "100", "--max-calls", STR(MAX_CALLS),
                                        "--calls-per-flush", STR(PER_FLUSH), "--flush-interval", "100", NULL};

/* Every agent made and got acknowledged exactly its MAX_CALLS calls. */
static void assert_all_calls(const summary *sum)
{
    assert_int_equal(sum->agents, AGENTS);
    assert_int_equal(json_int(sum->root, "calls_generated"), AGENTS * MAX_CALLS);
    assert_int_equal(sum->calls_sent, AGENTS * MAX_CALLS);
}

static void test_everything_acknowledged_is_stored(void **state)
{
    (void)state;
    const char *const srv[] = {"--rotation", "all=0:0", NULL};
    test_server s;
    server_start(&s, "emulate", srv);
    summary sum;
    run_emulator(&s, base_args, &sum);
    stored st;
    raw_entry *e;
    size_t n = check_stored(&s, &sum, &st, &e);
    assert_all_calls(&sum);
    assert_int_equal(st.restarts, 4);
    assert_int_equal(st.files, 4 * 7); /* one file per stream and pod, dictionary (V2 reply) */
    assert_true(sum.stream[stream_slot("dictionary")] > 0 && sum.stream[stream_slot("params")] > 0);
    assert_int_equal(sum.stream[stream_slot("posDictionary")], 0);
    assert_int_equal(cross_check(&s, e, n), (uint64_t)sum.calls_sent);
    free(e);
    json_decref(sum.root);
    server_destroy(&s);
}

/* Small rotation sizes: calls and trace files rotate (INIT seq + 1) many times, by size.
 * Each agent writes about 35 KiB of calls and 60 KiB of trace in 12 flushes of ~3 and
 * ~5 KiB, and the rotation is checked after every flush: at least 5 calls and 4 trace
 * files per pod whatever the timing (a file holds its limit plus at most one flush). */
#define CALLS_ROT 4096
#define TRACE_ROT 8192
static void test_rotation(void **state)
{
    (void)state;
    const char *const srv[] = {"--rotation", "all=0:0,calls=0:4096,trace=0:8192", NULL};
    test_server s;
    server_start(&s, "emulate-rot", srv);
    summary sum;
    run_emulator(&s, base_args, &sum);
    stored st;
    raw_entry *e;
    size_t n = check_stored(&s, &sum, &st, &e);
    assert_all_calls(&sum);
    assert_int_equal(st.restarts, AGENTS);
    /* every rotation the agents saw acknowledged is one more stored file */
    assert_int_equal((long long)st.files, 4 * 7 + sum.rotations);
    /* per pod: files 1..k of each stream; every calls and trace file but the last went past
     * its rotation size (rotated by size, not earlier), the other streams never rotate */
    for (size_t i = 0; i < n; i++) {
        int is_calls = !strcmp(e[i].stream, "calls"), is_trace = !strcmp(e[i].stream, "trace");
        int last = 0, count = 0;
        for (size_t j = 0; j < n; j++) {
            if (strcmp(e[j].pod, e[i].pod) || strcmp(e[j].stream, e[i].stream)) continue;
            count++;
            if (e[j].index > last) last = e[j].index;
        }
        assert_int_equal(count, last); /* no gaps, no duplicates */
        if (!is_calls && !is_trace) {
            assert_int_equal(last, 1);
            continue;
        }
        if (last < (is_calls ? 5 : 4))
            fail_msg("pod %s: %d %s files, want >= %d", e[i].pod, last, e[i].stream, is_calls ? 5 : 4);
        if (e[i].index < last && e[i].bytes <= (is_calls ? CALLS_ROT : TRACE_ROT))
            fail_msg("pod %s: %s file %d of %d rotated at %lld bytes", e[i].pod, e[i].stream, e[i].index, last,
                     e[i].bytes);
    }
    assert_int_equal(cross_check(&s, e, n), (uint64_t)sum.calls_sent);
    free(e);
    json_decref(sum.root);
    server_destroy(&s);
}

/* Deliberate drops every half second: several restarts per pod, still exactly what was
 * acked; the server answers V3, so the agents send posDictionary.
 *
 * A connection makes calls when it is set up and after each flush cycle that ended before
 * its drop; the cycles start >= 100 ms apart, so a connection makes at most
 * 25 x (1 + 500 / 100) = 150 of the 600 calls: >= 4 connections per pod, however slow the
 * machine is (a slow one only makes fewer calls per connection). */
static void test_reconnects(void **state)
{
    (void)state;
    const char *const srv[] = {"--rotation", "all=0:0", "--protocol-version", "100705", NULL};
    const char *const args[] = {"--agents", STR(AGENTS), "--duration", "100", "--max-calls", STR(MAX_CALLS),
                                "--calls-per-flush", "25",
                                "--flush-interval", "100", "--reconnect-every", "0.5", "--reconnect-delay", "100",
                                "--protocol-version", "100605", NULL};
    test_server s;
    server_start(&s, "emulate-reconnect", srv);
    summary sum;
    run_emulator(&s, args, &sum);
    stored st;
    raw_entry *e;
    size_t n = check_stored(&s, &sum, &st, &e);
    assert_all_calls(&sum);
    assert_true(sum.reconnects >= AGENTS * 3);
    assert_int_equal((long long)st.restarts, sum.agents + sum.reconnects);
    for (size_t i = 0; i < n; i++) { /* every restart directory got its own full set of files */
        assert_int_equal(e[i].index, 1);
        assert_int_not_equal(strcmp(e[i].stream, "dictionary"), 0);
    }
    assert_int_equal(st.files, st.restarts * 7);
    assert_true(sum.stream[stream_slot("posDictionary")] > 0);
    assert_int_equal(cross_check(&s, e, n), (uint64_t)sum.calls_sent);
    free(e);
    json_decref(sum.root);
    server_destroy(&s);
}

/* Usage errors exit 2; a refused connection is an error (exit 1). */
static void test_cli_errors(void **state)
{
    (void)state;
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    const char *const bad[] = {"emulate", "--agents", "0", NULL};
    assert_int_equal(cli_run(&out, &err, bad), 2);
    const char *const unknown[] = {"emulate", "--bogus", NULL};
    assert_int_equal(cli_run(&out, &err, unknown), 2);
    const char *const bad_max[] = {"emulate", "--max-calls", "-1", NULL};
    assert_int_equal(cli_run(&out, &err, bad_max), 2);
    const char *const bad_per_flush[] = {"emulate", "--calls-per-flush", "x", NULL};
    assert_int_equal(cli_run(&out, &err, bad_per_flush), 2);
    const char *const help[] = {"emulate", "--help", NULL};
    cp_buf_reset(&out);
    assert_int_equal(cli_run(&out, &err, help), 0);
    cp_buf_putc(&out, 0);
    assert_non_null(strstr((char *)out.data, "--calls-per-sec"));
    assert_non_null(strstr((char *)out.data, "--max-calls"));
    assert_non_null(strstr((char *)out.data, "--calls-per-flush"));
    /* nothing listens on the port of a stopped server */
    test_server s;
    server_start(&s, "emulate-refused", NULL);
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", s.port);
    server_stop(&s);
    const char *const refused[] = {"emulate", "--target", target, "--agents", "1", "--duration", "0.5",
                                   "--reconnect-delay", "100", "--json", "--quiet", NULL};
    cp_buf_reset(&out);
    assert_int_equal(cli_run(&out, &err, refused), 1);
    cp_buf_putc(&out, 0);
    assert_non_null(strstr((char *)out.data, "connect"));
    server_destroy(&s);
    cp_buf_free(&out);
    cp_buf_free(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_everything_acknowledged_is_stored, servers_teardown),
        cmocka_unit_test_teardown(test_rotation, servers_teardown),
        cmocka_unit_test_teardown(test_reconnects, servers_teardown),
        cmocka_unit_test_teardown(test_cli_errors, servers_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
