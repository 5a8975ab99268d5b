/* pg_hot.c -- the hot tier's write side on PostgreSQL (pg_internal.h).
 *
 * cp_pg_hot_put() does no server round trip (but one nextval per 1024 calls): it encodes
 * the call as a binary COPY tuple (its trace blob included) into its window's buffer and
 * counts it per (window, pod restart). Everything reaches the server in
 * cp_pg_hot_flush(), which the catalog runs right before COMMIT (or earlier, when the
 * buffers grow large):
 *
 *   1. target: each window with rows gets the table its rows go to. A window with
 *      no inventory row is created on the spot (status creating -> ready, in this
 *      transaction). The latest batch of the window is locked FOR KEY SHARE, all windows
 *      in one statement ordered by table name; if it is persisting, persisted or
 *      to_delete (a compactor claimed it) the rows go to the window's next batch
 *      calls_<suffix>_<n>, created here. The lock keeps a claim
 *      (SELECT ... FOR UPDATE, catalog_pg.c) waiting until this transaction ends, so
 *      no row lands in a window after it was claimed. KEY SHARE, not SHARE: writers on
 *      other nodes update the same inventory rows (rows_count) and must not deadlock
 *      on each other's share locks.
 *   2. COPY ... FROM STDIN (FORMAT binary) of each window's calls.
 *   3. counters: inventory rows_count (rows locked in table-name order first, so two
 *      writers never deadlock), then call_counts (one multi-row upsert).
 *
 * Window creation races between nodes are settled by the unique inventory table_name:
 * INSERT ... ON CONFLICT DO NOTHING waits for the other creator and then does nothing,
 * and the window is read again.
 *
 * Bounds: at most PGH_MAX_WINDOWS windows and PGH_MAX_BYTES of tuples, PGH_MAX_COUNTS
 * counters wait for a flush (an early flush into the same transaction when over).
 */
#include "store/catalog/pg_internal.h"
#include "query/cp_query.h"
#include "query/cp_rollup.h"

#include <stdio.h>
#include <stdlib.h>

#define PGH_MAX_WINDOWS 256
#define PGH_KEEP_WINDOWS 32           /* windows (and their buffers) kept across commits */
#define PGH_MAX_BYTES (32u << 20)
#define PGH_MAX_COUNTS 4096
#define PGH_COUNT_SLOTS 8192          /* power of two, twice the entries */
#define PGH_ID_BLOCK 1024             /* the hot_ids sequence's INCREMENT */
#define PGH_RESOLVE_TRIES 8
#define PGH_COUNTS_PER_STMT 1000
#define PGH_ROLLUP_ENTRIES 65536      /* per window between flushes (an early flush when over) */
#define PGH_ROLLUPS_PER_STMT 1000     /* 20 parameters each */

/* One window (by its start) and the rows buffered for it. */
typedef struct pg_win {
    int64_t start, end;               /* the window as this node computes it */
    int64_t max_ts;                   /* largest call time buffered */
    int64_t hint;                     /* batch the last flush wrote to, -1 = unknown */
    cp_buf calls;                     /* COPY tuples */
    int64_t ncalls;
    /* flush state */
    int64_t batch;                    /* target batch, -1 = not resolved yet */
    int64_t db_end;                   /* the target's end_time in inventory */
    int rollup;                       /* the target keeps rollups (inventory.rollup) */
    cp_rollup_acc *acc;               /* rollup entries of the buffered calls */
} pg_win;

/* Calls of one pod restart in one window since the last flush. Names live in text. */
typedef struct pg_count {
    int64_t window_start, window_end, restart_ms;
    uint64_t hash;
    size_t ns_off, svc_off, pod_off;
    size_t ns_len, svc_len, pod_len;
    int64_t calls;
} pg_count;

struct pg_hot {
    pg_catalog *c;
    pg_win *win;                      /* PGH_MAX_WINDOWS, the first nwin in use */
    size_t nwin;
    pg_win *last;
    size_t bytes;                     /* tuples buffered */
    size_t max_bytes;                 /* ... flushed when they reach it */
    int64_t next_id, ids_left;
    pg_count *cnt;                    /* PGH_MAX_COUNTS */
    size_t ncnt;
    int32_t *cnt_slot;                /* PGH_COUNT_SLOTS, -1 = empty */
    cp_buf text;                      /* counter names */
    cp_buf sql;
    const char *const *idle;          /* the rollups' idle list */
    cp_system_memo *memo;             /* method verdicts under that list */
    size_t nidle;
    int64_t idle_fp;
};

void cp_pg_hot_set_max_bytes(pg_hot *h, uint64_t bytes)
{
    /* a buffer doubles as it grows: contents up to half of the bound keep it within */
    uint64_t half = bytes / 2;
    if (half < (512u << 10)) half = 512u << 10;
    h->max_bytes = half < PGH_MAX_BYTES ? (size_t)half : PGH_MAX_BYTES;
}

void cp_pg_hot_set_idle(pg_hot *h, const char *const *idle, size_t n)
{
    h->idle = idle;
    h->nidle = n;
    h->idle_fp = cp_rollup_idle_fp(idle, n);
    if (h->memo) cp_system_memo_clear(h->memo);
}

/* ---- life cycle ------------------------------------------------------------------------- */

int cp_pg_hot_new(pg_catalog *c, pg_hot **out)
{
    *out = NULL;
    pg_hot *h = calloc(1, sizeof *h);
    if (h) {
        h->win = calloc(PGH_MAX_WINDOWS, sizeof *h->win);
        h->cnt = calloc(PGH_MAX_COUNTS, sizeof *h->cnt);
        h->cnt_slot = malloc(PGH_COUNT_SLOTS * sizeof *h->cnt_slot);
        h->memo = calloc(1, sizeof *h->memo);
        h->max_bytes = PGH_MAX_BYTES;
    }
    if (!h || !h->win || !h->cnt || !h->cnt_slot || !h->memo) {
        cp_pg_hot_free(h);
        return CP_ENOMEM;
    }
    h->c = c;
    cp_pg_hot_set_idle(h, cp_system_idle_default, cp_system_idle_default_count);
    memset(h->cnt_slot, 0xff, PGH_COUNT_SLOTS * sizeof *h->cnt_slot);
    cp_buf_init(&h->text);
    cp_buf_init(&h->sql);
    *out = h;
    return CP_OK;
}

static void win_free(pg_win *w)
{
    cp_buf_free(&w->calls);
    cp_rollup_acc_free(w->acc);
    memset(w, 0, sizeof *w);
}

void cp_pg_hot_free(pg_hot *h)
{
    if (!h) return;
    for (size_t i = 0; h->win && i < h->nwin; i++) win_free(&h->win[i]);
    free(h->win);
    free(h->memo);
    free(h->cnt);
    free(h->cnt_slot);
    cp_buf_free(&h->text);
    cp_buf_free(&h->sql);
    free(h);
}

static void counts_clear(pg_hot *h)
{
    h->ncnt = 0;
    cp_buf_reset(&h->text);
    memset(h->cnt_slot, 0xff, PGH_COUNT_SLOTS * sizeof *h->cnt_slot);
}

/* Empties every window's buffers; forgets windows beyond PGH_KEEP_WINDOWS (and all of
 * them, with their batch hints, after a rollback: the hints may name rolled-back tables). */
static void windows_reset(pg_hot *h, int keep_hints)
{
    if (h->nwin > PGH_KEEP_WINDOWS || !keep_hints) {
        for (size_t i = 0; i < h->nwin; i++) win_free(&h->win[i]);
        h->nwin = 0;
    }
    for (size_t i = 0; i < h->nwin; i++) {
        pg_win *w = &h->win[i];
        cp_buf_reset(&w->calls);
        w->ncalls = 0;
        w->max_ts = INT64_MIN;
        cp_rollup_acc_free(w->acc);
        w->acc = NULL;
    }
    h->last = NULL;
    h->bytes = 0;
}

int cp_pg_hot_pending(const pg_hot *h) { return h->bytes > 0 || h->ncnt > 0; }

void cp_pg_hot_end(pg_hot *h, int ok)
{
    windows_reset(h, ok);
    counts_clear(h);
}

/* ---- names ------------------------------------------------------------------------------ */

/* "YYYYMMDD_HHMM" or "YYYYMMDD_HHMM_<batch>". */
static void batch_suffix(int64_t start, int64_t batch, char out[CP_HOT_SUFFIX_LEN])
{
    cp_hot_window_suffix(start, out);
    if (batch > 0) {
        size_t n = strlen(out);
        char digits[24];
        size_t k = 0;
        for (uint64_t v = (uint64_t)batch; v && k < sizeof digits; v /= 10) digits[k++] = (char)('0' + v % 10);
        if (n + 1 + k >= CP_HOT_SUFFIX_LEN) return; /* cannot happen: batches stay small */
        out[n++] = '_';
        while (k) out[n++] = digits[--k];
        out[n] = 0;
    }
}

static void table_name(int64_t start, int64_t batch, char calls[CP_HOT_NAME_LEN])
{
    char s[CP_HOT_SUFFIX_LEN];
    batch_suffix(start, batch, s);
    snprintf(calls, CP_HOT_NAME_LEN, "calls_%.24s", s);
}

/* ---- window creation ---------------------------------------------------------------------- */

static int random_uuid(pg_catalog *c, char out[37])
{
    uint8_t u[16];
    if (cp_random_bytes(u, sizeof u) != CP_OK) return cp_pg_failf(c, CP_EIO, "no random bytes for an inventory uuid");
    u[6] = (uint8_t)((u[6] & 0x0f) | 0x40); /* version 4 */
    u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
    cp_uuid_str(u, out);
    return CP_OK;
}

/* Creates the table of (start, batch) unless its inventory row exists: a row with
 * status creating, the tables, then ready, all in the open transaction. *created = 0
 * when they existed (another node may just have created them: ON CONFLICT waited for
 * it). */
static int window_create(pg_hot *h, int64_t start, int64_t end, int64_t batch, int *created)
{
    pg_catalog *c = h->c;
    char calls[CP_HOT_NAME_LEN], u1[37];
    table_name(start, batch, calls);
    int st = random_uuid(c, u1);
    if (st != CP_OK) return st;
    int64_t now = cp_now_ms();
    const void *v[] = {u1, &start, &end, calls, &now, &batch};
    size_t l[] = {strlen(u1), 0, 0, strlen(calls), 0, 0};
    PGresult *r = cp_pg_query(c,
                              "INSERT INTO inventory (uuid, start_time, end_time, status, table_type, table_name,"
                              " created_time, rows_count, table_size, total_table_size, batch, rollup)"
                              " VALUES ($1, $2, $3, 'creating', 'calls', $4, $5, 0, 0, 0, $6, 1)"
                              " ON CONFLICT (table_name) DO NOTHING RETURNING table_name",
                              "tbbtbb", v, l, 0, "inventory insert");
    if (!r) return CP_EIO;
    *created = PQntuples(r) > 0;
    PQclear(r);
    if (!*created) return CP_OK;
    char suffix[CP_HOT_SUFFIX_LEN];
    batch_suffix(start, batch, suffix);
    cp_buf_reset(&h->sql);
    if (cp_pg_window_ddl(&h->sql, suffix) != CP_OK ||
        cp_buf_printf(&h->sql, "UPDATE inventory SET status = 'ready' WHERE table_name = '%s'"
                               " AND status = 'creating'",
                      calls) != CP_OK ||
        cp_buf_putc(&h->sql, 0) != CP_OK)
        return cp_pg_failf(c, CP_ENOMEM, "out of memory");
    return cp_pg_exec(c, (const char *)h->sql.data, "create window tables");
}

/* ---- the writer's operations -------------------------------------------------------------- */

/* The buffered window holding ts (added when new). */
static int window_for(pg_hot *h, int64_t ts, pg_win **out)
{
    pg_win *w = h->last;
    if (w && ts >= w->start && ts < w->end) {
        *out = w;
        return CP_OK;
    }
    int64_t start;
    if (cp_hot_window_start(ts, h->c->window_ms, &start) != CP_OK)
        return cp_pg_failf(h->c, CP_EINVAL, "call time %lld ms is outside the storable range", (long long)ts);
    for (size_t i = 0; i < h->nwin; i++) {
        if (h->win[i].start == start) {
            w = &h->win[i];
            if (start + h->c->window_ms > w->end) w->end = start + h->c->window_ms; /* length raised */
            *out = h->last = w;
            return CP_OK;
        }
    }
    if (h->nwin == PGH_MAX_WINDOWS) { /* many windows in one transaction: send them now */
        int st = cp_pg_hot_flush(h);
        if (st != CP_OK) return st;
        windows_reset(h, 0);
    }
    w = &h->win[h->nwin++];
    memset(w, 0, sizeof *w);
    w->start = start;
    w->end = start + h->c->window_ms;
    w->max_ts = INT64_MIN;
    w->hint = -1;
    *out = h->last = w;
    return CP_OK;
}

/* A row id from the current block; a new block (nextval) when it is used up. */
static int next_id(pg_hot *h, int64_t *id)
{
    if (h->ids_left == 0) {
        PGresult *r = cp_pg_query(h->c, "SELECT nextval('hot_ids')", "", NULL, NULL, 0, "take row ids");
        if (!r) return CP_EIO;
        h->next_id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        h->ids_left = PGH_ID_BLOCK;
        PQclear(r);
    }
    *id = h->next_id++;
    h->ids_left--;
    return CP_OK;
}

static int count_is(const pg_hot *h, const pg_count *k, int64_t wstart, uint64_t hash, const cp_call *c)
{
    return k->window_start == wstart && k->hash == hash && k->restart_ms == c->restart_ms &&
           k->ns_len == c->ns_len && k->pod_len == c->pod_len &&
           (c->ns_len == 0 || !memcmp(h->text.data + k->ns_off, c->ns, c->ns_len)) &&
           (c->pod_len == 0 || !memcmp(h->text.data + k->pod_off, c->pod, c->pod_len));
}

static int flush_counts(pg_hot *h);

/* One more call of c's pod restart in window w. */
static int count_add(pg_hot *h, const pg_win *w, const cp_call *c)
{
    uint64_t hash = cp_pod_hash(c->ns, c->ns_len, c->pod, c->pod_len);
    uint64_t key = cp_mix64(hash ^ (uint64_t)w->start * 31 ^ (uint64_t)c->restart_ms);
    size_t i = key & (PGH_COUNT_SLOTS - 1);
    while (h->cnt_slot[i] >= 0) {
        pg_count *k = &h->cnt[h->cnt_slot[i]];
        if (count_is(h, k, w->start, hash, c)) {
            k->calls++;
            if (w->end > k->window_end) k->window_end = w->end;
            return CP_OK;
        }
        i = (i + 1) & (PGH_COUNT_SLOTS - 1);
    }
    if (h->ncnt == PGH_MAX_COUNTS) {
        int st = flush_counts(h);
        if (st != CP_OK) return st;
        i = key & (PGH_COUNT_SLOTS - 1);
    }
    pg_count *k = &h->cnt[h->ncnt];
    memset(k, 0, sizeof *k);
    k->window_start = w->start;
    k->window_end = w->end;
    k->restart_ms = c->restart_ms;
    k->hash = hash;
    k->ns_len = c->ns_len, k->svc_len = c->service_len, k->pod_len = c->pod_len;
    k->ns_off = h->text.len;
    k->svc_off = k->ns_off + c->ns_len;
    k->pod_off = k->svc_off + c->service_len;
    if (cp_buf_append(&h->text, c->ns, c->ns_len) != CP_OK ||
        cp_buf_append(&h->text, c->service, c->service_len) != CP_OK ||
        cp_buf_append(&h->text, c->pod, c->pod_len) != CP_OK)
        return cp_pg_failf(h->c, CP_ENOMEM, "out of memory");
    k->calls = 1;
    h->cnt_slot[i] = (int32_t)h->ncnt++;
    return CP_OK;
}

/* The call's rollup entry, kept until the flush learns whether its target keeps rollups.
 * A full accumulator sends everything buffered (the flush empties it). */
static int rollup_add(pg_hot *h, pg_win *w, const cp_call *c)
{
    if (!w->acc && cp_rollup_acc_new(PGH_ROLLUP_ENTRIES, h->idle_fp, &w->acc) != CP_OK)
        return cp_pg_failf(h->c, CP_ENOMEM, "out of memory");
    int flags = cp_rollup_flags_memo(h->memo, c, c->error, h->idle, h->nidle);
    int st = cp_rollup_acc_add(w->acc, c, flags);
    if (st == CP_ELIMIT) {
        st = cp_pg_hot_flush(h);
        if (st == CP_OK && !w->acc && cp_rollup_acc_new(PGH_ROLLUP_ENTRIES, h->idle_fp, &w->acc) != CP_OK)
            st = CP_ENOMEM;
        if (st == CP_OK) st = cp_rollup_acc_add(w->acc, c, flags);
    }
    if (st == CP_ENOMEM) return cp_pg_failf(h->c, CP_ENOMEM, "out of memory");
    return st;
}

int cp_pg_hot_put(pg_hot *h, const cp_call *c)
{
    if (!c->ns || !c->service || !c->pod)
        return cp_pg_failf(h->c, CP_EINVAL, "call without namespace, service or pod name");
    pg_win *w = NULL;
    int64_t id = 0;
    int st = window_for(h, c->ts_ms, &w);
    if (st == CP_OK) st = next_id(h, &id);
    if (st != CP_OK) return st;
    size_t calls_len = w->calls.len;
    st = cp_pg_call_tuple(&w->calls, c, id);
    if (st != CP_OK) { /* no half tuple may stay behind */
        w->calls.len = calls_len;
        return cp_pg_failf(h->c, st, st == CP_ENOMEM ? "out of memory" : "trace too large");
    }
    w->ncalls++;
    if (c->ts_ms > w->max_ts) w->max_ts = c->ts_ms;
    h->bytes += w->calls.len - calls_len;
    st = count_add(h, w, c);
    if (st == CP_OK) st = rollup_add(h, w, c);
    if (st == CP_OK && h->bytes >= h->max_bytes) st = cp_pg_hot_flush(h);
    return st;
}

/* Windows without the has_sql column (migration 10): an older build sharing this database
 * during a rolling upgrade creates its windows with its own DDL after the migration ran.
 * Readers select has_sql from every window, so such a window gets it here, at most a
 * minute after it appeared (only those lacking it are altered: no lock on the others). */
static int windows_add_has_sql(pg_hot *h)
{
    pg_catalog *c = h->c;
    PGresult *r = cp_pg_query(c,
                              "SELECT t.relname FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace"
                              " WHERE n.nspname = ANY (current_schemas(false)) AND t.relkind = 'r'"
                              " AND t.relname ~ '^calls_[0-9]{8}_[0-9]{4}(_[1-9][0-9]{0,5})?$'"
                              " AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = t.oid"
                              " AND a.attname = 'has_sql' AND NOT a.attisdropped)",
                              "", NULL, NULL, 0, "list windows without has_sql");
    if (!r) return CP_EIO;
    int st = CP_OK;
    for (int i = 0; st == CP_OK && i < PQntuples(r); i++) {
        const char *name = PQgetvalue(r, i, 0);
        if (!cp_hot_calls_name_ok(name)) continue;
        char sql[128];
        snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN IF NOT EXISTS has_sql integer NOT NULL DEFAULT 0", name);
        st = cp_pg_exec(c, sql, "add a window's has_sql column");
    }
    PQclear(r);
    return st;
}

int cp_pg_hot_prepare(pg_hot *h, int64_t now_ms)
{
    pg_catalog *c = h->c;
    int64_t start;
    if (cp_hot_window_start(now_ms, c->window_ms, &start) != CP_OK)
        return cp_pg_failf(c, CP_EINVAL, "time %lld ms is outside the storable range", (long long)now_ms);
    int64_t until = now_ms + c->ahead_ms;
    if (until > CP_HOT_MAX_TS) until = CP_HOT_MAX_TS;
    /* the windows of the range that exist: one query, so this is cheap when all do */
    const void *v[] = {&start, &until};
    PGresult *r = cp_pg_query(c,
                              "SELECT start_time FROM inventory WHERE table_type = 'calls' AND batch = 0"
                              " AND start_time >= $1 AND start_time < $2",
                              "bb", v, NULL, 0, "list prepared windows");
    if (!r) return CP_EIO;
    int n = PQntuples(r);
    int st = CP_OK;
    for (; st == CP_OK && start < until; start += c->window_ms) {
        int have = 0;
        for (int i = 0; i < n && !have; i++) have = strtoll(PQgetvalue(r, i, 0), NULL, 10) == start;
        int created;
        if (!have) st = window_create(h, start, start + c->window_ms, 0, &created);
    }
    PQclear(r);
    return st == CP_OK ? windows_add_has_sql(h) : st;
}

/* ---- flush: targets ------------------------------------------------------------------------ */

static int win_cmp(const void *a, const void *b)
{
    const pg_win *x = *(pg_win *const *)a, *y = *(pg_win *const *)b;
    return (x->start > y->start) - (x->start < y->start);
}

/* Windows without a batch hint: their latest batch from inventory (no lock: step 2 locks
 * and checks it). A window with no inventory row at all is created now, batch 0. */
static int find_latest(pg_hot *h, pg_win **ws, size_t n)
{
    pg_catalog *c = h->c;
    cp_buf_reset(&h->sql);
    int st = cp_buf_puts(&h->sql, "{");
    size_t asked = 0;
    for (size_t i = 0; st == CP_OK && i < n; i++)
        if (ws[i]->batch < 0 && ws[i]->hint < 0)
            st = cp_buf_printf(&h->sql, "%s%lld", asked++ ? "," : "", (long long)ws[i]->start);
    if (st == CP_OK) st = cp_buf_puts(&h->sql, "}");
    if (st == CP_OK) st = cp_buf_putc(&h->sql, 0);
    if (st != CP_OK) return cp_pg_failf(c, CP_ENOMEM, "out of memory");
    if (!asked) return CP_OK;
    const void *v[] = {h->sql.data};
    size_t l[] = {h->sql.len - 1};
    PGresult *r = cp_pg_query(c,
                              "SELECT start_time, batch FROM inventory WHERE table_type = 'calls'"
                              " AND start_time = ANY($1::bigint[]) ORDER BY start_time, batch DESC",
                              "t", v, l, 0, "find windows");
    if (!r) return CP_EIO;
    int rows = PQntuples(r);
    for (size_t i = 0; i < n; i++) {
        pg_win *w = ws[i];
        if (w->batch >= 0 || w->hint >= 0) continue;
        for (int k = 0; k < rows; k++) {
            if (strtoll(PQgetvalue(r, k, 0), NULL, 10) == w->start) {
                w->hint = strtoll(PQgetvalue(r, k, 1), NULL, 10); /* the first is the latest */
                break;
            }
        }
    }
    PQclear(r);
    st = CP_OK;
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        pg_win *w = ws[i];
        if (w->batch >= 0 || w->hint >= 0) continue;
        int created;
        st = window_create(h, w->start, w->end, 0, &created);
        if (st == CP_OK && created) w->batch = 0, w->db_end = w->end, w->rollup = 1;
        else if (st == CP_OK) w->hint = 0; /* someone else just created it: lock and check */
    }
    return st;
}

/* Locks the hinted targets FOR KEY SHARE (one statement, table-name order) and decides:
 * ready -> target found; claimed -> next batch created (or, if another node created it
 * first, hinted for the next round); gone -> looked up again next round. */
static int lock_targets(pg_hot *h, pg_win **ws, size_t n)
{
    pg_catalog *c = h->c;
    cp_buf_reset(&h->sql);
    int st = cp_buf_puts(&h->sql, "{");
    size_t asked = 0;
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        if (ws[i]->batch >= 0 || ws[i]->hint < 0) continue;
        char calls[CP_HOT_NAME_LEN];
        table_name(ws[i]->start, ws[i]->hint, calls);
        st = cp_buf_printf(&h->sql, "%s%s", asked++ ? "," : "", calls);
    }
    if (st == CP_OK) st = cp_buf_puts(&h->sql, "}");
    if (st == CP_OK) st = cp_buf_putc(&h->sql, 0);
    if (st != CP_OK) return cp_pg_failf(c, CP_ENOMEM, "out of memory");
    if (!asked) return CP_OK;
    const void *v[] = {h->sql.data};
    size_t l[] = {h->sql.len - 1};
    PGresult *r = cp_pg_query(c,
                              "SELECT table_name, status, end_time, rollup FROM inventory"
                              " WHERE table_name = ANY($1::text[]) ORDER BY table_name FOR KEY SHARE",
                              "t", v, l, 0, "lock windows");
    if (!r) return CP_EIO;
    int rows = PQntuples(r);
    st = CP_OK;
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        pg_win *w = ws[i];
        if (w->batch >= 0 || w->hint < 0) continue;
        char calls[CP_HOT_NAME_LEN];
        table_name(w->start, w->hint, calls);
        int k = 0;
        while (k < rows && strcmp(PQgetvalue(r, k, 0), calls) != 0) k++;
        if (k == rows) { /* gone (retention) or a stale hint: look it up again */
            w->hint = -1;
            continue;
        }
        const char *status = PQgetvalue(r, k, 1);
        int64_t end = PQgetisnull(r, k, 2) ? w->end : strtoll(PQgetvalue(r, k, 2), NULL, 10);
        if (!strcmp(status, "ready") || !strcmp(status, "creating")) {
            w->batch = w->hint;
            w->db_end = end;
            w->rollup = !PQgetisnull(r, k, 3) && strtol(PQgetvalue(r, k, 3), NULL, 10) != 0;
            continue;
        }
        /* claimed by a compactor: late calls go to the next batch */
        int created;
        st = window_create(h, w->start, end, w->hint + 1, &created);
        if (st != CP_OK) break;
        w->hint++;
        if (created) w->batch = w->hint, w->db_end = end, w->rollup = 1;
    }
    PQclear(r);
    return st;
}

static int resolve_targets(pg_hot *h, pg_win **ws, size_t n)
{
    for (int round = 0; round < PGH_RESOLVE_TRIES; round++) {
        int st = find_latest(h, ws, n);
        if (st == CP_OK) st = lock_targets(h, ws, n);
        if (st != CP_OK) return st;
        size_t left = 0;
        for (size_t i = 0; i < n; i++) left += ws[i]->batch < 0;
        if (!left) return CP_OK;
    }
    return cp_pg_failf(h->c, CP_EIO, "hot windows: no writable table after %d tries", PGH_RESOLVE_TRIES);
}

/* ---- flush: rows and counters --------------------------------------------------------------- */

static int copy_window(pg_hot *h, const pg_win *w)
{
    pg_catalog *c = h->c;
    char calls[CP_HOT_NAME_LEN], sql[1024];
    table_name(w->start, w->batch, calls);
    char e[384];
    if (w->ncalls) {
        snprintf(sql, sizeof sql, "COPY %s (%s) FROM STDIN (FORMAT binary)", calls, cp_pg_calls_columns);
        if (cp_pgcopy_send(c->conn, sql, w->calls.data, w->calls.len, e, sizeof e) != CP_OK)
            return cp_pg_failf(c, CP_EIO, "COPY %s: %s", calls, e);
    }
    return CP_OK;
}

/* A window's recorded end grows when the window length was raised (hot_writer.c
 * window_extend). */
static int extend_window(pg_hot *h, pg_win *w)
{
    char calls[CP_HOT_NAME_LEN], sql[256];
    table_name(w->start, w->batch, calls);
    snprintf(sql, sizeof sql, "UPDATE inventory SET end_time = %lld WHERE table_name = '%s' AND end_time < %lld",
             (long long)w->end, calls, (long long)w->end);
    int st = cp_pg_exec(h->c, sql, "inventory extend");
    if (st == CP_OK) w->db_end = w->end;
    return st;
}

/* inventory rows_count += rows of this flush: the rows are locked in name order first
 * (several writers update the same rows; the same order everywhere means no deadlock). */
static int flush_rows_count(pg_hot *h, pg_win **ws, size_t n)
{
    cp_buf *b = &h->sql;
    cp_buf_reset(b);
    int st = cp_buf_puts(b, "SELECT 1 FROM inventory WHERE table_name IN (");
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        char calls[CP_HOT_NAME_LEN];
        table_name(ws[i]->start, ws[i]->batch, calls);
        st = cp_buf_printf(b, "%s'%s'", i ? ", " : "", calls);
    }
    if (st == CP_OK)
        st = cp_buf_puts(b, ") ORDER BY table_name FOR NO KEY UPDATE;"
                            "UPDATE inventory AS i SET rows_count = coalesce(i.rows_count, 0) + v.n"
                            " FROM (VALUES ");
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        char calls[CP_HOT_NAME_LEN];
        table_name(ws[i]->start, ws[i]->batch, calls);
        st = cp_buf_printf(b, "%s('%s', %lld::bigint)", i ? ", " : "", calls, (long long)ws[i]->ncalls);
    }
    if (st == CP_OK) st = cp_buf_puts(b, ") AS v(name, n) WHERE i.table_name = v.name");
    if (st == CP_OK) st = cp_buf_putc(b, 0);
    if (st != CP_OK) return cp_pg_failf(h->c, CP_ENOMEM, "out of memory");
    return cp_pg_exec(h->c, (const char *)b->data, "inventory rows_count");
}

/* call_counts += the counters, PGH_COUNTS_PER_STMT rows per upsert. */
static int flush_counts(pg_hot *h)
{
    pg_catalog *c = h->c;
    for (size_t from = 0; from < h->ncnt; from += PGH_COUNTS_PER_STMT) {
        size_t n = h->ncnt - from < PGH_COUNTS_PER_STMT ? h->ncnt - from : PGH_COUNTS_PER_STMT;
        const void **v = malloc(n * 7 * sizeof *v);
        size_t *l = malloc(n * 7 * sizeof *l);
        char *types = malloc(n * 7 + 1);
        cp_buf_reset(&h->sql);
        int st = v && l && types ? cp_buf_puts(&h->sql, "INSERT INTO call_counts (namespace, pod_name, restart_time,"
                                                        " window_start, window_end, service_name, calls) VALUES ")
                                 : CP_ENOMEM;
        for (size_t i = 0; st == CP_OK && i < n; i++) {
            const pg_count *k = &h->cnt[from + i];
            size_t p = i * 7;
            st = cp_buf_printf(&h->sql, "%s($%zu, $%zu, $%zu, $%zu, $%zu, $%zu, $%zu)", i ? ", " : "", p + 1, p + 2,
                               p + 3, p + 4, p + 5, p + 6, p + 7);
            memcpy(types + p, "ttbbbtb", 7);
            v[p] = h->text.data + k->ns_off, l[p] = k->ns_len;
            v[p + 1] = h->text.data + k->pod_off, l[p + 1] = k->pod_len;
            v[p + 2] = &k->restart_ms, l[p + 2] = 0;
            v[p + 3] = &k->window_start, l[p + 3] = 0;
            v[p + 4] = &k->window_end, l[p + 4] = 0;
            v[p + 5] = h->text.data + k->svc_off, l[p + 5] = k->svc_len;
            v[p + 6] = &k->calls, l[p + 6] = 0;
        }
        if (st == CP_OK)
            st = cp_buf_puts(&h->sql, " ON CONFLICT (window_start, namespace, pod_name, restart_time) DO UPDATE"
                                      " SET calls = call_counts.calls + excluded.calls,"
                                      " window_end = greatest(call_counts.window_end, excluded.window_end)");
        if (st == CP_OK) st = cp_buf_putc(&h->sql, 0);
        if (st == CP_OK) {
            types[n * 7] = 0;
            PGresult *r = cp_pg_query(c, (const char *)h->sql.data, types, v, l, 0, "call_counts upsert");
            if (r) PQclear(r);
            else st = CP_EIO;
        } else {
            st = cp_pg_failf(c, CP_ENOMEM, "out of memory");
        }
        free(v);
        free(l);
        free(types);
        if (st != CP_OK) return st;
    }
    counts_clear(h);
    return CP_OK;
}

/* ---- flush: rollups --------------------------------------------------------------------------- */

typedef struct rollup_batch {
    pg_hot *h;
    const char *tbl;
    size_t n;                         /* rows in the statement being built */
    const void **v;
    size_t *l;
    char *types;
    int64_t *ints;                    /* the entries' numbers, 14 per row */
    int st;
} rollup_batch;

static int rollup_send(rollup_batch *b)
{
    if (!b->n) return CP_OK;
    pg_hot *h = b->h;
    int st = cp_buf_puts(&h->sql, CP_HOT_ROLLUP_CONFLICT);
    if (st == CP_OK) st = cp_buf_putc(&h->sql, 0);
    if (st != CP_OK) return cp_pg_failf(h->c, CP_ENOMEM, "out of memory");
    b->types[b->n * 20] = 0;
    PGresult *r = cp_pg_query(h->c, (const char *)h->sql.data, b->types, b->v, b->l, 0, "hot_rollups upsert");
    b->n = 0;
    if (!r) return CP_EIO;
    PQclear(r);
    return CP_OK;
}

/* One entry into the statement being built; a full statement is sent. */
static int rollup_row(void *ud, const cp_rollup_entry *e)
{
    rollup_batch *b = ud;
    pg_hot *h = b->h;
    if (b->n == 0) {
        cp_buf_reset(&h->sql);
        if (cp_buf_puts(&h->sql, CP_HOT_ROLLUP_INSERT) != CP_OK)
            return b->st = cp_pg_failf(h->c, CP_ENOMEM, "out of memory");
    }
    size_t p = b->n * 20;
    int64_t *x = b->ints + b->n * 16;
    x[0] = e->cell_ms, x[1] = e->cls, x[2] = e->flags, x[3] = e->idle_fp, x[4] = e->n, x[5] = e->sum_duration;
    x[6] = e->sum_suspend, x[7] = e->sum_queue, x[8] = e->sum_transactions, x[9] = e->max.ts_ms;
    x[10] = e->max.duration_ms, x[11] = e->max.calls, x[12] = e->max.restart_ms, x[13] = e->max.trace_file_index;
    x[14] = e->max.buffer_offset, x[15] = e->max.record_index;
    /* bigint parameters for every number (PostgreSQL casts them to the integer columns) */
    const void *vals[20] = {&x[0], e->ns,   e->service, e->pod,  &x[1],  &x[2],  &x[3],  b->tbl, &x[4],  &x[5],
                            &x[6], &x[7],   &x[8],      &x[9],   &x[10], &x[11], &x[12], &x[13], &x[14], &x[15]};
    size_t lens[20] = {0, e->ns_len, e->service_len, e->pod_len, 0, 0, 0, strlen(b->tbl), 0, 0,
                       0, 0,         0,              0,          0, 0, 0, 0,              0, 0};
    memcpy(b->types + p, "btttbbbtbbbbbbbbbbbb", 20);
    for (int k = 0; k < 20; k++) b->v[p + k] = vals[k], b->l[p + k] = lens[k];
    int st = cp_buf_printf(&h->sql, "%s(", b->n ? ", " : "");
    for (int k = 0; st == CP_OK && k < 20; k++) st = cp_buf_printf(&h->sql, "%s$%zu", k ? ", " : "", p + k + 1);
    if (st == CP_OK) st = cp_buf_putc(&h->sql, ')');
    if (st != CP_OK) return b->st = cp_pg_failf(h->c, CP_ENOMEM, "out of memory");
    if (++b->n == PGH_ROLLUPS_PER_STMT && (st = rollup_send(b)) != CP_OK) return b->st = st;
    return 0;
}

/* Upserts the entries of every window whose target keeps rollups (the others' are
 * dropped: an older window is counted by scanning it). */
static int flush_rollups(pg_hot *h, pg_win **ws, size_t n)
{
    rollup_batch b = {.h = h};
    b.v = malloc((size_t)PGH_ROLLUPS_PER_STMT * 20 * sizeof *b.v);
    b.l = malloc((size_t)PGH_ROLLUPS_PER_STMT * 20 * sizeof *b.l);
    b.types = malloc((size_t)PGH_ROLLUPS_PER_STMT * 20 + 1);
    b.ints = malloc((size_t)PGH_ROLLUPS_PER_STMT * 16 * sizeof *b.ints);
    int st = b.v && b.l && b.types && b.ints ? CP_OK : cp_pg_failf(h->c, CP_ENOMEM, "out of memory");
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        pg_win *w = ws[i];
        if (!w->acc || !w->rollup || !cp_rollup_acc_count(w->acc)) continue;
        char calls[CP_HOT_NAME_LEN];
        table_name(w->start, w->batch, calls);
        b.tbl = calls;
        st = cp_rollup_acc_each(w->acc, rollup_row, &b);
        if (st == CP_OK) st = b.st;
        if (st == CP_OK) st = rollup_send(&b);
        else if (st > 0) st = b.st ? b.st : CP_EIO;
    }
    free(b.v);
    free(b.l);
    free(b.types);
    free(b.ints);
    return st;
}

int cp_pg_hot_flush(pg_hot *h)
{
    pg_win *ws[PGH_MAX_WINDOWS];
    size_t n = 0;
    for (size_t i = 0; i < h->nwin; i++) {
        if (!h->win[i].ncalls) continue;
        h->win[i].batch = -1;
        ws[n++] = &h->win[i];
    }
    qsort(ws, n, sizeof *ws, win_cmp);
    int st = n ? resolve_targets(h, ws, n) : CP_OK;
    for (size_t i = 0; st == CP_OK && i < n; i++)
        if (ws[i]->max_ts >= ws[i]->db_end) st = extend_window(h, ws[i]);
    for (size_t i = 0; st == CP_OK && i < n; i++) st = copy_window(h, ws[i]);
    if (st == CP_OK && n) st = flush_rows_count(h, ws, n);
    if (st == CP_OK && n) st = flush_rollups(h, ws, n);
    if (st == CP_OK && h->ncnt) st = flush_counts(h);
    if (st != CP_OK) {
        /* part of it may have reached the server: the whole transaction goes */
        cp_pg_abort(h->c);
        return st;
    }
    for (size_t i = 0; i < n; i++) { /* sent: the buffers start over, the target is the next hint */
        pg_win *w = ws[i];
        w->hint = w->batch;
        if (w->calls.cap > h->max_bytes) cp_buf_free(&w->calls); /* a burst's buffer goes back */
        else cp_buf_reset(&w->calls);
        w->ncalls = 0;
        w->max_ts = INT64_MIN;
        cp_rollup_acc_free(w->acc);
        w->acc = NULL;
    }
    h->bytes = 0;
    return CP_OK;
}
