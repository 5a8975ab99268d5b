/* ostore_s3.c -- the object store over S3 (AWS, Swift s3api, Ceph radosgw, ...).
 *
 * Every request is one libcurl easy transfer, signed by libcurl itself
 * (CURLOPT_AWS_SIGV4 "aws:amz:<region>:s3"). libcurl 7.88 leaves two parts of SigV4 to
 * the caller, so this file does them:
 *   - the x-amz-content-sha256 header: the hex SHA-256 of the body (of the empty string
 *     for GET, HEAD and DELETE); libcurl signs the value we give. The header goes out
 *     before the body, so a file (or a part of one) is read twice: once to hash it
 *     (pread, 1 MiB at a time), once to send it; a stream's part is hashed in memory;
 *   - the canonical query string: parameters sorted by name, values %-encoded, empty
 *     values written "name=" ("?uploads=").
 * An access key containing ':' (Swift tempauth's "test:tester") cannot go in the URL, so
 * the credentials go through CURLOPT_USERNAME / CURLOPT_PASSWORD.
 *
 * URLs are path-style: <endpoint>/<bucket>/<prefix>/<key>, each component %-encoded per
 * RFC 3986 (unreserved characters kept, '/' kept between components).
 *
 * Objects above multipart_threshold (and streams longer than one part) go up as
 * multipart uploads: initiate, parts of part_size, complete with the parts' ETags; on
 * any failure the upload is aborted so no parts are left behind.
 *
 * Each request is retried with exponential backoff on connection errors, 5xx and 429,
 * never on other 4xx. Request bodies are memory or a slice of a file, so a retry can
 * send them again. Everything the server sends is bounded: XML answers are read into a
 * capped buffer and scanned by a small hand-written scanner, error bodies are capped,
 * header values are cut, listed keys longer than a key may be are skipped, and lists go
 * page by page with continuation tokens.
 *
 * Thread safety: the store holds only its configuration, which never changes after
 * open; every call makes its own curl handle (reused for the requests of that call, so
 * pages and parts share a connection). curl_global_init runs once, via pthread_once. */
#include "store/ostore/ostore_internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cp_fsutil.h"

#define MIB (1024ull * 1024ull)
#define DEFAULT_REGION "us-east-1"
#define DEFAULT_THRESHOLD (64 * MIB)
#define DEFAULT_PART_SIZE (16 * MIB)
#define DEFAULT_RETRIES 4
#define DEFAULT_BACKOFF_MS 200
#define MIN_PART_SIZE (5 * MIB)         /* S3's minimum for every part but the last */
#define MAX_PART_SIZE (5120 * MIB)      /* S3's maximum part (and single PUT) */
#define MAX_PARTS 10000                 /* S3's maximum number of parts */
#define MAX_XML_BODY (8 * MIB)          /* list / initiate / complete answers */
#define MAX_ERR_BODY (64 * 1024)        /* error answers: enough for Code and Message */
#define MAX_BACKOFF_MS 30000            /* one retry never waits longer than this */
#define MAX_TOKEN 4096                  /* continuation token, upload id */
#define MAX_ETAG 256
#define LIST_PAGE 1000
#define HASH_CHUNK (1u << 20)           /* bytes per pread when hashing a file slice */
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

typedef struct s3_store {
    cp_ostore base;
    char *endpoint;    /* "http(s)://host[:port]", no trailing '/' */
    char *bucket;
    char *prefix;      /* "" or "a/b": no leading or trailing '/' */
    char *access_key;
    char *secret_key;
    char *sigv4;       /* "aws:amz:<region>:s3" */
    char *region;
    uint64_t threshold;
    uint64_t part_size;
    int retries;
    int backoff_ms;
    long timeout_s;
    int list_page;     /* keys per ListObjectsV2 request */
} s3_store;

static s3_store *S3(cp_ostore *s) { return (s3_store *)s; }


/* ---- curl global init, once ---------------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init_once(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* ---- encoding and hashing ------------------------------------------------------------- */

static int unreserved(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~';
}

/* Appends s %-encoded per RFC 3986: unreserved characters kept, '/' kept if keep_slash,
 * every other byte as %XX (upper-case hex, as SigV4 wants). */
static int pct_encode(cp_buf *out, const char *s, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int st;
        if (unreserved(*p) || (keep_slash && *p == '/')) {
            st = cp_buf_putc(out, *p);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            st = cp_buf_append(out, e, 3);
        }
        if (st != CP_OK) return st;
    }
    return CP_OK;
}

static void hex_digest(const unsigned char *md, unsigned len, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (unsigned i = 0; i < len; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[2 * len] = 0;
}

/* Hex SHA-256 of n bytes of memory into out[65]. */
static int sha256_mem(const void *p, size_t n, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (!EVP_Digest(p, n, md, &len, EVP_sha256(), NULL)) return CP_ENOMEM;
    hex_digest(md, len, out);
    return CP_OK;
}

/* Hex SHA-256 of the file slice [off, off+len) into out[65]. CP_EIO (errno set) if the
 * file cannot be read or is shorter than the slice. */
static int sha256_file(int fd, uint64_t off, uint64_t len, char out[65])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char *buf = malloc(HASH_CHUNK);
    int st = (ctx && buf && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) ? CP_OK : CP_ENOMEM;
    while (st == CP_OK && len) {
        size_t want = len < HASH_CHUNK ? (size_t)len : HASH_CHUNK;
        long got = cp_pread_all(fd, buf, want, off);
        if (got < 0) {
            st = CP_EIO;
        } else if ((size_t)got < want) {
            errno = ENODATA; /* the file shrank under us */
            st = CP_EIO;
        } else if (!EVP_DigestUpdate(ctx, buf, want)) {
            st = CP_ENOMEM;
        }
        off += want;
        len -= want;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    if (st == CP_OK && !EVP_DigestFinal_ex(ctx, md, &mdlen)) st = CP_ENOMEM;
    if (st == CP_OK) hex_digest(md, mdlen, out);
    int e = errno;
    EVP_MD_CTX_free(ctx);
    free(buf);
    errno = e;
    return st;
}

/* ---- a small bounded XML scanner -------------------------------------------------------
 * S3's answers are flat and regular: we only ever need the text of an element found by
 * name (<Key>, <Size>, <Code>, ...) inside a byte range, and the blocks of a repeated
 * element (<Contents>...</Contents>). Every search is bounded by the range's end; the
 * body is NUL-terminated by the caller but the scanner never relies on it. */

typedef struct xml_span {
    const char *p;
    size_t n;
} xml_span;

/* Finds the first element <name ...>text</name> (or <name/>) in [*pos, end): sets *text
 * to its content and *pos past its end tag. 0 if there is none (or it is unclosed). */
static int xml_find(const char **pos, const char *end, const char *name, xml_span *text)
{
    size_t nl = strlen(name);
    const char *p = *pos;
    while (p < end) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        if (!lt) return 0;
        p = lt + 1;
        if ((size_t)(end - p) < nl + 1 || memcmp(p, name, nl) != 0) continue;
        char after = p[nl];
        if (after != '>' && after != '/' && after != ' ' && after != '\t' && after != '\r' && after != '\n') continue;
        const char *gt = memchr(p, '>', (size_t)(end - p));
        if (!gt) return 0;
        if (gt[-1] == '/') { /* <name/>: empty */
            text->p = gt + 1;
            text->n = 0;
            *pos = gt + 1;
            return 1;
        }
        const char *body = gt + 1;
        /* the end tag "</name>" */
        for (const char *q = body; q < end;) {
            const char *c = memchr(q, '<', (size_t)(end - q));
            if (!c) return 0;
            if ((size_t)(end - c) >= nl + 3 && c[1] == '/' && memcmp(c + 2, name, nl) == 0 && c[2 + nl] == '>') {
                text->p = body;
                text->n = (size_t)(c - body);
                *pos = c + nl + 3;
                return 1;
            }
            q = c + 1;
        }
        return 0;
    }
    return 0;
}

/* Appends the UTF-8 of code point cp. */
static int put_utf8(cp_buf *out, unsigned long cp)
{
    uint8_t b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (uint8_t)cp, n = 1;
    } else if (cp < 0x800) {
        b[0] = (uint8_t)(0xC0 | cp >> 6), b[1] = (uint8_t)(0x80 | (cp & 63)), n = 2;
    } else if (cp < 0x10000) {
        b[0] = (uint8_t)(0xE0 | cp >> 12), b[1] = (uint8_t)(0x80 | ((cp >> 6) & 63));
        b[2] = (uint8_t)(0x80 | (cp & 63)), n = 3;
    } else {
        b[0] = (uint8_t)(0xF0 | cp >> 18), b[1] = (uint8_t)(0x80 | ((cp >> 12) & 63));
        b[2] = (uint8_t)(0x80 | ((cp >> 6) & 63)), b[3] = (uint8_t)(0x80 | (cp & 63)), n = 4;
    }
    return cp_buf_append(out, b, n);
}

/* Decodes element text (the five named entities and &#..; references) into out as a
 * NUL-terminated string of at most max bytes. CP_ELIMIT if longer, CP_EPROTO if an
 * entity is malformed. */
static int xml_text(xml_span t, size_t max, cp_buf *out)
{
    static const struct { const char *name; char c; } ents[] = {
        {"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''},
    };
    cp_buf_reset(out);
    for (size_t i = 0; i < t.n; i++) {
        int st;
        if (t.p[i] != '&') {
            st = cp_buf_putc(out, (uint8_t)t.p[i]);
        } else {
            const char *semi = memchr(t.p + i, ';', t.n - i < 12 ? t.n - i : 12);
            if (!semi) return CP_EPROTO;
            const char *e = t.p + i + 1;
            size_t elen = (size_t)(semi - e) + 1;
            st = CP_EPROTO;
            if (e[0] == '#') {
                int hexa = e[1] == 'x' || e[1] == 'X';
                unsigned long cp = 0;
                const char *d = e + 1 + hexa;
                if (d == semi) return CP_EPROTO;
                for (; d < semi; d++) {
                    int v = (*d >= '0' && *d <= '9') ? *d - '0'
                            : (hexa && *d >= 'a' && *d <= 'f') ? *d - 'a' + 10
                            : (hexa && *d >= 'A' && *d <= 'F') ? *d - 'A' + 10 : -1;
                    if (v < 0) return CP_EPROTO;
                    cp = cp * (hexa ? 16 : 10) + (unsigned long)v;
                    if (cp > 0x10FFFF) return CP_EPROTO;
                }
                if (cp == 0) return CP_EPROTO;
                st = put_utf8(out, cp);
            } else {
                for (size_t k = 0; k < CP_ARRAY_LEN(ents); k++)
                    if (strlen(ents[k].name) == elen && memcmp(e, ents[k].name, elen) == 0)
                        st = cp_buf_putc(out, (uint8_t)ents[k].c);
            }
            if (st == CP_EPROTO) return st;
            i = (size_t)(semi - t.p);
        }
        if (st != CP_OK) return st;
        if (out->len > max) return CP_ELIMIT;
    }
    return cp_buf_putc(out, 0);
}

/* The text of the first <name> in [p, end) into out (at most max bytes); CP_ENOTFOUND
 * if there is no such element. */
static int xml_get(const char *p, const char *end, const char *name, size_t max, cp_buf *out)
{
    xml_span t;
    if (!xml_find(&p, end, name, &t)) return CP_ENOTFOUND;
    return xml_text(t, max, out);
}

/* ---- one HTTP request ------------------------------------------------------------------- */

enum { SINK_NONE, SINK_BUF, SINK_FD, SINK_MEM };

typedef struct s3_req {
    /* what to send */
    const char *method;        /* GET PUT POST DELETE HEAD */
    const char *key;           /* object key below the store's prefix; NULL: the bucket */
    const char *query;         /* sorted and %-encoded, without '?'; NULL for none */
    const char *range;         /* "bytes=a-b" or NULL */
    const char *content_type;  /* or NULL */
    const uint8_t *body;       /* body in memory ... */
    int body_fd;               /* ... or a slice of a file (fd >= 0) */
    uint64_t body_off;
    uint64_t body_len;
    char sha256[65];           /* of the body; filled in by req_hash */
    /* where the answer goes (2xx only; error bodies go to errbody) */
    int sink;
    cp_buf *out;               /* SINK_BUF, at most MAX_XML_BODY */
    int out_fd;                /* SINK_FD */
    uint8_t *dst;              /* SINK_MEM: dst[0..dst_len) from byte range_off */
    size_t dst_len;
    uint64_t range_off;
    /* state of the current attempt */
    uint64_t sent;
    uint64_t skipped;
    size_t got;
    int read_errno;            /* reading the body file failed */
    int write_errno;           /* writing out_fd failed */
    int overflow;              /* SINK_BUF over its cap */
    int mem_full;              /* SINK_MEM done early on a 200 (the server ignored Range) */
    /* the answer */
    long status;
    char etag[MAX_ETAG];
    uint64_t content_length;
    int have_length;
    cp_buf errbody;
} s3_req;

/* One call of the API: its curl handle (reused by its requests) and its error buffer. */
typedef struct s3_call {
    s3_store *s;
    CURL *curl;
    char *err;
    size_t errlen;
} s3_call;

static int call_begin(s3_call *c, s3_store *s, char *err, size_t errlen)
{
    c->s = s;
    c->err = err;
    c->errlen = errlen;
    c->curl = curl_easy_init();
    if (!c->curl) return cp_ostore_fail(err, errlen, CP_ENOMEM, "s3: cannot create a curl handle");
    return CP_OK;
}

static void call_end(s3_call *c)
{
    if (c->curl) curl_easy_cleanup(c->curl);
    c->curl = NULL;
}

static void req_init(s3_req *r, const char *method, const char *key)
{
    memset(r, 0, sizeof *r);
    r->method = method;
    r->key = key;
    r->body_fd = -1;
    r->out_fd = -1;
    cp_buf_init(&r->errbody);
}

static void req_free(s3_req *r) { cp_buf_free(&r->errbody); }

/* Fills r->sha256 from the body. */
static int req_hash(s3_req *r)
{
    if (r->body_fd >= 0) return sha256_file(r->body_fd, r->body_off, r->body_len, r->sha256);
    if (r->body_len) return sha256_mem(r->body, (size_t)r->body_len, r->sha256);
    memcpy(r->sha256, EMPTY_SHA256, sizeof EMPTY_SHA256);
    return CP_OK;
}

/* "s3://bucket/prefix/key" (or "s3://bucket") for messages and url(). */
static int display_name(s3_store *s, const char *key, cp_buf *out)
{
    int st = cp_buf_printf(out, "s3://%s", s->bucket);
    if (st == CP_OK && s->prefix[0]) st = cp_buf_printf(out, "/%s", s->prefix);
    if (st == CP_OK && key) st = cp_buf_printf(out, "/%s", key);
    return st;
}

/* <endpoint>/<bucket>[/<prefix>][/<key>][?query], NUL-terminated. */
static int build_url(s3_store *s, const s3_req *r, cp_buf *url)
{
    int st = cp_buf_puts(url, s->endpoint);
    if (st == CP_OK) st = cp_buf_putc(url, '/');
    if (st == CP_OK) st = pct_encode(url, s->bucket, 0);
    if (st == CP_OK && r->key) {
        if (s->prefix[0]) {
            st = cp_buf_putc(url, '/');
            if (st == CP_OK) st = pct_encode(url, s->prefix, 1);
        }
        if (st == CP_OK) st = cp_buf_putc(url, '/');
        if (st == CP_OK) st = pct_encode(url, r->key, 1);
    }
    if (st == CP_OK && r->query) st = cp_buf_printf(url, "?%s", r->query);
    if (st == CP_OK) st = cp_buf_putc(url, 0);
    return st;
}

static size_t on_read(char *buf, size_t size, size_t nitems, void *ud)
{
    s3_req *r = ud;
    uint64_t left = r->body_len - r->sent;
    size_t n = size * nitems;
    if (n > left) n = (size_t)left;
    if (n == 0) return 0;
    if (r->body_fd >= 0) {
        long got = cp_pread_all(r->body_fd, buf, n, r->body_off + r->sent);
        if (got <= 0) {
            r->read_errno = got < 0 ? errno : ENODATA; /* ENODATA: the file shrank */
            return CURL_READFUNC_ABORT;
        }
        n = (size_t)got;
    } else {
        memcpy(buf, r->body + r->sent, n);
    }
    r->sent += n;
    return n;
}

/* libcurl rewinds the body when it must send it again (e.g. on a reused connection the
 * server had closed). */
static int on_seek(void *ud, curl_off_t offset, int origin)
{
    s3_req *r = ud;
    if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > r->body_len) return CURL_SEEKFUNC_FAIL;
    r->sent = (uint64_t)offset;
    return CURL_SEEKFUNC_OK;
}

/* Header lines, one per call. A status line starts a new answer (after "100 Continue",
 * or on a redirect): forget what the previous one said. */
static size_t on_header(char *p, size_t size, size_t nitems, void *ud)
{
    s3_req *r = ud;
    size_t n = size * nitems, len = n;
    while (len && (p[len - 1] == '\r' || p[len - 1] == '\n')) len--;
    if (len > 5 && memcmp(p, "HTTP/", 5) == 0) {
        const char *sp = memchr(p, ' ', len);
        r->status = 0;
        if (sp)
            for (const char *d = sp + 1; d < p + len && *d >= '0' && *d <= '9' && r->status < 1000; d++)
                r->status = r->status * 10 + (*d - '0');
        r->etag[0] = 0;
        r->have_length = 0;
        return n;
    }
    const char *colon = memchr(p, ':', len);
    if (!colon) return n;
    size_t nl = (size_t)(colon - p);
    const char *v = colon + 1, *end = p + len;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t')) end--;
    size_t vl = (size_t)(end - v);
    if (nl == 4 && strncasecmp(p, "etag", 4) == 0) {
        if (vl >= sizeof r->etag) vl = sizeof r->etag - 1; /* cut: a real ETag is ~34 bytes */
        memcpy(r->etag, v, vl);
        r->etag[vl] = 0;
    } else if (nl == 14 && strncasecmp(p, "content-length", 14) == 0) {
        uint64_t x = 0;
        size_t i = 0;
        for (; i < vl && i < 19 && v[i] >= '0' && v[i] <= '9'; i++) x = x * 10 + (uint64_t)(v[i] - '0');
        if (i == vl && vl > 0) {
            r->content_length = x;
            r->have_length = 1;
        }
    }
    return n;
}

static size_t on_write(char *p, size_t size, size_t nitems, void *ud)
{
    s3_req *r = ud;
    size_t n = size * nitems;
    if (r->status < 200 || r->status > 299) {
        /* an error answer: keep its start for the Code and Message */
        size_t room = MAX_ERR_BODY - r->errbody.len;
        if (room && cp_buf_append(&r->errbody, p, n < room ? n : room) != CP_OK) return 0;
        return n;
    }
    switch (r->sink) {
    case SINK_BUF:
        if (r->out->len + n > MAX_XML_BODY) {
            r->overflow = 1;
            return 0;
        }
        return cp_buf_append(r->out, p, n) == CP_OK ? n : 0;
    case SINK_FD:
        if (cp_write_all(r->out_fd, p, n) != CP_OK) {
            r->write_errno = errno;
            return 0;
        }
        return n;
    case SINK_MEM: {
        size_t off = 0;
        if (r->status == 200 && r->range_off > r->skipped) {
            /* a full answer to a Range request: skip to the range */
            uint64_t skip = r->range_off - r->skipped;
            off = skip < n ? (size_t)skip : n;
            r->skipped += off;
        }
        size_t take = n - off, room = r->dst_len - r->got;
        if (take > room) take = room;
        memcpy(r->dst + r->got, p + off, take);
        r->got += take;
        if (r->got == r->dst_len && r->status == 200 && off + take < n) {
            r->mem_full = 1; /* the rest of a full answer is not wanted */
            return 0;
        }
        return n;
    }
    default:
        return n;
    }
}

/* Connection-level failures worth another try. */
static int curl_retryable(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return 1;
    default:
        return 0;
    }
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Sets the handle up for r (it keeps its connections across requests). */
static int req_setup(s3_call *c, s3_req *r, const char *url, struct curl_slist **hdrs, char *curl_err)
{
    s3_store *s = c->s;
    CURL *h = c->curl;
    curl_easy_reset(h);
    char line[MAX_TOKEN];
    struct curl_slist *l = NULL, *t;
    snprintf(line, sizeof line, "x-amz-content-sha256: %s", r->sha256);
    l = curl_slist_append(l, line);
    if (l && r->range) {
        snprintf(line, sizeof line, "Range: %s", r->range);
        if ((t = curl_slist_append(l, line)) != NULL) l = t; else goto nomem;
    }
    if (l && r->content_type) {
        snprintf(line, sizeof line, "Content-Type: %s", r->content_type);
        if ((t = curl_slist_append(l, line)) != NULL) l = t; else goto nomem;
    }
    if (!l) goto nomem;
    *hdrs = l;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, s->sigv4);
    curl_easy_setopt(h, CURLOPT_USERNAME, s->access_key);
    curl_easy_setopt(h, CURLOPT_PASSWORD, s->secret_key);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "cloudprof");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, s->timeout_s);
    /* a stalled transfer (no byte for a minute) counts as a connection error */
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    if (strcmp(r->method, "PUT") == 0 || strcmp(r->method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, r);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, r);
        if (r->method[1] == 'U') {
            curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
        } else {
            curl_easy_setopt(h, CURLOPT_POST, 1L);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
        }
    } else if (strcmp(r->method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (strcmp(r->method, "DELETE") == 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    return CP_OK;
nomem:
    curl_slist_free_all(l);
    return CP_ENOMEM;
}

/* Forgets what the previous attempt received. */
static int req_reset_attempt(s3_req *r)
{
    r->sent = 0;
    r->skipped = 0;
    r->got = 0;
    r->read_errno = r->write_errno = r->overflow = r->mem_full = 0;
    r->status = 0;
    r->etag[0] = 0;
    r->have_length = 0;
    r->content_length = 0;
    cp_buf_reset(&r->errbody);
    if (r->sink == SINK_BUF) cp_buf_reset(r->out);
    if (r->sink == SINK_FD) {
        if (ftruncate(r->out_fd, 0) != 0 || lseek(r->out_fd, 0, SEEK_SET) != 0) return CP_EIO;
    }
    return CP_OK;
}

/* The Code and Message of an S3 error body into code/msg (empty if there are none). */
static void error_code(const cp_buf *body, char *code, size_t codelen, char *msg, size_t msglen)
{
    code[0] = msg[0] = 0;
    if (!body->len) return;
    const char *p = (const char *)body->data, *end = p + body->len;
    cp_buf t;
    cp_buf_init(&t);
    if (xml_get(p, end, "Code", codelen - 1, &t) == CP_OK) memcpy(code, t.data, t.len);
    /* a long Message is cut rather than dropped */
    xml_span m;
    const char *q = p;
    if (xml_find(&q, end, "Message", &m)) {
        if (m.n > 4 * msglen) m.n = 4 * msglen;
        if (xml_text(m, 4 * msglen, &t) == CP_OK) snprintf(msg, msglen, "%s", (char *)t.data);
    }
    cp_buf_free(&t);
}

/* The status for an HTTP error answer. */
static int http_status(long status, const char *code)
{
    if (status == 404 && strcmp(code, "NoSuchBucket") != 0 && strcmp(code, "NoSuchUpload") != 0) return CP_ENOTFOUND;
    if (status == 416) return CP_ECORRUPT;
    return CP_EIO;
}

/* Sends r, with retries. CP_OK for a 2xx answer; otherwise the status and a message
 * "<METHOD> s3://bucket/prefix/key: <status> <Code> (<Message>)" in c->err. */
static int s3_do(s3_call *c, s3_req *r)
{
    s3_store *s = c->s;
    cp_buf url, name;
    cp_buf_init(&url);
    cp_buf_init(&name);
    struct curl_slist *hdrs = NULL;
    char curl_err[CURL_ERROR_SIZE];
    int st = build_url(s, r, &url);
    if (st == CP_OK) st = display_name(s, r->key, &name);
    if (st == CP_OK) st = cp_buf_putc(&name, 0);
    if (st == CP_OK && !r->sha256[0]) {
        st = req_hash(r);
        if (st != CP_OK) {
            char eb[128];
            int e = errno;
            st = cp_ostore_fail(c->err, c->errlen, st, "%s %s: cannot read the body: %s", r->method, (char *)name.data,
                      cp_ostore_errno_str(e, eb, sizeof eb));
            goto out;
        }
    }
    if (st == CP_OK) st = req_setup(c, r, (char *)url.data, &hdrs, curl_err);
    if (st != CP_OK) {
        st = cp_ostore_fail(c->err, c->errlen, st, "%s %s: out of memory", r->method, name.len ? (char *)name.data : "s3");
        goto out;
    }
    const char *nm = (const char *)name.data;
    for (int attempt = 0;; attempt++) {
        if (req_reset_attempt(r) != CP_OK) {
            char eb[128];
            int e = errno;
            st = cp_ostore_fail(c->err, c->errlen, CP_EIO, "%s %s: cannot rewind the output file: %s", r->method, nm,
                      cp_ostore_errno_str(e, eb, sizeof eb));
            break;
        }
        curl_err[0] = 0;
        CURLcode rc = curl_easy_perform(c->curl);
        if (rc == CURLE_WRITE_ERROR && r->mem_full) rc = CURLE_OK;
        int retry = 0;
        char when[48] = "";
        if (attempt > 0) snprintf(when, sizeof when, " (after %d attempts)", attempt + 1);
        if (rc == CURLE_OK && r->status >= 200 && r->status <= 299) {
            st = CP_OK;
            break;
        }
        if (rc == CURLE_OK) {
            char code[128], msg[256];
            error_code(&r->errbody, code, sizeof code, msg, sizeof msg);
            retry = r->status >= 500 || r->status == 429;
            st = cp_ostore_fail(c->err, c->errlen, http_status(r->status, code), "%s %s: %ld %s%s%s%s%s", r->method, nm,
                      r->status, code[0] ? code : "(no error code)", msg[0] ? " (" : "", msg, msg[0] ? ")" : "",
                      when);
        } else if (r->read_errno) {
            char eb[128];
            st = cp_ostore_fail(c->err, c->errlen, CP_EIO, "%s %s: reading the body: %s", r->method, nm,
                      cp_ostore_errno_str(r->read_errno, eb, sizeof eb));
        } else if (r->write_errno) {
            char eb[128];
            st = cp_ostore_fail(c->err, c->errlen, CP_EIO, "%s %s: writing the answer: %s", r->method, nm,
                      cp_ostore_errno_str(r->write_errno, eb, sizeof eb));
        } else if (r->overflow) {
            st = cp_ostore_fail(c->err, c->errlen, CP_ELIMIT, "%s %s: the answer is larger than %llu bytes", r->method, nm,
                      (unsigned long long)MAX_XML_BODY);
        } else {
            retry = curl_retryable(rc);
            st = cp_ostore_fail(c->err, c->errlen, CP_EIO, "%s %s: %s: %s%s%s%s", r->method, nm, s->endpoint,
                      curl_easy_strerror(rc), curl_err[0] ? ": " : "", curl_err, when);
        }
        if (!retry || attempt >= s->retries) break;
        long delay = s->backoff_ms;
        for (int i = 0; i < attempt && delay < MAX_BACKOFF_MS; i++) delay *= 2;
        sleep_ms(delay < MAX_BACKOFF_MS ? delay : MAX_BACKOFF_MS);
    }
out:
    curl_slist_free_all(hdrs);
    cp_buf_free(&url);
    cp_buf_free(&name);
    return st;
}

/* ---- keys and error helpers ------------------------------------------------------------ */

static int check_key(const char *op, const char *key, char *err, size_t errlen)
{
    if (cp_ostore_key_ok(key)) return CP_OK;
    return cp_ostore_fail(err, errlen, CP_EINVAL,
                "%s: invalid object key \"%.64s\" (want [A-Za-z0-9._-/], no empty, . or .. component, at most %d bytes)",
                op, key ? key : "(null)", CP_OSTORE_MAX_KEY);
}

/* ---- multipart upload ------------------------------------------------------------------- */

typedef struct mp_upload {
    s3_call *c;
    const char *key;
    char *upload_id;     /* %-encoded, ready for a query string */
    char (*etags)[MAX_ETAG];
    int nparts;
    int cap;
} mp_upload;

/* Initiates the upload: POST key?uploads= answers <UploadId>. */
static int mp_begin(mp_upload *m, s3_call *c, const char *key)
{
    memset(m, 0, sizeof *m);
    m->c = c;
    m->key = key;
    cp_buf body, id, enc;
    cp_buf_init(&body);
    cp_buf_init(&id);
    cp_buf_init(&enc);
    s3_req r;
    req_init(&r, "POST", key);
    r.query = "uploads=";
    r.content_type = "application/octet-stream"; /* the object's type */
    r.sink = SINK_BUF;
    r.out = &body;
    int st = s3_do(c, &r);
    if (st == CP_OK) {
        const char *p = (const char *)body.data, *end = p + body.len;
        st = body.len ? xml_get(p, end, "UploadId", MAX_TOKEN / 4, &id) : CP_ENOTFOUND;
        if (st == CP_OK && id.len <= 1) st = CP_ENOTFOUND;
        if (st == CP_OK) st = pct_encode(&enc, (char *)id.data, 0);
        if (st == CP_OK) st = cp_buf_putc(&enc, 0);
        if (st == CP_OK) {
            m->upload_id = (char *)enc.data;
            cp_buf_init(&enc);
        } else if (st != CP_ENOMEM) {
            st = cp_ostore_fail(c->err, c->errlen, CP_EPROTO, "POST %s?uploads: no usable UploadId in the answer", key);
        }
    }
    req_free(&r);
    cp_buf_free(&body);
    cp_buf_free(&id);
    cp_buf_free(&enc);
    return st;
}

/* Uploads the next part, whose body (memory or file slice) the caller set in r. */
static int mp_part(mp_upload *m, s3_req *r)
{
    if (m->nparts == MAX_PARTS)
        return cp_ostore_fail(m->c->err, m->c->errlen, CP_ELIMIT, "PUT %s: more than %d parts (raise part_size)", m->key,
                    MAX_PARTS);
    if (m->nparts == m->cap) {
        int nc = m->cap ? m->cap * 2 : 16;
        void *ne = realloc(m->etags, (size_t)nc * sizeof *m->etags);
        if (!ne) return cp_ostore_fail(m->c->err, m->c->errlen, CP_ENOMEM, "PUT %s: out of memory", m->key);
        m->etags = ne;
        m->cap = nc;
    }
    char query[MAX_TOKEN + 64];
    snprintf(query, sizeof query, "partNumber=%d&uploadId=%s", m->nparts + 1, m->upload_id);
    r->method = "PUT";
    r->key = m->key;
    r->query = query;
    r->sink = SINK_NONE;
    int st = s3_do(m->c, r);
    if (st != CP_OK) return st;
    if (!r->etag[0])
        return cp_ostore_fail(m->c->err, m->c->errlen, CP_EPROTO, "PUT %s part %d: the answer has no ETag", m->key,
                    m->nparts + 1);
    memcpy(m->etags[m->nparts], r->etag, sizeof r->etag);
    m->nparts++;
    return CP_OK;
}

/* Appends s with the XML special characters escaped. */
static int xml_escape(cp_buf *out, const char *s)
{
    int st = CP_OK;
    for (; *s && st == CP_OK; s++) {
        switch (*s) {
        case '&': st = cp_buf_puts(out, "&amp;"); break;
        case '<': st = cp_buf_puts(out, "&lt;"); break;
        case '>': st = cp_buf_puts(out, "&gt;"); break;
        default: st = cp_buf_putc(out, (uint8_t)*s); break;
        }
    }
    return st;
}

/* Completes the upload with the parts' ETags. S3 may answer 200 with an <Error> body
 * (the failure came after the headers were sent): that is a failure too. */
static int mp_complete(mp_upload *m)
{
    s3_call *c = m->c;
    cp_buf xml, ans;
    cp_buf_init(&xml);
    cp_buf_init(&ans);
    int st = cp_buf_puts(&xml, "<CompleteMultipartUpload>");
    for (int i = 0; i < m->nparts && st == CP_OK; i++) {
        st = cp_buf_printf(&xml, "<Part><PartNumber>%d</PartNumber><ETag>", i + 1);
        if (st == CP_OK) st = xml_escape(&xml, m->etags[i]);
        if (st == CP_OK) st = cp_buf_puts(&xml, "</ETag></Part>");
    }
    if (st == CP_OK) st = cp_buf_puts(&xml, "</CompleteMultipartUpload>");
    if (st != CP_OK) {
        cp_buf_free(&xml);
        return cp_ostore_fail(c->err, c->errlen, st, "POST %s: out of memory", m->key);
    }
    char query[MAX_TOKEN + 16];
    snprintf(query, sizeof query, "uploadId=%s", m->upload_id);
    s3_req r;
    req_init(&r, "POST", m->key);
    r.query = query;
    r.content_type = "application/xml";
    r.body = xml.data;
    r.body_len = xml.len;
    r.sink = SINK_BUF;
    r.out = &ans;
    st = s3_do(c, &r);
    if (st == CP_OK) {
        const char *p = (const char *)ans.data, *end = p + ans.len;
        xml_span e;
        if (ans.len && xml_find(&p, end, "Error", &e)) {
            cp_buf eb;
            cp_buf_init(&eb);
            char code[128], msg[256];
            if (cp_buf_append(&eb, ans.data, ans.len) == CP_OK) error_code(&eb, code, sizeof code, msg, sizeof msg);
            else code[0] = msg[0] = 0;
            cp_buf_free(&eb);
            st = cp_ostore_fail(c->err, c->errlen, CP_EIO, "POST %s?uploadId (complete): 200 %s (%s)", m->key,
                      code[0] ? code : "Error", msg);
        }
    }
    req_free(&r);
    cp_buf_free(&xml);
    cp_buf_free(&ans);
    return st;
}

/* Aborts the upload (best effort: the error of the original failure stays in err). */
static void mp_abort(mp_upload *m)
{
    if (!m->upload_id) return;
    char query[MAX_TOKEN + 16], ignored[256];
    snprintf(query, sizeof query, "uploadId=%s", m->upload_id);
    s3_call c2 = *m->c;
    c2.err = ignored;
    c2.errlen = sizeof ignored;
    s3_req r;
    req_init(&r, "DELETE", m->key);
    r.query = query;
    s3_do(&c2, &r);
    req_free(&r);
}

static void mp_free(mp_upload *m)
{
    free(m->upload_id);
    free(m->etags);
    m->upload_id = NULL;
    m->etags = NULL;
}

/* ---- the operations ---------------------------------------------------------------------- */

/* A single PUT of the body described by r (memory or file slice). */
static int put_single(s3_call *c, const char *key, s3_req *r)
{
    r->method = "PUT";
    r->key = key;
    r->content_type = "application/octet-stream";
    r->sink = SINK_NONE;
    return s3_do(c, r);
}

/* The part size for an object of `size` bytes: the configured one, raised if the object
 * would need more than MAX_PARTS parts. */
static uint64_t part_size_for(s3_store *s, uint64_t size)
{
    uint64_t ps = s->part_size;
    if (size / ps >= MAX_PARTS) ps = (size / MAX_PARTS + MIB) / MIB * MIB;
    return ps;
}

/* Uploads [0, size) of memory (p) or of the file fd: single PUT up to the threshold,
 * multipart above. */
static int put_body(s3_call *c, const char *key, const uint8_t *p, int fd, uint64_t size)
{
    s3_store *s = c->s;
    s3_req r;
    int st;
    if (size <= s->threshold) {
        req_init(&r, "PUT", key);
        r.body = p;
        r.body_fd = fd;
        r.body_len = size;
        st = put_single(c, key, &r);
        req_free(&r);
        return st;
    }
    mp_upload m;
    st = mp_begin(&m, c, key);
    uint64_t ps = part_size_for(s, size);
    for (uint64_t off = 0; st == CP_OK && off < size; off += ps) {
        req_init(&r, "PUT", key);
        r.body_len = size - off < ps ? size - off : ps;
        if (fd >= 0) {
            r.body_fd = fd;
            r.body_off = off;
        } else {
            r.body = p + off;
        }
        st = mp_part(&m, &r);
        req_free(&r);
    }
    if (st == CP_OK) st = mp_complete(&m);
    if (st != CP_OK) mp_abort(&m);
    mp_free(&m);
    return st;
}

static int s3_put(cp_ostore *s, const char *key, const void *p, size_t n, char *err, size_t errlen)
{
    int st = check_key("put", key, err, errlen);
    if (st != CP_OK) return st;
    s3_call c;
    st = call_begin(&c, S3(s), err, errlen);
    if (st == CP_OK) st = put_body(&c, key, p, -1, n);
    call_end(&c);
    return st;
}

static int s3_put_file(cp_ostore *s, const char *key, const char *path, char *err, size_t errlen)
{
    int st = check_key("put_file", key, err, errlen);
    if (st != CP_OK) return st;
    char eb[128];
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int e = fd < 0 ? errno : 0;
    if (fd >= 0 && fstat(fd, &sb) != 0) e = errno;
    else if (fd >= 0 && !S_ISREG(sb.st_mode)) e = EISDIR;
    if (e) {
        if (fd >= 0) close(fd);
        return cp_ostore_fail(err, errlen, CP_EIO, "put_file %s: cannot read %s: %s", key, path,
                    cp_ostore_errno_str(e, eb, sizeof eb));
    }
    s3_call c;
    st = call_begin(&c, S3(s), err, errlen);
    if (st == CP_OK) st = put_body(&c, key, NULL, fd, (uint64_t)sb.st_size);
    call_end(&c);
    close(fd);
    return st;
}

/* Fills buf[0..cap) from the reader: *got bytes, *eof at the end. CP_EABORT if the
 * reader asked to abort, CP_EINVAL if it returned more than asked. */
static int fill(long (*rd)(void *ud, void *dst, size_t cap), void *ud, uint8_t *buf, size_t cap, size_t *got,
                 int *eof)
{
    *got = 0;
    *eof = 0;
    while (*got < cap) {
        long r = rd(ud, buf + *got, cap - *got);
        if (r < 0) return CP_EABORT;
        if ((size_t)r > cap - *got) return CP_EINVAL;
        if (r == 0) {
            *eof = 1;
            break;
        }
        *got += (size_t)r;
    }
    return CP_OK;
}

static int s3_put_stream(cp_ostore *so, const char *key, long (*rd)(void *ud, void *dst, size_t cap), void *ud,
                         char *err, size_t errlen)
{
    s3_store *s = S3(so);
    int st = check_key("put_stream", key, err, errlen);
    if (st != CP_OK) return st;
    size_t ps = (size_t)s->part_size;
    uint8_t *buf = malloc(ps);
    if (!buf) return cp_ostore_fail(err, errlen, CP_ENOMEM, "put_stream %s: cannot allocate a %zu-byte part", key, ps);
    s3_call c;
    st = call_begin(&c, s, err, errlen);
    size_t got = 0;
    int eof = 0;
    int rst = CP_OK; /* the reader's failure, if any */
    if (st == CP_OK) st = rst = fill(rd, ud, buf, ps, &got, &eof);
    s3_req r;
    if (st == CP_OK && eof) {
        /* the whole stream fits in one part: a single PUT */
        req_init(&r, "PUT", key);
        r.body = buf;
        r.body_len = got;
        st = put_single(&c, key, &r);
        req_free(&r);
    } else if (st == CP_OK) {
        mp_upload m;
        st = mp_begin(&m, &c, key);
        while (st == CP_OK && got) {
            req_init(&r, "PUT", key);
            r.body = buf;
            r.body_len = got;
            st = mp_part(&m, &r);
            req_free(&r);
            if (st == CP_OK && !eof) st = rst = fill(rd, ud, buf, ps, &got, &eof);
            else got = 0;
        }
        if (st == CP_OK) st = mp_complete(&m);
        if (st != CP_OK) mp_abort(&m);
        mp_free(&m);
    }
    if (rst == CP_EABORT) cp_ostore_fail(err, errlen, rst, "put_stream %s: aborted by the reader", key);
    if (rst == CP_EINVAL) cp_ostore_fail(err, errlen, rst, "put_stream %s: the reader returned more bytes than asked", key);
    call_end(&c);
    free(buf);
    return st;
}

static int s3_size(cp_ostore *s, const char *key, uint64_t *size, char *err, size_t errlen)
{
    int st = check_key("size", key, err, errlen);
    if (st != CP_OK) return st;
    s3_call c;
    st = call_begin(&c, S3(s), err, errlen);
    s3_req r;
    req_init(&r, "HEAD", key);
    if (st == CP_OK) st = s3_do(&c, &r);
    if (st == CP_OK && !r.have_length)
        st = cp_ostore_fail(err, errlen, CP_EPROTO, "HEAD %s: the answer has no Content-Length", key);
    if (st == CP_OK) *size = r.content_length;
    req_free(&r);
    call_end(&c);
    return st;
}

static int s3_read(cp_ostore *s, const char *key, void *dst, size_t n, uint64_t offset, char *err, size_t errlen)
{
    int st = check_key("read", key, err, errlen);
    if (st != CP_OK) return st;
    if (n == 0) { /* no byte range can say "nothing": check the object is long enough */
        uint64_t size;
        st = s3_size(s, key, &size, err, errlen);
        if (st == CP_OK && offset > size)
            st = cp_ostore_fail(err, errlen, CP_ECORRUPT, "read %s: offset %llu is past the end (%llu bytes)", key,
                      (unsigned long long)offset, (unsigned long long)size);
        return st;
    }
    char range[64];
    snprintf(range, sizeof range, "bytes=%llu-%llu", (unsigned long long)offset,
             (unsigned long long)(offset + n - 1));
    s3_call c;
    st = call_begin(&c, S3(s), err, errlen);
    s3_req r;
    req_init(&r, "GET", key);
    r.range = range;
    r.sink = SINK_MEM;
    r.dst = dst;
    r.dst_len = n;
    r.range_off = offset;
    if (st == CP_OK) st = s3_do(&c, &r);
    if (st == CP_ECORRUPT) /* 416: the range starts past the end */
        st = cp_ostore_fail(err, errlen, CP_ECORRUPT, "read %s: wanted %zu bytes at %llu, past the end of the object", key, n,
                  (unsigned long long)offset);
    else if (st == CP_OK && r.got < n)
        st = cp_ostore_fail(err, errlen, CP_ECORRUPT, "read %s: wanted %zu bytes at %llu, the object has only %zu of them", key,
                  n, (unsigned long long)offset, r.got);
    req_free(&r);
    call_end(&c);
    return st;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static int s3_get_file(cp_ostore *s, const char *key, const char *path, char *err, size_t errlen)
{
    int st = check_key("get_file", key, err, errlen);
    if (st != CP_OK) return st;
    char eb[128];
    char *dir = dir_of(path), *tmp = NULL;
    int fd = -1;
    if (!dir) return cp_ostore_fail(err, errlen, CP_ENOMEM, "get_file %s: out of memory", key);
    if (cp_ostore_tmp_create(dir, &tmp, &fd) != CP_OK) {
        int e = errno;
        st = cp_ostore_fail(err, errlen, CP_EIO, "get_file %s: cannot create a temporary file in %s: %s", key, dir,
                  cp_ostore_errno_str(e, eb, sizeof eb));
        free(dir);
        return st;
    }
    s3_call c;
    st = call_begin(&c, S3(s), err, errlen);
    s3_req r;
    req_init(&r, "GET", key);
    r.sink = SINK_FD;
    r.out_fd = fd;
    if (st == CP_OK) st = s3_do(&c, &r);
    req_free(&r);
    call_end(&c);
    if (st != CP_OK) {
        cp_ostore_tmp_discard(fd, tmp);
    } else if (cp_ostore_tmp_commit(fd, tmp, path, dir) != CP_OK) {
        int e = errno;
        st = cp_ostore_fail(err, errlen, CP_EIO, "get_file %s: cannot write %s: %s", key, path,
                  cp_ostore_errno_str(e, eb, sizeof eb));
    }
    free(dir);
    return st;
}

static int s3_del(cp_ostore *s, const char *key, char *err, size_t errlen)
{
    int st = check_key("del", key, err, errlen);
    if (st != CP_OK) return st;
    s3_call c;
    st = call_begin(&c, S3(s), err, errlen);
    s3_req r;
    req_init(&r, "DELETE", key);
    if (st == CP_OK) st = s3_do(&c, &r);
    if (st == CP_ENOTFOUND) st = CP_OK; /* already gone */
    req_free(&r);
    call_end(&c);
    return st;
}

/* ---- list ---------------------------------------------------------------------------------- */

/* Calls fn for the <Contents> of one ListObjectsV2 page; sets *stop if fn asked to. */
static int list_page(s3_call *c, const cp_buf *body, size_t strip, int (*fn)(void *ud, const cp_ostore_item *it),
                     void *ud, int *stop)
{
    const char *p = (const char *)body->data, *end = p + body->len;
    cp_buf key, num;
    cp_buf_init(&key);
    cp_buf_init(&num);
    int st = CP_OK;
    xml_span blk;
    while (!*stop && xml_find(&p, end, "Contents", &blk)) {
        const char *b = blk.p, *bend = blk.p + blk.n;
        st = xml_get(b, bend, "Key", strip + CP_OSTORE_MAX_KEY, &key);
        if (st == CP_ELIMIT) { /* longer than any key of ours: not one of ours */
            st = CP_OK;
            continue;
        }
        if (st == CP_OK) st = xml_get(b, bend, "Size", 20, &num);
        uint64_t size = 0;
        if (st == CP_OK && cp_parse_u64((char *)num.data, UINT64_MAX, &size) != CP_OK) st = CP_EPROTO;
        if (st != CP_OK) {
            if (st != CP_ENOMEM) st = cp_ostore_fail(c->err, c->errlen, CP_EPROTO, "list: a <Contents> without a usable Key "
                                           "and Size in the answer");
            break;
        }
        const char *k = (const char *)key.data;
        /* keys outside our prefix, or that our API could not name, are not ours */
        if (key.len - 1 <= strip || (strip && (memcmp(k, c->s->prefix, strip - 1) != 0 || k[strip - 1] != '/')) ||
            !cp_ostore_key_ok(k + strip))
            continue;
        cp_ostore_item it = {.key = k + strip, .size = size};
        if (fn(ud, &it) != 0) *stop = 1;
    }
    cp_buf_free(&key);
    cp_buf_free(&num);
    return st;
}

static int s3_list(cp_ostore *so, const char *prefix, int (*fn)(void *ud, const cp_ostore_item *it), void *ud,
                   char *err, size_t errlen)
{
    s3_store *s = S3(so);
    if (!prefix) prefix = "";
    if (!cp_ostore_prefix_ok(prefix))
        return cp_ostore_fail(err, errlen, CP_EINVAL, "list: invalid prefix \"%.64s\" (the characters of a key, no empty, . or "
                    ".. directory)", prefix);
    /* the server's prefix: "<store prefix>/<prefix>"; strip the store's part from keys */
    cp_buf full, query, body, token;
    cp_buf_init(&full);
    cp_buf_init(&query);
    cp_buf_init(&body);
    cp_buf_init(&token);
    size_t strip = s->prefix[0] ? strlen(s->prefix) + 1 : 0;
    int st = s->prefix[0] ? cp_buf_printf(&full, "%s/", s->prefix) : CP_OK;
    if (st == CP_OK) st = cp_buf_puts(&full, prefix);
    if (st == CP_OK) st = cp_buf_putc(&full, 0);
    s3_call c;
    if (st == CP_OK) st = call_begin(&c, s, err, errlen);
    else return cp_ostore_fail(err, errlen, st, "list: out of memory");
    int stop = 0;
    for (int page = 0; st == CP_OK && !stop; page++) {
        /* parameters sorted by name, as libcurl 7.88 signs the query as given */
        cp_buf_reset(&query);
        if (page > 0) {
            st = cp_buf_puts(&query, "continuation-token=");
            if (st == CP_OK) st = pct_encode(&query, (char *)token.data, 0);
            if (st == CP_OK) st = cp_buf_putc(&query, '&');
        }
        if (st == CP_OK) st = cp_buf_printf(&query, "list-type=2&max-keys=%d&prefix=", s->list_page);
        if (st == CP_OK) st = pct_encode(&query, (char *)full.data, 0);
        if (st == CP_OK) st = cp_buf_putc(&query, 0);
        if (st != CP_OK) {
            st = cp_ostore_fail(err, errlen, st, "list: out of memory");
            break;
        }
        s3_req r;
        req_init(&r, "GET", NULL);
        r.query = (char *)query.data;
        r.sink = SINK_BUF;
        r.out = &body;
        st = s3_do(&c, &r);
        req_free(&r);
        if (st == CP_OK) st = list_page(&c, &body, strip, fn, ud, &stop);
        if (st != CP_OK || stop) break;
        const char *p = (const char *)body.data, *end = p + body.len;
        cp_buf flag;
        cp_buf_init(&flag);
        int truncated = xml_get(p, end, "IsTruncated", 8, &flag) == CP_OK && strcmp((char *)flag.data, "true") == 0;
        cp_buf_free(&flag);
        if (!truncated) break;
        st = xml_get(p, end, "NextContinuationToken", MAX_TOKEN, &token);
        if (st != CP_OK || token.len <= 1) {
            st = cp_ostore_fail(err, errlen, CP_EPROTO, "list %s: a truncated page without a usable NextContinuationToken",
                      (char *)full.data);
            break;
        }
    }
    call_end(&c);
    cp_buf_free(&full);
    cp_buf_free(&query);
    cp_buf_free(&body);
    cp_buf_free(&token);
    return st;
}

static int s3_url(cp_ostore *s, const char *key, cp_buf *out)
{
    if (!cp_ostore_key_ok(key)) return CP_EINVAL;
    return display_name(S3(s), key, out);
}

static void s3_close(cp_ostore *so)
{
    s3_store *s = S3(so);
    free(s->endpoint);
    free(s->bucket);
    free(s->prefix);
    free(s->access_key);
    free(s->secret_key);
    free(s->sigv4);
    free(s->region);
    free(s);
}

static const cp_ostore_ops s3_ops = {
    .name = "s3",
    .put_file = s3_put_file,
    .put = s3_put,
    .put_stream = s3_put_stream,
    .size = s3_size,
    .read = s3_read,
    .get_file = s3_get_file,
    .list = s3_list,
    .del = s3_del,
    .url = s3_url,
    .close = s3_close,
};

/* ---- open: configuration, then make sure the bucket exists -------------------------------- */

/* The bucket exists (a one-key list answers 200) or is created. */
static int ensure_bucket(s3_store *s, char *err, size_t errlen)
{
    s3_call c;
    int st = call_begin(&c, s, err, errlen);
    if (st != CP_OK) return st;
    cp_buf body;
    cp_buf_init(&body);
    s3_req r;
    req_init(&r, "GET", NULL);
    r.query = "list-type=2&max-keys=1";
    r.sink = SINK_BUF;
    r.out = &body;
    st = s3_do(&c, &r);
    int missing = st != CP_OK && r.status == 404;
    req_free(&r);
    if (missing) {
        /* outside us-east-1 the region must be named in the request */
        cp_buf cfg;
        cp_buf_init(&cfg);
        if (strcmp(s->region, DEFAULT_REGION) != 0)
            cp_buf_printf(&cfg, "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                                "<LocationConstraint>%s</LocationConstraint></CreateBucketConfiguration>",
                          s->region);
        req_init(&r, "PUT", NULL);
        r.body = cfg.data;
        r.body_len = cfg.len;
        st = s3_do(&c, &r);
        if (st != CP_OK && r.status == 409 && r.errbody.len &&
            memmem(r.errbody.data, r.errbody.len, "BucketAlreadyOwnedByYou", 23))
            st = CP_OK; /* created meanwhile, by us */
        req_free(&r);
        cp_buf_free(&cfg);
    }
    cp_buf_free(&body);
    call_end(&c);
    return st;
}

/* A bucket name as S3 allows it (plus upper case and '_', which some servers accept). */
static int bucket_ok(const char *b)
{
    size_t n = strlen(b);
    if (n < 3 || n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = b[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
              ch == '-' || ch == '_'))
            return 0;
    }
    return 1;
}

int cp_ostore_s3_open(const cp_ostore_config *cfg, const char *bucket, const char *prefix, cp_ostore **out,
                      char *err, size_t errlen)
{
    const char *ep = cfg->endpoint;
    if (!ep || (strncmp(ep, "http://", 7) != 0 && strncmp(ep, "https://", 8) != 0))
        return cp_ostore_fail(err, errlen, CP_EINVAL, "object store %s: needs an endpoint http(s)://host[:port]", cfg->url);
    if (!bucket_ok(bucket))
        return cp_ostore_fail(err, errlen, CP_EINVAL, "object store %s: bad bucket name \"%s\" (3 to 63 of [a-z0-9.-])",
                    cfg->url, bucket);
    if (!cfg->access_key || !cfg->access_key[0] || !cfg->secret_key || !cfg->secret_key[0])
        return cp_ostore_fail(err, errlen, CP_EINVAL, "object store %s: needs an access key and a secret key", cfg->url);
    uint64_t part = cfg->part_size ? cfg->part_size : DEFAULT_PART_SIZE;
    uint64_t thr = cfg->multipart_threshold ? cfg->multipart_threshold : DEFAULT_THRESHOLD;
    if (part < MIN_PART_SIZE || part > MAX_PART_SIZE)
        return cp_ostore_fail(err, errlen, CP_EINVAL, "object store %s: part_size %llu is outside [5 MiB, 5 GiB]", cfg->url,
                    (unsigned long long)part);
    if (thr > MAX_PART_SIZE) thr = MAX_PART_SIZE; /* a single PUT can carry at most 5 GiB */
    if (cfg->timeout_s < 0)
        return cp_ostore_fail(err, errlen, CP_EINVAL, "object store %s: negative timeout", cfg->url);
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK)
        return cp_ostore_fail(err, errlen, CP_EIO, "object store %s: curl_global_init: %s", cfg->url,
                    curl_easy_strerror(curl_init_rc));

    s3_store *s = calloc(1, sizeof *s);
    if (!s) return cp_ostore_fail(err, errlen, CP_ENOMEM, "object store %s: out of memory", cfg->url);
    s->base.ops = &s3_ops;
    size_t el = strlen(ep);
    while (el > 8 && ep[el - 1] == '/') el--;
    s->endpoint = strndup(ep, el);
    s->bucket = strdup(bucket);
    s->prefix = strdup(prefix);
    s->access_key = strdup(cfg->access_key);
    s->secret_key = strdup(cfg->secret_key);
    s->region = strdup(cfg->region && cfg->region[0] ? cfg->region : DEFAULT_REGION);
    cp_buf sig;
    cp_buf_init(&sig);
    if (s->region && cp_buf_printf(&sig, "aws:amz:%s:s3", s->region) == CP_OK && cp_buf_putc(&sig, 0) == CP_OK)
        s->sigv4 = (char *)sig.data;
    else
        cp_buf_free(&sig);
    s->threshold = thr;
    s->part_size = part;
    s->retries = cfg->retries > 0 ? cfg->retries : cfg->retries == 0 ? DEFAULT_RETRIES : 0;
    s->backoff_ms = cfg->backoff_ms > 0 ? cfg->backoff_ms : cfg->backoff_ms == 0 ? DEFAULT_BACKOFF_MS : 0;
    s->timeout_s = cfg->timeout_s;
    s->list_page = cfg->list_page > 0 && cfg->list_page < LIST_PAGE ? cfg->list_page : LIST_PAGE;
    if (!s->endpoint || !s->bucket || !s->prefix || !s->access_key || !s->secret_key || !s->region || !s->sigv4) {
        s3_close(&s->base);
        return cp_ostore_fail(err, errlen, CP_ENOMEM, "object store %s: out of memory", cfg->url);
    }
    int st = ensure_bucket(s, err, errlen);
    if (st != CP_OK) {
        s3_close(&s->base);
        return st;
    }
    *out = &s->base;
    return CP_OK;
}
