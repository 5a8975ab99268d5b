/* meta.c -- Parquet structs on the wire that both directions share: page headers (written
 * per page, read per page) and the schema elements of our column shapes (parquet.md §2.6,
 * §3). Field ids are the ones of parquet.thrift. */
#include "pq_internal.h"

/* ---- page headers ----------------------------------------------------------------------- */

int pq_page_header_write(cp_buf *out, const pq_page_header *h)
{
    pq_tw w;
    pq_tw_init(&w, out);
    pq_tw_i32(&w, 1, h->type);
    pq_tw_i32(&w, 2, h->uncompressed);
    pq_tw_i32(&w, 3, h->compressed);
    switch (h->type) {
    case PQ_PAGE_DATA:
        pq_tw_struct_begin(&w, 5);
        pq_tw_i32(&w, 1, h->num_values);
        pq_tw_i32(&w, 2, h->encoding);
        pq_tw_i32(&w, 3, PQ_ENC_RLE); /* level encodings: RLE even when there are no levels */
        pq_tw_i32(&w, 4, PQ_ENC_RLE);
        pq_tw_struct_end(&w);
        break;
    case PQ_PAGE_DICTIONARY:
        pq_tw_struct_begin(&w, 7);
        pq_tw_i32(&w, 1, h->num_values);
        pq_tw_i32(&w, 2, h->encoding);
        pq_tw_struct_end(&w);
        break;
    case PQ_PAGE_DATA_V2:
        pq_tw_struct_begin(&w, 8);
        pq_tw_i32(&w, 1, h->num_values);
        pq_tw_i32(&w, 2, h->num_nulls);
        pq_tw_i32(&w, 3, h->num_rows);
        pq_tw_i32(&w, 4, h->encoding);
        pq_tw_i32(&w, 5, h->def_len);
        pq_tw_i32(&w, 6, h->rep_len);
        if (!h->is_compressed) pq_tw_bool(&w, 7, 0);
        pq_tw_struct_end(&w);
        break;
    default:
        return CP_EINVAL;
    }
    pq_tw_struct_end(&w);
    return w.err;
}

/* DataPageHeader (v1) or DictionaryPageHeader: fields 1 and 2 are what we need. */
static int read_sub_header(pq_tr *r, pq_page_header *h, int v2)
{
    int16_t last = 0, id;
    int t, seen = 0;
    for (;;) {
        if (pq_tr_field(r, &last, &id, &t) != CP_OK) return CP_ECORRUPT;
        if (t == PQ_T_STOP) break;
        int32_t v;
        int b, st;
        /* v2 numbers its fields differently: 1 num_values, 2 num_nulls, 3 num_rows,
         * 4 encoding, 5 def length, 6 rep length, 7 is_compressed */
        if (id == 1) {
            st = pq_tr_i32(r, t, &h->num_values);
            seen |= 1;
        } else if (!v2 && id == 2) {
            st = pq_tr_i32(r, t, &h->encoding);
            seen |= 2;
        } else if (v2 && id >= 2 && id <= 6) {
            st = pq_tr_i32(r, t, &v);
            if (id == 2) h->num_nulls = v;
            else if (id == 3) h->num_rows = v;
            else if (id == 4) h->encoding = v, seen |= 2;
            else if (id == 5) h->def_len = v, seen |= 4;
            else h->rep_len = v, seen |= 8;
        } else if (v2 && id == 7) {
            st = pq_tr_bool(r, t, 0, &b);
            h->is_compressed = b;
        } else {
            st = pq_tr_skip(r, t, 0);
        }
        if (st != CP_OK) return CP_ECORRUPT;
    }
    int need = v2 ? 15 : 3;
    if ((seen & need) != need) {
        r->why = "page sub-header misses a required field";
        return CP_ECORRUPT;
    }
    if (h->num_values < 0 || (v2 && (h->def_len < 0 || h->rep_len < 0 || h->num_nulls < 0 || h->num_rows < 0))) {
        r->why = "negative count in a page header";
        return CP_ECORRUPT;
    }
    return CP_OK;
}

int pq_page_header_read(const uint8_t *p, size_t len, pq_page_header *h, size_t *used, const char **why)
{
    pq_tr r;
    pq_tr_init(&r, p, len);
    memset(h, 0, sizeof *h);
    h->is_compressed = 1;
    h->type = -1;
    int16_t last = 0, id;
    int t, seen = 0, sub = 0;
    for (;;) {
        if (pq_tr_field(&r, &last, &id, &t) != CP_OK) goto corrupt;
        if (t == PQ_T_STOP) break;
        int st;
        if (id >= 1 && id <= 3) {
            int32_t v;
            st = pq_tr_i32(&r, t, &v);
            if (id == 1) h->type = v;
            else if (id == 2) h->uncompressed = v;
            else h->compressed = v;
            seen |= 1 << id;
        } else if ((id == 5 || id == 7 || id == 8) && t == PQ_T_STRUCT) {
            /* the sub-header matching the type; decoded once the type is known, so
             * remember which one and read it in place (types come first in practice) */
            int want = id == 5 ? PQ_PAGE_DATA : id == 7 ? PQ_PAGE_DICTIONARY : PQ_PAGE_DATA_V2;
            if (!(seen & 2) || h->type != want) {
                st = pq_tr_skip(&r, t, 0);
            } else {
                st = read_sub_header(&r, h, id == 8);
                sub = 1;
            }
        } else {
            st = pq_tr_skip(&r, t, 0);
        }
        if (st != CP_OK) goto corrupt;
    }
    if ((seen & 14) != 14) {
        r.why = "page header misses a required field";
        goto corrupt;
    }
    if (h->uncompressed < 0 || h->compressed < 0) {
        r.why = "negative page size";
        goto corrupt;
    }
    if (!sub && (h->type == PQ_PAGE_DATA || h->type == PQ_PAGE_DICTIONARY || h->type == PQ_PAGE_DATA_V2)) {
        r.why = "page header without its sub-header";
        goto corrupt;
    }
    *used = r.pos;
    return CP_OK;
corrupt:
    if (why) *why = r.why ? r.why : "bad page header";
    return CP_ECORRUPT;
}

/* ---- schema elements -------------------------------------------------------------------- */

/* SchemaElement fields: 1 type, 3 repetition_type, 4 name, 5 num_children,
 * 6 converted_type, 10 logicalType. */
static void elem_begin(pq_tw *w, int type, int rep, const char *name, int nchildren)
{
    pq_tw_elem_struct_begin(w);
    if (type >= 0) pq_tw_i32(w, 1, type);
    pq_tw_i32(w, 3, rep);
    pq_tw_string(w, 4, name);
    if (nchildren > 0) pq_tw_i32(w, 5, nchildren);
}

/* converted_type, then logicalType { member {} } for the annotations without payload. */
static void annotate(pq_tw *w, int converted, int logical)
{
    pq_tw_i32(w, 6, converted);
    pq_tw_struct_begin(w, 10);
    pq_tw_empty_struct(w, logical);
    pq_tw_struct_end(w);
}

static void annotate_int(pq_tw *w, int converted, int bits, int is_signed)
{
    pq_tw_i32(w, 6, converted);
    pq_tw_struct_begin(w, 10);
    pq_tw_struct_begin(w, PQ_LT_INTEGER);
    pq_tw_i8(w, 1, (int8_t)bits);
    pq_tw_bool(w, 2, is_signed);
    pq_tw_struct_end(w);
    pq_tw_struct_end(w);
}

static void string_leaf(pq_tw *w, int rep, const char *name)
{
    elem_begin(w, PQ_BYTE_ARRAY, rep, name, 0);
    annotate(w, PQ_CT_UTF8, PQ_LT_STRING);
    pq_tw_struct_end(w);
}

void pq_schema_write_column(pq_tw *w, const cp_pq_column *c)
{
    int rep = c->optional ? PQ_OPTIONAL : PQ_REQUIRED;
    switch (c->type) {
    case CP_PQ_I32:
        elem_begin(w, PQ_INT32, rep, c->name, 0);
        annotate_int(w, PQ_CT_INT_32, 32, 1);
        break;
    case CP_PQ_I64:
        elem_begin(w, PQ_INT64, rep, c->name, 0);
        annotate_int(w, PQ_CT_INT_64, 64, 1);
        break;
    case CP_PQ_U64:
        elem_begin(w, PQ_INT64, rep, c->name, 0);
        annotate_int(w, PQ_CT_UINT_64, 64, 0);
        break;
    case CP_PQ_TS_MS:
        elem_begin(w, PQ_INT64, rep, c->name, 0);
        pq_tw_i32(w, 6, PQ_CT_TIMESTAMP_MILLIS);
        pq_tw_struct_begin(w, 10);
        pq_tw_struct_begin(w, PQ_LT_TIMESTAMP);
        pq_tw_bool(w, 1, 1);           /* isAdjustedToUTC */
        pq_tw_struct_begin(w, 2);      /* unit: TimeUnit union */
        pq_tw_empty_struct(w, 1);      /* MILLIS */
        pq_tw_struct_end(w);
        pq_tw_struct_end(w);
        pq_tw_struct_end(w);
        break;
    case CP_PQ_BOOL:
        elem_begin(w, PQ_BOOLEAN, rep, c->name, 0);
        break;
    case CP_PQ_STRING:
        string_leaf(w, rep, c->name);
        return;
    case CP_PQ_BINARY:
        elem_begin(w, PQ_BYTE_ARRAY, rep, c->name, 0);
        break;
    case CP_PQ_MAP_STR_LIST:
    case CP_PQ_MAP_STR_STR:
        /* optional group name (MAP) { repeated group key_value { required key; value } } */
        elem_begin(w, -1, PQ_OPTIONAL, c->name, 1);
        annotate(w, PQ_CT_MAP, PQ_LT_MAP);
        pq_tw_struct_end(w);
        elem_begin(w, -1, PQ_REPEATED, "key_value", 2);
        pq_tw_struct_end(w);
        string_leaf(w, PQ_REQUIRED, "key");
        if (c->type == CP_PQ_MAP_STR_STR) {
            string_leaf(w, PQ_OPTIONAL, "value");
            return;
        }
        elem_begin(w, -1, PQ_OPTIONAL, "value", 1);
        annotate(w, PQ_CT_LIST, PQ_LT_LIST);
        pq_tw_struct_end(w);
        elem_begin(w, -1, PQ_REPEATED, "list", 1);
        pq_tw_struct_end(w);
        string_leaf(w, PQ_OPTIONAL, "element");
        return;
    default:
        w->err = CP_EINVAL;
        return;
    }
    pq_tw_struct_end(w);
}
