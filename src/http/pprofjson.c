/* pprofjson.c -- a parsed pprof profile as the API's JSON (/dumps/{id}/profile): its
 * summary and the top functions for one sample type (dumpjson.h).
 *
 * Function names and files come from the uploaded profile and may be any bytes, while
 * jansson refuses strings that are not UTF-8: they are repaired (each bad byte becomes
 * U+FFFD) before json_string. */
#include "http/dumpjson.h"

#include <stdlib.h>

/* {"type", "unit"}, or null when the type is absent. */
static json_t *value_type_json(const cp_pprof_value_type *vt)
{
    if (!vt->type) return json_null();
    json_t *o = json_object();
    if (!o) return NULL;
    if (json_object_set_new(o, "type", http_json_text(vt->type)) != 0 ||
        json_object_set_new(o, "unit", http_json_text(vt->unit)) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *http_pprof_json(const cp_pprof *pf, size_t st, size_t top)
{
    const cp_pprof_info *in = cp_pprof_get_info(pf);
    json_t *o = json_object(), *types = json_array(), *rows = json_array();
    cp_pprof_fn_total *t = NULL;
    if (!o || !types || !rows) goto fail;

    for (size_t i = 0; i < in->nsample_types; i++)
        if (json_array_append_new(types, value_type_json(&in->sample_types[i])) != 0) goto fail;

    /* the array must be bounded by what exists, whatever the caller asked for */
    size_t cap = top < in->functions ? top : (size_t)in->functions, n = 0;
    if (st < in->nsample_types && cap > 0) {
        t = malloc(cap * sizeof *t);
        if (!t || cp_pprof_top(pf, st, t, cap, &n) != CP_OK) goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_object();
        if (!r || json_array_append_new(rows, r) != 0) goto fail;
        if (json_object_set_new(r, "name", http_json_text(t[i].name)) != 0 ||
            json_object_set_new(r, "file", http_json_text(t[i].file)) != 0 ||
            json_object_set_new(r, "flat", json_integer(t[i].flat)) != 0 ||
            json_object_set_new(r, "cum", json_integer(t[i].cum)) != 0)
            goto fail;
    }

    int bad = 0;
    bad |= json_object_set_new(o, "sample_types", types);
    types = NULL;
    bad |= json_object_set_new(o, "default_sample_type",
                               in->default_sample_type >= 0 ? json_integer(in->default_sample_type) : json_null());
    bad |= json_object_set_new(o, "period_type", value_type_json(&in->period_type));
    bad |= json_object_set_new(o, "period", json_integer(in->period));
    /* time_nanos 0 is "not set" in protobuf terms */
    bad |= json_object_set_new(o, "time_ms", in->time_nanos ? json_integer(in->time_nanos / 1000000) : json_null());
    bad |= json_object_set_new(o, "duration_ms", json_real((double)in->duration_nanos / 1e6));
    bad |= json_object_set_new(o, "samples", json_integer((json_int_t)in->samples));
    bad |= json_object_set_new(o, "locations", json_integer((json_int_t)in->locations));
    bad |= json_object_set_new(o, "functions", json_integer((json_int_t)in->functions));
    bad |= json_object_set_new(o, "mappings", json_integer((json_int_t)in->mappings));
    bad |= json_object_set_new(o, "sample_type", json_integer((json_int_t)st));
    bad |= json_object_set_new(o, "top", rows);
    rows = NULL;
    free(t);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;

fail:
    free(t);
    json_decref(rows);
    json_decref(types);
    json_decref(o);
    return NULL;
}
