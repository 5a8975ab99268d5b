/* ostore.c -- object stores: opening one by URL, and the key rules both follow.
 *
 * cfg->url is either "s3://bucket[/prefix]" (ostore_s3.c) or a directory path, with or
 * without a "file://" scheme (ostore_dir.c). */
#include "store/ostore/ostore_internal.h"

#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cp_fsutil.h"

/* [A-Za-z0-9._-]: the characters of one key component. */
static int key_char_ok(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

/* Checks s[0..n) holds only component characters and '/', and that every component
 * that is followed by a '/' is neither empty, "." nor "..". The last component (after
 * the last '/') is checked only for its characters: the caller decides whether it may
 * be empty or a dot name. Returns 1 if acceptable. */
static int components_ok(const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '/') {
            size_t len = i - start;
            if (len == 0) return 0;
            if (len == 1 && s[start] == '.') return 0;
            if (len == 2 && s[start] == '.' && s[start + 1] == '.') return 0;
            start = i + 1;
        } else if (!key_char_ok(c)) {
            return 0;
        }
    }
    return 1;
}

int cp_ostore_key_ok(const char *key)
{
    if (!key) return 0;
    size_t n = strnlen(key, CP_OSTORE_MAX_KEY + 1);
    if (n == 0 || n > CP_OSTORE_MAX_KEY) return 0;
    if (!components_ok(key, n)) return 0;
    /* the last component: not empty (no trailing '/'), not "." or ".." */
    const char *last = strrchr(key, '/');
    last = last ? last + 1 : key;
    if (*last == 0) return 0;
    if (strcmp(last, ".") == 0 || strcmp(last, "..") == 0) return 0;
    return 1;
}

int cp_ostore_prefix_ok(const char *prefix)
{
    if (!prefix) return 0;
    size_t n = strnlen(prefix, CP_OSTORE_MAX_KEY + 1);
    if (n > CP_OSTORE_MAX_KEY) return 0;
    return components_ok(prefix, n);
}

/* Splits "bucket[/prefix]" (the part after "s3://") and opens the S3 store. */
static int open_s3(const cp_ostore_config *cfg, const char *rest, cp_ostore **out, char *err, size_t errlen)
{
    const char *slash = strchr(rest, '/');
    size_t blen = slash ? (size_t)(slash - rest) : strlen(rest);
    const char *prefix = slash ? slash + 1 : "";
    size_t plen = strlen(prefix);
    while (plen && prefix[plen - 1] == '/') plen--; /* "s3://b/p/" is "s3://b/p" */
    if (blen == 0 || blen > 63) {
        snprintf(err, errlen, "object store %s: no bucket name (s3://bucket[/prefix])", cfg->url);
        return CP_EINVAL;
    }
    char bucket[64];
    memcpy(bucket, rest, blen);
    bucket[blen] = 0;
    char *p = strndup(prefix, plen);
    if (!p) return CP_ENOMEM;
    int st;
    if (plen && !cp_ostore_key_ok(p)) {
        snprintf(err, errlen, "object store %s: the prefix must follow the key rules ([A-Za-z0-9._-/])", cfg->url);
        st = CP_EINVAL;
    } else {
        st = cp_ostore_s3_open(cfg, bucket, p, out, err, errlen);
    }
    free(p);
    return st;
}

int cp_ostore_open(const cp_ostore_config *cfg, cp_ostore **out, char *err, size_t errlen)
{
    *out = NULL;
    if (errlen) err[0] = 0;
    if (!cfg || !cfg->url || !cfg->url[0]) {
        snprintf(err, errlen, "object store: no URL (a directory or s3://bucket[/prefix])");
        return CP_EINVAL;
    }
    const char *url = cfg->url;
    if (strncmp(url, "s3://", 5) == 0) return open_s3(cfg, url + 5, out, err, errlen);
    if (strncmp(url, "file://", 7) == 0) {
        url += 7;
        if (url[0] != '/') {
            snprintf(err, errlen, "object store %s: a file URL needs an absolute path (file:///dir)", cfg->url);
            return CP_EINVAL;
        }
    }
    if (strstr(url, "://")) {
        snprintf(err, errlen, "object store %s: unknown scheme (a directory or s3://bucket[/prefix])", cfg->url);
        return CP_EINVAL;
    }
    return cp_ostore_dir_open(url, out, err, errlen);
}

/* ---- local temporary files (the dir store's writes, get_file of both stores) ------ */

const char *cp_ostore_errno_str(int e, char *buf, size_t len)
{
    /* the GNU strerror_r (we build with _GNU_SOURCE) may return a static string */
    return strerror_r(e, buf, len);
}

int cp_ostore_tmp_create(const char *dir, char **tmp, int *fd)
{
    *tmp = NULL;
    *fd = -1;
    for (int attempt = 0; attempt < 8; attempt++) {
        uint8_t r[8];
        if (cp_random_bytes(r, sizeof r) != CP_OK) return CP_EIO;
        cp_buf b;
        cp_buf_init(&b);
        if (cp_buf_printf(&b, "%s/" CP_OSTORE_TMP_PREFIX "%02x%02x%02x%02x%02x%02x%02x%02x", dir, r[0], r[1], r[2],
                          r[3], r[4], r[5], r[6], r[7]) != CP_OK ||
            cp_buf_putc(&b, 0) != CP_OK) {
            cp_buf_free(&b);
            return CP_ENOMEM;
        }
        int f = open((char *)b.data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (f >= 0) {
            *tmp = (char *)b.data;
            *fd = f;
            return CP_OK;
        }
        int e = errno;
        cp_buf_free(&b);
        errno = e;
        if (e != EEXIST) return CP_EIO;
    }
    return CP_EIO;
}

void cp_ostore_tmp_discard(int fd, char *tmp)
{
    int e = errno;
    if (fd >= 0) close(fd);
    if (tmp) unlink(tmp);
    free(tmp);
    errno = e;
}

int cp_ostore_tmp_commit(int fd, char *tmp, const char *path, const char *dir)
{
    int st = CP_OK;
    while (fsync(fd) != 0) {
        if (errno == EINTR) continue;
        st = CP_EIO;
        break;
    }
    if (close(fd) != 0 && st == CP_OK && errno != EINTR) st = CP_EIO;
    fd = -1;
    if (st == CP_OK && rename(tmp, path) != 0) st = CP_EIO;
    if (st != CP_OK) {
        cp_ostore_tmp_discard(-1, tmp);
        return st;
    }
    free(tmp);
    /* the rename is durable only once the directory is */
    return cp_fsync_dir(dir);
}

int cp_ostore_fail(char *err, size_t errlen, int st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return st;
}
