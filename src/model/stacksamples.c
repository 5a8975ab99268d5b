/* stacksamples.c -- the diagnostic files as samples of a cp_stacktree (cp_stacktree.h):
 * a thread dump is one sample per thread (ui.md §10.7), a Go pprof profile one sample per
 * pprof sample (§9.4). Pure: parsed values in, tree updates out.
 */
#include "model/cp_stacktree.h"

#include <stdio.h>
#include <stdlib.h>

/* The reason into err (cp_set_err), and st. */
#define fail(err, errlen, st, ...) (cp_set_err((err), (errlen), __VA_ARGS__), (st))

/* ---- idle threads ---------------------------------------------------------------------- */

/* Native methods a RUNNABLE thread sits in while it only waits for an event (the JVM
 * calls such a thread runnable: it is in native code). Compared with the frame's method,
 * the text before '('. Socket reads and writes are not here: a thread blocked in one
 * waits for a peer on behalf of its work, which is what a wall-clock profile shows. */
static const char *const idle_natives[] = {
    "sun.nio.ch.EPoll.wait",                      /* selectors, JDK 11+ (Linux) */
    "sun.nio.ch.EPollArrayWrapper.epollWait",     /* selectors, JDK 8 */
    "sun.nio.ch.KQueue.poll",                     /* macOS */
    "sun.nio.ch.KQueueArrayWrapper.kevent0",
    "sun.nio.ch.WEPoll.wait",                     /* Windows */
    "sun.nio.ch.WindowsSelectorImpl$SubSelector.poll0",
    "sun.nio.ch.PollArrayWrapper.poll0",
    "sun.nio.ch.PollSelectorImpl.poll",
    "io.netty.channel.epoll.Native.epollWait",    /* Netty's native transports */
    "io.netty.channel.epoll.Native.epollWait0",
    "io.netty.channel.epoll.Native.epollBusyWait0",
    "io.netty.channel.kqueue.Native.keventWait",
    "sun.nio.ch.Net.accept",                      /* listeners */
    "sun.nio.ch.ServerSocketChannelImpl.accept0",
    "java.net.PlainSocketImpl.socketAccept",
    "java.net.DualStackPlainSocketImpl.accept0",
    "sun.nio.fs.LinuxWatchService.poll",          /* file watchers */
    "java.lang.ref.Reference.waitForReferencePendingList", /* Reference Handler */
};

/* The method of a frame text: what precedes its '(' (the whole text without one). */
static size_t method_len(const char *text)
{
    const char *p = strchr(text, '(');
    return p ? (size_t)(p - text) : strlen(text);
}

static int method_is(const char *text, const char *method)
{
    size_t n = method_len(text);
    return n == strlen(method) && memcmp(text, method, n) == 0;
}

/* JDK 13+ ServerSocket.accept with a timeout polls (Net.poll under NioSocketImpl's
 * accept) instead of calling Net.accept; the same Net.poll under a read is a socket read. */
static int polls_for_accept(const cp_td_thread *t)
{
    if (t->nframes < 2 || !method_is(t->frames[0].text, "sun.nio.ch.Net.poll")) return 0;
    for (size_t i = 1; i < t->nframes && i < 4; i++)
        if (method_is(t->frames[i].text, "sun.nio.ch.NioSocketImpl.timedAccept") ||
            method_is(t->frames[i].text, "sun.nio.ch.NioSocketImpl.accept"))
            return 1;
    return 0;
}

int cp_td_thread_idle(const cp_td_thread *t)
{
    if (t->nframes == 0) return 1;
    if (!strcmp(t->state, "WAITING") || !strcmp(t->state, "TIMED_WAITING")) return 1;
    if (strcmp(t->state, "RUNNABLE")) return 0; /* BLOCKED, NEW, TERMINATED, none */
    for (size_t i = 0; i < CP_ARRAY_LEN(idle_natives); i++)
        if (method_is(t->frames[0].text, idle_natives[i])) return 1;
    return polls_for_accept(t);
}

/* ---- thread dumps ---------------------------------------------------------------------- */

int cp_stacktree_add_td(cp_stacktree *t, const cp_td *td, int include_idle, cp_td_sample_stats *st, char *err,
                        size_t errlen)
{
    static const cp_stack_frame no_frames = {CP_STACKTREE_NO_FRAMES, sizeof CP_STACKTREE_NO_FRAMES - 1};
    cp_stack_frame *f = NULL;
    size_t cap = 0;
    int rc = CP_OK;
    for (size_t i = 0; i < td->nthreads && rc == CP_OK; i++) {
        const cp_td_thread *th = &td->threads[i];
        if (!include_idle && cp_td_thread_idle(th)) {
            st->excluded_idle++;
            continue;
        }
        if (th->nframes == 0) {
            rc = cp_stacktree_add(t, &no_frames, 1, 1, err, errlen);
        } else if (cp_grow((void **)&f, &cap, th->nframes, sizeof *f, 64) != CP_OK) {
            rc = fail(err, errlen, CP_ENOMEM, "out of memory");
        } else {
            /* the dump prints the innermost frame first */
            for (size_t k = 0; k < th->nframes; k++) {
                const char *text = th->frames[th->nframes - 1 - k].text;
                f[k] = (cp_stack_frame){text, strlen(text)};
            }
            rc = cp_stacktree_add(t, f, th->nframes, 1, err, errlen);
        }
        if (rc == CP_OK) st->threads++;
    }
    free(f);
    return rc;
}

/* ---- Go pprof profiles ------------------------------------------------------------------- */

#define ADDR_TEXT 20 /* "0x" + 16 hex digits + NUL, rounded */

/* Scratch for one sample: pprof frames, their texts, and the texts of nameless frames. */
typedef struct pp_scratch {
    cp_pprof_frame *pf;
    cp_stack_frame *sf;
    char *addr;               /* ADDR_TEXT bytes per frame */
    size_t cap;               /* frames each array holds */
} pp_scratch;

static void scratch_free(pp_scratch *s)
{
    free(s->pf);
    free(s->sf);
    free(s->addr);
}

/* One more frame than the tree keeps, so the tree sees (and counts) a stack it cuts. */
static int scratch_init(pp_scratch *s, size_t max_depth)
{
    s->cap = max_depth + 1;
    s->pf = malloc(s->cap * sizeof *s->pf);
    s->sf = malloc(s->cap * sizeof *s->sf);
    s->addr = malloc(s->cap * ADDR_TEXT);
    return s->pf && s->sf && s->addr ? CP_OK : CP_ENOMEM;
}

/* The sample's frames as texts (root first, at most s->cap); returns how many. */
static size_t sample_texts(pp_scratch *s, size_t depth)
{
    size_t n = depth < s->cap ? depth : s->cap;
    for (size_t k = 0; k < n; k++) {
        const char *name = s->pf[k].name;
        if (name[0]) {
            s->sf[k] = (cp_stack_frame){name, strlen(name)};
        } else {
            char *a = s->addr + k * ADDR_TEXT;
            int len = snprintf(a, ADDR_TEXT, "0x%llx", (unsigned long long)s->pf[k].address);
            s->sf[k] = (cp_stack_frame){a, (size_t)len};
        }
    }
    return n;
}

int cp_stacktree_add_pprof(cp_stacktree *t, const cp_pprof *pf, size_t st_index, cp_pprof_sample_stats *st,
                           char *err, size_t errlen)
{
    const cp_pprof_info *in = cp_pprof_get_info(pf);
    if (st_index >= in->nsample_types)
        return fail(err, errlen, CP_EINVAL, "sample type %zu of %zu", st_index, in->nsample_types);
    pp_scratch s = {0};
    int rc = scratch_init(&s, cp_stacktree_limits_of(t)->max_depth);
    if (rc != CP_OK) rc = fail(err, errlen, CP_ENOMEM, "out of memory");
    for (size_t i = 0; i < in->samples && rc == CP_OK; i++) {
        int64_t value;
        size_t depth;
        rc = cp_pprof_sample_stack(pf, i, st_index, &value, s.pf, s.cap, &depth);
        if (rc != CP_OK) {
            rc = fail(err, errlen, rc, "sample %zu cannot be read", i);
            break;
        }
        if (value <= 0) { /* nothing to weigh (pprof leaves these out of its trees too) */
            st->skipped++;
            continue;
        }
        rc = cp_stacktree_add(t, s.sf, sample_texts(&s, depth), value, err, errlen);
        if (rc == CP_OK) st->samples++;
    }
    scratch_free(&s);
    return rc;
}
