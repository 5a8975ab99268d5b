/* auth.c -- the request hook of issue 17 (README "Login, roles and namespaces"): who asks,
 * and whether they may, decided on a request's first call (headers in, no body read).
 *
 * Credentials, in this order: `Authorization: Basic` (--auth basic: an htpasswd file of
 * bcrypt $2y$/$2b$ or SHA-512 crypt $6$ hashes, checked with libcrypt's crypt_r, and an
 * Apache group file; both reloaded when they change, looked at at most once a second),
 * `Authorization: Bearer` (the upload token, else with --auth oidc a JWT: auth_oidc.c),
 * the cookie cp_session (--auth oidc: auth_oidc.c), an HTTPS client certificate that
 * chains to --http-tls-client-ca (an upload credential). The policy (auth_policy.c) turns
 * an identity into a principal; the endpoints ask it through http_args.who.
 *
 * crypt_r with bcrypt costs milliseconds by design, so a verified header is remembered
 * (by its SHA-256, never the password) for AUTH_CACHE_MS. Failed Basic logins slow the
 * attacker down per user and per client address: past a number of failures every attempt
 * is answered 429 with a Retry-After that doubles per further failure up to 60 s, without
 * checking the password; other users and addresses go on as before.
 */
#include "http_internal.h"
#include "common/cp_metrics.h"
#include "http/auth_oidc.h"

#include <arpa/inet.h>
#include <crypt.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define AUTH_FILE_MAX (16u << 20)       /* bytes of an htpasswd or group file */
#define AUTH_HEADER_MAX 4096            /* bytes of an Authorization header we look at */
#define AUTH_TOKEN_MAX 4096             /* bytes of the upload token */
#define AUTH_CHECK_EVERY_MS 1000        /* files are looked at (stat) at most this often */
#define AUTH_CACHE_SLOTS 1024           /* verified headers remembered */
#define AUTH_CACHE_MS 30000             /* for this long */
#define AUTH_BO_SLOTS 4096              /* backoff entries per table (oldest evicted) */
#define AUTH_BO_USER_FREE 5             /* failures per user before the backoff */
#define AUTH_BO_IP_FREE 20              /* per client address (it may try many users) */
#define AUTH_BO_MAX_S 60
#define AUTH_BO_FORGET_MS (15 * 60 * 1000) /* failures older than this start over */
/* checked for an unknown user (a bcrypt hash of a throwaway text, cost 10) */
#define AUTH_DUMMY_HASH "$2b$10$abcdefghijklmnopqrstuuX37BX1NKDpx.s6pmxFqQ4oi3Wk4hUSm"

/* Milliseconds of the monotonic clock: waits and ages must not follow the wall clock. */
static int64_t mono_ms(void) { return (int64_t)(cp_mono_ns() / 1000000u); }

/* ---- the files ------------------------------------------------------------------------- */

typedef struct auth_user {
    char *name;
    char *hash;
} auth_user;

typedef struct auth_member {            /* one "group: ... user ..." membership */
    char *user;
    char *group;
} auth_member;

typedef struct auth_file {              /* what the last load saw */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} auth_file;

typedef struct auth_cache_slot {
    uint8_t key[SHA256_DIGEST_LENGTH];  /* of the header value */
    char user[CP_AUTH_MAX_USER];
    int64_t until_ms;
    uint64_t gen;                       /* the users file's generation it was checked against */
} auth_cache_slot;

typedef struct auth_bo {                /* failures of one user or client address */
    uint64_t key;                       /* 0 = free */
    unsigned fails;
    int64_t last_ms, until_ms;
} auth_bo;

struct http_auth {
    cp_auth_policy *policy;
    /* users and groups (under mu) */
    pthread_mutex_t mu;
    auth_user *users;                   /* sorted by name */
    size_t nusers;
    auth_member *members;               /* sorted by user */
    size_t nmembers;
    auth_file users_f, groups_f;
    int64_t checked_ms;
    uint64_t gen;                       /* bumped at every users-file load */
    /* verified headers (under cache_mu) */
    pthread_mutex_t cache_mu;
    auth_cache_slot *cache;
    /* failures (under bo_mu) */
    pthread_mutex_t bo_mu;
    auth_bo *bo_users, *bo_ips;
    /* the upload token */
    char *token;
    size_t token_len;
};

static void users_free(auth_user *u, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(u[i].name);
        free(u[i].hash);
    }
    free(u);
}

static void members_free(auth_member *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(m[i].user);
        free(m[i].group);
    }
    free(m);
}

static int user_cmp(const void *a, const void *b) { return strcmp(((const auth_user *)a)->name, ((const auth_user *)b)->name); }
static int member_cmp(const void *a, const void *b)
{
    return strcmp(((const auth_member *)a)->user, ((const auth_member *)b)->user);
}

/* The next line of [*p, end) (without its \r\n), NUL-terminated in place. */
static char *next_line(char **p, char *end)
{
    if (*p >= end) return NULL;
    char *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
    char *e = nl ? nl : end;
    *p = nl ? nl + 1 : end;
    *e = 0;
    if (e > s && e[-1] == '\r') e[-1] = 0;
    return s;
}

static int hash_supported(const char *h)
{
    return !strncmp(h, "$2y$", 4) || !strncmp(h, "$2b$", 4) || !strncmp(h, "$6$", 3);
}

/* Parses an htpasswd file "user:hash" (blank lines and # comments skipped). Lines with
 * another hash scheme are skipped with a warning (never quoting the hash). */
static int parse_users(cp_http *h, cp_buf *text, auth_user **out, size_t *nout, char *err, size_t errlen)
{
    size_t cap = 16, n = 0, lineno = 0;
    auth_user *u = malloc(cap * sizeof *u);
    if (!u || cp_buf_putc(text, 0) != CP_OK) goto oom;
    char *p = (char *)text->data, *end = p + text->len - 1, *line;
    while ((line = next_line(&p, end))) {
        lineno++;
        if (!*line || *line == '#') continue;
        char *colon = strchr(line, ':');
        if (!colon || colon == line || (size_t)(colon - line) >= CP_AUTH_MAX_USER) {
            snprintf(err, errlen, "%s line %zu: not user:hash", h->cfg->auth_users_file, lineno);
            users_free(u, n);
            return CP_EINVAL;
        }
        *colon = 0;
        if (!hash_supported(colon + 1)) {
            http_log(h, HTTP_LOG_WARN, "auth: %s line %zu: user '%.64s' has a hash scheme other than $2y$, $2b$ or $6$: skipped",
                     h->cfg->auth_users_file, lineno, line);
            continue;
        }
        if (n == cap) {
            auth_user *g = realloc(u, 2 * cap * sizeof *u);
            if (!g) goto oom;
            u = g;
            cap *= 2;
        }
        u[n].name = strdup(line);
        u[n].hash = strdup(colon + 1);
        if (!u[n].name || !u[n].hash) {
            n++;
            goto oom;
        }
        n++;
    }
    qsort(u, n, sizeof *u, user_cmp);
    *out = u;
    *nout = n;
    return CP_OK;
oom:
    users_free(u, n);
    snprintf(err, errlen, "out of memory reading %s", h->cfg->auth_users_file);
    return CP_ENOMEM;
}

/* Parses an Apache group file: "group: user1 user2" per line. */
static int parse_groups(cp_http *h, cp_buf *text, auth_member **out, size_t *nout, char *err, size_t errlen)
{
    size_t cap = 16, n = 0, lineno = 0;
    auth_member *m = malloc(cap * sizeof *m);
    if (!m || cp_buf_putc(text, 0) != CP_OK) goto oom;
    char *p = (char *)text->data, *end = p + text->len - 1, *line;
    while ((line = next_line(&p, end))) {
        lineno++;
        while (*line == ' ' || *line == '\t') line++;
        if (!*line || *line == '#') continue;
        char *colon = strchr(line, ':');
        if (!colon || colon == line || (size_t)(colon - line) >= CP_AUTH_MAX_GROUP) {
            snprintf(err, errlen, "%s line %zu: not group: user1 user2", h->cfg->auth_groups_file, lineno);
            members_free(m, n);
            return CP_EINVAL;
        }
        *colon = 0;
        char *save = NULL;
        for (char *user = strtok_r(colon + 1, " \t", &save); user; user = strtok_r(NULL, " \t", &save)) {
            if (strlen(user) >= CP_AUTH_MAX_USER) continue;
            if (n == cap) {
                auth_member *g = realloc(m, 2 * cap * sizeof *m);
                if (!g) goto oom;
                m = g;
                cap *= 2;
            }
            m[n].user = strdup(user);
            m[n].group = strdup(line);
            n++;
            if (!m[n - 1].user || !m[n - 1].group) goto oom;
        }
    }
    qsort(m, n, sizeof *m, member_cmp);
    *out = m;
    *nout = n;
    return CP_OK;
oom:
    members_free(m, n);
    snprintf(err, errlen, "out of memory reading %s", h->cfg->auth_groups_file);
    return CP_ENOMEM;
}

static int same_file(const auth_file *f, const struct stat *st)
{
    return f->dev == st->st_dev && f->ino == st->st_ino && f->size == st->st_size &&
           f->mtime.tv_sec == st->st_mtim.tv_sec && f->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* (Re)loads the users file when force or when it changed. Under a->mu. */
static int load_users(cp_http *h, struct http_auth *a, int force, char *err, size_t errlen)
{
    const char *path = h->cfg->auth_users_file;
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return CP_EIO;
    }
    if (!force && same_file(&a->users_f, &st)) return CP_OK;
    cp_buf text;
    cp_buf_init(&text);
    int rc = cp_read_file(path, AUTH_FILE_MAX, &text);
    auth_user *u = NULL;
    size_t n = 0;
    if (rc != CP_OK) snprintf(err, errlen, "cannot read %s (at most %u bytes): %s", path, AUTH_FILE_MAX, cp_strstatus(rc));
    else rc = parse_users(h, &text, &u, &n, err, errlen);
    cp_buf_free(&text);
    if (rc != CP_OK) return rc;
    users_free(a->users, a->nusers);
    a->users = u;
    a->nusers = n;
    a->users_f = (auth_file){st.st_dev, st.st_ino, st.st_size, st.st_mtim};
    a->gen++;
    return CP_OK;
}

static int load_groups(cp_http *h, struct http_auth *a, int force, char *err, size_t errlen)
{
    const char *path = h->cfg->auth_groups_file;
    if (!path) return CP_OK;
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return CP_EIO;
    }
    if (!force && same_file(&a->groups_f, &st)) return CP_OK;
    cp_buf text;
    cp_buf_init(&text);
    int rc = cp_read_file(path, AUTH_FILE_MAX, &text);
    auth_member *m = NULL;
    size_t n = 0;
    if (rc != CP_OK) snprintf(err, errlen, "cannot read %s (at most %u bytes): %s", path, AUTH_FILE_MAX, cp_strstatus(rc));
    else rc = parse_groups(h, &text, &m, &n, err, errlen);
    cp_buf_free(&text);
    if (rc != CP_OK) return rc;
    members_free(a->members, a->nmembers);
    a->members = m;
    a->nmembers = n;
    a->groups_f = (auth_file){st.st_dev, st.st_ino, st.st_size, st.st_mtim};
    return CP_OK;
}

/* Looks at the files at most once a second; a file that became unreadable or bad keeps
 * the previous table (and says so). Under a->mu. */
static void refresh_files(cp_http *h, struct http_auth *a)
{
    int64_t now = mono_ms();
    if (now - a->checked_ms < AUTH_CHECK_EVERY_MS && now >= a->checked_ms) return;
    a->checked_ms = now;
    char err[512];
    if (load_users(h, a, 0, err, sizeof err) != CP_OK)
        http_log(h, HTTP_LOG_WARN, "auth: keeping the previous users: %s", err);
    if (load_groups(h, a, 0, err, sizeof err) != CP_OK)
        http_log(h, HTTP_LOG_WARN, "auth: keeping the previous groups: %s", err);
}

/* ---- start / stop ------------------------------------------------------------------------- */

static int read_token(cp_http *h, struct http_auth *a, char *err, size_t errlen)
{
    cp_buf t;
    cp_buf_init(&t);
    int rc = cp_read_file(h->cfg->upload_token_file, AUTH_TOKEN_MAX, &t);
    if (rc != CP_OK) {
        cp_buf_free(&t);
        snprintf(err, errlen, "--upload-token: cannot read %s (at most %d bytes)", h->cfg->upload_token_file, AUTH_TOKEN_MAX);
        return CP_EINVAL;
    }
    size_t n = t.len;
    while (n && (t.data[n - 1] == '\n' || t.data[n - 1] == '\r' || t.data[n - 1] == ' ')) n--;
    if (n < 16) {
        cp_buf_free(&t);
        snprintf(err, errlen, "--upload-token: the token in %s is shorter than 16 bytes", h->cfg->upload_token_file);
        return CP_EINVAL;
    }
    a->token = malloc(n);
    if (!a->token) {
        cp_buf_free(&t);
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    memcpy(a->token, t.data, n);
    a->token_len = n;
    OPENSSL_cleanse(t.data, t.len);
    cp_buf_free(&t);
    return CP_OK;
}

static void auth_free(struct http_auth *a)
{
    if (!a) return;
    cp_auth_policy_free(a->policy);
    users_free(a->users, a->nusers);
    members_free(a->members, a->nmembers);
    if (a->cache) OPENSSL_cleanse(a->cache, AUTH_CACHE_SLOTS * sizeof *a->cache);
    free(a->cache);
    free(a->bo_users);
    free(a->bo_ips);
    if (a->token) OPENSSL_cleanse(a->token, a->token_len);
    free(a->token);
    pthread_mutex_destroy(&a->mu);
    pthread_mutex_destroy(&a->cache_mu);
    pthread_mutex_destroy(&a->bo_mu);
    free(a);
}

int http_auth_start(cp_http *h, char *err, size_t errlen)
{
    const cp_http_config *c = h->cfg;
    h->auth = NULL;
    if (c->auth_mode == CP_AUTH_NONE && !c->upload_token_file && !c->tls_client_ca_file) return CP_OK;
    if (c->auth_mode == CP_AUTH_BASIC && !c->auth_users_file) {
        snprintf(err, errlen, "--auth basic needs --auth-users FILE");
        return CP_EINVAL;
    }
    struct http_auth *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->cache_mu, NULL);
    pthread_mutex_init(&a->bo_mu, NULL);
    a->cache = calloc(AUTH_CACHE_SLOTS, sizeof *a->cache);
    a->bo_users = calloc(AUTH_BO_SLOTS, sizeof *a->bo_users);
    a->bo_ips = calloc(AUTH_BO_SLOTS, sizeof *a->bo_ips);
    int st = a->cache && a->bo_users && a->bo_ips ? CP_OK : CP_ENOMEM;
    if (st != CP_OK) snprintf(err, errlen, "out of memory");
    if (st == CP_OK) st = cp_auth_policy_new(c->auth_ns_rules, c->nauth_ns_rules, &a->policy, err, errlen);
    if (st == CP_OK && c->upload_token_file) st = read_token(h, a, err, errlen);
    if (st == CP_OK && c->auth_mode == CP_AUTH_BASIC) {
        st = load_users(h, a, 1, err, errlen);
        if (st == CP_OK) st = load_groups(h, a, 1, err, errlen);
        a->checked_ms = mono_ms();
    }
    if (st != CP_OK) {
        auth_free(a);
        return st;
    }
    h->auth = a;
    if (c->auth_mode == CP_AUTH_OIDC && http_oidc_start(h, err, errlen) != 0) {
        h->auth = NULL;
        auth_free(a);
        return CP_EINVAL;
    }
    http_log(h, HTTP_LOG_INFO, "http: auth %s%s%s", cp_auth_mode_name(c->auth_mode), a->token ? ", upload token" : "",
             c->tls_client_ca_file ? ", upload client certificates" : "");
    return CP_OK;
}

void http_auth_stop(cp_http *h)
{
    if (!h->auth) return;
    if (h->cfg->auth_mode == CP_AUTH_OIDC) http_oidc_stop(h);
    auth_free(h->auth);
    h->auth = NULL;
}

/* ---- backoff ------------------------------------------------------------------------------- */

static uint64_t bo_key(const char *kind, const char *s)
{
    uint8_t d[SHA256_DIGEST_LENGTH];
    char buf[CP_AUTH_MAX_USER + 64];
    int n = snprintf(buf, sizeof buf, "%s:%s", kind, s);
    SHA256((const unsigned char *)buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1, d);
    uint64_t k;
    memcpy(&k, d, sizeof k);
    return k ? k : 1;
}

static auth_bo *bo_find(auth_bo *t, uint64_t key, int create, int64_t now)
{
    auth_bo *oldest = &t[0];
    for (size_t i = 0; i < AUTH_BO_SLOTS; i++) {
        if (t[i].key == key) return &t[i];
        if (t[i].key == 0 || t[i].last_ms < oldest->last_ms) oldest = &t[i];
        if (t[i].key == 0) break;
    }
    if (!create) return NULL;
    *oldest = (auth_bo){key, 0, now, 0};
    return oldest;
}

/* Seconds the attempt must wait (0 = go on). Under bo_mu. */
static int bo_wait(auth_bo *b, int64_t now)
{
    if (!b || b->until_ms <= now) return 0;
    return (int)((b->until_ms - now + 999) / 1000);
}

static void bo_fail(auth_bo *b, unsigned free_fails, int64_t now)
{
    if (now - b->last_ms > AUTH_BO_FORGET_MS) b->fails = 0;
    b->fails++;
    b->last_ms = now;
    if (b->fails >= free_fails) {
        unsigned over = b->fails - free_fails;
        int64_t s = over >= 6 ? AUTH_BO_MAX_S : (int64_t)1 << over;
        b->until_ms = now + (s > AUTH_BO_MAX_S ? AUTH_BO_MAX_S : s) * 1000;
    }
}

/* Retry-After seconds when user or ip is backing off, else 0. */
static int backoff_check(struct http_auth *a, const char *user, const char *ip)
{
    int64_t now = mono_ms();
    pthread_mutex_lock(&a->bo_mu);
    int wu = bo_wait(bo_find(a->bo_users, bo_key("u", user), 0, now), now);
    int wi = bo_wait(bo_find(a->bo_ips, bo_key("i", ip), 0, now), now);
    pthread_mutex_unlock(&a->bo_mu);
    return wu > wi ? wu : wi;
}

static void backoff_result(struct http_auth *a, const char *user, const char *ip, int ok)
{
    int64_t now = mono_ms();
    pthread_mutex_lock(&a->bo_mu);
    if (ok) {
        auth_bo *b = bo_find(a->bo_users, bo_key("u", user), 0, now);
        if (b) *b = (auth_bo){b->key, 0, b->last_ms, 0}; /* stays listed: the slot is not reused early */
    } else {
        bo_fail(bo_find(a->bo_users, bo_key("u", user), 1, now), AUTH_BO_USER_FREE, now);
        bo_fail(bo_find(a->bo_ips, bo_key("i", ip), 1, now), AUTH_BO_IP_FREE, now);
    }
    pthread_mutex_unlock(&a->bo_mu);
}

/* ---- Basic ------------------------------------------------------------------------------------ */

/* The identity's groups from the group file; without one every user is an admin (the
 * htpasswd file then lists the administrators). Under a->mu. */
static void groups_of(cp_http *h, struct http_auth *a, const char *user, cp_identity *id)
{
    id->ngroups = 0;
    if (!h->cfg->auth_groups_file) {
        snprintf(id->groups[id->ngroups++], sizeof id->groups[0], "admin");
        return;
    }
    auth_member k = {(char *)user, NULL};
    auth_member *m = bsearch(&k, a->members, a->nmembers, sizeof *a->members, member_cmp);
    if (!m) return;
    while (m > a->members && !strcmp(m[-1].user, user)) m--;
    for (; m < a->members + a->nmembers && !strcmp(m->user, user) && id->ngroups < CP_AUTH_MAX_GROUPS; m++)
        snprintf(id->groups[id->ngroups++], sizeof id->groups[0], "%s", m->group);
}

/* Checks password against the stored hash with crypt_r (constant-time compare). */
static int password_ok(const char *password, const char *hash)
{
    struct crypt_data *cd = calloc(1, sizeof *cd);
    if (!cd) return 0;
    const char *out = crypt_r(password, hash, cd);
    size_t n = strlen(hash);
    int ok = out && out[0] != '*' && strlen(out) == n && CRYPTO_memcmp(out, hash, n) == 0;
    OPENSSL_cleanse(cd, sizeof *cd);
    free(cd);
    return ok;
}

/* The client's address as text (the login backoff's key, the audit log's remote). */
void http_client_ip(struct MHD_Connection *conn, char *out, size_t outlen, const char *unknown)
{
    snprintf(out, outlen, "%s", unknown);
    const union MHD_ConnectionInfo *ci = conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS) : NULL;
    if (!ci || !ci->client_addr) return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out, (socklen_t)outlen);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, out, (socklen_t)outlen);
}

enum { LOGIN_OK = 0, LOGIN_NONE = -1, LOGIN_WAIT = -2 };

/* "Basic <base64(user:password)>" -> id. LOGIN_OK, LOGIN_NONE (bad credentials or
 * header), or LOGIN_WAIT with *retry set (backing off). */
static int basic_login(cp_http *h, struct MHD_Connection *conn, const char *value, cp_identity *id, int *retry)
{
    struct http_auth *a = h->auth;
    size_t vlen = strlen(value);
    if (vlen > AUTH_HEADER_MAX) return LOGIN_NONE;
    uint8_t key[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)value, vlen, key);
    memset(id, 0, sizeof *id);
    pthread_mutex_lock(&a->mu);
    refresh_files(h, a);
    uint64_t gen = a->gen;
    pthread_mutex_unlock(&a->mu);
    /* a header verified a moment ago */
    int64_t now = mono_ms();
    size_t slot;
    memcpy(&slot, key, sizeof slot);
    slot %= AUTH_CACHE_SLOTS;
    pthread_mutex_lock(&a->cache_mu);
    auth_cache_slot *c = &a->cache[slot];
    int hit = c->gen == gen && c->until_ms > now && CRYPTO_memcmp(c->key, key, sizeof key) == 0;
    if (hit) snprintf(id->user, sizeof id->user, "%s", c->user);
    pthread_mutex_unlock(&a->cache_mu);
    if (!hit) {
        /* decode "user:password" */
        const char *b64 = value + 6;
        while (*b64 == ' ') b64++;
        size_t blen = strlen(b64);
        if (blen == 0 || blen % 4 != 0) return LOGIN_NONE;
        unsigned char *dec = malloc(blen / 4 * 3 + 1);
        if (!dec) return LOGIN_NONE;
        int n = EVP_DecodeBlock(dec, (const unsigned char *)b64, (int)blen);
        if (n < 0) {
            free(dec);
            return LOGIN_NONE;
        }
        if (b64[blen - 1] == '=') n--;
        if (b64[blen - 2] == '=') n--;
        dec[n] = 0;
        char *colon = memchr(dec, ':', (size_t)n);
        if (!colon || colon == (char *)dec || memchr(dec, 0, (size_t)n) || (size_t)(colon - (char *)dec) >= CP_AUTH_MAX_USER) {
            OPENSSL_cleanse(dec, (size_t)n);
            free(dec);
            return LOGIN_NONE;
        }
        *colon = 0;
        const char *user = (const char *)dec, *password = colon + 1;
        char ip[INET6_ADDRSTRLEN + 1];
        http_client_ip(conn, ip, sizeof ip, "?"); /* unknown addresses share one backoff */
        if ((*retry = backoff_check(a, user, ip)) > 0) {
            OPENSSL_cleanse(dec, (size_t)n);
            free(dec);
            return LOGIN_WAIT;
        }
        char *hash = NULL;
        pthread_mutex_lock(&a->mu);
        auth_user k = {(char *)user, NULL};
        auth_user *u = bsearch(&k, a->users, a->nusers, sizeof *a->users, user_cmp);
        if (u) hash = strdup(u->hash);
        gen = a->gen;
        pthread_mutex_unlock(&a->mu);
        /* an unknown user costs a hash too, so timing does not tell which names exist */
        int ok = password_ok(password, hash ? hash : AUTH_DUMMY_HASH) && hash;
        free(hash);
        backoff_result(a, user, ip, ok);
        if (ok) snprintf(id->user, sizeof id->user, "%s", user);
        OPENSSL_cleanse(dec, (size_t)n);
        free(dec);
        if (!ok) return LOGIN_NONE;
        pthread_mutex_lock(&a->cache_mu);
        c = &a->cache[slot];
        memcpy(c->key, key, sizeof key);
        snprintf(c->user, sizeof c->user, "%s", id->user);
        c->until_ms = now + AUTH_CACHE_MS;
        c->gen = gen;
        pthread_mutex_unlock(&a->cache_mu);
    }
    pthread_mutex_lock(&a->mu);
    groups_of(h, a, id->user, id);
    pthread_mutex_unlock(&a->mu);
    return LOGIN_OK;
}

/* ---- the hook ---------------------------------------------------------------------------------- */

static int is_upload(const char *url, const char *method)
{
    return !strncmp(url, "/diagnostic/", 12) || !strcmp(url, "/diagnostic") ||
           (!strcmp(method, MHD_HTTP_METHOD_POST) && !strcmp(url, "/api/v1/import"));
}

/* Paths without a login: health and metrics (probes and scrapers have no user) and the
 * agent's self-update probe (it has no credential; the answer is always "none"). */
static int is_open(const char *url)
{
    return !strcmp(url, "/api/v1/health") || !strcmp(url, "/metrics") || !strcmp(url, "/api/v1/diagnostic/agent/updates");
}

/* A verified client certificate (it chains to --http-tls-client-ca). */
static int client_cert_ok(cp_http *h, struct MHD_Connection *conn)
{
    if (!h->cfg->tls_client_ca_file || !h->cfg->tls_cert_file) return 0;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!ci || !ci->tls_session) return 0;
    gnutls_session_t s = (gnutls_session_t)ci->tls_session;
    unsigned int n = 0, status = 0;
    if (!gnutls_certificate_get_peers(s, &n) || n == 0) return 0;
    return gnutls_certificate_verify_peers2(s, &status) == GNUTLS_E_SUCCESS && status == 0;
}

static void who_fill(http_who *w)
{
    for (size_t i = 0; i < w->p.nns; i++) {
        w->ns_ptrs[i] = w->p.ns[i];
        w->ns_names[i] = (cp_name){w->p.ns[i], strlen(w->p.ns[i])};
    }
}

/* cloudprof_http_auth_failures_total (no-op without metrics). */
static void count_failure(cp_http *h, cp_m_auth reason)
{
    if (h->cfg->metrics) cp_metrics_auth_failure(h->cfg->metrics, reason);
}

static void unauthenticated(cp_http *h, http_out *o, const char *why)
{
    http_error(o, 401, "unauthenticated", "%s", why);
    http_error_field(o, "auth", cp_auth_mode_name(h->cfg->auth_mode)); /* the UI: oidc -> its login page */
    if (h->cfg->auth_mode == CP_AUTH_OIDC) http_out_header(o, "WWW-Authenticate", "Bearer realm=\"cloudprof\"");
    else http_out_header(o, "WWW-Authenticate", "Basic realm=\"cloudprof\", charset=\"UTF-8\"");
}

static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind, const char *key, size_t klen, const char *val,
                               size_t vlen)
{
    http_args *a = cls;
    (void)kind;
    if (a->n >= HTTP_MAX_ARGS) {
        a->too_many = 1;
        return MHD_NO;
    }
    a->a[a->n++] = (http_arg){key, val ? val : "", klen, val ? vlen : 0};
    return MHD_YES;
}

/* The credentials of the request into w (w->p.role CP_ROLE_NONE and not uploader when
 * there are none). 0, or -1 with the answer in o. */
static int authenticate(cp_http *h, struct MHD_Connection *conn, int upload, http_who *w, int *have, http_out *o)
{
    struct http_auth *a = h->auth;
    const cp_http_config *c = h->cfg;
    cp_identity id;
    *have = 0;
    const char *az = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (az && !strncasecmp(az, "Bearer ", 7)) {
        const char *t = az + 7;
        while (*t == ' ') t++;
        size_t tl = strlen(t);
        if (a->token && tl == a->token_len && CRYPTO_memcmp(t, a->token, tl) == 0) {
            snprintf(w->p.user, sizeof w->p.user, "upload-token");
            w->p.uploader = 1;
            w->p.all_namespaces = 1;
            *have = 1;
            return 0;
        }
        if (c->auth_mode == CP_AUTH_OIDC) {
            char why[200] = "";
            memset(&id, 0, sizeof id);
            if (tl > 64 * 1024 || http_oidc_bearer(h, t, tl, &id, why, sizeof why) != 0) {
                count_failure(h, strstr(why, "expired") ? CP_M_AUTH_EXPIRED : CP_M_AUTH_BAD_CREDENTIALS);
                unauthenticated(h, o, why[0] ? why : "the bearer token is not valid");
                return -1;
            }
            cp_auth_policy_resolve(a->policy, &id, &w->p);
            *have = 1;
            return 0;
        }
        count_failure(h, CP_M_AUTH_BAD_CREDENTIALS);
        unauthenticated(h, o, "the bearer token is not valid");
        return -1;
    }
    if (az && !strncasecmp(az, "Basic ", 6) && c->auth_mode == CP_AUTH_BASIC) {
        int retry = 0;
        int rc = basic_login(h, conn, az, &id, &retry);
        if (rc == LOGIN_WAIT) {
            count_failure(h, CP_M_AUTH_BACKOFF);
            http_error(o, 429, "too_many_attempts", "too many failed logins; try again in %d s", retry);
            o->retry_after = retry;
            return -1;
        }
        if (rc != LOGIN_OK) {
            count_failure(h, CP_M_AUTH_BAD_CREDENTIALS);
            unauthenticated(h, o, "wrong user name or password");
            return -1;
        }
        cp_auth_policy_resolve(a->policy, &id, &w->p);
        *have = 1;
        return 0;
    }
    if (az && *az) {
        count_failure(h, CP_M_AUTH_BAD_CREDENTIALS);
        unauthenticated(h, o, "unsupported Authorization scheme");
        return -1;
    }
    if (c->auth_mode == CP_AUTH_OIDC) {
        const char *sid = MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, "cp_session");
        memset(&id, 0, sizeof id);
        if (sid && *sid && http_oidc_session(h, sid, &id) == 0) {
            cp_auth_policy_resolve(a->policy, &id, &w->p);
            *have = 1;
            return 0;
        }
    }
    if (upload && client_cert_ok(h, conn)) {
        snprintf(w->p.user, sizeof w->p.user, "client-certificate");
        w->p.uploader = 1;
        w->p.all_namespaces = 1;
        *have = 1;
    }
    return 0;
}

int http_auth_check(cp_http *h, struct MHD_Connection *conn, const char *url, const char *method, http_req *rq,
                    http_out *o)
{
    const cp_http_config *c = h->cfg;
    if (is_open(url)) return 0;
    if (c->auth_mode == CP_AUTH_OIDC && !strncmp(url, "/auth/", 6)) {
        http_args args;
        memset(&args, 0, sizeof args);
        MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, collect, &args);
        if (http_oidc_route(h, conn, url, &args, o)) return -1;
    }
    int upload = is_upload(url, method);
    if (!upload && http_ui_path(url)) return 0; /* the UI's files; the app asks /api/v1/me */
    int protect_uploads = h->auth->token || c->tls_client_ca_file;
    if (c->auth_mode == CP_AUTH_NONE && !(upload && protect_uploads)) return 0;
    /* not zeroed (tens of KiB per request): every path below sets what it uses */
    http_who *w = malloc(sizeof *w);
    if (!w) {
        http_oom(o);
        return -1;
    }
    w->p.user[0] = 0;
    w->p.role = CP_ROLE_NONE;
    w->p.all_namespaces = 0;
    w->p.nns = 0;
    w->p.uploader = 0;
    int have = 0;
    if (authenticate(h, conn, upload, w, &have, o) != 0) {
        free(w);
        return -1;
    }
    if (!have) {
        free(w);
        count_failure(h, CP_M_AUTH_MISSING);
        unauthenticated(h, o, upload ? "an upload needs the upload token, a client certificate or a login"
                                     : "log in first");
        return -1;
    }
    const char *why = NULL;
    int is_me = !strcmp(url, "/api/v1/me");
    if (upload) {
        if (!w->p.uploader && !cp_principal_can(&w->p, CP_ROLE_OPERATOR)) why = "uploads need the operator role";
    } else if (w->p.uploader) {
        why = "an upload credential only uploads";
    } else if (!is_me && !cp_principal_can(&w->p, CP_ROLE_VIEWER)) {
        why = "no role (viewer, operator or admin) for this user";
    } else if (!strcmp(method, MHD_HTTP_METHOD_DELETE) && !cp_principal_can(&w->p, CP_ROLE_OPERATOR)) {
        why = "deleting needs the operator role";
    }
    if (why) {
        free(w);
        count_failure(h, CP_M_AUTH_FORBIDDEN);
        http_error(o, 403, "forbidden", "%s", why);
        return -1;
    }
    who_fill(w);
    rq->who = w;
    return 0;
}

void http_auth_done(http_req *rq)
{
    free(rq->who);
    rq->who = NULL;
}

/* ---- what endpoints ask ------------------------------------------------------------------------ */

int http_who_sees(const http_who *w, const char *ns, size_t len)
{
    if (!w || w->p.all_namespaces) return 1;
    return cp_name_in(w->ns_names, w->p.nns, ns, len);
}

void http_who_dump_scope(const http_who *w, cp_dump_filter *f)
{
    if (!w || w->p.all_namespaces) return;
    f->ns_limited = 1;
    f->ns_in = w->ns_ptrs;
    f->nns_in = w->p.nns;
}

void http_api_me(cp_http *h, const http_args *a, http_out *o)
{
    if (http_check_args(a, NULL, o)) return;
    cp_principal anyone;
    const cp_principal *p = a->who ? &a->who->p : NULL;
    if (!p) cp_principal_anyone(&anyone);
    json_t *ns = json_array();
    for (size_t i = 0; p && ns && !p->all_namespaces && i < p->nns; i++) json_array_append_new(ns, json_string(p->ns[i]));
    if (!p || p->all_namespaces) {
        json_decref(ns);
        ns = json_string("*");
    }
    cp_auth_mode m = h->cfg->auth_mode;
    o->json = json_pack("{s:o,s:s,s:o,s:s,s:o}", "user", p && p->user[0] ? json_string(p->user) : json_null(), "role",
                        cp_role_name(p ? p->role : anyone.role), "namespaces", ns ? ns : json_null(), "auth",
                        cp_auth_mode_name(m), "logout", m == CP_AUTH_OIDC ? json_string("/auth/logout") : json_null());
    if (!o->json) http_oom(o);
}

/* ---- HTTPS ------------------------------------------------------------------------------------- */

static int read_pem(const char *path, const char *what, char **out, char *err, size_t errlen)
{
    cp_buf b;
    cp_buf_init(&b);
    if (cp_read_file(path, 1u << 20, &b) != CP_OK || cp_buf_putc(&b, 0) != CP_OK) {
        cp_buf_free(&b);
        snprintf(err, errlen, "%s: cannot read %s (PEM, at most 1 MiB)", what, path);
        return CP_EINVAL;
    }
    *out = (char *)b.data;
    return CP_OK;
}

int http_tls_options(cp_http *h, struct MHD_OptionItem opts[4], unsigned *flags, char *err, size_t errlen)
{
    const cp_http_config *c = h->cfg;
    size_t n = 0;
    if (!c->tls_cert_file && !c->tls_key_file && !c->tls_client_ca_file) {
        opts[0] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
        return CP_OK;
    }
    if (!c->tls_cert_file || !c->tls_key_file) {
        snprintf(err, errlen, "HTTPS needs both --http-tls-cert and --http-tls-key");
        return CP_EINVAL;
    }
    if (!(MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES)) {
        snprintf(err, errlen, "this libmicrohttpd has no TLS");
        return CP_EINVAL;
    }
    if (read_pem(c->tls_cert_file, "--http-tls-cert", &h->tls_pem[0], err, errlen) != CP_OK ||
        read_pem(c->tls_key_file, "--http-tls-key", &h->tls_pem[1], err, errlen) != CP_OK ||
        (c->tls_client_ca_file &&
         read_pem(c->tls_client_ca_file, "--http-tls-client-ca", &h->tls_pem[2], err, errlen) != CP_OK))
        return CP_EINVAL;
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls_pem[0]};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_pem[1]};
    if (h->tls_pem[2]) opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, h->tls_pem[2]};
    opts[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    *flags |= MHD_USE_TLS;
    return CP_OK;
}

void http_tls_free(cp_http *h)
{
    for (size_t i = 0; i < CP_ARRAY_LEN(h->tls_pem); i++) {
        if (h->tls_pem[i]) OPENSSL_cleanse(h->tls_pem[i], strlen(h->tls_pem[i]));
        free(h->tls_pem[i]);
        h->tls_pem[i] = NULL;
    }
}
