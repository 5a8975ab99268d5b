/* call.c -- small facts about calls shared by the layers: identity and sort columns. */
#include "cp_model.h"

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
