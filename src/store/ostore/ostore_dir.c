/* ostore_dir.c -- the object store over a local directory (the embedded default).
 *
 * Key "a/b/c.parquet" is the file <root>/a/b/c.parquet. Writes go to a temporary file in
 * the target's directory (".cp-tmp~<random>", never a valid key, so list skips it), which
 * is fsynced and renamed over the target; then the directory is fsynced, so a reader sees
 * the old object or the new one, never a part, and a crash leaves one of the two.
 * Directories are created on demand and removed again (best effort) when their last
 * object is deleted.
 *
 * The store holds only its root path, which never changes after open: every function is
 * thread-safe. One limit of the mapping: a key cannot be both an object and a "directory"
 * ("a/b" and "a/b/c"), which S3 allows; such a put fails with CP_EIO. */
#include "store/ostore/ostore_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cp_fsutil.h"

#define COPY_BUF (1u << 20) /* bytes per read/write when copying files and streams */

typedef struct dir_store {
    cp_ostore base;
    char *root; /* absolute, canonical, no trailing '/' */
} dir_store;

static dir_store *DS(cp_ostore *s) { return (dir_store *)s; }

/* ---- errors and paths ------------------------------------------------------------ */


/* "<op> <root>/<key>: <strerror(errno)>" with the status for that errno. */
static int fail_errno(dir_store *d, char *err, size_t errlen, const char *op, const char *key)
{
    int e = errno;
    char eb[128];
    int st = (e == ENOENT || e == ENOTDIR) ? CP_ENOTFOUND : CP_EIO;
    if (e == ENOMEM) st = CP_ENOMEM;
    return cp_ostore_fail(err, errlen, st, "%s %s/%s: %s", op, d->root, key, cp_ostore_errno_str(e, eb, sizeof eb));
}

static int check_key(const char *op, const char *key, char *err, size_t errlen)
{
    if (cp_ostore_key_ok(key)) return CP_OK;
    return cp_ostore_fail(err, errlen, CP_EINVAL, "%s: invalid object key \"%.64s\" (want [A-Za-z0-9._-/], no empty, . or .. "
                "component, at most %d bytes)", op, key ? key : "(null)", CP_OSTORE_MAX_KEY);
}

/* <root>/<key>, malloc'ed (NULL if out of memory). */
static char *key_path(dir_store *d, const char *key)
{
    size_t rl = strlen(d->root), kl = strlen(key);
    char *p = malloc(rl + 1 + kl + 1);
    if (!p) return NULL;
    memcpy(p, d->root, rl);
    p[rl] = '/';
    memcpy(p + rl + 1, key, kl + 1);
    return p;
}

/* The directory part of a path (everything before the last '/'), malloc'ed. */
static char *parent_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* ---- writing: a temporary file in the target's directory, then rename ------------- */

typedef struct dir_tmp {
    char *path;    /* <root>/<key> */
    char *dir;     /* its directory */
    char *tmp;     /* the temporary file */
    int fd;
    int created;   /* we created some directory on the way: fsync the chain on commit */
} dir_tmp;

static void tmp_free(dir_tmp *t)
{
    free(t->path);
    free(t->dir);
    t->path = t->dir = NULL;
}

/* mkdir of every directory of the key's path below the root; sets *created if any was
 * made. CP_EIO with errno set on failure. */
static int make_parents(dir_store *d, const char *key, int *created)
{
    size_t rl = strlen(d->root);
    char *p = key_path(d, key);
    if (!p) return CP_ENOMEM;
    int st = CP_OK;
    for (char *q = p + rl + 1; (q = strchr(q, '/')) != NULL; q++) {
        *q = 0;
        if (mkdir(p, 0755) == 0) {
            *created = 1;
        } else if (errno != EEXIST) {
            st = CP_EIO;
            *q = '/';
            break;
        }
        *q = '/';
    }
    int e = errno;
    free(p);
    errno = e;
    return st;
}

/* fsyncs every directory from the root down to t->dir, so newly made directories are
 * durable along with the file. */
static int sync_chain(dir_store *d, dir_tmp *t)
{
    size_t rl = strlen(d->root);
    char *p = strdup(t->dir);
    if (!p) return CP_ENOMEM;
    int st = cp_fsync_dir(d->root);
    for (char *q = p + rl + 1; st == CP_OK && q < p + strlen(t->dir); q++) {
        if (*q != '/') continue;
        *q = 0;
        st = cp_fsync_dir(p);
        *q = '/';
    }
    free(p);
    return st;
}

/* Removes the empty directories of path between its parent and the root (best effort:
 * stops at the first that is not empty or cannot be removed). */
static void prune_parents(dir_store *d, const char *path)
{
    size_t rl = strlen(d->root);
    char *p = strdup(path);
    if (!p) return;
    for (;;) {
        char *slash = strrchr(p, '/');
        if (!slash || (size_t)(slash - p) <= rl) break; /* reached the root */
        *slash = 0;
        if (rmdir(p) != 0) break;
    }
    free(p);
}

/* Opens a temporary file beside <root>/<key>, making the directories. A concurrent delete
 * may remove a directory we just made (it was empty): then we make it again. */
static int tmp_begin(dir_store *d, const char *op, const char *key, dir_tmp *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->fd = -1;
    t->path = key_path(d, key);
    t->dir = t->path ? parent_of(t->path) : NULL;
    if (!t->path || !t->dir) {
        tmp_free(t);
        return cp_ostore_fail(err, errlen, CP_ENOMEM, "%s %s: out of memory", op, key);
    }
    for (int attempt = 0;; attempt++) {
        int st = make_parents(d, key, &t->created);
        if (st == CP_OK) st = cp_ostore_tmp_create(t->dir, &t->tmp, &t->fd);
        if (st == CP_OK) return CP_OK;
        if (st == CP_ENOMEM || errno != ENOENT || attempt == 4) {
            char eb[128];
            int e = errno;
            tmp_free(t);
            return cp_ostore_fail(err, errlen, st == CP_ENOMEM ? st : CP_EIO, "%s %s/%s: cannot create a temporary file: %s",
                        op, d->root, key, cp_ostore_errno_str(e, eb, sizeof eb));
        }
    }
}

static void tmp_abort(dir_store *d, dir_tmp *t)
{
    cp_ostore_tmp_discard(t->fd, t->tmp);
    t->fd = -1;
    t->tmp = NULL;
    prune_parents(d, t->path);
    tmp_free(t);
}

static int tmp_commit(dir_store *d, const char *op, const char *key, dir_tmp *t, char *err, size_t errlen)
{
    int st = cp_ostore_tmp_commit(t->fd, t->tmp, t->path, t->dir);
    t->fd = -1;
    t->tmp = NULL;
    if (st == CP_OK && t->created) st = sync_chain(d, t);
    if (st != CP_OK) st = fail_errno(d, err, errlen, op, key);
    if (st == CP_ENOTFOUND) st = CP_EIO; /* a missing directory here is an I/O failure */
    tmp_free(t);
    return st;
}

/* ---- the operations ---------------------------------------------------------------- */

static int dir_put(cp_ostore *s, const char *key, const void *p, size_t n, char *err, size_t errlen)
{
    dir_store *d = DS(s);
    int st = check_key("put", key, err, errlen);
    if (st != CP_OK) return st;
    dir_tmp t;
    st = tmp_begin(d, "put", key, &t, err, errlen);
    if (st != CP_OK) return st;
    if (cp_write_all(t.fd, p, n) != CP_OK) {
        st = fail_errno(d, err, errlen, "put", key);
        tmp_abort(d, &t);
        return st == CP_ENOTFOUND ? CP_EIO : st;
    }
    return tmp_commit(d, "put", key, &t, err, errlen);
}

/* Copies everything from fd `in` to the temporary file. */
static int copy_fd(int in, int out)
{
    char *buf = malloc(COPY_BUF);
    if (!buf) return CP_ENOMEM;
    int st = CP_OK;
    for (;;) {
        ssize_t r = read(in, buf, COPY_BUF);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            st = CP_EIO;
            break;
        }
        if (r == 0) break;
        st = cp_write_all(out, buf, (size_t)r);
        if (st != CP_OK) break;
    }
    int e = errno;
    free(buf);
    errno = e;
    return st;
}

static int dir_put_file(cp_ostore *s, const char *key, const char *path, char *err, size_t errlen)
{
    dir_store *d = DS(s);
    int st = check_key("put_file", key, err, errlen);
    if (st != CP_OK) return st;
    char eb[128];
    int in = open(path, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        int e = errno;
        return cp_ostore_fail(err, errlen, CP_EIO, "put_file %s: cannot open %s: %s", key, path,
                    cp_ostore_errno_str(e, eb, sizeof eb));
    }
    dir_tmp t;
    st = tmp_begin(d, "put_file", key, &t, err, errlen);
    if (st == CP_OK) {
        st = copy_fd(in, t.fd);
        if (st != CP_OK) {
            int e = errno;
            cp_ostore_fail(err, errlen, st, "put_file %s/%s from %s: %s", d->root, key, path,
                 cp_ostore_errno_str(e, eb, sizeof eb));
            tmp_abort(d, &t);
        } else {
            st = tmp_commit(d, "put_file", key, &t, err, errlen);
        }
    }
    close(in);
    return st;
}

/* put_file that may consume path: on the store's own file system the file is fsynced and
 * renamed into place, so a heap dump of several GB is not copied a second time; on another
 * file system it is copied (put_file) and path stays. */
static int dir_put_file_move(cp_ostore *s, const char *key, const char *path, char *err, size_t errlen)
{
    dir_store *d = DS(s);
    int st = check_key("put_file", key, err, errlen);
    if (st != CP_OK) return st;
    struct stat src, root;
    if (stat(path, &src) != 0 || stat(d->root, &root) != 0 || src.st_dev != root.st_dev || !S_ISREG(src.st_mode))
        return dir_put_file(s, key, path, err, errlen);
    dir_tmp t;
    memset(&t, 0, sizeof t);
    t.fd = -1;
    t.path = key_path(d, key);
    t.dir = t.path ? parent_of(t.path) : NULL;
    t.tmp = strdup(path);
    if (!t.path || !t.dir || !t.tmp) {
        tmp_free(&t);
        return cp_ostore_fail(err, errlen, CP_ENOMEM, "put_file %s: out of memory", key);
    }
    if (make_parents(d, key, &t.created) != CP_OK || (t.fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        st = fail_errno(d, err, errlen, "put_file", key);
        tmp_free(&t);
        return st == CP_ENOTFOUND ? CP_EIO : st;
    }
    (void)fchmod(t.fd, 0644); /* as put_file's copies are (the temp file may be 0600) */
    return tmp_commit(d, "put_file", key, &t, err, errlen); /* fsync, rename, fsync the directory */
}

static int dir_put_stream(cp_ostore *s, const char *key, long (*rd)(void *ud, void *dst, size_t cap), void *ud,
                          char *err, size_t errlen)
{
    dir_store *d = DS(s);
    int st = check_key("put_stream", key, err, errlen);
    if (st != CP_OK) return st;
    char *buf = malloc(COPY_BUF);
    if (!buf) return cp_ostore_fail(err, errlen, CP_ENOMEM, "put_stream %s: out of memory", key);
    dir_tmp t;
    st = tmp_begin(d, "put_stream", key, &t, err, errlen);
    while (st == CP_OK) {
        long r = rd(ud, buf, COPY_BUF);
        if (r == 0) break;
        if (r < 0) {
            st = cp_ostore_fail(err, errlen, CP_EABORT, "put_stream %s/%s: aborted by the reader", d->root, key);
        } else if ((size_t)r > COPY_BUF) {
            st = cp_ostore_fail(err, errlen, CP_EINVAL, "put_stream %s/%s: the reader returned %ld bytes for a %u-byte buffer",
                      d->root, key, r, COPY_BUF);
        } else if (cp_write_all(t.fd, buf, (size_t)r) != CP_OK) {
            st = fail_errno(d, err, errlen, "put_stream", key);
            if (st == CP_ENOTFOUND) st = CP_EIO;
        }
        if (st != CP_OK) tmp_abort(d, &t);
    }
    free(buf);
    if (st != CP_OK) return st;
    return tmp_commit(d, "put_stream", key, &t, err, errlen);
}

/* Opens the object's file for reading; CP_ENOTFOUND unless it is a regular file. */
static int open_object(dir_store *d, const char *op, const char *key, int *fd, struct stat *sb, char *err,
                       size_t errlen)
{
    int st = check_key(op, key, err, errlen);
    if (st != CP_OK) return st;
    char *p = key_path(d, key);
    if (!p) return cp_ostore_fail(err, errlen, CP_ENOMEM, "%s %s: out of memory", op, key);
    *fd = open(p, O_RDONLY | O_CLOEXEC);
    free(p);
    if (*fd < 0) return fail_errno(d, err, errlen, op, key);
    if (fstat(*fd, sb) != 0) {
        st = fail_errno(d, err, errlen, op, key);
        close(*fd);
        return st;
    }
    if (!S_ISREG(sb->st_mode)) {
        close(*fd);
        return cp_ostore_fail(err, errlen, CP_ENOTFOUND, "%s %s/%s: not an object (a directory or a special file)", op, d->root,
                    key);
    }
    return CP_OK;
}

static int dir_size(cp_ostore *s, const char *key, uint64_t *size, char *err, size_t errlen)
{
    dir_store *d = DS(s);
    int st = check_key("size", key, err, errlen);
    if (st != CP_OK) return st;
    char *p = key_path(d, key);
    if (!p) return cp_ostore_fail(err, errlen, CP_ENOMEM, "size %s: out of memory", key);
    struct stat sb;
    int r = stat(p, &sb);
    free(p);
    if (r != 0) return fail_errno(d, err, errlen, "size", key);
    if (!S_ISREG(sb.st_mode))
        return cp_ostore_fail(err, errlen, CP_ENOTFOUND, "size %s/%s: not an object (a directory or a special file)", d->root, key);
    *size = (uint64_t)sb.st_size;
    return CP_OK;
}

static int dir_read(cp_ostore *s, const char *key, void *dst, size_t n, uint64_t offset, char *err, size_t errlen)
{
    dir_store *d = DS(s);
    int fd;
    struct stat sb;
    int st = open_object(d, "read", key, &fd, &sb, err, errlen);
    if (st != CP_OK) return st;
    long got = n ? cp_pread_all(fd, dst, n, offset) : 0;
    if (got < 0) {
        st = fail_errno(d, err, errlen, "read", key);
        if (st == CP_ENOTFOUND) st = CP_EIO;
    } else if ((size_t)got < n || offset > (uint64_t)sb.st_size) {
        st = cp_ostore_fail(err, errlen, CP_ECORRUPT, "read %s/%s: wanted %zu bytes at %llu, the object has %lld", d->root, key,
                  n, (unsigned long long)offset, (long long)sb.st_size);
    }
    close(fd);
    return st;
}

static int dir_get_file(cp_ostore *s, const char *key, const char *path, char *err, size_t errlen)
{
    dir_store *d = DS(s);
    int in;
    struct stat sb;
    int st = open_object(d, "get_file", key, &in, &sb, err, errlen);
    if (st != CP_OK) return st;
    char eb[128];
    char *dir = parent_of(path), *tmp = NULL;
    int out = -1;
    if (!dir) {
        st = cp_ostore_fail(err, errlen, CP_ENOMEM, "get_file %s: out of memory", key);
    } else if (cp_ostore_tmp_create(dir, &tmp, &out) != CP_OK) {
        int e = errno;
        st = cp_ostore_fail(err, errlen, CP_EIO, "get_file %s: cannot create a temporary file in %s: %s", key, dir,
                  cp_ostore_errno_str(e, eb, sizeof eb));
    } else if (copy_fd(in, out) != CP_OK) {
        int e = errno;
        st = cp_ostore_fail(err, errlen, CP_EIO, "get_file %s/%s to %s: %s", d->root, key, path,
                  cp_ostore_errno_str(e, eb, sizeof eb));
        cp_ostore_tmp_discard(out, tmp);
    } else if (cp_ostore_tmp_commit(out, tmp, path, dir) != CP_OK) {
        int e = errno;
        st = cp_ostore_fail(err, errlen, CP_EIO, "get_file %s: cannot write %s: %s", key, path,
                  cp_ostore_errno_str(e, eb, sizeof eb));
    }
    free(dir);
    close(in);
    return st;
}

static int dir_del(cp_ostore *s, const char *key, char *err, size_t errlen)
{
    dir_store *d = DS(s);
    int st = check_key("del", key, err, errlen);
    if (st != CP_OK) return st;
    char *p = key_path(d, key);
    char *dir = p ? parent_of(p) : NULL;
    if (!p || !dir) {
        free(p);
        return cp_ostore_fail(err, errlen, CP_ENOMEM, "del %s: out of memory", key);
    }
    if (unlink(p) != 0) {
        /* a missing key (or a "directory" key, which is no object) is not an error */
        if (errno != ENOENT && errno != ENOTDIR && errno != EISDIR) st = fail_errno(d, err, errlen, "del", key);
    } else {
        cp_fsync_dir(dir); /* best effort: the unlink is durable only once its directory is */
        prune_parents(d, p);
    }
    free(dir);
    free(p);
    return st;
}

/* ---- list: a walk in key order ----------------------------------------------------- */

typedef struct walk {
    dir_store *d;
    cp_buf key;        /* the key prefix of the directory being walked ("a/b/") */
    cp_buf path;       /* its path (<root>/a/b) */
    const char *filter;/* first level only: names must start with this */
    int (*fn)(void *ud, const cp_ostore_item *it);
    void *ud;
    int stopped;
    char *err;
    size_t errlen;
} walk;

typedef struct dent {
    char *name;
    size_t nlen;
    uint64_t size;
    int is_dir;
} dent;

/* Byte i of the entry's key part: a directory "a" stands for the keys "a/...", so it
 * reads as "a/" (and sorts after "a.txt", before "a0"). */
static int dent_byte(const dent *e, size_t i)
{
    if (i < e->nlen) return (unsigned char)e->name[i];
    return (i == e->nlen && e->is_dir) ? '/' : 0;
}

/* Compares two entries as their keys compare (bytes unsigned, like S3). */
static int dent_cmp(const void *pa, const void *pb)
{
    const dent *a = pa, *b = pb;
    for (size_t i = 0;; i++) {
        int x = dent_byte(a, i), y = dent_byte(b, i);
        if (x != y) return x - y;
        if (x == 0) return 0;
    }
}

#define KEY_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

/* A name that can be a key component: component characters only, not "." or "..".
 * Temporary files (".cp-tmp~...") and foreign files fail this and are skipped. */
static int name_ok(const char *name)
{
    if (!name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return 0;
    return name[strspn(name, KEY_CHARS)] == 0;
}

static void free_dents(dent *v, size_t n)
{
    for (size_t i = 0; i < n; i++) free(v[i].name);
    free(v);
}

/* Reads the entries of the directory w->path that can hold objects, sorted in key order. */
static int read_dents(walk *w, dent **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    DIR *dir = opendir((char *)w->path.data);
    if (!dir) return (errno == ENOENT || errno == ENOTDIR) ? CP_ENOTFOUND : CP_EIO;
    dent *v = NULL;
    size_t n = 0, cap = 0;
    int st = CP_OK;
    size_t flen = w->filter ? strlen(w->filter) : 0;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(dir)) != NULL) {
        if (!name_ok(e->d_name)) continue;
        if (flen && strncmp(e->d_name, w->filter, flen) != 0) continue;
        struct stat sb;
        if (fstatat(dirfd(dir), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) continue; /* deleted meanwhile */
            st = CP_EIO;
            break;
        }
        if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            dent *nv = realloc(v, nc * sizeof *v);
            if (!nv) {
                st = CP_ENOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        v[n].name = strdup(e->d_name);
        if (!v[n].name) {
            st = CP_ENOMEM;
            break;
        }
        v[n].nlen = strlen(e->d_name);
        v[n].size = (uint64_t)sb.st_size;
        v[n].is_dir = S_ISDIR(sb.st_mode);
        n++;
        errno = 0;
    }
    if (st == CP_OK && errno != 0) st = CP_EIO; /* readdir failed */
    int saved = errno;
    closedir(dir);
    errno = saved;
    if (st != CP_OK) {
        free_dents(v, n);
        return st;
    }
    if (n) qsort(v, n, sizeof *v, dent_cmp);
    *out = v;
    *count = n;
    return CP_OK;
}

static int walk_dir(walk *w)
{
    dent *v;
    size_t n;
    int st = read_dents(w, &v, &n);
    if (st == CP_ENOTFOUND) return CP_OK; /* no such directory: no objects */
    if (st != CP_OK) {
        char eb[128];
        int e = errno;
        return cp_ostore_fail(w->err, w->errlen, st, "list %s: %s", (char *)w->path.data, cp_ostore_errno_str(e, eb, sizeof eb));
    }
    w->filter = NULL; /* the filter applies to the first level only */
    size_t klen = w->key.len, plen = w->path.len;
    for (size_t i = 0; i < n && st == CP_OK && !w->stopped; i++) {
        size_t nl = v[i].nlen;
        /* a key longer than allowed cannot be an object (nor can any key below it) */
        if (klen + nl > CP_OSTORE_MAX_KEY) continue;
        w->key.len = klen;
        w->path.len = plen - 1; /* drop the NUL */
        if (cp_buf_append(&w->key, v[i].name, nl) != CP_OK || cp_buf_printf(&w->path, "/%s", v[i].name) != CP_OK ||
            cp_buf_putc(&w->path, 0) != CP_OK) {
            st = cp_ostore_fail(w->err, w->errlen, CP_ENOMEM, "list: out of memory");
            break;
        }
        if (v[i].is_dir) {
            if (cp_buf_putc(&w->key, '/') != CP_OK) {
                st = cp_ostore_fail(w->err, w->errlen, CP_ENOMEM, "list: out of memory");
                break;
            }
            st = walk_dir(w);
        } else {
            if (cp_buf_putc(&w->key, 0) != CP_OK) {
                st = cp_ostore_fail(w->err, w->errlen, CP_ENOMEM, "list: out of memory");
                break;
            }
            cp_ostore_item it = {.key = (const char *)w->key.data, .size = v[i].size};
            if (w->fn(w->ud, &it) != 0) w->stopped = 1;
        }
    }
    w->key.len = klen;
    w->path.len = plen;
    if (w->path.len) w->path.data[plen - 1] = 0;
    free_dents(v, n);
    return st;
}

static int dir_list(cp_ostore *s, const char *prefix, int (*fn)(void *ud, const cp_ostore_item *it), void *ud,
                    char *err, size_t errlen)
{
    dir_store *d = DS(s);
    if (!prefix) prefix = "";
    if (!cp_ostore_prefix_ok(prefix))
        return cp_ostore_fail(err, errlen, CP_EINVAL, "list: invalid prefix \"%.64s\" (the characters of a key, no empty, . or "
                    ".. directory)", prefix);
    /* start in the deepest directory the prefix names ("a/b/" of "a/b/c"); the rest
     * ("c") filters that directory's entries */
    const char *slash = strrchr(prefix, '/');
    size_t dlen = slash ? (size_t)(slash - prefix) + 1 : 0;
    walk w = {.d = d, .filter = prefix + dlen, .fn = fn, .ud = ud, .err = err, .errlen = errlen};
    cp_buf_init(&w.key);
    cp_buf_init(&w.path);
    int st = CP_OK;
    if (cp_buf_append(&w.key, prefix, dlen) != CP_OK || cp_buf_puts(&w.path, d->root) != CP_OK ||
        (dlen && (cp_buf_putc(&w.path, '/') != CP_OK || cp_buf_append(&w.path, prefix, dlen - 1) != CP_OK)) ||
        cp_buf_putc(&w.path, 0) != CP_OK) {
        st = cp_ostore_fail(err, errlen, CP_ENOMEM, "list: out of memory");
    } else {
        st = walk_dir(&w);
    }
    cp_buf_free(&w.key);
    cp_buf_free(&w.path);
    return st;
}

static int dir_url(cp_ostore *s, const char *key, cp_buf *out)
{
    if (!cp_ostore_key_ok(key)) return CP_EINVAL;
    return cp_buf_printf(out, "file://%s/%s", DS(s)->root, key);
}

static void dir_close(cp_ostore *s)
{
    dir_store *d = DS(s);
    free(d->root);
    free(d);
}

static const cp_ostore_ops dir_ops = {
    .name = "dir",
    .put_file = dir_put_file,
    .put_file_move = dir_put_file_move,
    .put = dir_put,
    .put_stream = dir_put_stream,
    .size = dir_size,
    .read = dir_read,
    .get_file = dir_get_file,
    .list = dir_list,
    .del = dir_del,
    .url = dir_url,
    .close = dir_close,
};

int cp_ostore_dir_open(const char *root, cp_ostore **out, char *err, size_t errlen)
{
    char eb[128];
    if (cp_mkdirs(root, 0755) != CP_OK) {
        int e = errno;
        return cp_ostore_fail(err, errlen, CP_EIO, "object store %s: cannot create the directory: %s", root,
                    cp_ostore_errno_str(e, eb, sizeof eb));
    }
    char *abs = realpath(root, NULL);
    struct stat sb;
    if (!abs || stat(abs, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        int e = abs ? ENOTDIR : errno;
        free(abs);
        return cp_ostore_fail(err, errlen, CP_EIO, "object store %s: not a usable directory: %s", root,
                    cp_ostore_errno_str(e, eb, sizeof eb));
    }
    dir_store *d = calloc(1, sizeof *d);
    if (!d) {
        free(abs);
        return cp_ostore_fail(err, errlen, CP_ENOMEM, "object store %s: out of memory", root);
    }
    d->base.ops = &dir_ops;
    d->root = abs;
    *out = &d->base;
    return CP_OK;
}
