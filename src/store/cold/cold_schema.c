/* cold_schema.c -- the cold tier's Parquet schemas and the cp_call -> row mapping
 * (cp_cold.h; storage.md "Cold tier", seed 004 CallParquet / DumpParquet). */
#include "store/cp_cold.h"
#include "query/cp_query.h"

#include <stdio.h>
#include <stdlib.h>

const cp_pq_column cp_cold_calls_schema[CP_COLD_C_COUNT] = {
    [CP_COLD_C_TIME] = {"time", CP_PQ_TS_MS, 0, 0},
    [CP_COLD_C_CPU] = {"cpu_time", CP_PQ_I64, 0, 0},
    [CP_COLD_C_WAIT] = {"wait_time", CP_PQ_I64, 0, 0},
    [CP_COLD_C_MEMORY] = {"memory_used", CP_PQ_I64, 0, 0},
    [CP_COLD_C_DURATION] = {"duration", CP_PQ_I32, 0, 0},
    [CP_COLD_C_NONBLOCKING] = {"non_blocking", CP_PQ_I64, 0, 0},
    [CP_COLD_C_QUEUE] = {"queue_wait_duration", CP_PQ_I32, 0, 0},
    [CP_COLD_C_SUSPEND] = {"suspend_duration", CP_PQ_I32, 0, 0},
    [CP_COLD_C_CALLS] = {"calls", CP_PQ_I32, 0, 0},
    [CP_COLD_C_TRANSACTIONS] = {"transactions", CP_PQ_U64, 0, 0},
    [CP_COLD_C_LOGS_GENERATED] = {"logs_generated", CP_PQ_I32, 0, 0},
    [CP_COLD_C_LOGS_WRITTEN] = {"logs_written", CP_PQ_I32, 0, 0},
    [CP_COLD_C_FILE_READ] = {"file_read", CP_PQ_U64, 0, 0},
    [CP_COLD_C_FILE_WRITTEN] = {"file_written", CP_PQ_U64, 0, 0},
    [CP_COLD_C_NET_READ] = {"net_read", CP_PQ_U64, 0, 0},
    [CP_COLD_C_NET_WRITTEN] = {"net_written", CP_PQ_U64, 0, 0},
    [CP_COLD_C_NAMESPACE] = {"namespace", CP_PQ_STRING, 0, 1},
    [CP_COLD_C_SERVICE] = {"service_name", CP_PQ_STRING, 0, 1},
    [CP_COLD_C_POD] = {"pod_name", CP_PQ_STRING, 0, 1},
    [CP_COLD_C_RESTART] = {"restart_time", CP_PQ_TS_MS, 0, 0},
    [CP_COLD_C_METHOD] = {"method", CP_PQ_STRING, 0, 1},
    [CP_COLD_C_PARAMS] = {"params", CP_PQ_MAP_STR_LIST, 1, 1},
    [CP_COLD_C_TRACE_INDEX] = {"trace_index", CP_PQ_STRING, 0, 0},
    [CP_COLD_C_TRACE] = {"trace", CP_PQ_BINARY, 1, 0},
    [CP_COLD_C_THREAD] = {"thread", CP_PQ_STRING, 0, 1},
    [CP_COLD_C_METHOD_ID] = {"method_id", CP_PQ_I32, 0, 0},
    [CP_COLD_C_TRACE_REASON] = {"trace_reason", CP_PQ_STRING, 1, 1},
    [CP_COLD_C_HAS_SQL] = {"has_sql", CP_PQ_BOOL, 0, 0},
};

const cp_pq_column cp_cold_dumps_schema[CP_COLD_D_COUNT] = {
    [CP_COLD_D_TIME] = {"time", CP_PQ_TS_MS, 0, 0},
    [CP_COLD_D_NAMESPACE] = {"namespace", CP_PQ_STRING, 0, 1},
    [CP_COLD_D_SERVICE] = {"service_name", CP_PQ_STRING, 0, 1},
    [CP_COLD_D_POD] = {"pod_name", CP_PQ_STRING, 0, 1},
    [CP_COLD_D_RESTART] = {"restart_time", CP_PQ_TS_MS, 0, 0},
    [CP_COLD_D_POD_TYPE] = {"pod_type", CP_PQ_STRING, 0, 1},
    [CP_COLD_D_DUMP_TYPE] = {"dump_type", CP_PQ_STRING, 0, 1},
    [CP_COLD_D_BYTES] = {"bytes_size", CP_PQ_I64, 0, 0},
    [CP_COLD_D_PARAMS] = {"params", CP_PQ_MAP_STR_STR, 1, 0},
    [CP_COLD_D_BINARY] = {"binary_data", CP_PQ_BINARY, 0, 0},
};

const cp_pq_column cp_cold_rollup_schema[CP_COLD_R_COUNT] = {
    [CP_COLD_R_CELL] = {"cell", CP_PQ_TS_MS, 0, 0},
    [CP_COLD_R_NAMESPACE] = {"namespace", CP_PQ_STRING, 0, 1},
    [CP_COLD_R_SERVICE] = {"service_name", CP_PQ_STRING, 0, 1},
    [CP_COLD_R_POD] = {"pod_name", CP_PQ_STRING, 0, 1},
    [CP_COLD_R_CLASS] = {"duration_class", CP_PQ_I32, 0, 0},
    [CP_COLD_R_FLAGS] = {"flags", CP_PQ_I32, 0, 0},
    [CP_COLD_R_COUNT_CALLS] = {"calls_count", CP_PQ_I64, 0, 0},
    [CP_COLD_R_SUM_DURATION] = {"sum_duration", CP_PQ_I64, 0, 0},
    [CP_COLD_R_SUM_SUSPEND] = {"sum_suspend_duration", CP_PQ_I64, 0, 0},
    [CP_COLD_R_SUM_QUEUE] = {"sum_queue_wait_duration", CP_PQ_I64, 0, 0},
    [CP_COLD_R_SUM_TRANSACTIONS] = {"sum_transactions", CP_PQ_I64, 0, 0},
    [CP_COLD_R_MAX_TIME] = {"max_time", CP_PQ_TS_MS, 0, 0},
    [CP_COLD_R_MAX_DURATION] = {"max_duration", CP_PQ_I32, 0, 0},
    [CP_COLD_R_MAX_CALLS] = {"max_calls", CP_PQ_I32, 0, 0},
    [CP_COLD_R_MAX_RESTART] = {"max_restart_time", CP_PQ_TS_MS, 0, 0},
    [CP_COLD_R_MAX_TFI] = {"max_trace_file_index", CP_PQ_I32, 0, 0},
    [CP_COLD_R_MAX_BO] = {"max_buffer_offset", CP_PQ_I32, 0, 0},
    [CP_COLD_R_MAX_RI] = {"max_record_index", CP_PQ_I32, 0, 0},
};

void cp_cold_rollup_row(const cp_rollup_entry *e, cp_pq_value row[CP_COLD_R_COUNT])
{
    memset(row, 0, sizeof(cp_pq_value) * CP_COLD_R_COUNT);
    row[CP_COLD_R_CELL].i = e->cell_ms;
    row[CP_COLD_R_NAMESPACE].b = (cp_pq_bytes){(const uint8_t *)e->ns, e->ns_len};
    row[CP_COLD_R_SERVICE].b = (cp_pq_bytes){(const uint8_t *)e->service, e->service_len};
    row[CP_COLD_R_POD].b = (cp_pq_bytes){(const uint8_t *)e->pod, e->pod_len};
    row[CP_COLD_R_CLASS].i = e->cls;
    row[CP_COLD_R_FLAGS].i = e->flags;
    row[CP_COLD_R_COUNT_CALLS].i = e->n;
    row[CP_COLD_R_SUM_DURATION].i = e->sum_duration;
    row[CP_COLD_R_SUM_SUSPEND].i = e->sum_suspend;
    row[CP_COLD_R_SUM_QUEUE].i = e->sum_queue;
    row[CP_COLD_R_SUM_TRANSACTIONS].i = e->sum_transactions;
    row[CP_COLD_R_MAX_TIME].i = e->max.ts_ms;
    row[CP_COLD_R_MAX_DURATION].i = e->max.duration_ms;
    row[CP_COLD_R_MAX_CALLS].i = e->max.calls;
    row[CP_COLD_R_MAX_RESTART].i = e->max.restart_ms;
    row[CP_COLD_R_MAX_TFI].i = e->max.trace_file_index;
    row[CP_COLD_R_MAX_BO].i = e->max.buffer_offset;
    row[CP_COLD_R_MAX_RI].i = e->max.record_index;
}

/* Map entries point into text by offset while it grows; fixed up at the end. */
typedef struct rb_entry {
    size_t key_off, key_len;
    size_t first_val, nvals;
} rb_entry;

typedef struct rb_val {
    size_t off, len;
} rb_val;

struct cp_cold_rowbuf {
    cp_buf text;                /* keys, values, trace_index */
    rb_entry *ent;
    size_t nent, capent;
    rb_val *val;
    size_t nval, capval;
    cp_pq_map_entry *map;       /* built from ent/val */
    cp_pq_bytes *bytes;
    size_t capmap, capbytes;
};

int cp_cold_rowbuf_new(cp_cold_rowbuf **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out) return CP_ENOMEM;
    cp_buf_init(&(*out)->text);
    return CP_OK;
}

void cp_cold_rowbuf_free(cp_cold_rowbuf *rb)
{
    if (!rb) return;
    cp_buf_free(&rb->text);
    free(rb->ent);
    free(rb->val);
    free(rb->map);
    free(rb->bytes);
    free(rb);
}

static int rb_text(cp_cold_rowbuf *rb, const char *p, size_t n, size_t *off)
{
    *off = rb->text.len;
    return cp_buf_append(&rb->text, p, n);
}

static int rb_on_name(void *ud, const char *name, size_t nlen)
{
    cp_cold_rowbuf *rb = ud;
    if (cp_grow((void **)&rb->ent, &rb->capent, rb->nent + 1, sizeof *rb->ent, 16) != CP_OK) return CP_ENOMEM;
    rb_entry *e = &rb->ent[rb->nent++];
    e->key_len = nlen;
    e->first_val = rb->nval;
    e->nvals = 0;
    return rb_text(rb, name, nlen, &e->key_off) != CP_OK ? CP_ENOMEM : 0;
}

static int rb_on_value(void *ud, const char *name, size_t nlen, const char *val, size_t vlen)
{
    (void)name;
    (void)nlen;
    cp_cold_rowbuf *rb = ud;
    if (cp_grow((void **)&rb->val, &rb->capval, rb->nval + 1, sizeof *rb->val, 16) != CP_OK) return CP_ENOMEM;
    rb_val *v = &rb->val[rb->nval++];
    v->len = vlen;
    rb->ent[rb->nent - 1].nvals++;
    return rb_text(rb, val, vlen, &v->off) != CP_OK ? CP_ENOMEM : 0;
}

/* params_json -> map entries (names and values unescaped, order kept). */
static int rb_params(cp_cold_rowbuf *rb, const cp_call *c, cp_pq_value *v)
{
    rb->nent = rb->nval = 0;
    int st = cp_params_walk(c->params_json, c->params_json_len, rb_on_name, rb_on_value, rb);
    if (st != CP_OK) return st < 0 ? st : CP_ENOMEM;
    if (cp_grow((void **)&rb->map, &rb->capmap, rb->nent, sizeof *rb->map, 16) != CP_OK ||
        cp_grow((void **)&rb->bytes, &rb->capbytes, rb->nval, sizeof *rb->bytes, 16) != CP_OK)
        return CP_ENOMEM;
    const uint8_t *t = rb->text.data;
    for (size_t i = 0; i < rb->nval; i++) rb->bytes[i] = (cp_pq_bytes){t + rb->val[i].off, rb->val[i].len};
    for (size_t i = 0; i < rb->nent; i++) {
        const rb_entry *e = &rb->ent[i];
        rb->map[i] = (cp_pq_map_entry){{t + e->key_off, e->key_len}, rb->bytes + e->first_val, e->nvals};
    }
    v->map = rb->map;
    v->nmap = rb->nent;
    return CP_OK;
}

static cp_pq_bytes str_bytes(const char *p, size_t n) { return (cp_pq_bytes){(const uint8_t *)p, n}; }

int cp_cold_call_row(cp_cold_rowbuf *rb, const cp_call *c, cp_pq_value row[CP_COLD_C_COUNT])
{
    memset(row, 0, sizeof(cp_pq_value) * CP_COLD_C_COUNT);
    cp_buf_reset(&rb->text);
    char idx[48];
    int n = snprintf(idx, sizeof idx, "%d_%d_%d", (int)c->trace_file_index, (int)c->buffer_offset,
                     (int)c->record_index);
    size_t idx_off;
    int st = rb_text(rb, idx, (size_t)n, &idx_off);
    if (st == CP_OK) st = rb_params(rb, c, &row[CP_COLD_C_PARAMS]);
    if (st != CP_OK) return st;
    row[CP_COLD_C_TIME].i = c->ts_ms;
    row[CP_COLD_C_CPU].i = c->cpu_time;
    row[CP_COLD_C_WAIT].i = c->wait_time;
    row[CP_COLD_C_MEMORY].i = c->memory_used;
    row[CP_COLD_C_DURATION].i = c->duration_ms;
    row[CP_COLD_C_NONBLOCKING].i = c->non_blocking;
    row[CP_COLD_C_QUEUE].i = c->queue_wait_ms;
    row[CP_COLD_C_SUSPEND].i = c->suspend_ms;
    row[CP_COLD_C_CALLS].i = c->calls;
    row[CP_COLD_C_TRANSACTIONS].i = c->transactions;
    row[CP_COLD_C_LOGS_GENERATED].i = c->logs_generated;
    row[CP_COLD_C_LOGS_WRITTEN].i = c->logs_written;
    row[CP_COLD_C_FILE_READ].i = c->file_read;
    row[CP_COLD_C_FILE_WRITTEN].i = c->file_written;
    row[CP_COLD_C_NET_READ].i = c->net_read;
    row[CP_COLD_C_NET_WRITTEN].i = c->net_written;
    row[CP_COLD_C_NAMESPACE].b = str_bytes(c->ns, c->ns_len);
    row[CP_COLD_C_SERVICE].b = str_bytes(c->service, c->service_len);
    row[CP_COLD_C_POD].b = str_bytes(c->pod, c->pod_len);
    row[CP_COLD_C_RESTART].i = c->restart_ms;
    row[CP_COLD_C_METHOD].b = str_bytes(c->method, c->method_len);
    row[CP_COLD_C_TRACE_INDEX].b = (cp_pq_bytes){rb->text.data + idx_off, (size_t)n};
    if (c->trace)
        row[CP_COLD_C_TRACE].b = (cp_pq_bytes){c->trace, c->trace_len};
    else
        row[CP_COLD_C_TRACE].null = 1;
    row[CP_COLD_C_THREAD].b = str_bytes(c->thread, c->thread_len);
    row[CP_COLD_C_METHOD_ID].i = c->method_id;
    if (c->trace_reason)
        row[CP_COLD_C_TRACE_REASON].b = str_bytes(c->trace_reason, strlen(c->trace_reason));
    else
        row[CP_COLD_C_TRACE_REASON].null = 1;
    row[CP_COLD_C_HAS_SQL].i = c->sql != 0;
    return CP_OK;
}
