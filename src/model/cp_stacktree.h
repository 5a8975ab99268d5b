/* cp_stacktree.h -- sampled stacks merged into a call tree (ui.md §9.4, §10.7; issue 19
 * items 3 and 4): thread dumps of a pod taken one after another, or the samples of a Go
 * pprof profile, shown by the tree views that read cp_tree_json's shape (cp_tree.h).
 *
 * A sample is a stack -- frames as text, root (outermost) first -- and a weight. Stacks
 * merge from the root: a node's child for a frame is found by the frame's *text*, so
 * samples of different dumps, pods or profiles merge like the calls of a merged tree.
 * Per node:
 *
 *   total        sum of the weights of the samples through the node (itself included)
 *   self         sum of the weights of the samples whose stack ends at the node
 *   invocations  number of samples through the node
 *   calls        sum of invocations of every node below (as cp_tree)
 *
 * suspension, self_suspension, first and last are 0: samples have no times. The root is
 * a synthetic node (label chosen by the caller, by default "<N> samples") over every
 * stack's outermost frame: its total is the sum of all weights, its invocations the
 * number of samples; an empty stack's weight is the root's self.
 *
 * Bounds: distinct nodes (max_nodes, beyond it CP_ELIMIT -- HTTP 413 like trees), bytes
 * of distinct frame text (max_text_bytes, CP_ELIMIT), frames per stack (max_depth: the
 * frames past it on the leaf side are dropped and the weight counts as the self of the
 * deepest frame kept; counted by cp_stacktree_cut_stacks) and bytes per frame
 * (max_frame_bytes: a longer text is cut at a UTF-8 character boundary, so texts equal
 * in their first max_frame_bytes bytes merge). A stack refused with CP_ELIMIT leaves the
 * tree as it was, so the caller can stop and still show what was merged; after
 * CP_ENOMEM the tree may only be freed.
 *
 * Pure code: no I/O, no globals; a tree is used by one thread at a time.
 */
#ifndef CP_STACKTREE_H
#define CP_STACKTREE_H

#include "common/cp_common.h"
#include "model/cp_dumpfmt.h"
#include "model/cp_dumptext.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cp_stacktree_limits {
    size_t max_nodes;       /* distinct nodes below the root (default 1 000 000) */
    size_t max_text_bytes;  /* bytes of distinct frame text (default 256 MiB) */
    size_t max_depth;       /* frames kept per stack, root side (default 4096) */
    size_t max_frame_bytes; /* bytes kept per frame text (default 4096) */
} cp_stacktree_limits;

void cp_stacktree_limits_default(cp_stacktree_limits *l);

/* One frame: text[0..len), not NUL-terminated; any bytes (the JSON repairs bad UTF-8). */
typedef struct cp_stack_frame {
    const char *text;
    size_t len;
} cp_stack_frame;

typedef struct cp_stacktree cp_stacktree;

/* l may be NULL for the defaults (a zero field also takes its default). NULL on ENOMEM. */
cp_stacktree *cp_stacktree_new(const cp_stacktree_limits *l);
void cp_stacktree_free(cp_stacktree *t);

/* Adds one sample: frames[0..n) root first, weight >= 0 (CP_EINVAL when negative: a
 * node's total would stop bounding its children's). Sums saturate at INT64_MAX.
 * CP_ELIMIT (node or text budget; the tree unchanged), CP_ENOMEM. err gets a one-line
 * reason (may be NULL). */
int cp_stacktree_add(cp_stacktree *t, const cp_stack_frame *frames, size_t n, int64_t weight, char *err,
                     size_t errlen);

size_t cp_stacktree_samples(const cp_stacktree *t);    /* samples added */
size_t cp_stacktree_nodes(const cp_stacktree *t);      /* nodes below the root */
int64_t cp_stacktree_total(const cp_stacktree *t);     /* sum of the weights added */
size_t cp_stacktree_cut_stacks(const cp_stacktree *t); /* samples cut at max_depth */
const cp_stacktree_limits *cp_stacktree_limits_of(const cp_stacktree *t); /* defaults filled in */

/* Appends the tree in cp_tree_json's shape, plus the caller's "sampled" object:
 *
 *   {"version":1,"methods":[string],"params":[],"calls":[],"root":Node,"truncated":false,
 *    "nodes":N,"start_ms":..,"end_ms":..,"sampled":SAMPLED}
 *   Node = {"method":index,"total":..,"self":..,"suspension":0,"self_suspension":0,
 *           "invocations":..,"calls":..,"first":0,"last":0,"children":[Node]?}
 *
 * `methods` holds every distinct frame text in first-seen order, then the root's label
 * (root_label, or "<N> samples" when NULL). Children are ordered as cp_tree orders them:
 * total, self, invocations + calls, invocations (all descending), then frame text.
 * sampled_json (a JSON object the caller built, len bytes) is inserted verbatim; NULL
 * gives {}. On failure (CP_ENOMEM) out is left as it was. */
int cp_stacktree_json(const cp_stacktree *t, const char *root_label, int64_t start_ms, int64_t end_ms,
                      const char *sampled_json, size_t sampled_len, cp_buf *out);

/* ---- samples of the diagnostic files (stacksamples.c) ------------------------------------ */

/* Idle and system threads of a thread dump (docs/API.md "threads-profile"): a thread is
 * idle when
 *   - it shows no Java frame (JVM-internal threads: VM Thread, GC and compiler threads;
 *     service threads that print no stack: Signal Dispatcher, Service Thread...), or
 *   - its state is WAITING or TIMED_WAITING (parked, sleeping, in Object.wait: it does
 *     not run, whatever it waits for), or
 *   - it is RUNNABLE inside a native method that only waits for an event: a selector's
 *     poll (epoll, kqueue, poll, Windows select; Netty's native epoll and kqueue), an
 *     accept, a file watch service's poll, the Reference Handler's wait.
 * BLOCKED threads (lock contention) and socket reads or writes are never idle. */
int cp_td_thread_idle(const cp_td_thread *t);

/* What cp_stacktree_add_td did. */
typedef struct cp_td_sample_stats {
    size_t threads;          /* samples added: one per thread */
    size_t excluded_idle;    /* idle threads left out (include_idle = 0) */
} cp_td_sample_stats;

/* Adds a thread dump: one sample of weight 1 per thread, its frames (innermost first in
 * the dump) reversed to root first, each the frame's text as the dump prints it after
 * "at " ("java.base@17.0.7/java.lang.Thread.sleep(Native Method)"). A thread without a
 * frame (included only with include_idle) is the one pseudo-frame "<no Java frames>".
 * Idle threads (cp_td_thread_idle) are counted and left out unless include_idle. st is
 * added to (not reset). CP_ELIMIT stops at the first thread over a budget, the threads
 * before it added and counted. */
int cp_stacktree_add_td(cp_stacktree *t, const cp_td *td, int include_idle, cp_td_sample_stats *st, char *err,
                        size_t errlen);

#define CP_STACKTREE_NO_FRAMES "<no Java frames>"

/* What cp_stacktree_add_pprof did. */
typedef struct cp_pprof_sample_stats {
    size_t samples;          /* samples added */
    size_t skipped;          /* samples left out: value 0 (as pprof's own trees do: a heap
                              * profile's inuse values are mostly 0) or negative */
} cp_pprof_sample_stats;

/* Adds a Go profile's samples for sample type st_index (< cp_pprof_info.nsample_types,
 * else CP_EINVAL): weight = the sample's value, frames = its locations from the
 * outermost, each location's lines from the outer caller to the innermost inlined
 * function, a frame being the function's name ("0x<address>" for a location without
 * lines or a function without a name). */
int cp_stacktree_add_pprof(cp_stacktree *t, const cp_pprof *pf, size_t st_index, cp_pprof_sample_stats *st,
                           char *err, size_t errlen);

#endif
