/* cp_tls.c -- TLS 1.2/1.3 sessions of OpenSSL between two memory BIOs (cp_tls.h).
 *
 * OpenSSL does all of TLS; this file only moves bytes between the caller's buffers and
 * the two BIOs, and turns OpenSSL's error queue into one line of text. */
#include "common/cp_tls.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

struct cp_tls {
    SSL *ssl;
    BIO *rbio, *wbio; /* owned by ssl */
    int failed;
    char err[256];
};

/* OpenSSL's error queue (the last entry names the cause best) as "what: reason";
 * the queue is emptied so that it cannot leak into another session's message. */
static void ossl_err(char *err, size_t errlen, const char *what)
{
    unsigned long e, last = 0;
    while ((e = ERR_get_error()) != 0) last = e;
    if (!err || !errlen) return;
    if (!last) {
        snprintf(err, errlen, "%s", what);
        return;
    }
    char r[200];
    ERR_error_string_n(last, r, sizeof r);
    /* the result is used so that a long reason may be cut without a warning */
    if (snprintf(err, errlen, "%s: %s", what, r) < 0) err[0] = 0;
}

/* TLS 1.2 and 1.3 only, no renegotiation, no tickets or session cache (every agent
 * connection is long-lived: resumption saves nothing and tickets need key rotation). */
static SSL_CTX *ctx_new(const SSL_METHOD *method, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(method);
    if (!ctx) {
        ossl_err(err, errlen, "cannot create a TLS context");
        return NULL;
    }
    if (!SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)) {
        ossl_err(err, errlen, "cannot require TLS 1.2");
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_max_cert_list(ctx, CP_TLS_MAX_CERT_LIST);
    return ctx;
}

/* Loads a PEM chain (leaf first) and its key, and checks that they belong together. */
static int load_pair(SSL_CTX *ctx, const char *cert, const char *key, char *err, size_t errlen)
{
    char what[600];
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        snprintf(what, sizeof what, "certificate %s", cert);
        ossl_err(err, errlen, what);
        return CP_EINVAL;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        snprintf(what, sizeof what, "private key %s", key);
        ossl_err(err, errlen, what);
        return CP_EINVAL;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(what, sizeof what, "private key %s does not match certificate %s", key, cert);
        ossl_err(err, errlen, what);
        return CP_EINVAL;
    }
    return CP_OK;
}

int cp_tls_server_ctx(const char *cert, const char *key, const char *client_ca, struct ssl_ctx_st **out, char *err,
                      size_t errlen)
{
    *out = NULL;
    if (!cert || !key) {
        snprintf(err, errlen, "a TLS server needs a certificate and a key");
        return CP_EINVAL;
    }
    SSL_CTX *ctx = ctx_new(TLS_server_method(), err, errlen);
    if (!ctx) return CP_ENOMEM;
    int st = load_pair(ctx, cert, key, err, errlen);
    if (st == CP_OK && client_ca) {
        char what[600];
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(client_ca);
        if (!names || SSL_CTX_load_verify_locations(ctx, client_ca, NULL) != 1) {
            snprintf(what, sizeof what, "client CA %s", client_ca);
            ossl_err(err, errlen, what);
            if (names) sk_X509_NAME_pop_free(names, X509_NAME_free);
            st = CP_EINVAL;
        } else {
            SSL_CTX_set_client_CA_list(ctx, names); /* takes names */
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
            SSL_CTX_set_verify_depth(ctx, 8);
        }
    }
    if (st != CP_OK) {
        SSL_CTX_free(ctx);
        return st;
    }
    *out = ctx;
    return CP_OK;
}

int cp_tls_client_ctx(const char *ca, const char *cert, const char *key, struct ssl_ctx_st **out, char *err,
                      size_t errlen)
{
    *out = NULL;
    if (!cert != !key) {
        snprintf(err, errlen, "a client certificate needs its key (and a key its certificate)");
        return CP_EINVAL;
    }
    SSL_CTX *ctx = ctx_new(TLS_client_method(), err, errlen);
    if (!ctx) return CP_ENOMEM;
    int st = CP_OK;
    if (ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1 : SSL_CTX_set_default_verify_paths(ctx) != 1) {
        char what[600];
        snprintf(what, sizeof what, "CA %s", ca ? ca : "(system trust store)");
        ossl_err(err, errlen, what);
        st = CP_EINVAL;
    }
    if (st == CP_OK && cert) st = load_pair(ctx, cert, key, err, errlen);
    if (st != CP_OK) {
        SSL_CTX_free(ctx);
        return st;
    }
    /* the chain is verified; the host name is not (the agent connects by address) */
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    *out = ctx;
    return CP_OK;
}

void cp_tls_ctx_free(struct ssl_ctx_st *ctx) { SSL_CTX_free(ctx); }

void cp_tls_ctx_describe(struct ssl_ctx_st *ctx, char *out, size_t outlen)
{
    X509 *x = ctx ? SSL_CTX_get0_certificate(ctx) : NULL;
    if (!x) {
        snprintf(out, outlen, "(no certificate)");
        return;
    }
    char cn[256] = "?", serial[80] = "?", expires[16] = "?";
    X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof cn);
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    char *hex = bn ? BN_bn2hex(bn) : NULL;
    if (hex) snprintf(serial, sizeof serial, "%s", hex);
    OPENSSL_free(hex);
    BN_free(bn);
    struct tm tm;
    if (ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1) strftime(expires, sizeof expires, "%Y-%m-%d", &tm);
    snprintf(out, outlen, "CN=%s, serial %s, expires %s", cn, serial, expires);
}

/* ---- sessions ------------------------------------------------------------------------------ */

int cp_tls_new(struct ssl_ctx_st *ctx, int server, cp_tls **out)
{
    *out = NULL;
    cp_tls *t = calloc(1, sizeof *t);
    if (!t) return CP_ENOMEM;
    t->ssl = SSL_new(ctx); /* holds a reference to ctx */
    t->rbio = BIO_new(BIO_s_mem());
    t->wbio = BIO_new(BIO_s_mem());
    if (!t->ssl || !t->rbio || !t->wbio) {
        BIO_free(t->rbio);
        BIO_free(t->wbio);
        SSL_free(t->ssl);
        free(t);
        ERR_clear_error();
        return CP_ENOMEM;
    }
    BIO_set_mem_eof_return(t->rbio, -1); /* empty = "retry later", not EOF */
    SSL_set_bio(t->ssl, t->rbio, t->wbio);
    if (server) SSL_set_accept_state(t->ssl);
    else SSL_set_connect_state(t->ssl);
    *out = t;
    return CP_OK;
}

void cp_tls_free(cp_tls *t)
{
    if (!t) return;
    SSL_free(t->ssl); /* frees both BIOs */
    free(t);
}

int cp_tls_feed(cp_tls *t, const uint8_t *p, size_t n)
{
    while (n) {
        int k = BIO_write(t->rbio, p, n > INT_MAX ? INT_MAX : (int)n);
        if (k <= 0) {
            ERR_clear_error();
            return CP_ENOMEM;
        }
        p += k;
        n -= (size_t)k;
    }
    return CP_OK;
}

/* A failed session: the reason, with the certificate verification result when that
 * is what failed (an untrusted or expired peer certificate). */
static int fail(cp_tls *t, int sslerr)
{
    t->failed = 1;
    long v = SSL_get_verify_result(t->ssl);
    char what[160];
    if (v != X509_V_OK)
        snprintf(what, sizeof what, "certificate verification failed (%s)", X509_verify_cert_error_string(v));
    else
        snprintf(what, sizeof what, "%s", sslerr == SSL_ERROR_SYSCALL ? "TLS I/O error" : "TLS error");
    ossl_err(t->err, sizeof t->err, what);
    return CP_EPROTO;
}

long cp_tls_read(cp_tls *t, uint8_t *out, size_t cap)
{
    if (t->failed) return CP_EPROTO;
    size_t got = 0;
    if (SSL_read_ex(t->ssl, out, cap, &got) == 1) return (long)got;
    int e = SSL_get_error(t->ssl, 0);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
    if (e == SSL_ERROR_ZERO_RETURN) return CP_TLS_CLOSED;
    return fail(t, e);
}

int cp_tls_write(cp_tls *t, const uint8_t *p, size_t n)
{
    if (t->failed) return CP_EPROTO;
    if (!SSL_is_init_finished(t->ssl)) return CP_AGAIN;
    size_t done = 0;
    if (!n) return CP_OK;
    if (SSL_write_ex(t->ssl, p, n, &done) == 1 && done == n) return CP_OK; /* a memory BIO takes it all */
    return fail(t, SSL_get_error(t->ssl, 0));
}

int cp_tls_handshake(cp_tls *t)
{
    if (t->failed) return CP_EPROTO;
    int r = SSL_do_handshake(t->ssl);
    if (r == 1) return CP_OK;
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return CP_AGAIN;
    return fail(t, e);
}

int cp_tls_done(const cp_tls *t) { return SSL_is_init_finished(t->ssl); }

void cp_tls_close_notify(cp_tls *t)
{
    if (t->failed || !SSL_is_init_finished(t->ssl)) return;
    SSL_shutdown(t->ssl); /* queues the alert; we do not wait for the peer's */
    ERR_clear_error();
}

int cp_tls_take(cp_tls *t, cp_buf *out)
{
    size_t n = BIO_ctrl_pending(t->wbio);
    if (!n) return CP_OK;
    if (cp_buf_reserve(out, n) != CP_OK) return CP_ENOMEM;
    size_t got = 0;
    if (BIO_read_ex(t->wbio, out->data + out->len, n, &got) != 1) got = 0;
    out->len += got;
    return CP_OK;
}

size_t cp_tls_pending(const cp_tls *t) { return BIO_ctrl_pending(t->wbio); }

const char *cp_tls_errmsg(const cp_tls *t) { return t->err[0] ? t->err : "no error"; }

struct ssl_st *cp_tls_ssl(cp_tls *t) { return t->ssl; }
