/* assembly.c -- calls of a connection assembled (cp_asm) from its stream files and put in
 * the hot tier; the timer that ends assembly waits; hot-window upkeep.
 *
 * The assembler reads stream bytes back through the raw log's fds (pread on the files it
 * has appended), so it sees exactly what is stored. Calls go into the catalog's open
 * write transaction, which the loop commits once per iteration: a call is visible to
 * queries at most one iteration after the payload that completed it.
 */
#include "server_internal.h"

#include "common/cp_metrics.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#define ASM_TIMER_MS 250          /* granularity of the assembly waits */
#define WINDOWS_INTERVAL_MS 60000 /* hot windows are created ahead this often */
#define TAIL_TRACE (16 * 1024)    /* recent trace bytes kept per connection, to begin with */
#define TAIL_VALUES (16 * 1024)   /* recent sql / xml bytes */
#define TAIL_MAX (1024 * 1024)    /* a busy agent's copy grows up to this */
#define TAIL_IDLE_MS 30000        /* a file quiet this long gives its copy back */
#define TRIM_STEP (16u << 20)     /* assembly memory freed that is handed back to the system */

/* ---- the recent bytes of trace/sql/xml files -------------------------------------------- */

void cp_srv_asm_file_opened(cp_sfile *f)
{
    cp_membudget *pool = &f->conn->srv->tails;
    if (f->kind == CP_STREAM_TRACE) cp_rawlog_file_keep_tail_in(&f->raw, TAIL_TRACE, TAIL_MAX, pool);
    else if (f->kind == CP_STREAM_SQL || f->kind == CP_STREAM_XML)
        cp_rawlog_file_keep_tail_in(&f->raw, TAIL_VALUES, TAIL_VALUES, pool);
}

/* Files that went quiet give their copies back (10 000 idle agents must stay cheap). */
static void tail_release_quiet(cp_conn *c, uint64_t now)
{
    cp_stream_kind kinds[] = {CP_STREAM_TRACE, CP_STREAM_SQL, CP_STREAM_XML};
    for (size_t i = 0; i < CP_ARRAY_LEN(kinds); i++) {
        cp_sfile *f = c->slots[kinds[i]].file;
        if (f && f->raw.tail && now - f->last_write_ms > TAIL_IDLE_MS) cp_rawlog_file_drop_tail(&f->raw);
    }
    for (cp_sfile *f = c->retired; f; f = f->next_retired) cp_rawlog_file_drop_tail(&f->raw);
}

/* The stream file (kind, file_index) of the connection: its open one or a rotated one. */
static cp_sfile *find_file(cp_conn *c, cp_stream_kind kind, int32_t file_index)
{
    cp_sfile *f = c->slots[kind].file;
    if (f && f->seq + 1 == file_index) return f;
    for (f = c->retired; f; f = f->next_retired)
        if (f->kind == kind && f->seq + 1 == file_index) return f;
    return NULL;
}

static long io_read(void *ud, cp_stream_kind kind, int32_t file_index, uint64_t off, void *buf, size_t n)
{
    cp_sfile *f = find_file(ud, kind, file_index);
    if (!f) return CP_ENOTFOUND;
    return cp_rawlog_file_pread(&f->raw, buf, n, off);
}

static int64_t io_size(void *ud, cp_stream_kind kind, int32_t file_index)
{
    cp_sfile *f = find_file(ud, kind, file_index);
    return f ? (int64_t)f->raw.size : -1;
}

static int io_emit(void *ud, const cp_call *call)
{
    cp_conn *c = ud;
    cp_server *s = c->srv;
    cp_metrics_inc(s->cfg->metrics, CP_M_CALLS_ASSEMBLED, 0);
    /* the catalog writer stores it; if it cannot, the raw log keeps the call's bytes: the
     * restart stays incomplete and recovery stores it later */
    if (cp_catw_call(c, call) != CP_OK) {
        cp_metrics_inc(s->cfg->metrics, CP_M_CALLS_STORE_FAILURES, 0);
        if (s->calls_failed++ % 1000 == 0)
            cp_srv_log(s, CP_LOG_ERROR, "%s: pod %s: no memory to queue a call for the catalog", c->peer,
                       c->pod.pod_id);
        return 0;
    }
    s->calls_stored++;
    return 0;
}

int cp_srv_asm_open(cp_conn *c)
{
    const cp_server_config *cfg = c->srv->cfg;
    cp_asm_pod pod = {c->pod.ns, c->pod.service, c->pod.pod, c->pod.restart_ms};
    cp_asm_io io = {.ud = c, .read = io_read, .size = io_size, .emit = io_emit, .words = c->srv->words,
                     .values = &c->srv->values};
    cp_asm_limits lim;
    cp_asm_limits_default(&lim);
    if (cfg->trace_wait_ms > 0) lim.trace_wait_ms = cfg->trace_wait_ms;
    c->asm_ = cp_asm_new(&pod, &lim, &io);
    return c->asm_ ? CP_OK : CP_ENOMEM;
}

static void log_asm_error(cp_conn *c, int st)
{
    cp_srv_log(c->srv, CP_LOG_ERROR, "%s: pod %s: call assembly: %s", c->peer, c->pod.pod_id, cp_strstatus(st));
}

void cp_srv_asm_pump(cp_conn *c)
{
    if (!c->asm_ || !cp_asm_pending(c->asm_)) return;
    int st = cp_asm_pump(c->asm_, (int64_t)uv_now(&c->srv->loop), 0);
    if (st != CP_OK) log_asm_error(c, st);
}

void cp_srv_asm_finish(cp_conn *c)
{
    if (!c->asm_) return;
    int st = cp_asm_pump(c->asm_, (int64_t)uv_now(&c->srv->loop), 1);
    if (st != CP_OK) log_asm_error(c, st);
    cp_asm_stats as;
    cp_asm_get_stats(c->asm_, &as);
    if (as.calls_in)
        cp_srv_log(c->srv, CP_LOG_INFO,
                   "%s: pod %s: %llu calls stored, %llu without a trace (%llu sql/xml values read, %llu from the cache, "
                   "%llu trace bytes)",
                   c->peer, c->pod.pod_id, (unsigned long long)as.calls_out, (unsigned long long)as.without_trace,
                   (unsigned long long)as.values_read, (unsigned long long)as.values_cached,
                   (unsigned long long)as.trace_bytes_read);
    cp_asm_free(c->asm_);
    c->asm_ = NULL;
}

/* ---- decoder sinks ---------------------------------------------------------------------- */

static int on_trace(void *ud, const cp_trace_rec *r)
{
    cp_sfile *f = ud;
    cp_conn *c = f->conn;
    int st = cp_asm_trace(c->asm_, f->seq + 1, r, (int64_t)uv_now(&c->srv->loop));
    return st != CP_OK;
}

static int on_call(void *ud, const cp_call_rec *r)
{
    cp_sfile *f = ud;
    cp_conn *c = f->conn;
    int st = cp_asm_call(c->asm_, r, (int64_t)uv_now(&c->srv->loop));
    return st != CP_OK;
}

static int on_suspend(void *ud, const cp_suspend_rec *r)
{
    cp_sfile *f = ud;
    return cp_asm_pause(f->conn->asm_, r) != CP_OK;
}

cp_dec_sink cp_srv_asm_sink(cp_sfile *f)
{
    cp_dec_sink sink = {.ud = f};
    if (!f->conn->asm_) return sink;
    if (f->kind == CP_STREAM_TRACE) sink.on_trace = on_trace;
    else if (f->kind == CP_STREAM_CALLS) sink.on_call = on_call;
    else if (f->kind == CP_STREAM_SUSPEND) sink.on_suspend = on_suspend;
    return sink;
}

/* ---- timer ---------------------------------------------------------------------------------- */

static void prepare_windows(cp_server *s, uint64_t now)
{
    if (now < s->next_windows) return;
    s->next_windows = now + WINDOWS_INTERVAL_MS;
    cp_catw_windows(s, cp_now_ms());
}

/* After a burst (assembly's state fell by TRIM_STEP since the last look) the memory it
 * freed goes back to the system: glibc keeps freed blocks of the loop's heap resident, so
 * the process would otherwise stay at its burst's size. */
static void release_freed(cp_server *s, uint64_t asm_mem)
{
    if (asm_mem > s->asm_mem_high) s->asm_mem_high = asm_mem;
    if (s->asm_mem_high - asm_mem < TRIM_STEP) return;
    malloc_trim(0);
    s->asm_mem_high = asm_mem;
}

static void on_asm_timer(uv_timer_t *t)
{
    cp_server *s = t->data;
    uint64_t now = uv_now(&s->loop);
    prepare_windows(s, now);
    size_t waiting = 0; /* the hot-queue gauge's "assembly" series */
    uint64_t asm_mem = cp_wordpool_bytes(s->words), part[CP_M_ASM_COUNT] = {0};
    part[CP_M_ASM_WORDS] = asm_mem;
    for (cp_conn *c = s->conns; c; c = c->next) {
        tail_release_quiet(c, now);
        if (c->asm_) {
            cp_asm_stats as;
            cp_asm_get_stats(c->asm_, &as);
            asm_mem += as.memory;
            part[CP_M_ASM_EXTENTS] += as.mem_extents;
            part[CP_M_ASM_WAITING_CALLS] += as.mem_calls;
            part[CP_M_ASM_VALUES] += as.mem_values;
            part[CP_M_ASM_WORDS] += as.mem_dict;
            part[CP_M_ASM_OTHER] += as.memory - as.mem_extents - as.mem_calls - as.mem_values - as.mem_dict;
        }
        if (!c->asm_ || !cp_asm_pending(c->asm_)) continue;
        if (cp_asm_next_deadline(c->asm_) <= (int64_t)now) {
            cp_srv_asm_pump(c);
            cp_srv_gate_account(c);
        }
        if (c->asm_) waiting += cp_asm_pending(c->asm_);
    }
    cp_metrics_set(s->cfg->metrics, CP_M_HOT_QUEUE, CP_M_HOT_ASSEMBLY, (int64_t)waiting);
    cp_metrics_set(s->cfg->metrics, CP_M_INGEST_MEMORY, CP_M_MEM_TAILS, (int64_t)s->tails.used);
    cp_metrics_set(s->cfg->metrics, CP_M_INGEST_MEMORY, CP_M_MEM_PARTIAL, (int64_t)s->buffered);
    cp_metrics_set(s->cfg->metrics, CP_M_INGEST_MEMORY, CP_M_MEM_ASSEMBLY, (int64_t)asm_mem);
    cp_metrics_set(s->cfg->metrics, CP_M_INGEST_GATED, 0, (int64_t)s->ngated);
    for (int i = 0; i < CP_M_ASM_COUNT; i++) cp_metrics_set(s->cfg->metrics, CP_M_ASSEMBLY_MEMORY, i, (int64_t)part[i]);
    release_freed(s, asm_mem);
    cp_metrics_set(s->cfg->metrics, CP_M_INGEST_MEMORY, CP_M_MEM_WRITER,
                   (int64_t)__atomic_load_n(&s->catw.bytes, __ATOMIC_RELAXED));
}

void cp_srv_asm_timer_start(cp_server *s)
{
    s->asm_timer.data = s;
    uv_timer_start(&s->asm_timer, on_asm_timer, 0, ASM_TIMER_MS);
}
