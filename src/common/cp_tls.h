/* cp_tls.h -- TLS 1.2/1.3 (OpenSSL) over memory buffers: no sockets, no event loop.
 *
 * A session (cp_tls) is an SSL object between two memory BIOs. The caller moves bytes:
 * ciphertext read from its socket goes in with cp_tls_feed, plaintext comes out of
 * cp_tls_read; plaintext to send goes in with cp_tls_write, and the ciphertext to put on
 * the socket (handshake records, alerts, application data) is taken with cp_tls_take.
 * The agent listener (src/server/tls.c, conn.c) and the emulator's driver
 * (src/agent/driver.c) both drive their libuv streams this way.
 *
 * Bounds: the input BIO holds at most what the caller fed since the last cp_tls_read
 * loop (the callers feed one socket read, <= 64 KiB, and read until CP_AGAIN) plus one
 * partial record (<= ~17 KiB); handshake messages are bounded by OpenSSL
 * (certificate chains by CP_TLS_MAX_CERT_LIST). Contexts are reference counted by
 * OpenSSL: a session keeps its context alive, so a context can be replaced (a
 * certificate reload) while sessions made from the old one go on.
 *
 * Errors are returned, never printed: the functions that fail leave a one-line reason
 * (OpenSSL's error queue, or the verification result) in err / cp_tls_errmsg().
 */
#ifndef CP_TLS_H
#define CP_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "common/cp_common.h"

struct ssl_ctx_st; /* OpenSSL's SSL_CTX */
struct ssl_st;     /* OpenSSL's SSL */

#define CP_TLS_MAX_CERT_LIST (64 * 1024) /* largest certificate chain a peer may send */

/* A server context: the certificate chain (PEM, leaf first) and its private key (PEM),
 * TLS 1.2 or 1.3, no renegotiation, no session tickets. client_ca (PEM, one or more CA
 * certificates) != NULL: the peer must present a certificate that chains to one of them
 * (mutual TLS), and the CA names are sent in the certificate request. */
int cp_tls_server_ctx(const char *cert, const char *key, const char *client_ca, struct ssl_ctx_st **out, char *err,
                      size_t errlen);
/* A client context that verifies the server's chain against ca (PEM; NULL = the
 * system's trust store) without checking the host name (as the profiler agent does),
 * and presents cert/key (PEM, both or neither) when the server asks for a client
 * certificate. */
int cp_tls_client_ctx(const char *ca, const char *cert, const char *key, struct ssl_ctx_st **out, char *err,
                      size_t errlen);
void cp_tls_ctx_free(struct ssl_ctx_st *ctx);
/* One line about the context's certificate: "CN=..., expires YYYY-MM-DD" (for logs). */
void cp_tls_ctx_describe(struct ssl_ctx_st *ctx, char *out, size_t outlen);

typedef struct cp_tls cp_tls;

/* A session of ctx (which it holds a reference to): server = 1 accepts, 0 connects. */
int cp_tls_new(struct ssl_ctx_st *ctx, int server, cp_tls **out);
void cp_tls_free(cp_tls *t);

/* Ciphertext from the peer. CP_OK or CP_ENOMEM. */
int cp_tls_feed(cp_tls *t, const uint8_t *p, size_t n);
/* Advances the handshake with what was fed and decrypts into out[0..cap): returns the
 * plaintext bytes (> 0); 0 when nothing more comes out until more ciphertext is fed
 * (the handshake may have made records to send: cp_tls_take); CP_TLS_CLOSED when the
 * peer sent close_notify; CP_EPROTO on a failed handshake or a bad record
 * (cp_tls_errmsg says why; an alert for the peer may wait in cp_tls_take). */
#define CP_TLS_CLOSED (-100)
long cp_tls_read(cp_tls *t, uint8_t *out, size_t cap);
/* Encrypts p[0..n) whole. Before the handshake is done nothing is taken and CP_AGAIN is
 * returned (call again after cp_tls_read made progress). CP_OK, CP_AGAIN, CP_EPROTO. */
int cp_tls_write(cp_tls *t, const uint8_t *p, size_t n);
/* Starts or continues the handshake (a client's first call makes its ClientHello):
 * CP_OK once done, CP_AGAIN while it needs the peer, CP_EPROTO on failure. */
int cp_tls_handshake(cp_tls *t);
int cp_tls_done(const cp_tls *t); /* the handshake is complete */
/* Queues a close_notify alert (after the handshake; otherwise nothing). */
void cp_tls_close_notify(cp_tls *t);
/* Ciphertext waiting to be sent: appended to out and dropped from the session.
 * CP_OK or CP_ENOMEM. */
int cp_tls_take(cp_tls *t, cp_buf *out);
size_t cp_tls_pending(const cp_tls *t);
const char *cp_tls_errmsg(const cp_tls *t);
struct ssl_st *cp_tls_ssl(cp_tls *t); /* the peer certificate, the protocol version */

#endif
