/* importer.c -- cp_importer: the calls of a foreign-trace import into the catalog. */
#include "store/cp_importer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cp_importer {
    cp_catalog *cat;
    cp_import *im;
    int registered;
    uint64_t pending;          /* calls put since the last commit */
    uint64_t pending_bytes;    /* and their blob bytes */
    uint64_t duplicates;
    int failed;
    char err[320];
    cp_buf pod_id;
};

static int store_fail(cp_importer *ip, int st, const char *what)
{
    snprintf(ip->err, sizeof ip->err, "%s: %s", what, cp_catalog_errmsg(ip->cat));
    ip->failed = 1;
    return st < 0 ? st : CP_EIO;
}

static int on_call(void *ud, const cp_call *c)
{
    cp_importer *ip = ud;
    int st;
    if (!ip->registered) {
        cp_buf_reset(&ip->pod_id);
        if (cp_buf_printf(&ip->pod_id, "%.*s/%.*s", (int)c->ns_len, c->ns, (int)c->pod_len, c->pod) != CP_OK ||
            cp_buf_putc(&ip->pod_id, 0) != CP_OK)
            return CP_ENOMEM;
        /* the call's strings are NUL-terminated: the import keeps its identity that way */
        cp_catalog_pod pod = {c->ns, c->service, c->pod, (const char *)ip->pod_id.data, c->restart_ms};
        if ((st = cp_catalog_pod_register(ip->cat, &pod, c->restart_ms)) != CP_OK)
            return store_fail(ip, st, "registering the pod");
        ip->registered = 1;
    }
    st = cp_catalog_call_exists(ip->cat, c);
    if (st < 0) return store_fail(ip, st, "looking for the call");
    if (st == 1) {
        ip->duplicates++;
        return 0;
    }
    if ((st = cp_catalog_call_put(ip->cat, c)) != CP_OK) return store_fail(ip, st, "storing a call");
    ip->pending_bytes += c->trace_len + c->params_json_len + c->method_len;
    /* a transaction's pages stay in the connection's cache until it commits: bounded */
    if (++ip->pending >= CP_IMPORTER_BATCH || ip->pending_bytes >= CP_IMPORTER_BATCH_BYTES) {
        ip->pending = ip->pending_bytes = 0;
        if ((st = cp_catalog_commit(ip->cat)) != CP_OK) return store_fail(ip, st, "commit");
    }
    return 0;
}

cp_importer *cp_importer_new(cp_catalog *cat, const cp_import_opts *o)
{
    cp_importer *ip = calloc(1, sizeof *ip);
    if (!ip) return NULL;
    ip->cat = cat;
    cp_buf_init(&ip->pod_id);
    cp_import_sink sink = {.ud = ip, .on_call = on_call};
    ip->im = cp_import_new(o, &sink);
    if (!ip->im) {
        cp_importer_free(ip);
        return NULL;
    }
    return ip;
}

void cp_importer_free(cp_importer *ip)
{
    if (!ip) return;
    cp_import_free(ip->im);
    cp_buf_free(&ip->pod_id);
    free(ip);
}

int cp_importer_feed(cp_importer *ip, const uint8_t *p, size_t n) { return cp_import_feed(ip->im, p, n); }

/* The pod restart's last_active: the end of its latest call (discovery's freshness). */
static int touch(cp_importer *ip)
{
    cp_import_report r;
    cp_import_get_report(ip->im, &r);
    if (!ip->registered || !r.pod) return CP_OK;
    cp_catalog_pod pod = {r.ns, r.service, r.pod, (const char *)ip->pod_id.data, r.restart_ms};
    int st = cp_catalog_pod_touch(ip->cat, &pod, r.last_ms > r.restart_ms ? r.last_ms : r.restart_ms);
    return st == CP_OK ? CP_OK : store_fail(ip, st, "pod touch");
}

/* The batches were committed without an fsync each; the last transaction (the pod's touch,
 * a write) is committed durably, which makes every earlier one durable too: the answer
 * to an import is a promise. */
static int end_durably(cp_importer *ip)
{
    if (ip->failed) return CP_EIO;
    int st = cp_catalog_commit(ip->cat);
    if (st != CP_OK) return store_fail(ip, st, "commit");
    if (!ip->registered) return CP_OK; /* nothing was stored */
    if ((st = cp_catalog_set_durable(ip->cat, 1)) != CP_OK) return store_fail(ip, st, "commit");
    st = touch(ip);
    if (st == CP_OK && (st = cp_catalog_commit(ip->cat)) != CP_OK) store_fail(ip, st, "commit");
    int st2 = cp_catalog_set_durable(ip->cat, 0);
    if (st == CP_OK && st2 != CP_OK) st = store_fail(ip, st2, "commit");
    return st;
}

int cp_importer_finish(cp_importer *ip)
{
    int st = cp_import_finish(ip->im);
    /* what was handed over is kept even when the input failed (spec §4) */
    int cst = end_durably(ip);
    return cst != CP_OK ? cst : st;
}

int cp_importer_abort(cp_importer *ip) { return end_durably(ip); }

void cp_importer_report(const cp_importer *ip, cp_import_report *r, uint64_t *duplicates)
{
    cp_import_get_report(ip->im, r);
    if (ip->failed) r->error = ip->err;
    r->calls -= ip->duplicates < r->calls ? ip->duplicates : r->calls;
    if (duplicates) *duplicates = ip->duplicates;
}

int cp_importer_report_json(const cp_importer *ip, cp_buf *out)
{
    cp_import_report r;
    uint64_t dup;
    cp_importer_report(ip, &r, &dup);
    size_t at = out->len;
    int st = cp_import_report_json(&r, out);
    if (st != CP_OK || out->len == at) return st;
    out->len--; /* reopen the object */
    return cp_buf_printf(out, ",\"duplicates\":%" PRIu64 "}", dup);
}
