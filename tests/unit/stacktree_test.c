/* stacktree_test.c -- sampled stacks merged into a call tree (cp_stacktree.h): weights,
 * total/self/invocations/calls, merging by frame text, the child order, every bound
 * (nodes, text, depth, frame bytes) leaving the tree as it was, the JSON's shape; and
 * the diagnostic files as samples: the idle-thread rule on a hand-written thread dump,
 * a hand-encoded pprof profile (inlined lines, a location without lines, zero values),
 * and the fixture goroutine profile (root total = the sum of its sample values).
 *
 * Trees are checked through their JSON (parsed with jansson), i.e. through the shape
 * the API serves. */
#include "testutil.h"

#include "model/cp_stacktree.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------------------- */

/* "A>B>C" -> frames A, B, C (root first); "" -> no frame. Texts point into a static copy. */
static size_t frames_of(const char *path, cp_stack_frame *f, size_t cap)
{
    static char copy[8][2048];
    static unsigned turn;
    char *s = copy[turn++ % 8];
    snprintf(s, sizeof copy[0], "%s", path);
    size_t n = 0;
    if (!*s) return 0;
    for (char *p = s;; p++) {
        char *gt = strchr(p, '>');
        assert_true(n < cap);
        f[n++] = (cp_stack_frame){p, gt ? (size_t)(gt - p) : strlen(p)};
        if (!gt) break;
        p = gt;
    }
    return n;
}

static int add(cp_stacktree *t, const char *path, int64_t w)
{
    cp_stack_frame f[64];
    size_t n = frames_of(path, f, 64);
    char err[128];
    return cp_stacktree_add(t, f, n, w, err, sizeof err);
}

static json_t *tree_json(const cp_stacktree *t, const char *label)
{
    cp_buf b;
    cp_buf_init(&b);
    const char *sampled = "{\"unit\":\"samples\",\"x\":1}";
    assert_int_equal(cp_stacktree_json(t, label, 10, 20, sampled, strlen(sampled), &b), CP_OK);
    json_error_t e;
    json_t *j = json_loadb((const char *)b.data, b.len, JSON_ALLOW_NUL, &e);
    if (!j) fail_msg("JSON: %s: %.*s", e.text, (int)b.len, (const char *)b.data);
    cp_buf_free(&b);
    return j;
}

static const char *method_of(json_t *doc, json_t *node)
{
    return json_string_value(json_array_get(json_object_get(doc, "methods"), (size_t)json_integer_value(json_object_get(node, "method"))));
}

static json_t *child(json_t *doc, json_t *node, const char *text)
{
    json_t *c;
    size_t i;
    json_array_foreach(json_object_get(node, "children"), i, c) if (!strcmp(method_of(doc, c), text)) return c;
    return NULL;
}

/* The node at "A>B>C" below the root (NULL when absent). */
static json_t *at(json_t *doc, const char *path)
{
    json_t *n = json_object_get(doc, "root");
    cp_stack_frame f[64];
    size_t k = frames_of(path, f, 64);
    for (size_t i = 0; i < k && n; i++) {
        char text[256];
        snprintf(text, sizeof text, "%.*s", (int)f[i].len, f[i].text);
        n = child(doc, n, text);
    }
    return n;
}

static int64_t num(json_t *node, const char *key) { return json_integer_value(json_object_get(node, key)); }

/* total, self, invocations, calls of a node (path names it in a failure) */
static void check_node(json_t *n, const char *path, int64_t total, int64_t self, int64_t inv, int64_t calls)
{
    if (!n) fail_msg("no node %s", path);
    if (num(n, "total") != total || num(n, "self") != self || num(n, "invocations") != inv || num(n, "calls") != calls)
        fail_msg("%s: total %lld self %lld inv %lld calls %lld; want %lld %lld %lld %lld", path, (long long)num(n, "total"),
                 (long long)num(n, "self"), (long long)num(n, "invocations"), (long long)num(n, "calls"),
                 (long long)total, (long long)self, (long long)inv, (long long)calls);
    assert_int_equal(num(n, "suspension"), 0);
    assert_int_equal(num(n, "self_suspension"), 0);
    assert_int_equal(num(n, "first"), 0);
    assert_int_equal(num(n, "last"), 0);
}

/* The same for the node at "A>B>C" below the root. */
static void expect(json_t *doc, const char *path, int64_t total, int64_t self, int64_t inv, int64_t calls)
{
    check_node(at(doc, path), path, total, self, inv, calls);
}

/* ---- the merge --------------------------------------------------------------------------- */

static void test_weights_and_merge(void **state)
{
    (void)state;
    cp_stacktree *t = cp_stacktree_new(NULL);
    assert_non_null(t);
    assert_int_equal(add(t, "A>B>C", 2), CP_OK);
    assert_int_equal(add(t, "A>B", 3), CP_OK);
    assert_int_equal(add(t, "A>D>C", 5), CP_OK); /* C again, elsewhere: another node */
    assert_int_equal(add(t, "E", 1), CP_OK);
    assert_int_equal(add(t, "", 4), CP_OK);      /* an empty stack: the root's self */
    assert_int_equal(add(t, "A>B>C", 0), CP_OK); /* weight 0: one more sample, no weight */
    assert_int_equal(cp_stacktree_samples(t), 6);
    assert_int_equal(cp_stacktree_nodes(t), 6);  /* A, B, C, D, C, E */
    assert_int_equal(cp_stacktree_total(t), 15);

    json_t *doc = tree_json(t, NULL);
    assert_string_equal(method_of(doc, json_object_get(doc, "root")), "6 samples");
    expect(doc, "", 15, 4, 6, 12);
    expect(doc, "A", 10, 0, 4, 7);
    expect(doc, "A>B", 5, 3, 3, 2);
    expect(doc, "A>B>C", 2, 2, 2, 0);
    expect(doc, "A>D", 5, 0, 1, 1);
    expect(doc, "A>D>C", 5, 5, 1, 0);
    expect(doc, "E", 1, 1, 1, 0);
    assert_null(json_object_get(at(doc, "E"), "children")); /* a leaf has no "children" */
    /* the frame texts once each, first-seen order, then the root's label */
    json_t *m = json_object_get(doc, "methods");
    assert_int_equal(json_array_size(m), 6);
    const char *want[] = {"A", "B", "C", "D", "E", "6 samples"};
    for (size_t i = 0; i < 6; i++) assert_string_equal(json_string_value(json_array_get(m, i)), want[i]);
    /* the call tree's other fields */
    assert_int_equal(num(doc, "version"), 1);
    assert_int_equal(json_array_size(json_object_get(doc, "params")), 0);
    assert_int_equal(json_array_size(json_object_get(doc, "calls")), 0);
    assert_true(json_is_false(json_object_get(doc, "truncated")));
    assert_int_equal(num(doc, "nodes"), 6);
    assert_int_equal(num(doc, "start_ms"), 10);
    assert_int_equal(num(doc, "end_ms"), 20);
    assert_int_equal(num(json_object_get(doc, "sampled"), "x"), 1);
    json_decref(doc);
    cp_stacktree_free(t);
}

/* cp_tree's order: total, self, invocations + calls, invocations (desc), then text. */
static void test_child_order(void **state)
{
    (void)state;
    cp_stacktree *t = cp_stacktree_new(NULL);
    assert_int_equal(add(t, "R>small", 1), CP_OK);
    assert_int_equal(add(t, "R>deep>x", 5), CP_OK);  /* total 5, self 0 */
    assert_int_equal(add(t, "R>flat", 5), CP_OK);    /* total 5, self 5: before deep */
    assert_int_equal(add(t, "R>big", 9), CP_OK);
    assert_int_equal(add(t, "R>tie-b", 2), CP_OK);   /* equal numbers: by text */
    assert_int_equal(add(t, "R>tie-a", 2), CP_OK);
    assert_int_equal(add(t, "R>many", 1), CP_OK);    /* total 3 in three samples: before */
    assert_int_equal(add(t, "R>many", 1), CP_OK);    /* one of total 3 in one sample */
    assert_int_equal(add(t, "R>many", 1), CP_OK);
    assert_int_equal(add(t, "R>one", 3), CP_OK);
    json_t *doc = tree_json(t, "label");
    assert_string_equal(method_of(doc, json_object_get(doc, "root")), "label");
    const char *want[] = {"big", "flat", "deep", "many", "one", "tie-a", "tie-b", "small"};
    json_t *kids = json_object_get(at(doc, "R"), "children");
    assert_int_equal(json_array_size(kids), 8);
    for (size_t i = 0; i < 8; i++) assert_string_equal(method_of(doc, json_array_get(kids, i)), want[i]);
    json_decref(doc);
    cp_stacktree_free(t);
}

/* Frames merge by their text, wherever it lives; texts are any bytes. */
static void test_merge_by_text(void **state)
{
    (void)state;
    cp_stacktree *t = cp_stacktree_new(NULL);
    char a1[] = "java.lang.Thread.run(Thread.java:833)", a2[] = "java.lang.Thread.run(Thread.java:833)";
    char b[] = "x\"y\\z\n\xff"; /* quoted, escaped, one invalid UTF-8 byte */
    cp_stack_frame s1[] = {{a1, strlen(a1)}, {b, strlen(b)}}, s2[] = {{a2, strlen(a2)}, {b, strlen(b)}};
    assert_int_equal(cp_stacktree_add(t, s1, 2, 1, NULL, 0), CP_OK);
    assert_int_equal(cp_stacktree_add(t, s2, 2, 1, NULL, 0), CP_OK);
    /* a frame that differs only after a NUL byte is another text (lengths are explicit) */
    char c[] = "x\"y\\z\n\xff\0tail";
    cp_stack_frame s3[] = {{a1, strlen(a1)}, {c, sizeof c - 1}};
    assert_int_equal(cp_stacktree_add(t, s3, 2, 1, NULL, 0), CP_OK);
    assert_int_equal(cp_stacktree_nodes(t), 3);
    json_t *doc = tree_json(t, NULL);
    json_t *run = child(doc, json_object_get(doc, "root"), a1);
    assert_non_null(run);
    assert_int_equal(num(run, "total"), 3);
    assert_int_equal(json_array_size(json_object_get(run, "children")), 2);
    assert_string_equal(method_of(doc, json_array_get(json_object_get(run, "children"), 0)), "x\"y\\z\n\xef\xbf\xbd");
    json_decref(doc);
    cp_stacktree_free(t);
}

/* ---- bounds -------------------------------------------------------------------------------- */

static void test_node_budget(void **state)
{
    (void)state;
    cp_stacktree_limits l = {.max_nodes = 3};
    cp_stacktree *t = cp_stacktree_new(&l);
    char err[128] = "";
    assert_int_equal(add(t, "A>B>C", 1), CP_OK);
    cp_stack_frame f[4];
    size_t n = frames_of("A>B>D", f, 4);
    assert_int_equal(cp_stacktree_add(t, f, n, 7, err, sizeof err), CP_ELIMIT);
    assert_non_null(strstr(err, "3 nodes"));
    /* nothing of the refused stack stays: not the node, not a number, not its text */
    assert_int_equal(cp_stacktree_nodes(t), 3);
    assert_int_equal(cp_stacktree_samples(t), 1);
    assert_int_equal(cp_stacktree_total(t), 1);
    assert_int_equal(add(t, "A>B", 2), CP_OK); /* no new node: still fits */
    assert_int_equal(add(t, "X", 1), CP_ELIMIT);
    json_t *doc = tree_json(t, NULL);
    assert_int_equal(json_array_size(json_object_get(doc, "methods")), 4); /* A B C + label */
    expect(doc, "", 3, 0, 2, 5);
    expect(doc, "A>B", 3, 2, 2, 1);
    assert_null(at(doc, "A>B>D"));
    json_decref(doc);
    cp_stacktree_free(t);
}

static void test_text_depth_and_frame_bounds(void **state)
{
    (void)state;
    /* text: 8 bytes of distinct frame text */
    cp_stacktree_limits l = {.max_text_bytes = 8};
    cp_stacktree *t = cp_stacktree_new(&l);
    assert_int_equal(add(t, "abc>def", 1), CP_OK);      /* 6 bytes */
    assert_int_equal(add(t, "abc>ghi", 1), CP_ELIMIT);  /* 9 */
    assert_int_equal(add(t, "abc>de", 1), CP_OK);       /* 8 */
    assert_int_equal(add(t, "def>abc>de", 1), CP_OK);   /* known texts: new nodes, no text */
    assert_int_equal(cp_stacktree_nodes(t), 6);
    cp_stacktree_free(t);

    /* depth: frames past 2 are dropped; the weight is the self of the deepest kept */
    cp_stacktree_limits d = {.max_depth = 2};
    t = cp_stacktree_new(&d);
    assert_int_equal(add(t, "A>B>C>D", 5), CP_OK);
    assert_int_equal(add(t, "A>B", 1), CP_OK);
    assert_int_equal(cp_stacktree_cut_stacks(t), 1);
    json_t *doc = tree_json(t, NULL);
    expect(doc, "A>B", 6, 6, 2, 0);
    json_decref(doc);
    cp_stacktree_free(t);

    /* frame bytes: cut at a character boundary, so long texts sharing the kept bytes merge */
    cp_stacktree_limits fb = {.max_frame_bytes = 5};
    t = cp_stacktree_new(&fb);
    assert_int_equal(add(t, "abcd\xc3\xa9xyz", 1), CP_OK); /* the cut would split the é */
    assert_int_equal(add(t, "abcd\xc3\xa9uvw", 1), CP_OK);
    assert_int_equal(add(t, "abcd", 1), CP_OK);
    assert_int_equal(cp_stacktree_nodes(t), 1);
    doc = tree_json(t, NULL);
    expect(doc, "abcd", 3, 3, 3, 0);
    json_decref(doc);
    cp_stacktree_free(t);
}

static void test_weights_bad_and_saturating(void **state)
{
    (void)state;
    cp_stacktree *t = cp_stacktree_new(NULL);
    char err[128] = "";
    cp_stack_frame f[2];
    size_t n = frames_of("A", f, 2);
    assert_int_equal(cp_stacktree_add(t, f, n, -1, err, sizeof err), CP_EINVAL);
    assert_non_null(strstr(err, "negative"));
    assert_int_equal(cp_stacktree_add(t, NULL, 3, 1, NULL, 0), CP_EINVAL);
    assert_int_equal(cp_stacktree_samples(t), 0);
    assert_int_equal(add(t, "A", INT64_MAX), CP_OK);
    assert_int_equal(add(t, "A", INT64_MAX), CP_OK);
    assert_int_equal(cp_stacktree_total(t), INT64_MAX);
    cp_stack_frame nul = {NULL, 0}; /* a NULL text of length 0 is the empty text */
    assert_int_equal(cp_stacktree_add(t, &nul, 1, 1, NULL, 0), CP_OK);
    json_t *doc = tree_json(t, NULL);
    expect(doc, "A", INT64_MAX, INT64_MAX, 2, 0);
    assert_non_null(child(doc, json_object_get(doc, "root"), ""));
    json_decref(doc);
    /* an empty tree is a root alone */
    cp_stacktree_free(t);
    t = cp_stacktree_new(NULL);
    doc = tree_json(t, NULL);
    expect(doc, "", 0, 0, 0, 0);
    assert_null(json_object_get(json_object_get(doc, "root"), "children"));
    json_decref(doc);
    cp_stacktree_free(t);
}

/* ---- thread dumps ------------------------------------------------------------------------ */

static const char td_text[] =
    "2023-12-19 06:17:33\n"
    "Full thread dump OpenJDK 64-Bit Server VM (17.0.7+7 mixed mode, sharing):\n"
    "\n"
    "\"reader-1\" #20 prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x1 nid=0x10 runnable  [0x0]\n"
    "   java.lang.Thread.State: RUNNABLE\n"
    "\tat sun.nio.ch.Net.poll(java.base@17.0.7/Native Method)\n"
    "\tat sun.nio.ch.NioSocketImpl.park(java.base@17.0.7/NioSocketImpl.java:181)\n"
    "\tat sun.nio.ch.NioSocketImpl.timedRead(java.base@17.0.7/NioSocketImpl.java:285)\n"
    "\tat app.Db.query(Db.java:10)\n"
    "\tat java.lang.Thread.run(java.base@17.0.7/Thread.java:833)\n"
    "\n"
    "\"reader-2\" #21 prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x2 nid=0x11 runnable  [0x0]\n"
    "   java.lang.Thread.State: RUNNABLE\n"
    "\tat sun.nio.ch.Net.poll(java.base@17.0.7/Native Method)\n"
    "\tat sun.nio.ch.NioSocketImpl.park(java.base@17.0.7/NioSocketImpl.java:181)\n"
    "\tat sun.nio.ch.NioSocketImpl.timedRead(java.base@17.0.7/NioSocketImpl.java:285)\n"
    "\tat app.Db.query(Db.java:10)\n"
    "\tat java.lang.Thread.run(java.base@17.0.7/Thread.java:833)\n"
    "\n"
    "\"blocked\" #22 prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x3 nid=0x12 waiting for monitor entry  [0x0]\n"
    "   java.lang.Thread.State: BLOCKED (on object monitor)\n"
    "\tat app.Cache.get(Cache.java:5)\n"
    "\t- waiting to lock <0x0000000700000000> (a java.lang.Object)\n"
    "\tat java.lang.Thread.run(java.base@17.0.7/Thread.java:833)\n"
    "\n"
    "\"worker\" #23 prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x4 nid=0x13 waiting on condition  [0x0]\n"
    "   java.lang.Thread.State: WAITING (parking)\n"
    "\tat jdk.internal.misc.Unsafe.park(java.base@17.0.7/Native Method)\n"
    "\tat java.lang.Thread.run(java.base@17.0.7/Thread.java:833)\n"
    "\n"
    "\"sleeper\" #24 prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x5 nid=0x14 waiting on condition  [0x0]\n"
    "   java.lang.Thread.State: TIMED_WAITING (sleeping)\n"
    "\tat java.lang.Thread.sleep(java.base@17.0.7/Native Method)\n"
    "\n"
    "\"selector\" #25 prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x6 nid=0x15 runnable  [0x0]\n"
    "   java.lang.Thread.State: RUNNABLE\n"
    "\tat sun.nio.ch.EPoll.wait(java.base@17.0.7/Native Method)\n"
    "\tat sun.nio.ch.EPollSelectorImpl.doSelect(java.base@17.0.7/EPollSelectorImpl.java:118)\n"
    "\n"
    "\"acceptor\" #26 prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x7 nid=0x16 runnable  [0x0]\n"
    "   java.lang.Thread.State: RUNNABLE\n"
    "\tat sun.nio.ch.Net.poll(java.base@17.0.7/Native Method)\n"
    "\tat sun.nio.ch.NioSocketImpl.park(java.base@17.0.7/NioSocketImpl.java:181)\n"
    "\tat sun.nio.ch.NioSocketImpl.timedAccept(java.base@17.0.7/NioSocketImpl.java:700)\n"
    "\n"
    "\"Signal Dispatcher\" #4 daemon prio=9 os_prio=0 cpu=0.58ms elapsed=1.00s tid=0x8 nid=0x17 runnable  [0x0]\n"
    "   java.lang.Thread.State: RUNNABLE\n"
    "\n"
    "\"VM Thread\" os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x9 nid=0x18 runnable  \n"
    "\n"
    "JNI global refs: 1, weak refs: 0\n";

static const char *const td_names[] = {"reader-1", "reader-2", "blocked", "worker", "sleeper",
                                       "selector", "acceptor", "Signal Dispatcher", "VM Thread"};
static const int td_idle[] = {0, 0, 0, 1, 1, 1, 1, 1, 1};

static void test_td_samples(void **state)
{
    (void)state;
    cp_td *td = NULL;
    char err[128];
    assert_int_equal(cp_td_parse(td_text, sizeof td_text - 1, &td, err, sizeof err), CP_OK);
    assert_int_equal(td->nthreads, 9);
    for (size_t i = 0; i < 9; i++) {
        assert_string_equal(td->threads[i].name, td_names[i]);
        if (cp_td_thread_idle(&td->threads[i]) != td_idle[i]) fail_msg("%s: idle %d", td_names[i], !td_idle[i]);
    }

    /* idle threads left out: the two readers merged, the blocked thread beside them */
    cp_stacktree *t = cp_stacktree_new(NULL);
    cp_td_sample_stats st = {0};
    assert_int_equal(cp_stacktree_add_td(t, td, 0, &st, err, sizeof err), CP_OK);
    assert_int_equal(st.threads, 3);
    assert_int_equal(st.excluded_idle, 6);
    json_t *doc = tree_json(t, NULL);
    const char *run = "java.lang.Thread.run(java.base@17.0.7/Thread.java:833)";
    char path[1024];
    expect(doc, run, 3, 0, 3, 9);
    snprintf(path, sizeof path, "%s>app.Db.query(Db.java:10)>sun.nio.ch.NioSocketImpl.timedRead(java.base@17.0.7/"
                                "NioSocketImpl.java:285)>sun.nio.ch.NioSocketImpl.park(java.base@17.0.7/"
                                "NioSocketImpl.java:181)>sun.nio.ch.Net.poll(java.base@17.0.7/Native Method)",
             run);
    expect(doc, path, 2, 2, 2, 0);
    snprintf(path, sizeof path, "%s>app.Cache.get(Cache.java:5)", run);
    expect(doc, path, 1, 1, 1, 0);
    json_decref(doc);

    /* with them: a thread without frames is the pseudo-frame; the same dump twice doubles */
    cp_stacktree_free(t);
    t = cp_stacktree_new(NULL);
    memset(&st, 0, sizeof st);
    assert_int_equal(cp_stacktree_add_td(t, td, 1, &st, err, sizeof err), CP_OK);
    assert_int_equal(cp_stacktree_add_td(t, td, 1, &st, err, sizeof err), CP_OK);
    assert_int_equal(st.threads, 18);
    assert_int_equal(st.excluded_idle, 0);
    doc = tree_json(t, NULL);
    expect(doc, "", 18, 0, 18, 44);
    check_node(child(doc, json_object_get(doc, "root"), CP_STACKTREE_NO_FRAMES), "no frames", 4, 4, 4, 0);
    expect(doc, run, 8, 0, 8, 20);
    json_decref(doc);
    cp_stacktree_free(t);

    /* a budget stops at the thread over it, the ones before it counted */
    cp_stacktree_limits l = {.max_nodes = 6};
    t = cp_stacktree_new(&l);
    memset(&st, 0, sizeof st);
    assert_int_equal(cp_stacktree_add_td(t, td, 1, &st, err, sizeof err), CP_ELIMIT);
    assert_int_equal(st.threads, 3); /* reader-1 (5 nodes), reader-2 (none new), blocked (1) */
    assert_int_equal(cp_stacktree_samples(t), 3);
    cp_stacktree_free(t);
    cp_td_free(td);
}

/* ---- pprof --------------------------------------------------------------------------------- */

static void pb_varint(cp_buf *b, uint64_t v)
{
    while (v >= 0x80) {
        cp_buf_putc(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    cp_buf_putc(b, (uint8_t)v);
}

static void pb_uint(cp_buf *b, unsigned field, uint64_t v)
{
    pb_varint(b, (uint64_t)field << 3);
    pb_varint(b, v);
}

static void pb_bytes(cp_buf *b, unsigned field, const void *p, size_t n)
{
    pb_varint(b, (uint64_t)field << 3 | 2);
    pb_varint(b, n);
    cp_buf_append(b, p, n);
}

static void pb_msg(cp_buf *b, unsigned field, cp_buf *m)
{
    pb_bytes(b, field, m->data, m->len);
    cp_buf_reset(m);
}

/* A profile: functions main, inl, leaf; location 1 = leaf inlined into inl (lines
 * innermost first), location 2 = main, location 3 = an address without lines. */
static void hand_profile(cp_buf *p)
{
    const char *strs[] = {"", "samples", "count", "main", "inl", "leaf"};
    cp_buf m, sub;
    cp_buf_init(&m);
    cp_buf_init(&sub);
    pb_uint(&m, 1, 1); /* sample_type {samples, count} */
    pb_uint(&m, 2, 2);
    pb_msg(p, 1, &m);
    for (unsigned f = 1; f <= 3; f++) { /* functions 1..3 named 3..5 */
        pb_uint(&m, 1, f);
        pb_uint(&m, 2, f + 2);
        pb_msg(p, 5, &m);
    }
    pb_uint(&m, 1, 1); /* location 1: lines leaf (fn 3), inl (fn 2) */
    pb_uint(&m, 3, 0x401000);
    pb_uint(&sub, 1, 3);
    pb_msg(&m, 4, &sub);
    pb_uint(&sub, 1, 2);
    pb_msg(&m, 4, &sub);
    pb_msg(p, 4, &m);
    pb_uint(&m, 1, 2); /* location 2: main */
    pb_uint(&sub, 1, 1);
    pb_msg(&m, 4, &sub);
    pb_msg(p, 4, &m);
    pb_uint(&m, 1, 3); /* location 3: no lines */
    pb_uint(&m, 3, 0xdeadbeef);
    pb_msg(p, 4, &m);
    const uint64_t samples[][3] = {{1, 2, 7}, {3, 2, 2}, {1, 2, 0}, {1, 2, 4}};
    for (size_t s = 0; s < 4; s++) { /* location ids leaf first (unpacked), one value */
        pb_uint(&m, 1, samples[s][0]);
        pb_uint(&m, 1, samples[s][1]);
        pb_uint(&m, 2, samples[s][2]);
        pb_msg(p, 2, &m);
    }
    for (size_t i = 0; i < 6; i++) pb_bytes(p, 6, strs[i], strlen(strs[i]));
    cp_buf_free(&m);
    cp_buf_free(&sub);
}

static void test_pprof_samples(void **state)
{
    (void)state;
    cp_buf raw;
    cp_buf_init(&raw);
    hand_profile(&raw);
    cp_pprof *pf = NULL;
    char err[256];
    assert_int_equal(cp_pprof_parse(raw.data, raw.len, 0, &pf, err, sizeof err), CP_OK);

    /* the accessor: root first, the inlined lines outer caller first; a short buffer */
    cp_pprof_frame fr[4];
    int64_t v;
    size_t depth;
    assert_int_equal(cp_pprof_sample_stack(pf, 0, 0, &v, fr, 4, &depth), CP_OK);
    assert_int_equal(v, 7);
    assert_int_equal(depth, 3);
    assert_string_equal(fr[0].name, "main");
    assert_string_equal(fr[1].name, "inl");
    assert_string_equal(fr[2].name, "leaf");
    assert_int_equal(fr[2].address, 0x401000);
    assert_int_equal(cp_pprof_sample_stack(pf, 0, 0, &v, fr, 1, &depth), CP_OK);
    assert_int_equal(depth, 3);
    assert_string_equal(fr[0].name, "main");
    assert_int_equal(cp_pprof_sample_stack(pf, 1, 0, &v, fr, 4, &depth), CP_OK);
    assert_int_equal(depth, 2);
    assert_string_equal(fr[1].name, "");
    assert_int_equal(fr[1].address, 0xdeadbeef);
    assert_int_equal(cp_pprof_sample_stack(pf, 4, 0, &v, fr, 4, &depth), CP_EINVAL);
    assert_int_equal(cp_pprof_sample_stack(pf, 0, 1, &v, fr, 4, &depth), CP_EINVAL);

    cp_stacktree *t = cp_stacktree_new(NULL);
    cp_pprof_sample_stats st = {0};
    assert_int_equal(cp_stacktree_add_pprof(t, pf, 1, &st, err, sizeof err), CP_EINVAL);
    assert_int_equal(cp_stacktree_add_pprof(t, pf, 0, &st, err, sizeof err), CP_OK);
    assert_int_equal(st.samples, 3);
    assert_int_equal(st.skipped, 1); /* the value 0 */
    json_t *doc = tree_json(t, NULL);
    expect(doc, "", 13, 0, 3, 8);
    expect(doc, "main", 13, 0, 3, 5);
    expect(doc, "main>inl>leaf", 11, 11, 2, 0);
    expect(doc, "main>0xdeadbeef", 2, 2, 1, 0);
    json_decref(doc);
    cp_stacktree_free(t);
    cp_pprof_free(pf);
    cp_buf_free(&raw);
}

/* The fixture goroutine profile: root total = the sum of its values (28 samples, the
 * first of 16 goroutines), each leaf's self = the values of the samples ending there. */
static void test_pprof_fixture(void **state)
{
    (void)state;
    cp_buf file;
    cp_buf_init(&file);
    load_fixture("dumps/go-goroutine.pprof", &file);
    cp_pprof *pf = NULL;
    char err[256];
    assert_int_equal(cp_pprof_parse(file.data, file.len, 0, &pf, err, sizeof err), CP_OK);
    const cp_pprof_info *in = cp_pprof_get_info(pf);
    assert_int_equal(in->samples, 28);
    int64_t sum = 0, v, first = -1;
    for (size_t i = 0; i < in->samples; i++) {
        size_t depth;
        cp_pprof_frame fr[1];
        assert_int_equal(cp_pprof_sample_stack(pf, i, 0, &v, fr, 1, &depth), CP_OK);
        assert_true(depth > 0);
        if (first < 0) first = v;
        sum += v;
    }
    assert_int_equal(first, 16);
    cp_stacktree *t = cp_stacktree_new(NULL);
    cp_pprof_sample_stats st = {0};
    assert_int_equal(cp_stacktree_add_pprof(t, pf, 0, &st, err, sizeof err), CP_OK);
    assert_int_equal(st.samples, 28);
    assert_int_equal(cp_stacktree_total(t), sum);
    json_t *doc = tree_json(t, NULL);
    expect(doc, "", sum, 0, 28, num(json_object_get(doc, "root"), "calls"));
    json_decref(doc);
    cp_stacktree_free(t);
    cp_pprof_free(pf);
    cp_buf_free(&file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weights_and_merge),
        cmocka_unit_test(test_child_order),
        cmocka_unit_test(test_merge_by_text),
        cmocka_unit_test(test_node_budget),
        cmocka_unit_test(test_text_depth_and_frame_bounds),
        cmocka_unit_test(test_weights_bad_and_saturating),
        cmocka_unit_test(test_td_samples),
        cmocka_unit_test(test_pprof_samples),
        cmocka_unit_test(test_pprof_fixture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
