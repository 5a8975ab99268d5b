/* call.c -- small facts about calls shared by the layers: identity and sort columns. */
#include "cp_model.h"

#include <string.h>

uint64_t cp_pod_hash(const char *ns, size_t ns_len, const char *pod, size_t pod_len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < ns_len; i++) h = (h ^ (uint8_t)ns[i]) * 0x100000001b3ULL;
    h = (h ^ (uint8_t)'/') * 0x100000001b3ULL;
    for (size_t i = 0; i < pod_len; i++) h = (h ^ (uint8_t)pod[i]) * 0x100000001b3ULL;
    return h;
}

void cp_call_ref_of(const cp_call *c, cp_call_ref *out)
{
    out->ts_ms = c->ts_ms;
    out->restart_ms = c->restart_ms;
    out->trace_file_index = c->trace_file_index;
    out->buffer_offset = c->buffer_offset;
    out->record_index = c->record_index;
    out->pod_hash = cp_pod_hash(c->ns, c->ns_len, c->pod, c->pod_len);
}

int cp_sort_is_text(cp_sort_col col)
{
    switch (col) {
    case CP_SORT_METHOD:
    case CP_SORT_NAMESPACE:
    case CP_SORT_SERVICE:
    case CP_SORT_POD:
    case CP_SORT_THREAD: return 1;
    default: return 0;
    }
}

int64_t cp_call_sort_num(const cp_call *c, cp_sort_col col)
{
    switch (col) {
    case CP_SORT_TS: return c->ts_ms;
    case CP_SORT_DURATION: return c->duration_ms;
    case CP_SORT_CPU: return c->cpu_time;
    case CP_SORT_WAIT: return c->wait_time;
    case CP_SORT_MEMORY: return c->memory_used;
    case CP_SORT_SUSPEND: return c->suspend_ms;
    case CP_SORT_CALLS: return c->calls;
    case CP_SORT_TRANSACTIONS: return c->transactions;
    case CP_SORT_QUEUE: return c->queue_wait_ms;
    case CP_SORT_LOGS_GENERATED: return c->logs_generated;
    case CP_SORT_LOGS_WRITTEN: return c->logs_written;
    case CP_SORT_FILE_READ: return c->file_read;
    case CP_SORT_FILE_WRITTEN: return c->file_written;
    case CP_SORT_NET_READ: return c->net_read;
    case CP_SORT_NET_WRITTEN: return c->net_written;
    case CP_SORT_RESTART: return c->restart_ms;
    case CP_SORT_ERROR: return c->error != 0;
    default: return 0;
    }
}

const char *cp_call_sort_text(const cp_call *c, cp_sort_col col, size_t *len)
{
    switch (col) {
    case CP_SORT_METHOD: *len = c->method_len; return c->method;
    case CP_SORT_NAMESPACE: *len = c->ns_len; return c->ns;
    case CP_SORT_SERVICE: *len = c->service_len; return c->service;
    case CP_SORT_POD: *len = c->pod_len; return c->pod;
    case CP_SORT_THREAD: *len = c->thread_len; return c->thread;
    default: *len = 0; return NULL;
    }
}

void cp_sort_key_of(const cp_call *c, cp_sort_col col, int desc, cp_sort_key *k)
{
    memset(k, 0, sizeof *k);
    k->col = col;
    k->desc = desc;
    size_t n;
    const char *t = cp_call_sort_text(c, col, &n);
    if (t) {
        if (n > sizeof k->text - 1) n = sizeof k->text - 1; /* the key keeps a prefix */
        if (n) memcpy(k->text, t, n);
        k->text_len = n;
    } else {
        k->num = cp_call_sort_num(c, col);
    }
    cp_call_ref_of(c, &k->ref);
}

/* Strings are copied NUL-terminated into one buffer; their pointers are set once it has
 * stopped growing (it moves while it grows). */
int cp_call_copy(const cp_call *src, cp_call *dst, cp_buf *mem)
{
    *dst = *src;
    cp_buf_reset(mem);
    const char *s[] = {src->ns, src->service, src->pod, src->method, src->thread, src->params_json,
                       (const char *)src->trace};
    size_t n[] = {src->ns_len, src->service_len, src->pod_len, src->method_len, src->thread_len,
                  src->params_json_len, src->trace_len};
    size_t off[7];
    for (size_t i = 0; i < 7; i++) {
        off[i] = mem->len;
        if ((s[i] && cp_buf_append(mem, s[i], n[i]) != CP_OK) || cp_buf_putc(mem, 0) != CP_OK) return CP_ENOMEM;
    }
    const char *base = (const char *)mem->data;
    dst->ns = src->ns ? base + off[0] : NULL;
    dst->service = src->service ? base + off[1] : NULL;
    dst->pod = src->pod ? base + off[2] : NULL;
    dst->method = src->method ? base + off[3] : NULL;
    dst->thread = src->thread ? base + off[4] : NULL;
    dst->params_json = src->params_json ? base + off[5] : NULL;
    dst->trace = src->trace ? (const uint8_t *)base + off[6] : NULL;
    /* trace_reason is one of the static CP_TRACE_* strings (or a reader's own constant) */
    return CP_OK;
}
