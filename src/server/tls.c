/* tls.c -- the agent port over TLS: the server context and its SIGHUP reload, a session
 * per connection, and what the client certificate says about the agent's namespace.
 *
 * The records themselves are moved in conn.c: ciphertext from the socket is fed to the
 * connection's cp_tls (memory BIOs), the plaintext goes through the same command parser
 * as on the plain port, and the replies are sealed before they are written. */
#include "server_internal.h"

#include "common/cp_tls.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

static const char *const ns_sources[] = {"", "the subject CN", "the subject OU", "the URI SAN"};

static int make_ctx(cp_server *s, struct ssl_ctx_st **out, char *err, size_t errlen)
{
    const cp_server_config *cfg = s->cfg;
    return cp_tls_server_ctx(cfg->tls_cert, cfg->tls_key, cfg->tls_client_ca, out, err, errlen);
}

/* SIGHUP: new connections get a context of the files as they are now; live sessions
 * keep a reference to the one they were made from. A file that does not load leaves
 * the old context in place. */
static void on_sighup(uv_signal_t *h, int signum)
{
    cp_server *s = h->data;
    (void)signum;
    struct ssl_ctx_st *ctx;
    char err[512], what[400];
    if (make_ctx(s, &ctx, err, sizeof err) != CP_OK) {
        cp_srv_log(s, CP_LOG_ERROR, "SIGHUP: agent TLS certificates not reloaded, keeping the old ones: %s", err);
        return;
    }
    cp_tls_ctx_free(s->tls_ctx);
    s->tls_ctx = ctx;
    cp_tls_ctx_describe(ctx, what, sizeof what);
    cp_srv_log(s, CP_LOG_INFO, "SIGHUP: agent TLS certificates reloaded (%s); live connections keep theirs", what);
}

int cp_srv_tls_open(cp_server *s, char *err, size_t errlen)
{
    const cp_server_config *cfg = s->cfg;
    if (cfg->tls_ns_from != CP_TLS_NS_NONE && !cfg->tls_client_ca) {
        snprintf(err, errlen, "the namespace can only come from a client certificate: set the client CA too");
        return CP_EINVAL;
    }
    int st = make_ctx(s, &s->tls_ctx, err, errlen);
    if (st != CP_OK) return st;
    s->tls_buf = malloc(CP_SRV_READ_BUF);
    if (!s->tls_buf) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    uv_signal_init(&s->loop, &s->sighup);
    s->sighup.data = s;
    uv_signal_start(&s->sighup, on_sighup, SIGHUP);
    uv_unref((uv_handle_t *)&s->sighup); /* never what keeps the loop running */
    char what[400];
    cp_tls_ctx_describe(s->tls_ctx, what, sizeof what);
    cp_srv_log(s, CP_LOG_INFO, "agent TLS: certificate %s%s%s%s%s", what,
               cfg->tls_client_ca ? "; client certificates signed by " : "",
               cfg->tls_client_ca ? cfg->tls_client_ca : "", cfg->tls_ns_from ? "; namespace from " : "",
               ns_sources[cfg->tls_ns_from & 3]);
    return CP_OK;
}

void cp_srv_tls_close(cp_server *s)
{
    cp_tls_ctx_free(s->tls_ctx);
    s->tls_ctx = NULL;
    free(s->tls_buf);
    s->tls_buf = NULL;
}

int cp_srv_tls_start(cp_conn *c)
{
    c->tls_deadline = uv_now(&c->srv->loop) + c->srv->cfg->tls_handshake_ms;
    return cp_tls_new(c->srv->tls_ctx, 1, &c->tls);
}

/* ---- the namespace of a client certificate ----------------------------------------------------- */

/* The first entry of a subject attribute (CN, OU), as UTF-8. */
static char *subject_entry(X509 *x, int nid)
{
    X509_NAME *name = X509_get_subject_name(x);
    int i = X509_NAME_get_index_by_NID(name, nid, -1);
    if (i < 0) return NULL;
    unsigned char *utf8 = NULL;
    int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i)));
    if (n < 0) return NULL;
    char *d = strndup((const char *)utf8, (size_t)n);
    OPENSSL_free(utf8);
    return d;
}

/* NAME of the first URI SAN that has a /ns/NAME path segment. */
static char *san_uri_ns(X509 *x)
{
    GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    char *out = NULL;
    for (int i = 0; names && !out && i < sk_GENERAL_NAME_num(names); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
        if (g->type != GEN_URI) continue;
        const char *u = (const char *)ASN1_STRING_get0_data(g->d.uniformResourceIdentifier);
        size_t n = (size_t)ASN1_STRING_length(g->d.uniformResourceIdentifier);
        const char *scheme = memchr(u, ':', n);
        if (!scheme || (size_t)(scheme - u) + 3 > n || memcmp(scheme, "://", 3)) continue;
        const char *path = memchr(scheme + 3, '/', n - (size_t)(scheme + 3 - u)); /* after the authority */
        for (const char *p = path; p && !out;) {
            const char *end = u + n, *next = memchr(p + 1, '/', (size_t)(end - p - 1));
            if (next && next - p == 3 && !memcmp(p, "/ns", 3)) {
                const char *v = next + 1, *ve = memchr(v, '/', (size_t)(end - v));
                if (!ve) ve = end;
                if (ve > v) out = strndup(v, (size_t)(ve - v));
            }
            p = next;
        }
    }
    GENERAL_NAMES_free(names);
    return out;
}

int cp_srv_tls_ready(cp_conn *c)
{
    cp_server *s = c->srv;
    SSL *ssl = cp_tls_ssl(c->tls);
    c->tls_ready = 1;
    if (s->cfg->tls_ns_from == CP_TLS_NS_NONE) {
        cp_srv_log(s, CP_LOG_DEBUG, "%s: TLS handshake done (%s)", c->peer, SSL_get_version(ssl));
        return CP_OK;
    }
    X509 *x = SSL_get1_peer_certificate(ssl); /* verified against the client CA */
    if (x) {
        int from = s->cfg->tls_ns_from;
        c->tls_ns = from == CP_TLS_NS_CN ? subject_entry(x, NID_commonName)
                  : from == CP_TLS_NS_OU ? subject_entry(x, NID_organizationalUnitName)
                                         : san_uri_ns(x);
        X509_free(x);
    }
    if (!c->tls_ns || !c->tls_ns[0] || strlen(c->tls_ns) > CP_WIRE_MAX_FIELD) {
        cp_srv_log(s, CP_LOG_WARN, "%s: refused: its client certificate names no namespace in %s", c->peer,
                   ns_sources[s->cfg->tls_ns_from & 3]);
        return CP_EPROTO;
    }
    cp_srv_log(s, CP_LOG_DEBUG, "%s: TLS handshake done (%s), namespace %s from its certificate", c->peer,
               SSL_get_version(ssl), c->tls_ns);
    return CP_OK;
}

int cp_srv_tls_ns_ok(cp_conn *c, cp_field ns)
{
    if (!c->tls_ns) return 1;
    if (strlen(c->tls_ns) == ns.n && !memcmp(c->tls_ns, ns.p, ns.n)) return 1;
    cp_srv_log(c->srv, CP_LOG_WARN, "%s: namespace '%.*s' refused: its certificate allows only '%s'", c->peer,
               (int)(ns.n > 200 ? 200 : ns.n), (const char *)ns.p, c->tls_ns);
    return 0;
}
