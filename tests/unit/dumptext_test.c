/* dumptext_test.c -- the text-dump parsers (cp_dumptext.h: thread dumps, top snapshots,
 * GC logs) and their JSON (dumpjson.h), on the fixtures of dumps-http.md §10 and on small
 * texts written here for the shapes the fixtures do not have (JDK 8, G1, graph-mode top,
 * odd names, cut and garbage input).
 */
#include "testutil.h"

#include "http/dumpjson.h"
#include "model/cp_dumptext.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TD1 "dumps/20231219T061734UTC.td.txt"
#define TD2 "dumps/20230804T164402.td.txt"
#define TOP1 "dumps/20231219T061734UTC.top.txt"
#define GC1 "dumps/20231219T062953UTC.gc.log"

/* ---- helpers ------------------------------------------------------------------------------- */

static cp_td *td_ok(const char *text, size_t n)
{
    cp_td *td = NULL;
    char err[128] = "";
    int st = cp_td_parse(text, n, &td, err, sizeof err);
    if (st != CP_OK) fail_msg("cp_td_parse: %d %s", st, err);
    assert_non_null(td);
    return td;
}

static cp_top *top_ok(const char *text, size_t n)
{
    cp_top *top = NULL;
    char err[128] = "";
    int st = cp_top_parse(text, n, &top, err, sizeof err);
    if (st != CP_OK) fail_msg("cp_top_parse: %d %s", st, err);
    assert_non_null(top);
    return top;
}

static cp_gc_log *gc_ok(const char *text, size_t n)
{
    cp_gc_log *gc = NULL;
    char err[128] = "";
    int st = cp_gc_parse(text, n, &gc, err, sizeof err);
    if (st != CP_OK) fail_msg("cp_gc_parse: %d %s", st, err);
    assert_non_null(gc);
    return gc;
}

static const cp_td_thread *thread_named(const cp_td *td, const char *name)
{
    for (size_t i = 0; i < td->nthreads; i++)
        if (strcmp(td->threads[i].name, name) == 0) return &td->threads[i];
    fail_msg("no thread named \"%s\"", name);
    return NULL;
}

static const cp_td_thread *thread_by_nid(const cp_td *td, int64_t nid)
{
    for (size_t i = 0; i < td->nthreads; i++)
        if (td->threads[i].nid == nid) return &td->threads[i];
    return NULL;
}

static const cp_top_row *row_by_pid(const cp_top *top, int64_t pid)
{
    for (size_t i = 0; i < top->nrows; i++)
        if (top->rows[i].pid == pid) return &top->rows[i];
    fail_msg("no top row %lld", (long long)pid);
    return NULL;
}

#define assert_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) < (eps))

/* UTC epoch ms of a civil time, through the C library (an independent check of the
 * parser's own calendar arithmetic). */
static int64_t utc_ms(int y, int mo, int d, int h, int mi, int s, int ms)
{
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = s};
    return (int64_t)timegm(&tm) * 1000 + ms;
}

typedef struct states {
    char key[16][64];
    size_t count[16];
    size_t n, total;
} states;

static void collect_state(void *ud, const char *key, size_t count)
{
    states *s = ud;
    assert_true(s->n < 16);
    snprintf(s->key[s->n], sizeof s->key[0], "%s", key);
    s->count[s->n++] = count;
    s->total += count;
}

static size_t state_count(const states *s, const char *key)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->key[i], key) == 0) return s->count[i];
    return 0;
}

/* LF -> CRLF copy (malloc'ed). */
static char *crlf(const char *text, size_t n, size_t *outn)
{
    char *o = malloc(2 * n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (text[i] == '\n') o[k++] = '\r';
        o[k++] = text[i];
    }
    *outn = k;
    return o;
}

static int valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t k;
        unsigned cp;
        if (*p < 0x80) { p++; continue; }
        if (*p >= 0xC2 && *p <= 0xDF) k = 2, cp = *p & 0x1F;
        else if (*p >= 0xE0 && *p <= 0xEF) k = 3, cp = *p & 0x0F;
        else if (*p >= 0xF0 && *p <= 0xF4) k = 4, cp = *p & 0x07;
        else return 0;
        for (size_t j = 1; j < k; j++) {
            if ((p[j] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[j] & 0x3F);
        }
        if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        p += k;
    }
    return 1;
}

/* json_dumps succeeds and gives valid UTF-8; returns the text (caller frees). */
static char *dumps_ok(json_t *j)
{
    assert_non_null(j);
    char *s = json_dumps(j, JSON_COMPACT);
    assert_non_null(s);
    assert_true(valid_utf8(s));
    return s;
}

static double now_ms(void) { return (double)cp_mono_ns() / 1e6; }

/* ---- thread dumps: fixtures ------------------------------------------------------------------ */

static void test_td_fixture_small(void **state)
{
    (void)state;
    cp_buf b;
    load_fixture(TD1, &b);
    cp_td *td = td_ok((const char *)b.data, b.len);

    assert_int_equal(td->time_ms, utc_ms(2023, 12, 19, 6, 17, 33, 0));
    assert_string_equal(td->vm, "OpenJDK 64-Bit Server VM (17.0.7+7-alpine-r1 mixed mode, sharing)");
    assert_int_equal(td->nthreads, 75);
    assert_int_equal(td->java_threads, 73);
    assert_int_equal(td->smr_length, 73);
    assert_int_equal(td->jni_global_refs, 26);
    assert_int_equal(td->jni_weak_refs, 0);
    assert_int_equal(td->deadlocks, 0);

    states s = {0};
    cp_td_state_counts(td, collect_state, &s);
    assert_int_equal(s.total, 75);
    assert_int_equal(s.n, 7);
    assert_int_equal(state_count(&s, "RUNNABLE"), 19);
    assert_int_equal(state_count(&s, "WAITING (parking)"), 25);
    assert_int_equal(state_count(&s, "TIMED_WAITING (parking)"), 25);
    assert_int_equal(state_count(&s, "TIMED_WAITING (sleeping)"), 2);
    assert_int_equal(state_count(&s, "WAITING (on object monitor)"), 1);
    assert_int_equal(state_count(&s, "TIMED_WAITING (on object monitor)"), 1);
    assert_int_equal(state_count(&s, ""), 2); /* VM Thread, VM Periodic Task Thread */
    /* first-seen order: "Reference Handler" (RUNNABLE) then "Finalizer" */
    assert_string_equal(s.key[0], "RUNNABLE");
    assert_string_equal(s.key[1], "WAITING (on object monitor)");

    const cp_td_thread *t = thread_named(td, "Thread-2");
    assert_int_equal(t->seq, 26);
    assert_int_equal(t->daemon, 0);
    assert_int_equal(t->prio, 5);
    assert_int_equal(t->os_prio, 0);
    assert_near(t->cpu_ms, 368585.08, 1e-6);
    assert_near(t->elapsed_s, 10095.69, 1e-9);
    assert_true(t->tid == UINT64_C(0x00007f4fe8b6ecd0));
    assert_int_equal(t->nid, 0xf9);
    assert_string_equal(t->header_state, "runnable");
    assert_string_equal(t->state, "TIMED_WAITING");
    assert_string_equal(t->state_detail, "parking");
    assert_int_equal(t->nframes, 3);
    assert_string_equal(t->frames[0].text, "jdk.internal.misc.Unsafe.park(java.base@17.0.7/Native Method)");
    assert_string_equal(t->frames[2].text,
                        "com.netcracker.cloud.collector.CollectorOrchestratorThread.run(CollectorOrchestratorThread.java:112)");
    assert_int_equal(t->nlocks, 0);

    t = thread_named(td, "Timer cache thread");
    assert_int_equal(t->seq, 13);
    assert_int_equal(t->daemon, 1);
    assert_int_equal(t->prio, 10);
    assert_near(t->cpu_ms, 167534.47, 1e-6);
    assert_int_equal(t->nid, 0xec);
    assert_string_equal(t->state, "TIMED_WAITING");
    assert_string_equal(t->state_detail, "parking");
    assert_string_equal(t->frames[0].text, "jdk.internal.misc.Unsafe.park(java.base@17.0.7/Native Method)");
    assert_string_equal(t->frames[t->nframes - 1].text, "com.netcracker.profiler.agent.TimerCache.run(TimerCache.java:75)");

    /* "Finalizer": waiting on the queue lock under frame 0, holding it under frame 1 */
    t = thread_named(td, "Finalizer");
    assert_int_equal(t->seq, 3);
    assert_int_equal(t->prio, 8);
    assert_near(t->cpu_ms, 0.61, 1e-9);
    assert_int_equal(t->nid, 0xe1);
    assert_string_equal(t->header_state, "in Object.wait()");
    assert_string_equal(t->state, "WAITING");
    assert_string_equal(t->state_detail, "on object monitor");
    assert_int_equal(t->nframes, 4);
    assert_int_equal(t->nlocks, 2);
    assert_int_equal(t->locks[0].kind, CP_TD_WAITING_ON);
    assert_string_equal(t->locks[0].addr, "0x00000000eab29f30");
    assert_string_equal(t->locks[0].cls, "java.lang.ref.ReferenceQueue$Lock");
    assert_int_equal(t->locks[0].frame, 0);
    assert_int_equal(t->locks[1].kind, CP_TD_LOCKED);
    assert_string_equal(t->locks[1].addr, "0x00000000eab29f30");
    assert_int_equal(t->locks[1].frame, 1);

    t = thread_named(td, "Reference Handler");
    assert_string_equal(t->header_state, "waiting on condition");
    assert_string_equal(t->state, "RUNNABLE");
    assert_string_equal(t->state_detail, "");
    assert_near(t->elapsed_s, 10114.91, 1e-9);

    /* the last Java thread parks under its first frame */
    t = thread_named(td, "logback-8");
    assert_int_equal(t->seq, 79);
    assert_int_equal(t->nid, 0x419);
    assert_int_equal(t->nframes, 12);
    assert_int_equal(t->nlocks, 1);
    assert_int_equal(t->locks[0].kind, CP_TD_PARKING);
    assert_string_equal(t->locks[0].addr, "0x00000000eab2a788");
    assert_string_equal(t->locks[0].cls, "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject");
    assert_int_equal(t->locks[0].frame, 0);

    /* "No compile task" is not a frame */
    t = thread_named(td, "C2 CompilerThread0");
    assert_int_equal(t->nframes, 0);
    assert_int_equal(t->nlocks, 0);

    /* JVM-internal threads: no #seq, no prio, no state line */
    t = thread_named(td, "VM Thread");
    assert_int_equal(t->seq, -1);
    assert_int_equal(t->prio, -1);
    assert_int_equal(t->os_prio, 0);
    assert_int_equal(t->daemon, 0);
    assert_near(t->cpu_ms, 11425.85, 1e-6);
    assert_int_equal(t->nid, 0xdf);
    assert_string_equal(t->header_state, "runnable");
    assert_string_equal(t->state, "");
    assert_int_equal(t->nframes, 0);
    t = &td->threads[td->nthreads - 1];
    assert_string_equal(t->name, "VM Periodic Task Thread");
    assert_string_equal(t->header_state, "waiting on condition");
    assert_int_equal(t->nid, 0xee);

    cp_td_free(td);
    cp_buf_free(&b);
}

static void test_td_fixture_large(void **state)
{
    (void)state;
    cp_buf b;
    load_fixture(TD2, &b);
    cp_td *td = td_ok((const char *)b.data, b.len);
    assert_int_equal(td->time_ms, utc_ms(2023, 8, 4, 16, 44, 3, 0)); /* a second after the name */
    assert_int_equal(td->nthreads, 269);
    assert_int_equal(td->java_threads, 258);
    assert_int_equal(td->smr_length, 258);
    assert_int_equal(td->jni_global_refs, 17);
    assert_int_equal(td->jni_weak_refs, 0);

    states s = {0};
    cp_td_state_counts(td, collect_state, &s);
    assert_int_equal(s.total, 269);
    assert_int_equal(state_count(&s, "WAITING (parking)"), 220);
    assert_int_equal(state_count(&s, "RUNNABLE"), 26);
    assert_int_equal(state_count(&s, "TIMED_WAITING (parking)"), 7);
    assert_int_equal(state_count(&s, "TIMED_WAITING (sleeping)"), 3);
    assert_int_equal(state_count(&s, "WAITING (on object monitor)"), 1);
    assert_int_equal(state_count(&s, "TIMED_WAITING (on object monitor)"), 1);
    assert_int_equal(state_count(&s, ""), 11);

    /* an entry of "Locked ownable synchronizers:" */
    const cp_td_thread *t = thread_named(td, "Thread-22");
    assert_int_equal(t->seq, 44);
    assert_int_equal(t->nid, 0x110);
    assert_int_equal(t->nframes, 8);
    assert_string_equal(t->frames[0].text, "sun.nio.ch.Net.accept(java.base@17.0.7/Native Method)");
    assert_int_equal(t->nlocks, 1);
    assert_int_equal(t->locks[0].kind, CP_TD_OWNABLE);
    assert_string_equal(t->locks[0].addr, "0x00000000c23da160");
    assert_string_equal(t->locks[0].cls, "java.util.concurrent.locks.ReentrantLock$NonfairSync");
    assert_int_equal(t->locks[0].frame, -1);

    t = thread_named(td, "GC Thread#2");
    assert_int_equal(t->seq, -1);
    assert_int_equal(t->nid, 0xf2);
    assert_near(t->cpu_ms, 319.14, 1e-9);

    /* 351 KB in a few ms (loose bound: sanitizer builds are slower) */
    double t0 = now_ms();
    for (int i = 0; i < 20; i++) cp_td_free(td_ok((const char *)b.data, b.len));
    double per = (now_ms() - t0) / 20;
    assert_true(per < 50);

    cp_td_free(td);
    cp_buf_free(&b);
}

/* ---- thread dumps: shapes the fixtures lack ------------------------------------------------------- */

static const char jdk8_dump[] =
    "2024-01-02 03:04:05\n"
    "Full thread dump Java HotSpot(TM) 64-Bit Server VM (25.181-b13 mixed mode):\n"
    "\n"
    "\"pool \"x\" worker 1\" #12 daemon prio=5 os_prio=0 tid=0x00007f3b44001000 nid=0x2a2e waiting on condition "
    "[0x00007f3b2c9fe000]\n"
    "   java.lang.Thread.State: TIMED_WAITING (parking)\n"
    "\tat sun.misc.Unsafe.park(Native Method)\n"
    "\t- parking to wait for  <0x00000000f5e8a7b8> (a java.util.concurrent.SynchronousQueue$TransferStack)\n"
    "\tat java.lang.Thread.run(Thread.java:748)\n"
    "\n"
    "   Locked ownable synchronizers:\n"
    "\t- <0x00000000c23da160> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)\n"
    "\n"
    "\"evil\" #1 prio=5\" #7 prio=1 os_prio=-2 tid=0x1 nid=0x2 waiting for monitor entry [0x00007f3b2c9fe000]\n"
    "   java.lang.Thread.State: BLOCKED (on object monitor)\n"
    "\tat Foo.bar(Foo.java:10)\n"
    "\t- waiting to lock <0x00000000aaaa0001> (a java.lang.Object)\n"
    "\tat Foo.baz(Foo.java:20)\n"
    "\t- eliminated <owner is scalar replaced> (a java.lang.Object)\n"
    "\t- locked <0x00000000aaaa0002> (a java.lang.Class for Foo)\n"
    "\n"
    "\"main\" #1 [12345] prio=5 os_prio=0 cpu=1.50ms elapsed=2.25s tid=0x00007f00 nid=12345 runnable  \n"
    "   java.lang.Thread.State: RUNNABLE\n"
    "\n"
    "\"GC task thread#0 (ParallelGC)\" os_prio=0 tid=0x00007f3b4401e800 nid=0x2a05 runnable \n"
    "\n"
    "Found one Java-level deadlock:\n"
    "=============================\n"
    "\"Thread-1\":\n"
    "  waiting to lock monitor 0x00007f3b2c003f08 (object 0x00000000aaaa0001, a java.lang.Object),\n"
    "  which is held by \"Thread-0\"\n"
    "\n"
    "Java stack information for the threads listed above:\n"
    "===================================================\n"
    "\"Thread-1\":\n"
    "\tat Foo.bar(Foo.java:10)\n"
    "\t- waiting to lock <0x00000000aaaa0001> (a java.lang.Object)\n"
    "\n"
    "Found 1 deadlock.\n"
    "\n"
    "JNI global references: 1234\n";

static void check_jdk8(const cp_td *td)
{
    assert_int_equal(td->time_ms, utc_ms(2024, 1, 2, 3, 4, 5, 0));
    assert_string_equal(td->vm, "Java HotSpot(TM) 64-Bit Server VM (25.181-b13 mixed mode)");
    assert_int_equal(td->smr_length, -1);
    assert_int_equal(td->nthreads, 4);
    assert_int_equal(td->java_threads, 3);
    assert_int_equal(td->jni_global_refs, 1234);
    assert_int_equal(td->jni_weak_refs, -1);
    assert_int_equal(td->deadlocks, 1);

    /* quotes and spaces in the name; JDK 8: no cpu=, no elapsed= */
    const cp_td_thread *t = &td->threads[0];
    assert_string_equal(t->name, "pool \"x\" worker 1");
    assert_int_equal(t->seq, 12);
    assert_int_equal(t->daemon, 1);
    assert_int_equal(t->prio, 5);
    assert_true(t->cpu_ms == -1);
    assert_true(t->elapsed_s == -1);
    assert_true(t->tid == UINT64_C(0x00007f3b44001000));
    assert_int_equal(t->nid, 0x2a2e);
    assert_string_equal(t->header_state, "waiting on condition");
    assert_int_equal(t->nframes, 2);
    assert_string_equal(t->frames[0].text, "sun.misc.Unsafe.park(Native Method)");
    assert_int_equal(t->nlocks, 2);
    assert_int_equal(t->locks[0].kind, CP_TD_PARKING);
    assert_string_equal(t->locks[0].addr, "0x00000000f5e8a7b8");
    assert_int_equal(t->locks[0].frame, 0);
    assert_int_equal(t->locks[1].kind, CP_TD_OWNABLE);
    assert_int_equal(t->locks[1].frame, -1);

    /* a name holding `" #1 prio=5`: the name ends at the last quote before the fields */
    t = &td->threads[1];
    assert_string_equal(t->name, "evil\" #1 prio=5");
    assert_int_equal(t->seq, 7);
    assert_int_equal(t->prio, 1);
    assert_int_equal(t->os_prio, -2);
    assert_int_equal(t->nid, 2);
    assert_string_equal(t->state, "BLOCKED");
    assert_string_equal(t->state_detail, "on object monitor");
    assert_int_equal(t->nlocks, 3);
    assert_int_equal(t->locks[0].kind, CP_TD_WAITING_TO_LOCK);
    assert_int_equal(t->locks[0].frame, 0);
    assert_int_equal(t->locks[1].kind, CP_TD_ELIMINATED);
    assert_string_equal(t->locks[1].addr, "");
    assert_string_equal(t->locks[1].cls, "java.lang.Object");
    assert_int_equal(t->locks[1].frame, 1);
    assert_int_equal(t->locks[2].kind, CP_TD_LOCKED);
    assert_string_equal(t->locks[2].cls, "java.lang.Class for Foo");

    /* JDK 19+: "[tid]" after #seq, decimal nid */
    t = &td->threads[2];
    assert_string_equal(t->name, "main");
    assert_int_equal(t->seq, 1);
    assert_int_equal(t->nid, 12345);
    assert_near(t->cpu_ms, 1.5, 1e-12);
    assert_near(t->elapsed_s, 2.25, 1e-12);

    /* JVM thread: no #seq/prio; the deadlock report's stacks are not its frames */
    t = &td->threads[3];
    assert_string_equal(t->name, "GC task thread#0 (ParallelGC)");
    assert_int_equal(t->seq, -1);
    assert_int_equal(t->prio, -1);
    assert_int_equal(t->os_prio, 0);
    assert_int_equal(t->nid, 0x2a05);
    assert_string_equal(t->header_state, "runnable");
    assert_int_equal(t->nframes, 0);
    assert_int_equal(t->nlocks, 0);
}

static void test_td_shapes(void **state)
{
    (void)state;
    cp_td *td = td_ok(jdk8_dump, sizeof jdk8_dump - 1);
    check_jdk8(td);
    states s = {0};
    cp_td_state_counts(td, collect_state, &s);
    assert_int_equal(s.n, 4);
    assert_string_equal(s.key[0], "TIMED_WAITING (parking)");
    assert_string_equal(s.key[1], "BLOCKED (on object monitor)");
    assert_string_equal(s.key[2], "RUNNABLE");
    assert_string_equal(s.key[3], "");
    cp_td_free(td);

    /* CRLF line endings read the same */
    size_t n;
    char *c = crlf(jdk8_dump, sizeof jdk8_dump - 1, &n);
    td = td_ok(c, n);
    check_jdk8(td);
    cp_td_free(td);
    free(c);

    /* "Found N deadlocks." */
    static const char two[] = "\"a\" #1 prio=5 tid=0x1 nid=0x1 runnable\n\nFound one Java-level deadlock:\n"
                              "Found one Java-level deadlock:\nFound 2 deadlocks.\n";
    td = td_ok(two, sizeof two - 1);
    assert_int_equal(td->deadlocks, 2);
    assert_int_equal(td->time_ms, -1);
    assert_string_equal(td->vm, "");
    assert_int_equal(td->jni_global_refs, -1);
    cp_td_free(td);
}

static void sum_states(void *ud, const char *key, size_t count)
{
    assert_non_null(key);
    assert_true(count > 0);
    *(size_t *)ud += count;
}

static void test_td_bad_input(void **state)
{
    (void)state;
    cp_td *td = (cp_td *)&td;
    char err[128];

    /* empty, or no thread block: not a thread dump */
    assert_int_equal(cp_td_parse("", 0, &td, err, sizeof err), CP_ECORRUPT);
    assert_null(td);
    assert_true(err[0] != '\0');
    assert_int_equal(cp_td_parse(NULL, 0, &td, err, sizeof err), CP_ECORRUPT);
    static const char nothreads[] = "2023-12-19 06:17:33\nFull thread dump X:\n\"Thread-1\":\n\tat a.b(C.java:1)\n";
    assert_int_equal(cp_td_parse(nothreads, sizeof nothreads - 1, &td, err, sizeof err), CP_ECORRUPT);
    assert_null(td);

    /* garbage: no crash, and only ECORRUPT or a parse */
    uint64_t rng = 42;
    char *g = malloc(65536);
    for (int round = 0; round < 20; round++) {
        for (size_t i = 0; i < 65536; i++) {
            uint64_t r = test_rand(&rng);
            /* mostly dump-like bytes so lines do form */
            static const char alpha[] = "\"\" #\n\t- at<>()0x9a=prio=nid=tid=cpu=ms ";
            g[i] = (r & 3) ? alpha[(r >> 8) % (sizeof alpha - 1)] : (char)(r >> 16);
        }
        int st = cp_td_parse(g, 65536, &td, err, sizeof err);
        assert_true(st == CP_OK || st == CP_ECORRUPT);
        if (st == CP_OK) {
            size_t sum = 0;
            cp_td_state_counts(td, sum_states, &sum);
            assert_int_equal(sum, td->nthreads);
            assert_true(td->java_threads <= td->nthreads);
            cp_td_free(td);
        }
    }
    free(g);

    /* NUL bytes: a NUL inside a name cuts the C string, never the parse */
    static const char nul[] = "\"a\0b\" #1 prio=5 tid=0x1 nid=0x1 runnable\n\tat x.y(Z.java:1)\n\0\n"
                              "\"c\" #2 prio=5 tid=0x2 nid=0x2 runnable\n\tat \0q\n";
    td = td_ok(nul, sizeof nul - 1);
    assert_int_equal(td->nthreads, 2);
    assert_string_equal(td->threads[0].name, "a");
    assert_int_equal(td->threads[0].nframes, 1);
    assert_string_equal(td->threads[1].name, "c");
    assert_int_equal(td->threads[1].nid, 2);
    assert_int_equal(td->threads[1].nframes, 1);
    cp_td_free(td);

    /* bounds */
    assert_int_equal(cp_td_parse(nul, (size_t)CP_DUMPTEXT_MAX_BYTES + 1, &td, err, sizeof err), CP_ELIMIT);
    assert_null(td);
    cp_buf many;
    cp_buf_init(&many);
    for (int i = 0; i <= CP_TD_MAX_THREADS; i++) cp_buf_puts(&many, "\"t\" #1 prio=5 tid=0x1 nid=0x1 r\n");
    assert_int_equal(cp_td_parse((const char *)many.data, many.len, &td, err, sizeof err), CP_ELIMIT);
    assert_null(td);
    assert_non_null(strstr(err, "threads"));
    /* the same count of threads, one short of the limit, parses (and fast) */
    many.len -= strlen("\"t\" #1 prio=5 tid=0x1 nid=0x1 r\n");
    td = td_ok((const char *)many.data, many.len);
    assert_int_equal(td->nthreads, CP_TD_MAX_THREADS);
    cp_td_free(td);
    cp_buf_free(&many);

    /* a long line of quotes and spaces stays linear */
    size_t big = 4u << 20;
    char *q = malloc(big);
    for (size_t i = 0; i < big; i++) q[i] = i % 2 ? ' ' : '"';
    double t0 = now_ms();
    assert_int_equal(cp_td_parse(q, big, &td, err, sizeof err), CP_ECORRUPT);
    assert_true(now_ms() - t0 < 2000);
    free(q);
}

/* Cut anywhere: no crash; thread counts only grow with the prefix; a cut at a line end
 * gives exactly the thread headers before it. */
static void test_td_truncated(void **state)
{
    (void)state;
    cp_buf b;
    load_fixture(TD1, &b);
    const char *text = (const char *)b.data;
    size_t prev = 0, headers = 0;
    char err[128];
    for (size_t cut = 0; cut <= b.len; cut += (cut < 2000 ? 7 : 97)) {
        cp_td *td = NULL;
        int st = cp_td_parse(text, cut, &td, err, sizeof err);
        assert_true(st == CP_OK || st == CP_ECORRUPT);
        size_t n = st == CP_OK ? td->nthreads : 0;
        assert_true(n >= prev && n <= 75);
        prev = n;
        if (td) {
            for (size_t i = 0; i < td->nthreads; i++) assert_non_null(td->threads[i].name);
            cp_td_free(td);
        }
    }
    for (size_t i = 0; i < b.len; i++) {
        if (text[i] != '\n') continue;
        if (i + 1 < b.len && text[i + 1] == '"') {
            cp_td *td = NULL;
            int st = cp_td_parse(text, i + 1, &td, err, sizeof err);
            assert_int_equal(st, headers ? CP_OK : CP_ECORRUPT);
            if (td) assert_int_equal(td->nthreads, headers);
            cp_td_free(td);
            headers++;
        }
    }
    assert_int_equal(headers, 75);
    cp_buf_free(&b);
}

/* ---- top ---------------------------------------------------------------------------------------- */

static void check_top_fixture(const cp_top *top)
{
    assert_int_equal(top->pid, 209);
    assert_string_equal(top->clock, "06:17:33");
    assert_string_equal(top->uptime, "12 days, 10:20");
    assert_int_equal(top->users, 0);
    assert_near(top->load[0], 7.57, 1e-12);
    assert_near(top->load[1], 5.18, 1e-12);
    assert_near(top->load[2], 5.04, 1e-12);
    assert_int_equal(top->threads_total, 76);
    assert_int_equal(top->running, 1);
    assert_int_equal(top->sleeping, 75);
    assert_int_equal(top->stopped, 0);
    assert_int_equal(top->zombie, 0);
    assert_near(top->cpu_us, 100.0, 1e-12);
    assert_near(top->cpu_sy, 0, 1e-12);
    assert_near(top->cpu_id, 0, 1e-12);
    assert_near(top->cpu_st, 0, 1e-12);
    /* MiB lines in KiB */
    assert_near(top->mem_total, 64308.2 * 1024, 1e-6);
    assert_near(top->mem_free, 30799.7 * 1024, 1e-6);
    assert_near(top->mem_used, 21386.1 * 1024, 1e-6);
    assert_near(top->mem_buff_cache, 12836.2 * 1024, 1e-6);
    assert_near(top->swap_total, 0, 1e-12);
    assert_near(top->swap_free, 0, 1e-12);
    assert_near(top->swap_used, 0, 1e-12);
    assert_near(top->mem_avail, 42922.1 * 1024, 1e-6);

    assert_int_equal(top->nrows, 76);
    const cp_top_row *r = &top->rows[0];
    assert_int_equal(r->pid, 209);
    assert_string_equal(r->command, "java");
    assert_near(r->time_s, 17 * 60 + 52.72, 1e-9);

    r = row_by_pid(top, 249);
    assert_string_equal(r->user, "appuser");
    assert_string_equal(r->pr, "20");
    assert_int_equal(r->ni, 0);
    assert_near(r->virt_kib, 1226780, 1e-9);
    assert_near(r->res_kib, 523972, 1e-9);
    assert_near(r->shr_kib, 23584, 1e-9);
    assert_int_equal(r->state, 'R');
    assert_near(r->cpu_pct, 5.9, 1e-12);
    assert_near(r->mem_pct, 0.8, 1e-12);
    assert_near(r->time_s, 368.58, 1e-9);
    assert_string_equal(r->command, "Thread-2");

    r = row_by_pid(top, 236);
    assert_int_equal(r->state, 'S');
    assert_near(r->time_s, 167.53, 1e-9);
    assert_string_equal(r->command, "Timer c+");

    r = &top->rows[top->nrows - 1];
    assert_int_equal(r->pid, 1049);
    assert_string_equal(r->command, "logback+");
}

static void test_top_fixture(void **state)
{
    (void)state;
    cp_buf b;
    load_fixture(TOP1, &b);
    cp_top *top = top_ok((const char *)b.data, b.len);
    check_top_fixture(top);
    cp_top_free(top);

    size_t n;
    char *c = crlf((const char *)b.data, b.len, &n);
    top = top_ok(c, n);
    check_top_fixture(top);
    cp_top_free(top);
    free(c);
    cp_buf_free(&b);
}

/* §8.2/§10: the top of the same second joins the dump by PID = nid, and TIME+ agrees
 * with cpu= (within 0.5 s). Every dump thread has its row; the one row left is the
 * process's own main thread (209, "java"). */
static void test_top_dump_join(void **state)
{
    (void)state;
    cp_buf tb, db;
    load_fixture(TOP1, &tb);
    load_fixture(TD1, &db);
    cp_top *top = top_ok((const char *)tb.data, tb.len);
    cp_td *td = td_ok((const char *)db.data, db.len);

    const cp_top_row *r = row_by_pid(top, 249);
    const cp_td_thread *t = thread_by_nid(td, r->pid);
    assert_non_null(t);
    assert_string_equal(t->name, "Thread-2");
    assert_true(fabs(r->time_s - t->cpu_ms / 1000) < 0.5);
    r = row_by_pid(top, 236);
    t = thread_by_nid(td, r->pid);
    assert_non_null(t);
    assert_string_equal(t->name, "Timer cache thread");
    assert_true(fabs(r->time_s - t->cpu_ms / 1000) < 0.5);

    size_t joined = 0;
    for (size_t i = 0; i < top->nrows; i++) {
        r = &top->rows[i];
        t = thread_by_nid(td, r->pid);
        if (!t) {
            assert_int_equal(r->pid, 209);
            continue;
        }
        joined++;
        assert_true(fabs(r->time_s - t->cpu_ms / 1000) < 0.5);
        /* COMMAND is the name cut to 7 characters and a '+' -- except for the launcher's
         * thread (DestroyJavaVM), which keeps the process name */
        if (strcmp(t->name, "DestroyJavaVM") == 0) {
            assert_string_equal(r->command, "java");
            continue;
        }
        size_t k = strlen(r->command);
        if (k && r->command[k - 1] == '+') k--;
        assert_memory_equal(r->command, t->name, k);
    }
    assert_int_equal(joined, 75);
    assert_int_equal(joined, td->nthreads);

    cp_td_free(td);
    cp_top_free(top);
    cp_buf_free(&tb);
    cp_buf_free(&db);
}

static void test_top_shapes(void **state)
{
    (void)state;
    /* graph mode, Tasks:, rt priority, unit suffixes, long TIME+ forms */
    static const char graph[] =
        "top - 10:11:12 up 3 min,  1 user,  load average: 0.10, 0.20, 0.30\n"
        "Tasks:   5 total,   1 running,   4 sleeping,   0 stopped,   0 zombie\n"
        "%Cpu(s):  12.5/3.1    16[|||||                                                    ]\n"
        "KiB Mem : 65.2/12268760 [|||||||||||||||||||||||||||||||||||||||||||||||||||||||         ]\n"
        "KiB Swap:  0.0/0        [                                                                ]\n"
        "\n"
        "  PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND\n"
        "    1 root      20   0    1.2g   2.5m   1024 S   0.0   0.0   0:00.03 init\n"
        "   42 app       rt  -5    8.1t    10g    0.5g R 100.0  80.0 123:45.67 my thread name\n"
        "   43 app       20   0       0      0      0 Z   0.0   0.0   1234:56 a\n"
        "   44 app       20   0       0      0      0 t   0.0   0.0     12,34 b\n"
        "   45 app       20   0       0      0      0 I   0.0   0.0        5h c\n"
        "   46 app       20   0       0      0      0 D   0.0   0.0    1:02:03 d\n"
        "   47 app       20   0       0      0      0 D   0.0   0.0   0:00.00\n";
    cp_top *top = top_ok(graph, sizeof graph - 1);
    assert_int_equal(top->pid, -1);
    assert_string_equal(top->clock, "10:11:12");
    assert_string_equal(top->uptime, "3 min");
    assert_int_equal(top->users, 1);
    assert_near(top->load[2], 0.30, 1e-12);
    assert_int_equal(top->threads_total, 5);
    assert_int_equal(top->sleeping, 4);
    assert_near(top->cpu_us, 12.5, 1e-12);
    assert_near(top->cpu_sy, 3.1, 1e-12);
    assert_true(top->cpu_id == -1);
    assert_near(top->mem_total, 12268760, 1e-6);
    assert_near(top->mem_used, 12268760 * 0.652, 1e-3);
    assert_true(top->mem_free == -1 && top->mem_buff_cache == -1 && top->mem_avail == -1);
    assert_near(top->swap_total, 0, 1e-12);
    assert_near(top->swap_used, 0, 1e-12);
    assert_int_equal(top->nrows, 6); /* the last row has no COMMAND: a cut row */
    const cp_top_row *r = &top->rows[0];
    assert_near(r->virt_kib, 1.2 * 1024 * 1024, 1e-6);
    assert_near(r->res_kib, 2.5 * 1024, 1e-9);
    assert_near(r->time_s, 0.03, 1e-12);
    r = &top->rows[1];
    assert_int_equal(r->pid, 42);
    assert_string_equal(r->pr, "rt");
    assert_int_equal(r->ni, -5);
    assert_near(r->virt_kib, 8.1 * 1024 * 1024 * 1024, 1);
    assert_near(r->res_kib, 10.0 * 1024 * 1024, 1e-6);
    assert_near(r->shr_kib, 0.5 * 1024 * 1024, 1e-6);
    assert_near(r->cpu_pct, 100, 1e-12);
    assert_near(r->time_s, 123 * 60 + 45.67, 1e-9);
    assert_string_equal(r->command, "my thread name");
    assert_int_equal(top->rows[2].state, 'Z');
    assert_near(top->rows[2].time_s, 1234 * 60 + 56, 1e-9);
    assert_int_equal(top->rows[3].state, '?');
    assert_near(top->rows[3].time_s, 12 * 3600 + 34 * 60, 1e-9);
    assert_near(top->rows[4].time_s, 5 * 3600, 1e-9);
    assert_near(top->rows[5].time_s, 3723, 1e-9);
    cp_top_free(top);

    /* GiB numeric lines; "1 day,  3:04" uptime; a second iteration is not read */
    static const char gib[] =
        "top - 06:17:33 up 1 day,  3:04,  2 users,  load average: 1.00, 2.00, 3.00\n"
        "GiB Mem :     62.8 total,     30.1 free,     20.9 used,     12.5 buff/cache\n"
        "GiB Swap:      1.0 total,      1.0 free,      0.0 used.     41.9 avail Mem\n"
        "\n"
        "    PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND\n"
        "      7 u         20   0       1      1      1 S   0.0   0.0   0:01.00 x\n"
        "top - 06:17:36 up 1 day,  3:04,  2 users,  load average: 1.00, 2.00, 3.00\n"
        "    PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND\n"
        "      7 u         20   0       1      1      1 S   0.0   0.0   0:04.00 x\n";
    top = top_ok(gib, sizeof gib - 1);
    assert_string_equal(top->uptime, "1 day,  3:04");
    assert_int_equal(top->users, 2);
    assert_near(top->mem_total, 62.8 * 1024 * 1024, 1e-3);
    assert_near(top->mem_free, 30.1 * 1024 * 1024, 1e-3);
    assert_near(top->mem_buff_cache, 12.5 * 1024 * 1024, 1e-3);
    assert_near(top->swap_total, 1024 * 1024, 1e-6);
    assert_near(top->mem_avail, 41.9 * 1024 * 1024, 1e-3);
    assert_int_equal(top->threads_total, -1);
    assert_int_equal(top->nrows, 1);
    assert_near(top->rows[0].time_s, 1, 1e-12);
    cp_top_free(top);

    /* not a top snapshot: empty, garbage, a dump */
    char err[128];
    assert_int_equal(cp_top_parse("", 0, &top, err, sizeof err), CP_ECORRUPT);
    assert_null(top);
    assert_true(err[0] != '\0');
    assert_int_equal(cp_top_parse(jdk8_dump, sizeof jdk8_dump - 1, &top, err, sizeof err), CP_ECORRUPT);
    static const char nul[] = "top - 01:02:03 up 1 min\n  PID USER S COMMAND\n  1\0 u S x\n  2 u\0 S y\0z\n";
    top = top_ok(nul, sizeof nul - 1);
    assert_int_equal(top->nrows, 1);
    assert_int_equal(top->rows[0].pid, 2);
    assert_int_equal(top->rows[0].user[0], 'u');
    cp_top_free(top);

    cp_buf many;
    cp_buf_init(&many);
    cp_buf_puts(&many, "PID USER COMMAND\n");
    for (int i = 0; i <= CP_TOP_MAX_ROWS; i++) cp_buf_puts(&many, "1 u x\n");
    assert_int_equal(cp_top_parse((const char *)many.data, many.len, &top, err, sizeof err), CP_ELIMIT);
    assert_null(top);
    cp_buf_free(&many);
}

static void test_top_truncated(void **state)
{
    (void)state;
    cp_buf b;
    load_fixture(TOP1, &b);
    size_t prev = 0;
    for (size_t cut = 0; cut <= b.len; cut++) {
        cp_top *top = NULL;
        char err[128];
        int st = cp_top_parse((const char *)b.data, cut, &top, err, sizeof err);
        assert_true(st == CP_OK || st == CP_ECORRUPT);
        if (!top) continue;
        assert_true(top->nrows >= prev && top->nrows <= 76);
        prev = top->nrows;
        for (size_t i = 0; i < top->nrows; i++) assert_true(top->rows[i].command[0] != '\0');
        cp_top_free(top);
    }
    assert_int_equal(prev, 76);
    cp_buf_free(&b);
}

/* ---- GC log --------------------------------------------------------------------------------------- */

static void test_gc_fixture(void **state)
{
    (void)state;
    cp_buf b;
    load_fixture(GC1, &b);
    cp_gc_log *gc = gc_ok((const char *)b.data, b.len);
    assert_int_equal(gc->lines, 480);
    assert_int_equal(gc->first_ms, utc_ms(2023, 12, 19, 5, 29, 51, 464));
    assert_int_equal(gc->last_ms, utc_ms(2023, 12, 19, 6, 29, 49, 351));
    assert_int_equal(gc->legacy, 0);
    assert_string_equal(gc->collector, ""); /* a rotated file: no "Using Serial" line */
    assert_int_equal(gc->nevents, 160);
    double sum = 0, max = 0, min = 1e9;
    for (size_t i = 0; i < gc->nevents; i++) {
        const cp_gc_event *e = &gc->events[i];
        assert_int_equal(e->gc_id, 336 + (int64_t)i);
        assert_string_equal(e->kind, "Pause Young");
        assert_string_equal(e->cause, "Allocation Failure");
        assert_true(e->before_kib > e->after_kib && e->capacity_kib == 494 * 1024);
        assert_true(e->time_ms >= gc->first_ms && e->time_ms <= gc->last_ms);
        sum += e->pause_ms;
        max = e->pause_ms > max ? e->pause_ms : max;
        min = e->pause_ms < min ? e->pause_ms : min;
    }
    assert_near(sum, 1017.677, 1e-6);
    assert_near(max, 63.286, 1e-12);
    assert_near(min, 2.502, 1e-12);

    /* GC(336) Pause Young (Allocation Failure) 195M->62M(494M) 14.356ms */
    const cp_gc_event *e = &gc->events[0];
    assert_int_equal(e->time_ms, utc_ms(2023, 12, 19, 5, 29, 51, 478));
    assert_near(e->uptime_s, 7252.726, 1e-9);
    assert_int_equal(e->before_kib, 195 * 1024);
    assert_int_equal(e->after_kib, 62 * 1024);
    assert_int_equal(e->capacity_kib, 494 * 1024);
    assert_near(e->pause_ms, 14.356, 1e-12);
    e = &gc->events[159];
    assert_int_equal(e->gc_id, 495);
    assert_int_equal(e->time_ms, gc->last_ms);
    assert_int_equal(e->before_kib, 198 * 1024);
    assert_int_equal(e->after_kib, 63 * 1024);
    assert_near(e->pause_ms, 7.310, 1e-12);
    cp_gc_free(gc);

    /* CRLF */
    size_t n;
    char *c = crlf((const char *)b.data, b.len, &n);
    gc = gc_ok(c, n);
    assert_int_equal(gc->lines, 480);
    assert_int_equal(gc->nevents, 160);
    assert_near(gc->events[0].pause_ms, 14.356, 1e-12);
    assert_int_equal(gc->last_ms, utc_ms(2023, 12, 19, 6, 29, 49, 351));
    cp_gc_free(gc);
    free(c);

    /* cut anywhere: events only grow; cut at a line end: the pause lines before it */
    size_t prev = 0, pauses = 0, lines = 0;
    const char *t = (const char *)b.data;
    for (size_t cut = 0; cut <= b.len; cut++) {
        if (cut % 13 && !(cut > 0 && t[cut - 1] == '\n')) continue;
        gc = gc_ok(t, cut);
        assert_true(gc->nevents >= prev && gc->nevents <= 160);
        prev = gc->nevents;
        if (cut > 0 && t[cut - 1] == '\n') {
            lines++;
            const char *ls = t + cut - 1;
            while (ls > t && ls[-1] != '\n') ls--;
            if (memmem(ls, (size_t)(t + cut - ls), "Pause Young", 11)) pauses++;
            assert_int_equal(gc->lines, lines);
            assert_int_equal(gc->nevents, pauses);
        }
        cp_gc_free(gc);
    }
    assert_int_equal(pauses, 160);
    cp_buf_free(&b);
}

static void test_gc_shapes(void **state)
{
    (void)state;
    static const char g1[] =
        "[0.005s][info][gc] Using G1\n"
        "[0.006s][info][gc,init] Using 4 workers of 4 for evacuation\n"
        "[2024-01-02T03:04:05.678+0100][12.345s][info][gc,start    ] GC(5) Pause Young (Normal) (G1 Evacuation Pause)\n"
        "[2024-01-02T03:04:05.681+0100][12.348s][info][gc          ] GC(5) Pause Young (Normal) (G1 Evacuation Pause) "
        "24M->4M(256M) 3.456ms\n"
        "[2024-01-02T03:04:06.000+01:00][13.000s][info ][gc] GC(6) Concurrent Mark Cycle\n"
        "[2024-01-02T03:04:06.100+0100][13.100s][info ][gc] GC(6) Pause Remark 45M->45M(256M) 1.234ms\n"
        "[2024-01-02T03:04:06.200+0100][13.200s][info ][gc] GC(6) Pause Cleanup 45M->44M(256M) 0.123ms\n"
        "[2024-01-02T03:04:06.300+0100][13.300s][info ][gc] GC(6) Concurrent Mark Cycle 312.345ms\n"
        "[2024-01-02T02:04:07Z][14s][info][gc] GC(7) Pause Full (System.gc()) 1G->512K(2G) 20.5ms\n"
        "[2024-01-02T03:04:08.000+0100][15.000s][info][gc] GC(8) Pause Mark Start 0.010ms\n"
        "plain text line\n"
        "[2024-01-02T03:04:09.000+0100][16.000s][info][gc] GC(9) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256";
    cp_gc_log *gc = gc_ok(g1, sizeof g1 - 1);
    assert_int_equal(gc->lines, 12);
    assert_string_equal(gc->collector, "G1");
    assert_int_equal(gc->legacy, 0);
    assert_int_equal(gc->first_ms, utc_ms(2024, 1, 2, 2, 4, 5, 678));
    assert_int_equal(gc->last_ms, utc_ms(2024, 1, 2, 2, 4, 9, 0));
    assert_int_equal(gc->nevents, 5); /* not the gc,start line, not Concurrent, not the cut one */
    const cp_gc_event *e = &gc->events[0];
    assert_int_equal(e->gc_id, 5);
    assert_int_equal(e->time_ms, utc_ms(2024, 1, 2, 2, 4, 5, 681));
    assert_near(e->uptime_s, 12.348, 1e-12);
    assert_string_equal(e->kind, "Pause Young");
    assert_string_equal(e->cause, "Normal G1 Evacuation Pause");
    assert_int_equal(e->before_kib, 24 * 1024);
    assert_int_equal(e->after_kib, 4 * 1024);
    assert_int_equal(e->capacity_kib, 256 * 1024);
    assert_near(e->pause_ms, 3.456, 1e-12);
    e = &gc->events[1];
    assert_string_equal(e->kind, "Pause Remark");
    assert_string_equal(e->cause, "");
    assert_int_equal(e->before_kib, 45 * 1024);
    assert_near(e->pause_ms, 1.234, 1e-12);
    e = &gc->events[2];
    assert_string_equal(e->kind, "Pause Cleanup");
    assert_int_equal(e->after_kib, 44 * 1024);
    assert_near(e->pause_ms, 0.123, 1e-12);
    e = &gc->events[3];
    assert_string_equal(e->kind, "Pause Full");
    assert_string_equal(e->cause, "System.gc()");
    assert_int_equal(e->time_ms, utc_ms(2024, 1, 2, 2, 4, 7, 0));
    assert_near(e->uptime_s, 14, 1e-12);
    assert_int_equal(e->before_kib, 1024 * 1024);
    assert_int_equal(e->after_kib, 512);
    assert_int_equal(e->capacity_kib, 2 * 1024 * 1024);
    assert_near(e->pause_ms, 20.5, 1e-12);
    e = &gc->events[4];
    assert_string_equal(e->kind, "Pause Mark Start");
    assert_int_equal(e->before_kib, -1);
    assert_int_equal(e->capacity_kib, -1);
    assert_near(e->pause_ms, 0.010, 1e-12);
    cp_gc_free(gc);

    /* JDK 8: legacy, no events, its time range */
    static const char jdk8[] =
        "Java HotSpot(TM) 64-Bit Server VM (25.181-b13) for linux-amd64 JRE (1.8.0_181-b13)\n"
        "Memory: 4k page, physical 16330812k(1234k free), swap 0k(0k free)\n"
        "CommandLine flags: -XX:+PrintGC -XX:+PrintGCDateStamps\n"
        "2023-12-19T05:29:51.464+0000: 7252.712: [GC (Allocation Failure) [PSYoungGen: 153600K->10748K(179200K)] "
        "153600K->10764K(588800K), 0.0143560 secs] [Times: user=0.03 sys=0.01, real=0.01 secs]\n"
        "2023-12-19T06:29:51.464+0100: 7312.712: [Full GC (Ergonomics) [PSYoungGen: 10748K->0K(179200K)] "
        "10764K->9000K(588800K), 0.0500000 secs]\n"
        "[GC (Allocation Failure)  153600K->10764K(588800K), 0.0143560 secs]\n";
    gc = gc_ok(jdk8, sizeof jdk8 - 1);
    assert_int_equal(gc->legacy, 1);
    assert_int_equal(gc->nevents, 0);
    assert_int_equal(gc->lines, 6);
    assert_int_equal(gc->first_ms, utc_ms(2023, 12, 19, 5, 29, 51, 464));
    assert_int_equal(gc->last_ms, utc_ms(2023, 12, 19, 5, 29, 51, 464)); /* +0100 */
    cp_gc_free(gc);

    /* empty, garbage, NUL bytes */
    gc = gc_ok("", 0);
    assert_int_equal(gc->lines, 0);
    assert_int_equal(gc->nevents, 0);
    assert_int_equal(gc->first_ms, -1);
    assert_int_equal(gc->last_ms, -1);
    assert_int_equal(gc->legacy, 0);
    assert_string_equal(gc->collector, "");
    cp_gc_free(gc);
    static const char nul[] = "\0\0\n[1.0s][info][gc] GC(1) Pause Young (A\0B) 1M->0M(2M) 1.5ms\n\0";
    gc = gc_ok(nul, sizeof nul - 1);
    assert_int_equal(gc->lines, 3);
    assert_int_equal(gc->nevents, 1);
    assert_int_equal(gc->events[0].time_ms, -1);
    assert_near(gc->events[0].uptime_s, 1.0, 1e-12);
    assert_string_equal(gc->events[0].cause, "A"); /* "A\0B" as a C string */
    assert_near(gc->events[0].pause_ms, 1.5, 1e-12);
    cp_gc_free(gc);
    uint64_t rng = 7;
    char *g = malloc(1 << 16);
    for (int round = 0; round < 20; round++) {
        for (size_t i = 0; i < (1 << 16); i++) {
            uint64_t r = test_rand(&rng);
            static const char alpha[] = "[]()GC(1) Pause Young 1M->2K(3G) 0.5ms 2023-12-19T05:29:51.464+0000\n";
            g[i] = (r & 3) ? alpha[(r >> 8) % (sizeof alpha - 1)] : (char)(r >> 16);
        }
        gc = gc_ok(g, 1 << 16);
        for (size_t i = 0; i < gc->nevents; i++) assert_true(gc->events[i].kind && gc->events[i].cause);
        cp_gc_free(gc);
    }
    free(g);

    char err[128];
    assert_int_equal(cp_gc_parse(nul, (size_t)CP_DUMPTEXT_MAX_BYTES + 1, &gc, err, sizeof err), CP_ELIMIT);
    assert_null(gc);
    cp_buf many;
    cp_buf_init(&many);
    for (int i = 0; i <= CP_GC_MAX_EVENTS; i++) cp_buf_puts(&many, "[1s] GC(1) Pause Y 1ms\n");
    assert_int_equal(cp_gc_parse((const char *)many.data, many.len, &gc, err, sizeof err), CP_ELIMIT);
    assert_null(gc);
    cp_buf_free(&many);
}

/* ---- JSON ------------------------------------------------------------------------------------------- */

static json_t *find_thread_json(json_t *threads, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(threads, i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0) return t;
    }
    fail_msg("no thread %s in JSON", name);
    return NULL;
}

static void test_json_td(void **state)
{
    (void)state;
    cp_buf b;
    load_fixture(TD1, &b);
    cp_td *td = td_ok((const char *)b.data, b.len);
    json_t *j = http_td_json(td);
    free(dumps_ok(j));
    assert_int_equal(json_integer_value(json_object_get(j, "time_ms")), utc_ms(2023, 12, 19, 6, 17, 33, 0));
    assert_int_equal(json_integer_value(json_object_get(j, "smr_length")), 73);
    assert_int_equal(json_integer_value(json_object_get(j, "java_threads")), 73);
    assert_int_equal(json_integer_value(json_object_get(j, "jni_global_refs")), 26);
    assert_int_equal(json_integer_value(json_object_get(j, "deadlocks")), 0);
    json_t *st = json_object_get(j, "states");
    assert_int_equal(json_object_size(st), 7);
    assert_int_equal(json_integer_value(json_object_get(st, "RUNNABLE")), 19);
    assert_int_equal(json_integer_value(json_object_get(st, "TIMED_WAITING (parking)")), 25);
    assert_int_equal(json_integer_value(json_object_get(st, "")), 2);
    json_t *threads = json_object_get(j, "threads");
    assert_int_equal(json_array_size(threads), 75);

    json_t *t = find_thread_json(threads, "Thread-2");
    assert_int_equal(json_integer_value(json_object_get(t, "seq")), 26);
    assert_true(json_is_false(json_object_get(t, "daemon")));
    assert_int_equal(json_integer_value(json_object_get(t, "priority")), 5);
    assert_near(json_real_value(json_object_get(t, "cpu_ms")), 368585.08, 1e-6);
    assert_string_equal(json_string_value(json_object_get(t, "tid")), "0x00007f4fe8b6ecd0");
    assert_int_equal(json_integer_value(json_object_get(t, "nid")), 249);
    assert_string_equal(json_string_value(json_object_get(t, "state")), "TIMED_WAITING");
    assert_string_equal(json_string_value(json_object_get(t, "state_detail")), "parking");
    assert_string_equal(json_string_value(json_object_get(t, "header_state")), "runnable");
    assert_int_equal(json_array_size(json_object_get(t, "frames")), 3);
    assert_string_equal(json_string_value(json_array_get(json_object_get(t, "frames"), 0)),
                        "jdk.internal.misc.Unsafe.park(java.base@17.0.7/Native Method)");

    t = find_thread_json(threads, "Finalizer");
    json_t *held = json_object_get(t, "locks_held"), *waited = json_object_get(t, "locks_waited");
    assert_int_equal(json_array_size(held), 1);
    assert_int_equal(json_array_size(waited), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(waited, 0), "kind")), "waiting_on");
    assert_string_equal(json_string_value(json_object_get(json_array_get(waited, 0), "addr")), "0x00000000eab29f30");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(waited, 0), "frame")), 0);
    assert_string_equal(json_string_value(json_object_get(json_array_get(held, 0), "class")),
                        "java.lang.ref.ReferenceQueue$Lock");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(held, 0), "frame")), 1);

    t = find_thread_json(threads, "VM Thread");
    assert_true(json_is_null(json_object_get(t, "seq")));
    assert_true(json_is_null(json_object_get(t, "priority")));
    assert_int_equal(json_integer_value(json_object_get(t, "os_priority")), 0);
    assert_string_equal(json_string_value(json_object_get(t, "state")), "");
    json_decref(j);
    cp_td_free(td);
    cp_buf_free(&b);

    /* JDK 8: absent numbers are null; ownable locks are held with a null frame */
    td = td_ok(jdk8_dump, sizeof jdk8_dump - 1);
    j = http_td_json(td);
    free(dumps_ok(j));
    assert_true(json_is_null(json_object_get(j, "smr_length")));
    assert_true(json_is_null(json_object_get(j, "jni_weak_refs")));
    assert_int_equal(json_integer_value(json_object_get(j, "deadlocks")), 1);
    t = find_thread_json(json_object_get(j, "threads"), "pool \"x\" worker 1");
    assert_true(json_is_null(json_object_get(t, "cpu_ms")));
    assert_true(json_is_null(json_object_get(t, "elapsed_s")));
    held = json_object_get(t, "locks_held");
    assert_int_equal(json_array_size(held), 1);
    assert_true(json_is_null(json_object_get(json_array_get(held, 0), "frame")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(t, "locks_waited"), 0), "kind")),
                        "parking");
    json_decref(j);
    cp_td_free(td);

    /* invalid UTF-8 becomes U+FFFD, in values and in state keys */
    static const char bad[] = "\"bad\xff\xfe name \xc3\xa9\" #1 prio=5 tid=0x1 nid=0x1 runnable\n"
                              "   java.lang.Thread.State: RUN\xc0NABLE\n"
                              "\tat a.b(\xed\xa0\x80.java:1)\n";
    td = td_ok(bad, sizeof bad - 1);
    j = http_td_json(td);
    char *s = dumps_ok(j);
    free(s);
    t = json_array_get(json_object_get(j, "threads"), 0);
    assert_string_equal(json_string_value(json_object_get(t, "name")), "bad\xEF\xBF\xBD\xEF\xBF\xBD name \xc3\xa9");
    assert_string_equal(json_string_value(json_array_get(json_object_get(t, "frames"), 0)),
                        "a.b(\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD.java:1)");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "states"), "RUN\xEF\xBF\xBDNABLE")), 1);
    json_decref(j);
    cp_td_free(td);
}

static void test_json_top_gc(void **state)
{
    (void)state;
    cp_buf b;
    load_fixture(TOP1, &b);
    cp_top *top = top_ok((const char *)b.data, b.len);
    json_t *j = http_top_json(top);
    free(dumps_ok(j));
    assert_int_equal(json_integer_value(json_object_get(j, "pid")), 209);
    assert_string_equal(json_string_value(json_object_get(j, "clock")), "06:17:33");
    assert_string_equal(json_string_value(json_object_get(j, "uptime")), "12 days, 10:20");
    assert_near(json_real_value(json_array_get(json_object_get(j, "load"), 0)), 7.57, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "threads"), "total")), 76);
    assert_near(json_real_value(json_object_get(json_object_get(j, "cpu"), "us")), 100, 1e-12);
    assert_near(json_real_value(json_object_get(json_object_get(j, "memory_kib"), "total")), 64308.2 * 1024, 1e-6);
    assert_near(json_real_value(json_object_get(json_object_get(j, "memory_kib"), "avail")), 42922.1 * 1024, 1e-6);
    json_t *rows = json_object_get(j, "rows");
    assert_int_equal(json_array_size(rows), 76);
    json_t *r = json_array_get(rows, 1);
    assert_int_equal(json_integer_value(json_object_get(r, "pid")), 249);
    assert_string_equal(json_string_value(json_object_get(r, "state")), "R");
    assert_string_equal(json_string_value(json_object_get(r, "command")), "Thread-2");
    assert_near(json_real_value(json_object_get(r, "time_s")), 368.58, 1e-9);
    assert_int_equal(json_integer_value(json_object_get(r, "ni")), 0);
    json_decref(j);
    cp_top_free(top);
    cp_buf_free(&b);

    /* absent numbers are null; bad bytes in a command are repaired */
    static const char t2[] = "top - 01:02:03 up 1 min\n  PID USER S COMMAND\n  5 u\xff S x\xe2\x82\n";
    top = top_ok(t2, sizeof t2 - 1);
    j = http_top_json(top);
    free(dumps_ok(j));
    assert_true(json_is_null(json_object_get(j, "pid")));
    assert_true(json_is_null(json_object_get(j, "users")));
    assert_true(json_is_null(json_array_get(json_object_get(j, "load"), 0)));
    assert_true(json_is_null(json_object_get(json_object_get(j, "memory_kib"), "total")));
    r = json_array_get(json_object_get(j, "rows"), 0);
    assert_string_equal(json_string_value(json_object_get(r, "user")), "u\xEF\xBF\xBD");
    assert_string_equal(json_string_value(json_object_get(r, "command")), "x\xEF\xBF\xBD\xEF\xBF\xBD");
    assert_true(json_is_null(json_object_get(r, "time_s")));
    json_decref(j);
    cp_top_free(top);

    load_fixture(GC1, &b);
    cp_gc_log *gc = gc_ok((const char *)b.data, b.len);
    for (size_t i = 0; i < gc->nevents; i++) {
        j = http_gc_event_json(&gc->events[i]);
        free(dumps_ok(j));
        if (i == 0) {
            assert_int_equal(json_integer_value(json_object_get(j, "time_ms")), utc_ms(2023, 12, 19, 5, 29, 51, 478));
            assert_int_equal(json_integer_value(json_object_get(j, "gc_id")), 336);
            assert_string_equal(json_string_value(json_object_get(j, "kind")), "Pause Young");
            assert_string_equal(json_string_value(json_object_get(j, "cause")), "Allocation Failure");
            assert_near(json_real_value(json_object_get(j, "duration_ms")), 14.356, 1e-12);
            assert_int_equal(json_integer_value(json_object_get(j, "heap_before_kib")), 199680);
            assert_int_equal(json_integer_value(json_object_get(j, "heap_after_kib")), 63488);
            assert_int_equal(json_integer_value(json_object_get(j, "heap_capacity_kib")), 505856);
            assert_near(json_real_value(json_object_get(j, "uptime_s")), 7252.726, 1e-9);
        }
        json_decref(j);
    }
    cp_gc_free(gc);
    cp_buf_free(&b);

    static const char g2[] = "[gc] GC(3) Pause Init Mark (\xfe) 0.5ms\n";
    gc = gc_ok(g2, sizeof g2 - 1);
    assert_int_equal(gc->nevents, 1);
    j = http_gc_event_json(&gc->events[0]);
    free(dumps_ok(j));
    assert_true(json_is_null(json_object_get(j, "time_ms")));
    assert_true(json_is_null(json_object_get(j, "uptime_s")));
    assert_true(json_is_null(json_object_get(j, "heap_before_kib")));
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "Pause Init Mark");
    assert_string_equal(json_string_value(json_object_get(j, "cause")), "\xEF\xBF\xBD");
    json_decref(j);
    cp_gc_free(gc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_td_fixture_small),
        cmocka_unit_test(test_td_fixture_large),
        cmocka_unit_test(test_td_shapes),
        cmocka_unit_test(test_td_bad_input),
        cmocka_unit_test(test_td_truncated),
        cmocka_unit_test(test_top_fixture),
        cmocka_unit_test(test_top_dump_join),
        cmocka_unit_test(test_top_shapes),
        cmocka_unit_test(test_top_truncated),
        cmocka_unit_test(test_gc_fixture),
        cmocka_unit_test(test_gc_shapes),
        cmocka_unit_test(test_json_td),
        cmocka_unit_test(test_json_top_gc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
