/* auth_oidc.c -- OpenID Connect for the API and the UI (auth_oidc.h, README "Security").
 *
 * Keys: at start the provider's discovery document (its issuer must equal the configured
 * one exactly) and its JWKS; a token naming a kid we do not hold refetches the JWKS (at
 * most once per OIDC_REFETCH_MS), so a key rotation at the provider is followed, and a
 * key is dropped once the JWKS no longer lists it. Documents are bounded (OIDC_MAX_DOC),
 * and so are the keys kept (OIDC_MAX_KEYS).
 *
 * Tokens: compact JWS only. The algorithm must fit the key (RSA: RS256 or PS256, EC P-256:
 * ES256, and the JWK's own "alg" when it has one), so neither `none` nor an HMAC keyed with
 * a public key is ever accepted; cjose checks the signature. Then iss (exact), aud, exp
 * (required) and nbf with OIDC_SKEW_S of clock skew. A verified bearer token is cached by
 * its SHA-256 until it expires (a bounded direct-mapped table), so an API request with a
 * token already seen costs a hash, not an RSA verification.
 *
 * UI: /auth/login starts the authorization-code flow with state, nonce and PKCE (S256); the
 * pending logins are kept here (bounded, OIDC_PENDING_MS). /auth/callback exchanges the
 * code, validates the ID token (aud = the client id, the nonce) and opens a server-side
 * session (random id in the cookie cp_session; bounded table, OIDC_SESSION_MS).
 * /auth/logout drops it and goes to the provider's end_session_endpoint when it has one.
 *
 * Session ids and states are looked up by their SHA-256 (what is compared is a digest, so
 * the comparison's timing tells nothing about the secret). Nothing secret is logged: the
 * reasons a token is refused name the check, never the token.
 */
#include "auth_oidc.h"

#include <cjose/cjose.h>
#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OIDC_MAX_DOC (1u << 20)          /* discovery, JWKS, token responses */
#define OIDC_MAX_KEYS 64                 /* keys of the JWKS kept */
#define OIDC_MAX_TOKEN 16384             /* bytes of a JWS */
#define OIDC_SKEW_S 60                   /* clock skew allowed on exp and nbf */
#define OIDC_REFETCH_MS 10000            /* at most one JWKS refetch per 10 s (unknown kid) */
#define OIDC_FETCH_TIMEOUT_S 10L         /* one request to the provider */
#define OIDC_CACHE_SLOTS 1024            /* verified bearer tokens (direct-mapped) */
#define OIDC_MAX_PENDING 1024            /* logins between /auth/login and /auth/callback */
#define OIDC_PENDING_MS (10 * 60 * 1000LL)
#define OIDC_MAX_SESSIONS 1024           /* UI sessions */
#define OIDC_SESSION_MS (8 * 3600 * 1000LL)
#define OIDC_MAX_RETURN 2048             /* bytes of a return path */
#define OIDC_MAX_URL 2048                /* bytes of an endpoint URL */
#define OIDC_MAX_SECRET 4096             /* bytes of the client secret file */
#define OIDC_COOKIE "cp_session"

typedef struct oidc_key {
    char kid[256];
    char alg[16];          /* the JWK's "alg"; "" = any that fits kty */
    int ec;                /* 1: EC P-256, 0: RSA */
    cjose_jwk_t *jwk;
} oidc_key;

/* A verified token: its identity packed (user, then the groups, each NUL-terminated), not a
 * whole cp_identity, so that a hit copies a few hundred bytes, not 8 KiB. */
typedef struct oidc_cached {
    uint8_t digest[SHA256_DIGEST_LENGTH];
    int64_t until_ms;      /* 0 = empty */
    int64_t expires_ms;
    uint16_t ngroups, len; /* len: bytes of names used; 0 = does not fit (not cached) */
    char names[1024];
} oidc_cached;

typedef struct oidc_pending {
    uint8_t state[SHA256_DIGEST_LENGTH]; /* SHA-256 of the state */
    int64_t created_ms;    /* 0 = empty */
    char nonce[64];
    char verifier[64];
    char redirect_uri[OIDC_MAX_URL];
    char ret[OIDC_MAX_RETURN];
} oidc_pending;

typedef struct oidc_session {
    uint8_t sid[SHA256_DIGEST_LENGTH];   /* SHA-256 of the cookie's value */
    int64_t expires_ms;
    char *id_token;        /* for the logout's id_token_hint */
    cp_identity id;
} oidc_session;

struct http_oidc {
    /* from the configuration and the discovery document (fixed after start) */
    char issuer[OIDC_MAX_URL];
    char client_id[256];
    char audience[256];
    char *secret;          /* NULL: a public client */
    char scopes[512];
    char user_claim[128];  /* "" = preferred_username, email, sub */
    char roles_claim[256]; /* "" = none */
    char public_url[OIDC_MAX_URL];
    int https;             /* the server speaks HTTPS (redirect URIs from Host) */
    char authorization_endpoint[OIDC_MAX_URL];
    char token_endpoint[OIDC_MAX_URL];
    char jwks_uri[OIDC_MAX_URL];
    char end_session_endpoint[OIDC_MAX_URL]; /* "" = none */
    int secret_post;       /* the token endpoint takes client_secret_post only */

    /* keys: read-locked while a signature is checked, write-locked to swap the set */
    pthread_rwlock_t keys_mu;
    oidc_key keys[OIDC_MAX_KEYS];
    size_t nkeys;
    pthread_mutex_t fetch_mu;  /* one JWKS refetch at a time */
    int64_t fetched_ms;

    pthread_mutex_t cache_mu;
    oidc_cached *cache;        /* OIDC_CACHE_SLOTS */

    pthread_mutex_t ui_mu;     /* pending logins and sessions */
    oidc_pending *pending;     /* OIDC_MAX_PENDING */
    oidc_session *sessions;    /* OIDC_MAX_SESSIONS */
};

typedef struct http_oidc http_oidc;

/* ---- small helpers ------------------------------------------------------------------------ */

static int64_t now_ms(void) { return cp_now_ms(); }

/* SHA-256 fetched once: OpenSSL 3's one-shot SHA256() looks the algorithm up on every call,
 * which costs more than hashing a token (this is on every API request with a bearer). */
static EVP_MD *sha256_md;

static void sha256_fetch(void) { sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL); }

static void sha256(const void *p, size_t n, uint8_t out[SHA256_DIGEST_LENGTH])
{
    if (!sha256_md || !EVP_Digest(p, n, out, NULL, sha256_md, NULL)) SHA256((const unsigned char *)p, n, out);
}

/* base64url (no padding) of n bytes into out (>= 4n/3 + 2 bytes). 0 or -1. */
static int b64url(const uint8_t *p, size_t n, char *out, size_t outlen)
{
    char *s = NULL;
    size_t slen = 0;
    cjose_err e;
    if (!cjose_base64url_encode(p, n, &s, &slen, &e)) return -1;
    int ok = slen < outlen;
    if (ok) {
        memcpy(out, s, slen);
        out[slen] = 0;
    }
    cjose_get_dealloc()(s);
    return ok ? 0 : -1;
}

/* 32 random bytes as base64url (43 characters). 0 or -1. */
static int random_token(char *out, size_t outlen)
{
    uint8_t r[32];
    if (RAND_bytes(r, sizeof r) != 1) return -1;
    int rc = b64url(r, sizeof r, out, outlen);
    OPENSSL_cleanse(r, sizeof r);
    return rc;
}

static int copy_str(char *dst, size_t dstlen, const char *src)
{
    size_t n = strlen(src);
    if (n >= dstlen) return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

/* 1 if host (of n bytes) is a loopback name or address. */
static int loopback_host(const char *host, size_t n)
{
    if (n == 9 && !strncasecmp(host, "localhost", 9)) return 1;
    if (n == 5 && !strncmp(host, "[::1]", 5)) return 1;
    if (n >= 4 && !strncmp(host, "127.", 4)) {
        for (size_t i = 4; i < n; i++)
            if (!isdigit((unsigned char)host[i]) && host[i] != '.') return 0;
        return 1;
    }
    return 0;
}

/* The host part of an authority "host[:port]" ("[v6]:port" included): its length. */
static size_t authority_host_len(const char *a, size_t n)
{
    if (n && a[0] == '[') {
        const char *e = memchr(a, ']', n);
        return e ? (size_t)(e - a) + 1 : n;
    }
    const char *c = memchr(a, ':', n);
    return c ? (size_t)(c - a) : n;
}

/* An endpoint of the provider may be used: https, or http on a loopback host; no user
 * info, no fragment, no control characters or spaces. */
static int url_ok(const char *url)
{
    if (strlen(url) >= OIDC_MAX_URL) return 0;
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f || *p == '#') return 0;
    const char *auth;
    int http;
    if (!strncmp(url, "https://", 8)) auth = url + 8, http = 0;
    else if (!strncmp(url, "http://", 7)) auth = url + 7, http = 1;
    else return 0;
    size_t alen = strcspn(auth, "/?");
    if (alen == 0 || memchr(auth, '@', alen)) return 0;
    return !http || loopback_host(auth, authority_host_len(auth, alen));
}

/* ---- requests to the provider (libcurl) ------------------------------------------------------ */

typedef struct fetch_ctx {
    cp_buf body;
    int too_big;
} fetch_ctx;

static size_t fetch_write(char *p, size_t size, size_t n, void *ud)
{
    fetch_ctx *c = ud;
    size_t len = size * n;
    if (c->body.len + len > OIDC_MAX_DOC) {
        c->too_big = 1;
        return 0;
    }
    return cp_buf_append(&c->body, p, len) == CP_OK ? len : 0;
}

/* GET (form == NULL) or POST form to url; basic auth with user:pass when user is set.
 * 0 with the body (NUL-terminated) in out and the status in *status, or -1 with err. */
static int fetch(const char *url, const char *form, const char *user, const char *pass, cp_buf *out, long *status,
                 char *err, size_t errlen)
{
    CURL *c = curl_easy_init();
    if (!c) return snprintf(err, errlen, "curl_easy_init failed"), -1;
    fetch_ctx ctx = {.body = {0}};
    cp_buf_init(&ctx.body);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, OIDC_FETCH_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)OIDC_MAX_DOC);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fetch_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &ctx);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    if (form) curl_easy_setopt(c, CURLOPT_POSTFIELDS, form);
    if (user) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERNAME, user);
        curl_easy_setopt(c, CURLOPT_PASSWORD, pass);
    }
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK || cp_buf_append(&ctx.body, "", 1) != CP_OK) {
        snprintf(err, errlen, "%.300s: %s", url,
                 ctx.too_big ? "the answer is larger than 1 MiB" : curl_easy_strerror(rc));
        cp_buf_free(&ctx.body);
        return -1;
    }
    ctx.body.len--; /* the NUL is not part of the body */
    *out = ctx.body;
    return 0;
}

/* GET url expecting 200 and a JSON object. */
static json_t *fetch_json(const char *url, char *err, size_t errlen)
{
    cp_buf b;
    long st = 0;
    if (fetch(url, NULL, NULL, NULL, &b, &st, err, errlen) != 0) return NULL;
    json_t *doc = NULL;
    if (st != 200) {
        snprintf(err, errlen, "%.300s: HTTP %ld", url, st);
    } else {
        json_error_t je;
        doc = json_loadb((const char *)b.data, b.len, JSON_REJECT_DUPLICATES, &je);
        if (!doc || !json_is_object(doc)) {
            snprintf(err, errlen, "%.300s: not a JSON object", url);
            json_decref(doc);
            doc = NULL;
        }
    }
    cp_buf_free(&b);
    return doc;
}

/* ---- keys ------------------------------------------------------------------------------------ */

static void keys_free(oidc_key *k, size_t n)
{
    for (size_t i = 0; i < n; i++) cjose_jwk_release(k[i].jwk);
}

/* One JWKS entry into k: 1 kept, 0 skipped (not a signing key we use). */
static int key_parse(json_t *j, oidc_key *k)
{
    const char *kty = json_string_value(json_object_get(j, "kty"));
    const char *use = json_string_value(json_object_get(j, "use"));
    const char *alg = json_string_value(json_object_get(j, "alg"));
    const char *kid = json_string_value(json_object_get(j, "kid"));
    const char *crv = json_string_value(json_object_get(j, "crv"));
    if (!kty || (use && strcmp(use, "sig"))) return 0;
    memset(k, 0, sizeof *k);
    if (!strcmp(kty, "RSA")) {
        if (alg && strcmp(alg, "RS256") && strcmp(alg, "PS256")) return 0;
    } else if (!strcmp(kty, "EC")) {
        if (!crv || strcmp(crv, "P-256") || (alg && strcmp(alg, "ES256"))) return 0;
        k->ec = 1;
    } else {
        return 0; /* oct (HMAC) and the rest: never */
    }
    if (json_object_get(j, "d")) return 0; /* a private key has no business in a JWKS */
    if ((kid && copy_str(k->kid, sizeof k->kid, kid)) || (alg && copy_str(k->alg, sizeof k->alg, alg))) return 0;
    char *text = json_dumps(j, JSON_COMPACT);
    if (!text) return 0;
    cjose_err e;
    k->jwk = cjose_jwk_import(text, strlen(text), &e);
    free(text);
    return k->jwk != NULL;
}

/* Fetches the JWKS and replaces the keys with it (the old set stays on failure). */
static int jwks_load(http_oidc *o, char *err, size_t errlen)
{
    json_t *doc = fetch_json(o->jwks_uri, err, errlen);
    if (!doc) return -1;
    json_t *arr = json_object_get(doc, "keys");
    if (!json_is_array(arr)) {
        json_decref(doc);
        return snprintf(err, errlen, "%.300s: no \"keys\" array", o->jwks_uri), -1;
    }
    oidc_key fresh[OIDC_MAX_KEYS];
    size_t n = 0, i;
    json_t *j;
    json_array_foreach(arr, i, j) {
        if (n == OIDC_MAX_KEYS) break;
        if (json_is_object(j) && key_parse(j, &fresh[n])) n++;
    }
    json_decref(doc);
    if (n == 0) return snprintf(err, errlen, "%.300s: no RSA or EC P-256 signing key", o->jwks_uri), -1;

    pthread_rwlock_wrlock(&o->keys_mu);
    int dropped = 0; /* a key left the set: tokens it signed are not trusted any more */
    for (size_t a = 0; a < o->nkeys && !dropped; a++) {
        int found = 0;
        for (size_t b = 0; b < n && !found; b++) found = !strcmp(o->keys[a].kid, fresh[b].kid);
        dropped = !found;
    }
    keys_free(o->keys, o->nkeys);
    memcpy(o->keys, fresh, n * sizeof *fresh);
    o->nkeys = n;
    pthread_rwlock_unlock(&o->keys_mu);
    if (dropped) {
        pthread_mutex_lock(&o->cache_mu);
        for (size_t s = 0; s < OIDC_CACHE_SLOTS; s++) o->cache[s].until_ms = 0;
        pthread_mutex_unlock(&o->cache_mu);
    }
    return 0;
}

/* An unknown kid: refetch the JWKS unless that happened less than OIDC_REFETCH_MS ago. */
static void jwks_refresh(cp_http *h, http_oidc *o)
{
    pthread_mutex_lock(&o->fetch_mu);
    int64_t t = now_ms();
    if (t - o->fetched_ms >= OIDC_REFETCH_MS) {
        char err[512];
        o->fetched_ms = t;
        if (jwks_load(o, err, sizeof err) != 0) http_log(h, HTTP_LOG_WARN, "oidc: JWKS refetch: %s", err);
        else http_log(h, HTTP_LOG_INFO, "oidc: JWKS refetched");
    }
    pthread_mutex_unlock(&o->fetch_mu);
}

/* 1 if alg fits key k. */
static int key_fits(const oidc_key *k, const char *alg)
{
    if (k->alg[0] && strcmp(k->alg, alg)) return 0;
    return k->ec ? !strcmp(alg, "ES256") : (!strcmp(alg, "RS256") || !strcmp(alg, "PS256"));
}

/* Checks the signature with the key named kid (any fitting key when kid is NULL), under
 * the read lock. 1 verified, 0 bad signature, -1 no such key. */
static int jws_check(http_oidc *o, cjose_jws_t *jws, const char *alg, const char *kid)
{
    int rc = -1;
    pthread_rwlock_rdlock(&o->keys_mu);
    for (size_t i = 0; i < o->nkeys && rc != 1; i++) {
        const oidc_key *k = &o->keys[i];
        if (kid ? strcmp(k->kid, kid) != 0 : 0) continue;
        if (!key_fits(k, alg)) {
            if (kid) rc = rc == -1 ? -2 : rc; /* the named key does not take this alg */
            continue;
        }
        cjose_err e;
        rc = cjose_jws_verify(jws, k->jwk, &e) ? 1 : 0;
    }
    pthread_rwlock_unlock(&o->keys_mu);
    return rc == -2 ? 0 : rc;
}

/* ---- tokens ---------------------------------------------------------------------------------- */

/* A NumericDate claim in seconds (clamped: a huge value must not overflow the cast). */
static int64_t claim_time(json_t *claims, const char *name, int *present)
{
    json_t *v = json_object_get(claims, name);
    *present = json_is_number(v);
    if (!*present) return 0;
    double d = json_number_value(v);
    return d > 1e12 ? (int64_t)1e12 : d < -1e12 ? (int64_t)-1e12 : (int64_t)d;
}

/* 1 if the claim aud (string or array of strings) names want. */
static int aud_has(json_t *aud, const char *want)
{
    if (json_is_string(aud)) return !strcmp(json_string_value(aud), want);
    size_t i;
    json_t *v;
    if (json_is_array(aud)) {
        json_array_foreach(aud, i, v) if (json_is_string(v) && !strcmp(json_string_value(v), want)) return 1;
    }
    return 0;
}

/* The protected header (n base64url bytes): alg must be one we accept, no crit; its kid.
 * 0, or -1 with why. */
static int header_check(const char *p, size_t n, char *alg, size_t alglen, char *kid, size_t kidlen, int *has_kid,
                        char *why, size_t whylen)
{
    uint8_t *raw = NULL;
    size_t rawlen = 0;
    cjose_err e;
    if (n == 0 || !cjose_base64url_decode(p, n, &raw, &rawlen, &e))
        return snprintf(why, whylen, "malformed JWS header"), -1;
    json_error_t je;
    json_t *hdr = json_loadb((const char *)raw, rawlen, JSON_REJECT_DUPLICATES, &je);
    cjose_get_dealloc()(raw);
    int rc = -1;
    const char *a = json_string_value(json_object_get(hdr, "alg"));
    json_t *k = json_object_get(hdr, "kid");
    if (!json_is_object(hdr)) snprintf(why, whylen, "malformed JWS header");
    else if (!a || (strcmp(a, "RS256") && strcmp(a, "PS256") && strcmp(a, "ES256")))
        snprintf(why, whylen, "signature algorithm not accepted (RS256, PS256, ES256 only)");
    else if (json_object_get(hdr, "crit")) snprintf(why, whylen, "critical header not understood");
    else if (k && (!json_is_string(k) || json_string_length(k) >= kidlen)) snprintf(why, whylen, "malformed kid");
    else {
        snprintf(alg, alglen, "%s", a);
        *has_kid = k != NULL;
        if (k) snprintf(kid, kidlen, "%s", json_string_value(k));
        rc = 0;
    }
    json_decref(hdr);
    return rc;
}

/* Verifies a compact JWS and its registered claims (iss, aud, exp, nbf). 0 with the claims
 * in *out (json_decref them), or -1 with the reason in why. */
static int token_verify(cp_http *h, http_oidc *o, const char *tok, size_t len, const char *aud, json_t **out, char *why,
                        size_t whylen)
{
    if (len == 0 || len > OIDC_MAX_TOKEN) return snprintf(why, whylen, "token length out of bounds"), -1;
    size_t dots = 0;
    for (size_t i = 0; i < len; i++) {
        char c = tok[i];
        if (c == '.') dots++;
        else if (!isalnum((unsigned char)c) && c != '-' && c != '_')
            return snprintf(why, whylen, "not a compact JWS"), -1;
    }
    if (dots != 2) return snprintf(why, whylen, "not a compact JWS"), -1;

    /* the header first: what cjose would not import (alg none, HS256...) gets a clear reason */
    char alg[16], kid[256];
    int has_kid = 0;
    const char *dot = memchr(tok, '.', len); /* there are two */
    if (header_check(tok, (size_t)(dot - tok), alg, sizeof alg, kid, sizeof kid, &has_kid, why, whylen) != 0)
        return -1;
    cjose_err e;
    cjose_jws_t *jws = cjose_jws_import(tok, len, &e);
    if (!jws) return snprintf(why, whylen, "malformed JWS"), -1;
    int rc = -1;
    json_t *claims = NULL;
    int v = jws_check(o, jws, alg, has_kid ? kid : NULL);
    if (v == -1) { /* a key we do not hold: maybe the provider rotated */
        jwks_refresh(h, o);
        v = jws_check(o, jws, alg, has_kid ? kid : NULL);
    }
    if (v != 1) {
        snprintf(why, whylen, v == -1 ? "signing key unknown" : "bad signature");
        goto out;
    }
    uint8_t *pl = NULL;
    size_t pllen = 0;
    json_error_t je;
    if (!cjose_jws_get_plaintext(jws, &pl, &pllen, &e) ||
        !(claims = json_loadb((const char *)pl, pllen, JSON_REJECT_DUPLICATES, &je)) || !json_is_object(claims)) {
        snprintf(why, whylen, "claims are not a JSON object");
        goto out;
    }
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    if (!iss || strcmp(iss, o->issuer)) {
        snprintf(why, whylen, "wrong issuer");
        goto out;
    }
    if (!aud_has(json_object_get(claims, "aud"), aud)) {
        snprintf(why, whylen, "wrong audience");
        goto out;
    }
    int has_exp, has_nbf;
    int64_t exp = claim_time(claims, "exp", &has_exp), nbf = claim_time(claims, "nbf", &has_nbf);
    int64_t t = now_ms() / 1000;
    if (!has_exp) {
        snprintf(why, whylen, "no exp claim");
        goto out;
    }
    if (t > exp + OIDC_SKEW_S) {
        snprintf(why, whylen, "token expired");
        goto out;
    }
    if (has_nbf && t + OIDC_SKEW_S < nbf) {
        snprintf(why, whylen, "token not valid yet");
        goto out;
    }
    *out = claims;
    claims = NULL;
    rc = 0;
out:
    json_decref(claims);
    cjose_jws_release(jws);
    return rc;
}

/* The claim at a dotted path ("realm_access.roles"); a top-level name with dots wins. */
static json_t *claim_path(json_t *claims, const char *path)
{
    json_t *v = json_object_get(claims, path);
    if (v) return v;
    char seg[256];
    const char *p = path;
    v = claims;
    while (*p && v) {
        size_t n = strcspn(p, ".");
        if (n == 0 || n >= sizeof seg) return NULL;
        memcpy(seg, p, n);
        seg[n] = 0;
        v = json_is_object(v) ? json_object_get(v, seg) : NULL;
        p += n + (p[n] == '.');
    }
    return v;
}

static void add_group(cp_identity *id, const char *g, size_t n)
{
    if (n == 0 || n >= CP_AUTH_MAX_GROUP || id->ngroups == CP_AUTH_MAX_GROUPS) return;
    memcpy(id->groups[id->ngroups], g, n);
    id->groups[id->ngroups++][n] = 0;
}

/* The identity of verified claims: the user claim and the roles claim. 0 or -1 (why). */
static int claims_identity(const http_oidc *o, json_t *claims, cp_identity *id, char *why, size_t whylen)
{
    memset(id, 0, sizeof *id);
    static const char *const dflt[] = {"preferred_username", "email", "sub"};
    const char *user = NULL;
    if (o->user_claim[0]) {
        user = json_string_value(claim_path(claims, o->user_claim));
    } else {
        for (size_t i = 0; i < CP_ARRAY_LEN(dflt) && !(user && *user); i++)
            user = json_string_value(json_object_get(claims, dflt[i]));
    }
    if (!user || !*user || copy_str(id->user, sizeof id->user, user))
        return snprintf(why, whylen, "no usable user claim"), -1;
    if (o->roles_claim[0]) {
        json_t *r = claim_path(claims, o->roles_claim), *v;
        size_t i;
        if (json_is_array(r)) {
            json_array_foreach(r, i, v) {
                if (json_is_string(v)) add_group(id, json_string_value(v), json_string_length(v));
            }
        } else if (json_is_string(r)) { /* "a b" or "a,b" */
            const char *s = json_string_value(r);
            while (*s) {
                size_t n = strcspn(s, " ,");
                add_group(id, s, n);
                s += n + (s[n] != 0);
            }
        }
    }
    int has;
    id->expires_ms = claim_time(claims, "exp", &has) * 1000;
    return 0;
}

/* Packs id into c (0), or -1 when it does not fit (the token is then not cached). */
static int cache_pack(oidc_cached *c, const cp_identity *id)
{
    size_t off = 0, n = strlen(id->user) + 1;
    if (n > sizeof c->names) return -1;
    memcpy(c->names, id->user, n);
    off = n;
    for (size_t i = 0; i < id->ngroups; i++) {
        n = strlen(id->groups[i]) + 1;
        if (off + n > sizeof c->names) return -1;
        memcpy(c->names + off, id->groups[i], n);
        off += n;
    }
    c->ngroups = (uint16_t)id->ngroups;
    c->len = (uint16_t)off;
    c->expires_ms = id->expires_ms;
    return 0;
}

/* The identity of a cache entry: only the names are written (the caller cleared id). */
static void cache_unpack(const oidc_cached *c, cp_identity *id)
{
    const char *p = c->names;
    size_t n = strlen(p) + 1;
    memcpy(id->user, p, n);
    p += n;
    for (size_t i = 0; i < c->ngroups; i++) {
        n = strlen(p) + 1;
        memcpy(id->groups[i], p, n);
        p += n;
    }
    id->ngroups = c->ngroups;
    id->expires_ms = c->expires_ms;
}

int http_oidc_bearer(cp_http *h, const char *token, size_t len, cp_identity *id, char *why, size_t whylen)
{
    http_oidc *o = h->oidc;
    if (!o) return snprintf(why, whylen, "oidc is not started"), -1;
    uint8_t d[SHA256_DIGEST_LENGTH];
    sha256(token, len, d);
    oidc_cached *slot = &o->cache[(((size_t)d[0] << 8) | d[1]) % OIDC_CACHE_SLOTS];
    int64_t t = now_ms();
    pthread_mutex_lock(&o->cache_mu);
    int hit = slot->until_ms > t && !memcmp(slot->digest, d, sizeof d);
    if (hit) cache_unpack(slot, id);
    pthread_mutex_unlock(&o->cache_mu);
    if (hit) return 0;

    json_t *claims = NULL;
    if (token_verify(h, o, token, len, o->audience, &claims, why, whylen) != 0) return -1;
    int rc = claims_identity(o, claims, id, why, whylen);
    json_decref(claims);
    if (rc != 0) return -1;
    pthread_mutex_lock(&o->cache_mu);
    if (cache_pack(slot, id) == 0) {
        memcpy(slot->digest, d, sizeof d);
        slot->until_ms = id->expires_ms + OIDC_SKEW_S * 1000LL;
    } else {
        slot->until_ms = 0;
    }
    pthread_mutex_unlock(&o->cache_mu);
    return 0;
}

/* ---- sessions -------------------------------------------------------------------------------- */

/* A session lives in one of OIDC_SESSION_PROBE slots after the one its digest names (so a
 * request's lookup reads a few slots, not the table); when all of them are taken, a new
 * session replaces the one of them that ends first. */
#define OIDC_SESSION_PROBE 16

static size_t session_slot(const uint8_t d[SHA256_DIGEST_LENGTH], size_t i)
{
    return ((((size_t)d[0] << 8) | d[1]) + i) % OIDC_MAX_SESSIONS;
}

int http_oidc_session(cp_http *h, const char *sid, cp_identity *id)
{
    http_oidc *o = h->oidc;
    if (!o || !sid || strlen(sid) != 43) return -1;
    uint8_t d[SHA256_DIGEST_LENGTH];
    sha256(sid, 43, d);
    int64_t t = now_ms();
    int rc = -1;
    pthread_mutex_lock(&o->ui_mu);
    for (size_t i = 0; i < OIDC_SESSION_PROBE && rc; i++) {
        oidc_session *s = &o->sessions[session_slot(d, i)];
        if (s->expires_ms > t && !memcmp(s->sid, d, sizeof d)) {
            *id = s->id;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&o->ui_mu);
    return rc;
}

/* Opens a session for id; the new cookie value goes to sid (44 bytes). 0 or -1. */
static int session_open(http_oidc *o, const cp_identity *id, const char *id_token, char *sid, size_t sidlen)
{
    if (random_token(sid, sidlen) != 0) return -1;
    char *tok = id_token ? strdup(id_token) : NULL;
    if (id_token && !tok) return -1;
    uint8_t d[SHA256_DIGEST_LENGTH];
    sha256(sid, strlen(sid), d);
    int64_t t = now_ms();
    pthread_mutex_lock(&o->ui_mu);
    oidc_session *pick = NULL; /* a free or expired slot, else the one ending first */
    for (size_t i = 0; i < OIDC_SESSION_PROBE; i++) {
        oidc_session *s = &o->sessions[session_slot(d, i)];
        if (s->expires_ms <= t) {
            pick = s;
            break;
        }
        if (!pick || s->expires_ms < pick->expires_ms) pick = s;
    }
    free(pick->id_token);
    memcpy(pick->sid, d, sizeof d);
    pick->expires_ms = t + OIDC_SESSION_MS;
    pick->id_token = tok;
    pick->id = *id;
    pick->id.expires_ms = pick->expires_ms;
    pthread_mutex_unlock(&o->ui_mu);
    return 0;
}

/* Drops the session of cookie value sid; its ID token (malloc'ed, for the logout's hint)
 * goes to *id_token (NULL when none). */
static void session_close(http_oidc *o, const char *sid, char **id_token)
{
    *id_token = NULL;
    if (!sid || strlen(sid) != 43) return;
    uint8_t d[SHA256_DIGEST_LENGTH];
    sha256(sid, 43, d);
    pthread_mutex_lock(&o->ui_mu);
    for (size_t i = 0; i < OIDC_SESSION_PROBE; i++) {
        oidc_session *s = &o->sessions[session_slot(d, i)];
        if (s->expires_ms && !memcmp(s->sid, d, sizeof d)) {
            free(*id_token);
            *id_token = s->id_token;
            memset(s, 0, sizeof *s);
        }
    }
    pthread_mutex_unlock(&o->ui_mu);
}

/* ---- the UI's routes ------------------------------------------------------------------------- */

/* Answers a 302 to location (and sets cookie when non-NULL). */
static void redirect(http_out *o, const char *location, const char *cookie)
{
    static const char empty[] = "";
    struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)empty, MHD_RESPMEM_PERSISTENT);
    if (!r) {
        http_oom(o);
        return;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, location);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (cookie) MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, cookie);
    o->stream = r;
    o->status = 302;
    o->content_type = "text/plain; charset=utf-8";
}

/* The server's external base URL ("http://127.0.0.1:8080"): public_url, or the Host
 * header when it names a loopback address. 0 or -1. */
static int base_url(const http_oidc *o, struct MHD_Connection *conn, char *out, size_t outlen)
{
    if (o->public_url[0]) return copy_str(out, outlen, o->public_url);
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!host) return -1;
    size_t n = strlen(host), hl = authority_host_len(host, n);
    if (!loopback_host(host, hl)) return -1;
    for (size_t i = hl; i < n; i++) /* the port: ":digits" only */
        if (!(i == hl && host[i] == ':') && !isdigit((unsigned char)host[i])) return -1;
    int w = snprintf(out, outlen, "%s://%s", o->https ? "https" : "http", host);
    return w > 0 && (size_t)w < outlen ? 0 : -1;
}

/* A return path is a local path: one leading '/', printable ASCII, no backslash, not one of
 * the /auth/ routes. */
static int return_ok(const char *p)
{
    if (!p || p[0] != '/' || p[1] == '/' || p[1] == '\\' || strlen(p) >= OIDC_MAX_RETURN || !strncmp(p, "/auth/", 6))
        return 0;
    for (; *p; p++)
        if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e || *p == '\\') return 0;
    return 1;
}

/* Appends name=<escaped value> to b: a URL's query (form 0: after '?' or '&') or a form
 * body (form 1: '&' between the pairs). */
static int add_param_to(cp_buf *b, int form, const char *name, const char *value)
{
    char *esc = curl_easy_escape(NULL, value, 0);
    if (!esc) return -1;
    const char *sep = form ? (b->len ? "&" : "") : (b->len && memchr(b->data, '?', b->len) ? "&" : "?");
    int rc = cp_buf_printf(b, "%s%s=%s", sep, name, esc) == CP_OK ? 0 : -1;
    curl_free(esc);
    return rc;
}

static int add_param(cp_buf *b, const char *name, const char *value) { return add_param_to(b, 0, name, value); }
static int add_form(cp_buf *b, const char *name, const char *value) { return add_param_to(b, 1, name, value); }

static void route_login(http_oidc *o, struct MHD_Connection *conn, const http_args *a, http_out *out)
{
    const http_arg *ret = http_arg_get(a, "return");
    oidc_pending p;
    memset(&p, 0, sizeof p);
    copy_str(p.ret, sizeof p.ret, ret && return_ok(ret->val) ? ret->val : "/");
    char base[OIDC_MAX_URL];
    if (base_url(o, conn, base, sizeof base) != 0) {
        http_error(out, 400, "bad_request", "the login needs --public-url when the server is not reached on loopback");
        return;
    }
    char state[64], challenge[64];
    uint8_t d[SHA256_DIGEST_LENGTH];
    if (snprintf(p.redirect_uri, sizeof p.redirect_uri, "%s/auth/callback", base) >= (int)sizeof p.redirect_uri ||
        random_token(state, sizeof state) || random_token(p.nonce, sizeof p.nonce) ||
        random_token(p.verifier, sizeof p.verifier)) {
        http_error(out, 500, "internal", "cannot start a login");
        return;
    }
    sha256(p.verifier, strlen(p.verifier), d);
    b64url(d, sizeof d, challenge, sizeof challenge);
    sha256(state, strlen(state), p.state);
    p.created_ms = now_ms();

    pthread_mutex_lock(&o->ui_mu); /* a free or stale slot, else the oldest */
    oidc_pending *pick = &o->pending[0];
    for (size_t i = 0; i < OIDC_MAX_PENDING; i++) {
        oidc_pending *q = &o->pending[i];
        if (q->created_ms + OIDC_PENDING_MS <= p.created_ms) {
            pick = q;
            break;
        }
        if (q->created_ms < pick->created_ms) pick = q;
    }
    *pick = p;
    pthread_mutex_unlock(&o->ui_mu);

    cp_buf loc;
    cp_buf_init(&loc);
    int bad = cp_buf_append(&loc, o->authorization_endpoint, strlen(o->authorization_endpoint)) != CP_OK ||
              add_param(&loc, "response_type", "code") || add_param(&loc, "client_id", o->client_id) ||
              add_param(&loc, "redirect_uri", p.redirect_uri) || add_param(&loc, "scope", o->scopes) ||
              add_param(&loc, "state", state) || add_param(&loc, "nonce", p.nonce) ||
              add_param(&loc, "code_challenge", challenge) || add_param(&loc, "code_challenge_method", "S256") ||
              cp_buf_append(&loc, "", 1) != CP_OK;
    if (bad) http_oom(out);
    else redirect(out, (const char *)loc.data, NULL);
    cp_buf_free(&loc);
}

/* Takes the pending login of state out of the table: 0 with it in *p, or -1. */
static int pending_take(http_oidc *o, const char *state, oidc_pending *p)
{
    uint8_t d[SHA256_DIGEST_LENGTH];
    sha256(state, strlen(state), d);
    int64_t t = now_ms();
    int rc = -1;
    pthread_mutex_lock(&o->ui_mu);
    for (size_t i = 0; i < OIDC_MAX_PENDING && rc; i++) {
        oidc_pending *q = &o->pending[i];
        if (q->created_ms && !memcmp(q->state, d, sizeof d)) {
            if (q->created_ms + OIDC_PENDING_MS > t) *p = *q, rc = 0;
            memset(q, 0, sizeof *q); /* one use */
        }
    }
    pthread_mutex_unlock(&o->ui_mu);
    return rc;
}

/* POSTs the code to the token endpoint: 0 with the ID token (malloc'ed), or -1 with why. */
static int code_exchange(http_oidc *o, const oidc_pending *p, const char *code, char **id_token, char *why,
                         size_t whylen)
{
    cp_buf form;
    cp_buf_init(&form);
    int bad = add_form(&form, "grant_type", "authorization_code") || add_form(&form, "code", code) ||
              add_form(&form, "redirect_uri", p->redirect_uri) || add_form(&form, "code_verifier", p->verifier);
    const char *user = NULL, *pass = NULL;
    char *euser = NULL, *epass = NULL;
    if (!o->secret || o->secret_post) bad = bad || add_form(&form, "client_id", o->client_id);
    if (o->secret && o->secret_post) bad = bad || add_form(&form, "client_secret", o->secret);
    if (o->secret && !o->secret_post) { /* RFC 6749 2.3.1: both form-encoded, then Basic */
        euser = curl_easy_escape(NULL, o->client_id, 0);
        epass = curl_easy_escape(NULL, o->secret, 0);
        user = euser, pass = epass;
        bad = bad || !euser || !epass;
    }
    bad = bad || cp_buf_append(&form, "", 1) != CP_OK;
    cp_buf resp;
    long st = 0;
    int rc = -1;
    char err[512];
    if (bad) {
        snprintf(why, whylen, "out of memory");
    } else if (fetch(o->token_endpoint, (const char *)form.data, user, pass, &resp, &st, err, sizeof err) != 0) {
        snprintf(why, whylen, "token endpoint: %.400s", err);
    } else {
        json_error_t je;
        json_t *doc = json_loadb((const char *)resp.data, resp.len, 0, &je);
        const char *idt = json_string_value(json_object_get(doc, "id_token"));
        const char *e = json_string_value(json_object_get(doc, "error"));
        if (st != 200 || !idt) {
            snprintf(why, whylen, "token endpoint: HTTP %ld%s%.100s", st, e ? ": " : "", e ? e : "");
        } else if (!(*id_token = strdup(idt))) {
            snprintf(why, whylen, "out of memory");
        } else {
            rc = 0;
        }
        json_decref(doc);
        OPENSSL_cleanse(resp.data, resp.len); /* tokens */
        cp_buf_free(&resp);
    }
    if (form.data) OPENSSL_cleanse(form.data, form.len);
    cp_buf_free(&form);
    curl_free(euser);
    if (epass) OPENSSL_cleanse(epass, strlen(epass));
    curl_free(epass);
    return rc;
}

static void route_callback(cp_http *h, http_oidc *o, const http_args *a, http_out *out)
{
    const http_arg *code = http_arg_get(a, "code"), *state = http_arg_get(a, "state");
    const http_arg *error = http_arg_get(a, "error"), *iss = http_arg_get(a, "iss");
    oidc_pending p;
    if (!state || pending_take(o, state->val, &p) != 0) {
        http_error(out, 400, "bad_request", "unknown or expired login (state); start again at /auth/login");
        return;
    }
    if (error) {
        http_error(out, 401, "unauthenticated", "the provider refused the login: %.200s", error->val);
        return;
    }
    if (iss && strcmp(iss->val, o->issuer)) { /* RFC 9207: a mix-up with another provider */
        http_error(out, 400, "bad_request", "the callback names another issuer");
        return;
    }
    if (!code || !code->vlen) {
        http_error(out, 400, "bad_request", "no authorization code");
        return;
    }
    char why[512];
    char *idt = NULL;
    json_t *claims = NULL;
    cp_identity *id = malloc(sizeof *id);
    if (!id) {
        http_oom(out);
        return;
    }
    if (code_exchange(o, &p, code->val, &idt, why, sizeof why) != 0 ||
        token_verify(h, o, idt, strlen(idt), o->client_id, &claims, why, sizeof why) != 0) {
        http_log(h, HTTP_LOG_WARN, "oidc: login failed: %s", why);
        http_error(out, 401, "unauthenticated", "login failed: %s", why);
        goto done;
    }
    const char *nonce = json_string_value(json_object_get(claims, "nonce"));
    const char *azp = json_string_value(json_object_get(claims, "azp"));
    if (!nonce || strlen(nonce) != strlen(p.nonce) || CRYPTO_memcmp(nonce, p.nonce, strlen(p.nonce))) {
        http_error(out, 401, "unauthenticated", "login failed: the ID token's nonce does not match");
        goto done;
    }
    if (azp && strcmp(azp, o->client_id)) {
        http_error(out, 401, "unauthenticated", "login failed: the ID token is for another client (azp)");
        goto done;
    }
    if (claims_identity(o, claims, id, why, sizeof why) != 0) {
        http_error(out, 401, "unauthenticated", "login failed: %s", why);
        goto done;
    }
    char sid[64], cookie[256];
    if (session_open(o, id, idt, sid, sizeof sid) != 0) {
        http_error(out, 500, "internal", "cannot open a session");
        goto done;
    }
    snprintf(cookie, sizeof cookie, OIDC_COOKIE "=%s; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=%lld", sid,
             (long long)(OIDC_SESSION_MS / 1000));
    http_log(h, HTTP_LOG_INFO, "oidc: %s logged in", id->user);
    redirect(out, p.ret, cookie);
    OPENSSL_cleanse(sid, sizeof sid);
done:
    json_decref(claims);
    free(idt);
    free(id);
}

static void route_logout(http_oidc *o, struct MHD_Connection *conn, http_out *out)
{
    static const char clear[] = OIDC_COOKIE "=; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=0";
    char *idt = NULL;
    session_close(o, MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, OIDC_COOKIE), &idt);
    if (!o->end_session_endpoint[0]) {
        free(idt);
        redirect(out, "/", clear);
        return;
    }
    char base[OIDC_MAX_URL], back[OIDC_MAX_URL + 2];
    int has_base = base_url(o, conn, base, sizeof base) == 0;
    snprintf(back, sizeof back, "%s/", has_base ? base : "");
    cp_buf loc;
    cp_buf_init(&loc);
    int bad = cp_buf_append(&loc, o->end_session_endpoint, strlen(o->end_session_endpoint)) != CP_OK ||
              (idt && add_param(&loc, "id_token_hint", idt)) || add_param(&loc, "client_id", o->client_id) ||
              (has_base && add_param(&loc, "post_logout_redirect_uri", back)) || cp_buf_append(&loc, "", 1) != CP_OK;
    if (bad) http_oom(out);
    else redirect(out, (const char *)loc.data, clear);
    cp_buf_free(&loc);
    free(idt);
}

int http_oidc_route(cp_http *h, struct MHD_Connection *conn, const char *url, const http_args *a, http_out *o)
{
    if (strncmp(url, "/auth/", 6)) return 0;
    const char *r = url + 6;
    if (strcmp(r, "login") && strcmp(r, "callback") && strcmp(r, "logout")) return 0;
    http_oidc *oi = h->oidc;
    if (!oi) {
        http_error(o, 404, "not_found", "no OpenID Connect login on this server (--auth oidc)");
        return 1;
    }
    if (!strcmp(r, "login")) route_login(oi, conn, a, o);
    else if (!strcmp(r, "callback")) route_callback(h, oi, a, o);
    else route_logout(oi, conn, o);
    return 1;
}

/* ---- start and stop -------------------------------------------------------------------------- */

/* The client secret: the file's first line. 0 or -1 (err). */
static int read_secret(const char *path, char **out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) return snprintf(err, errlen, "--oidc-client-secret-file %s: %s", path, strerror(errno)), -1;
    char buf[OIDC_MAX_SECRET + 1];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (n > OIDC_MAX_SECRET) return snprintf(err, errlen, "--oidc-client-secret-file %s: larger than 4 KiB", path), -1;
    buf[n] = 0;
    buf[strcspn(buf, "\r\n")] = 0;
    if (!buf[0]) return snprintf(err, errlen, "--oidc-client-secret-file %s: empty", path), -1;
    *out = strdup(buf);
    OPENSSL_cleanse(buf, sizeof buf);
    return *out ? 0 : (snprintf(err, errlen, "out of memory"), -1);
}

/* Copies the endpoint name of the discovery document into dst (required or not). */
static int endpoint(json_t *doc, const char *name, int required, char *dst, size_t dstlen, char *err, size_t errlen)
{
    const char *v = json_string_value(json_object_get(doc, name));
    if (!v) return required ? (snprintf(err, errlen, "oidc discovery: no %s", name), -1) : 0;
    if (!url_ok(v) || copy_str(dst, dstlen, v))
        return snprintf(err, errlen, "oidc discovery: %s is not an https (or loopback http) URL", name), -1;
    return 0;
}

static int discover(http_oidc *o, char *err, size_t errlen)
{
    char url[OIDC_MAX_URL + 64];
    size_t n = strlen(o->issuer);
    while (n && o->issuer[n - 1] == '/') n--;
    snprintf(url, sizeof url, "%.*s/.well-known/openid-configuration", (int)n, o->issuer);
    char why[512];
    json_t *doc = fetch_json(url, why, sizeof why);
    if (!doc) return snprintf(err, errlen, "oidc discovery: %s", why), -1;
    int rc = -1;
    const char *iss = json_string_value(json_object_get(doc, "issuer"));
    if (!iss || strcmp(iss, o->issuer)) {
        snprintf(err, errlen, "oidc discovery: the document's issuer %.200s is not %.200s", iss ? iss : "(none)",
                 o->issuer);
        goto out;
    }
    if (endpoint(doc, "authorization_endpoint", 1, o->authorization_endpoint, OIDC_MAX_URL, err, errlen) ||
        endpoint(doc, "token_endpoint", 1, o->token_endpoint, OIDC_MAX_URL, err, errlen) ||
        endpoint(doc, "jwks_uri", 1, o->jwks_uri, OIDC_MAX_URL, err, errlen) ||
        endpoint(doc, "end_session_endpoint", 0, o->end_session_endpoint, OIDC_MAX_URL, err, errlen))
        goto out;
    /* client_secret_basic is the default (absent list); post only when basic is not offered */
    json_t *methods = json_object_get(doc, "token_endpoint_auth_methods_supported"), *m;
    size_t i;
    int basic = !json_is_array(methods), post = 0;
    json_array_foreach(methods, i, m) {
        const char *s = json_string_value(m);
        if (s && !strcmp(s, "client_secret_basic")) basic = 1;
        if (s && !strcmp(s, "client_secret_post")) post = 1;
    }
    o->secret_post = !basic && post;
    rc = 0;
out:
    json_decref(doc);
    return rc;
}

static int config_copy(http_oidc *o, const cp_http_config *c, char *err, size_t errlen)
{
    if (!c->oidc_issuer || !c->oidc_client_id)
        return snprintf(err, errlen, "--auth oidc needs --oidc-issuer and --oidc-client-id"), -1;
    if (!url_ok(c->oidc_issuer) || copy_str(o->issuer, sizeof o->issuer, c->oidc_issuer))
        return snprintf(err, errlen, "--oidc-issuer must be an https URL (http only on a loopback address)"), -1;
    if (copy_str(o->client_id, sizeof o->client_id, c->oidc_client_id) ||
        copy_str(o->audience, sizeof o->audience, c->oidc_audience ? c->oidc_audience : c->oidc_client_id) ||
        copy_str(o->scopes, sizeof o->scopes, c->oidc_scopes ? c->oidc_scopes : "openid profile email") ||
        copy_str(o->user_claim, sizeof o->user_claim, c->oidc_user_claim ? c->oidc_user_claim : "") ||
        copy_str(o->roles_claim, sizeof o->roles_claim, c->oidc_roles_claim ? c->oidc_roles_claim : ""))
        return snprintf(err, errlen, "an --oidc-* value is too long"), -1;
    if (c->public_url) {
        size_t n = strlen(c->public_url);
        while (n && c->public_url[n - 1] == '/') n--;
        if ((strncmp(c->public_url, "https://", 8) && strncmp(c->public_url, "http://", 7)) || n >= OIDC_MAX_URL - 32)
            return snprintf(err, errlen, "--public-url must be an http(s) URL"), -1;
        memcpy(o->public_url, c->public_url, n);
        o->public_url[n] = 0;
    }
    o->https = c->tls_cert_file != NULL;
    return c->oidc_client_secret_file ? read_secret(c->oidc_client_secret_file, &o->secret, err, errlen) : 0;
}

static void oidc_free(http_oidc *o)
{
    if (!o) return;
    keys_free(o->keys, o->nkeys);
    if (o->sessions)
        for (size_t i = 0; i < OIDC_MAX_SESSIONS; i++) free(o->sessions[i].id_token);
    if (o->secret) OPENSSL_cleanse(o->secret, strlen(o->secret));
    free(o->secret);
    free(o->cache);
    free(o->pending);
    free(o->sessions);
    pthread_rwlock_destroy(&o->keys_mu);
    pthread_mutex_destroy(&o->fetch_mu);
    pthread_mutex_destroy(&o->cache_mu);
    pthread_mutex_destroy(&o->ui_mu);
    free(o);
}

static void init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    sha256_fetch(); /* kept for the process's life */
}

int http_oidc_start(cp_http *h, char *err, size_t errlen)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_once);
    http_oidc *o = calloc(1, sizeof *o);
    if (!o) return snprintf(err, errlen, "out of memory"), -1;
    pthread_rwlock_init(&o->keys_mu, NULL);
    pthread_mutex_init(&o->fetch_mu, NULL);
    pthread_mutex_init(&o->cache_mu, NULL);
    pthread_mutex_init(&o->ui_mu, NULL);
    o->cache = calloc(OIDC_CACHE_SLOTS, sizeof *o->cache);
    o->pending = calloc(OIDC_MAX_PENDING, sizeof *o->pending);
    o->sessions = calloc(OIDC_MAX_SESSIONS, sizeof *o->sessions);
    if (!o->cache || !o->pending || !o->sessions) {
        oidc_free(o);
        return snprintf(err, errlen, "out of memory"), -1;
    }
    char why[768];
    if (config_copy(o, h->cfg, err, errlen) != 0) goto fail;
    if (discover(o, err, errlen) != 0) goto fail;
    if (jwks_load(o, why, sizeof why) != 0) {
        snprintf(err, errlen, "oidc JWKS: %s", why);
        goto fail;
    }
    o->fetched_ms = now_ms();
    h->oidc = o;
    http_log(h, HTTP_LOG_INFO, "oidc: issuer %s, %zu signing keys, client %s, audience %s", o->issuer, o->nkeys,
             o->client_id, o->audience);
    return 0;
fail:
    oidc_free(o);
    return -1;
}

void http_oidc_stop(cp_http *h)
{
    oidc_free(h->oidc);
    h->oidc = NULL;
}
