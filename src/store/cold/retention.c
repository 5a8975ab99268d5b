/* retention.c -- old cold objects and their rows go (storage.md "Cold tier": retention).
 *
 * Two phases, so a crash between them loses nothing it should keep: the catalog first
 * marks completed files that ended before the cut-off as to_delete (queries stop reading
 * them at once, their index rows go), then each marked object is deleted from the store
 * and only then its s3_files row. A rerun finishes what a crashed one started. */
#include "store/cp_cold.h"

#include <stdio.h>
#include <stdlib.h>

#define RETENTION_BATCH 256

typedef struct ret_item {
    char *uuid, *key;
} ret_item;

typedef struct ret_list {
    ret_item *v;
    size_t n, cap;
} ret_list;

static int collect(void *ud, const char *uuid, const char *key)
{
    ret_list *l = ud;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        ret_item *v = realloc(l->v, cap * sizeof *v);
        if (!v) return CP_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].uuid = strdup(uuid ? uuid : "");
    l->v[l->n].key = strdup(key ? key : "");
    if (!l->v[l->n].uuid || !l->v[l->n].key) {
        free(l->v[l->n].uuid);
        free(l->v[l->n].key);
        return CP_ENOMEM;
    }
    l->n++;
    return 0;
}

static void list_clear(ret_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].uuid);
        free(l->v[i].key);
    }
    l->n = 0;
}

int cp_retention_run(cp_catalog *cat, cp_ostore *store, int64_t before_ms, cp_retention_stats *st, char *err,
                     size_t errlen)
{
    memset(st, 0, sizeof *st);
    int r = cp_catalog_retention_mark(cat, before_ms, &st->marked);
    if (r != CP_OK) {
        snprintf(err, errlen, "retention: %s", cp_catalog_errmsg(cat));
        return r;
    }
    ret_list l = {0};
    for (;;) {
        list_clear(&l);
        r = cp_catalog_retention_list(cat, RETENTION_BATCH, collect, &l);
        if (r != CP_OK) {
            snprintf(err, errlen, "retention: %s", r == CP_ENOMEM ? "out of memory" : cp_catalog_errmsg(cat));
            break;
        }
        if (l.n == 0) break;
        for (size_t i = 0; r == CP_OK && i < l.n; i++) {
            char e[512];
            if (l.v[i].key[0] && cp_ostore_key_ok(l.v[i].key)) {
                r = store->ops->del(store, l.v[i].key, e, sizeof e);
                if (r == CP_ENOTFOUND) r = CP_OK;
                if (r != CP_OK) snprintf(err, errlen, "retention: delete %s: %s", l.v[i].key, e);
            }
            if (r == CP_OK) {
                r = cp_catalog_retention_forget(cat, l.v[i].uuid);
                if (r != CP_OK) snprintf(err, errlen, "retention: %s", cp_catalog_errmsg(cat));
                else st->deleted++;
            }
        }
        if (r != CP_OK || l.n < RETENTION_BATCH) break;
    }
    list_clear(&l);
    free(l.v);
    return r;
}
