/* gate.c -- call assembly's share of --ingest-memory: backpressure on trace payloads.
 *
 * An agent flushes a stream's tail and waits for its acks before the next stream
 * (protocol.md §3.10), and its calls records go out after the trace they point into. So
 * while acks are slow the collector keeps, for every connection, the extents of the trace
 * it has read whose calls records have not come yet -- with hundreds of agents most of
 * ingest's memory. Reading less does not shrink that by itself: a connection frees its
 * extents by getting past its trace to its calls records.
 *
 * So while the waiting bytes of all assemblers (cp_asm_waiting_bytes) are over the share
 * (a quarter of --ingest-memory), a trace payload is taken only from a connection holding
 * a ticket; any other connection stops at its next trace payload (the rest of its input
 * waits, unread, in the kernel: its agent waits for an ack) and joins the line. Tickets
 * go to the line first come, first served, at most GATE_TICKETS at once; a ticket is
 * given back when its connection sends calls records (it got past its trace), or after
 * TICKET_MS. Everything else -- calls, sql, xml, dictionary, acks -- flows as usual, so
 * memory held by waiting extents keeps draining. Back under 3/4 of the share, the whole
 * line is let in.
 *
 * The bound: the share, plus one read's trace per connection (the check is per run of
 * payloads), plus what the ticket holders add. Nobody waits long: a connection in line
 * longer than GATE_WAIT_MS gets the next ticket even beyond GATE_TICKETS (the agent's read
 * timeout is 30 s).
 */
#include "server_internal.h"

#include "common/cp_metrics.h"

#define GATE_LOW_NUM 3     /* the gate opens again below 3/4 of the share */
#define GATE_LOW_DEN 4
#define GATE_TICKETS 48    /* connections reading trace at once while over the share */
#define TICKET_MS 2000     /* a ticket not given back by then lapses */
#define GATE_WAIT_MS 5000  /* in line this long: a ticket beyond GATE_TICKETS */
#define GATE_LOG_MS 60000  /* the gate closing is logged at most this often */
_Static_assert(GATE_TICKETS < CP_SRV_GATE_HOLDERS, "room for the tickets beyond GATE_TICKETS");

static void line_push(cp_server *s, cp_conn *c)
{
    c->gated = 1;
    c->gnext = NULL;
    c->gprev = s->gate_tail;
    if (s->gate_tail) s->gate_tail->gnext = c;
    else s->gate_head = c;
    s->gate_tail = c;
    s->ngated++;
}

static void line_unlink(cp_server *s, cp_conn *c)
{
    if (c->gprev) c->gprev->gnext = c->gnext;
    else s->gate_head = c->gnext;
    if (c->gnext) c->gnext->gprev = c->gprev;
    else s->gate_tail = c->gprev;
    c->gnext = c->gprev = NULL;
    c->gated = 0;
    s->ngated--;
}

static void ticket_return(cp_server *s, cp_conn *c)
{
    if (!c->ticket) return;
    s->holders[c->ticket - 1] = NULL;
    c->ticket = 0;
    s->ntickets--;
}

/* 0 when every holder slot is taken. */
static int ticket_take(cp_server *s, cp_conn *c, uint64_t now)
{
    for (size_t i = 0; i < CP_SRV_GATE_HOLDERS; i++) {
        if (s->holders[i]) continue;
        s->holders[i] = c;
        c->ticket = (uint8_t)(i + 1);
        c->ticket_ms = now;
        s->ntickets++;
        return 1;
    }
    return 0;
}

/* What the share holds: assembly's waiting bytes and the calls on their way to the
 * catalog writer (its queue: the other place calls wait for the hot tier). */
static uint64_t held(const cp_server *s) { return s->asm_waiting + __atomic_load_n(&s->catw.bytes, __ATOMIC_RELAXED); }

/* The connection's waiting bytes counted again (O(1)); the over/under state follows.
 * Its held input counts too: in the line that is up to one read. */
static void count(cp_conn *c)
{
    cp_server *s = c->srv;
    uint64_t now = cp_asm_waiting_bytes(c->asm_) + c->in.cap;
    s->asm_waiting = s->asm_waiting - c->asm_waiting + now;
    c->asm_waiting = now;
    if (!s->asm_over && held(s) >= s->asm_share) {
        s->asm_over = 1;
        s->gate_closings++;
        cp_metrics_inc(s->cfg->metrics, CP_M_INGEST_GATE_CLOSINGS, 0);
        uint64_t t = uv_now(&s->loop);
        if (!s->gate_logged_ms || t - s->gate_logged_ms >= GATE_LOG_MS) {
            s->gate_logged_ms = t;
            cp_srv_log(s, CP_LOG_WARN,
                       "call assembly holds %llu bytes for calls records not yet sent, over its share of "
                       "--ingest-memory (%llu bytes): agents' trace payloads wait (closed %llu times so far; "
                       "a larger --ingest-memory takes more load)",
                       (unsigned long long)s->asm_waiting, (unsigned long long)s->asm_share,
                       (unsigned long long)s->gate_closings);
        }
    }
}

void cp_srv_gate_account(cp_conn *c)
{
    if (c->asm_ && c->srv->asm_share) count(c);
}

int cp_srv_gate_may_stop(const cp_conn *c) { return c->srv->asm_over && c->asm_ && !c->ticket; }

int cp_srv_gate_stream(cp_conn *c, cp_stream_kind kind)
{
    cp_server *s = c->srv;
    if (!c->asm_ || !s->asm_share) return 0;
    if (kind == CP_STREAM_CALLS) { /* past its trace: the ticket goes back */
        ticket_return(s, c);
        return 0;
    }
    if (kind != CP_STREAM_TRACE) return 0;
    count(c);
    if (!s->asm_over || c->ticket) return 0;
    line_push(s, c);
    c->gated_ms = uv_now(&s->loop);
    cp_conn_update_reading(c);
    return 1;
}

static void let_in(cp_server *s, cp_conn *c, uint64_t now)
{
    line_unlink(s, c);
    c->last_io_ms = now; /* its wait was ours: the idle timeout starts again */
    cp_conn_ungate(c);   /* its stashed input goes on (and may stop at the gate again) */
}

void cp_srv_gate_iteration(cp_server *s)
{
    if (!s->asm_share) return;
    uint64_t now = uv_now(&s->loop);
    if (s->asm_over && held(s) < s->asm_share / GATE_LOW_DEN * GATE_LOW_NUM) {
        s->asm_over = 0;
        for (size_t i = 0; i < CP_SRV_GATE_HOLDERS; i++)
            if (s->holders[i]) ticket_return(s, s->holders[i]);
    }
    if (!s->ngated) return;
    /* under: the line goes in, as long as it stays under (one let in may stop at the gate
     * again: it is then at the end of the line, hence the count) */
    for (size_t n = s->ngated; n && !s->asm_over && s->gate_head; n--) let_in(s, s->gate_head, now);
    if (!s->asm_over) return;
    for (size_t i = 0; s->ntickets && i < CP_SRV_GATE_HOLDERS; i++) /* lapsed tickets */
        if (s->holders[i] && now - s->holders[i]->ticket_ms >= TICKET_MS) ticket_return(s, s->holders[i]);
    while (s->gate_head && (s->ntickets < GATE_TICKETS || now - s->gate_head->gated_ms >= GATE_WAIT_MS)) {
        cp_conn *c = s->gate_head;
        if (!ticket_take(s, c, now)) break;
        let_in(s, c, now);
    }
}

void cp_srv_gate_drop(cp_conn *c)
{
    cp_server *s = c->srv;
    if (c->gated) line_unlink(s, c);
    ticket_return(s, c);
    s->asm_waiting -= c->asm_waiting;
    c->asm_waiting = 0;
}
