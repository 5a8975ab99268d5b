/* rawlog.c -- the raw log's directories and append-only stream files (cp_rawlog.h). */
#include "store/cp_rawlog.h"

#include "common/cp_fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define DIR_MODE 0755
#define FILE_MODE 0644
/* Bound on the restart-directory bump loop; only a pathological tree gets near it. */
#define MAX_RESTART_BUMPS 100000
#define HASHED_PREFIX 160          /* escaped bytes of a long name kept before its hash */
#define NAME_FILE ".name"          /* a hashed directory's full name */

/* ---- pending directory list ------------------------------------------------------- */

static int dirs_contains(const cp_buf *dirs, const char *path)
{
    size_t off = 0;
    while (off < dirs->len) {
        const char *s = (const char *)dirs->data + off;
        if (!strcmp(s, path)) return 1;
        off += strlen(s) + 1;
    }
    return 0;
}

/* Remembers that an entry was created in directory `path`: it needs an fsync. */
static int dirs_add(cp_buf *dirs, const char *path, size_t n)
{
    char tmp[4096];
    if (n >= sizeof tmp) return CP_ELIMIT;
    memcpy(tmp, path, n);
    tmp[n] = 0;
    if (dirs_contains(dirs, tmp)) return CP_OK;
    return cp_buf_append(dirs, tmp, n + 1);
}

/* mkdir that records the parent as unsynced when it really created the directory.
 * *created tells whether it did. */
static int mkdir_tracked(cp_buf *dirs, const char *path, int *created)
{
    *created = 0;
    if (mkdir(path, DIR_MODE) == 0) {
        *created = 1;
        const char *slash = strrchr(path, '/');
        if (slash && slash != path) return dirs_add(dirs, path, (size_t)(slash - path));
        return CP_OK;
    }
    return errno == EEXIST ? CP_OK : CP_EIO;
}

int cp_rawlog_restart_take_dirs(cp_rawlog_restart *r, cp_buf *dirs)
{
    if (r->unsynced_dirs.len == 0) return CP_OK;
    int st = cp_buf_append(dirs, r->unsynced_dirs.data, r->unsynced_dirs.len);
    if (st == CP_OK) cp_buf_free(&r->unsynced_dirs);
    return st;
}

int cp_rawlog_sync_dirs(const uint8_t *dirs, size_t len)
{
    int first = CP_OK, saved = 0;
    size_t off = 0;
    while (off < len) {
        const char *s = (const char *)dirs + off;
        if (cp_fsync_dir(s) != CP_OK && first == CP_OK) {
            first = CP_EIO;
            saved = errno;
        }
        off += strlen(s) + 1;
    }
    if (first != CP_OK) errno = saved;
    return first;
}

/* Number of paths in a NUL-separated list; *all = 0 if one is not on device dev. */
static size_t dirs_on_dev(const uint8_t *dirs, size_t len, dev_t dev, int *all)
{
    size_t n = 0, off = 0;
    *all = 1;
    while (off < len) {
        const char *s = (const char *)dirs + off;
        struct stat sb;
        if (stat(s, &sb) != 0 || sb.st_dev != dev) *all = 0;
        n++;
        off += strlen(s) + 1;
    }
    return n;
}

/* Whether one syncfs on fs_fd covers every file and directory. */
static int syncfs_covers(int fs_fd, const int *fds, size_t nfds, const uint8_t *dirs, size_t len)
{
    struct stat fs;
    if (fs_fd < 0 || fstat(fs_fd, &fs) != 0) return 0;
    int all;
    size_t ndirs = dirs_on_dev(dirs, len, fs.st_dev, &all);
    if (!all || nfds + ndirs < CP_RAWLOG_SYNCFS_MIN) return 0;
    for (size_t i = 0; i < nfds; i++) {
        struct stat sb;
        if (fstat(fds[i], &sb) != 0 || sb.st_dev != fs.st_dev) return 0;
    }
    return 1;
}

int cp_rawlog_sync_all(int fs_fd, const int *fds, size_t nfds, const uint8_t *dirs, size_t len)
{
    if (syncfs_covers(fs_fd, fds, nfds, dirs, len)) {
        /* syncfs reports write-back errors of the whole file system since fs_fd last
         * saw one (Linux >= 5.8), so a failed write of any of our files shows here */
        while (syncfs(fs_fd) != 0) {
            if (errno != EINTR) return CP_EIO;
        }
        return CP_OK;
    }
    int first = CP_OK, saved = 0;
    for (size_t i = 0; i < nfds; i++) {
        while (fdatasync(fds[i]) != 0) {
            if (errno == EINTR) continue;
            if (first == CP_OK) {
                first = CP_EIO;
                saved = errno;
            }
            break;
        }
    }
    if (cp_rawlog_sync_dirs(dirs, len) != CP_OK && first == CP_OK) {
        first = CP_EIO;
        saved = errno;
    }
    if (first != CP_OK) errno = saved;
    return first;
}

/* ---- restart directory ------------------------------------------------------------ */

/* Appends "/<escaped name>". A name whose escaped form is longer than
 * CP_RAWLOG_MAX_COMPONENT (the protocol allows 1024-byte names; a directory name is at
 * most 255 bytes) becomes "<escaped prefix>~<16 hex of FNV-1a 64 of the name>": '~' never
 * appears in an escaped name, so the two forms cannot meet. *hashed says which it is; the
 * full name then goes into the directory's NAME_FILE (write_name_file). */
static int put_component(cp_buf *b, const char *s, size_t n, int *hashed)
{
    size_t start = b->len + 1;
    *hashed = 0;
    if (cp_buf_putc(b, '/') != CP_OK || cp_path_component(b, s, n) != CP_OK) return CP_ENOMEM;
    if (b->len - start <= CP_RAWLOG_MAX_COMPONENT) return CP_OK;
    size_t keep = HASHED_PREFIX;
    /* not inside a %XX escape */
    if (b->data[start + keep - 1] == '%') keep -= 1;
    else if (b->data[start + keep - 2] == '%') keep -= 2;
    b->len = start + keep;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
    *hashed = 1;
    return cp_buf_printf(b, "~%016" PRIx64, h);
}

/* <dir>/NAME_FILE holds a hashed directory's full name, for listings (cp_rawlog_walk). */
static int write_name_file(const char *dir, const char *s, size_t n)
{
    char path[4200];
    if ((size_t)snprintf(path, sizeof path, "%s/" NAME_FILE, dir) >= sizeof path) return CP_ELIMIT;
    return cp_write_file_atomic(path, s, n);
}

static int buf_cstr(cp_buf *b)
{
    if (cp_buf_putc(b, 0) != CP_OK) return CP_ENOMEM;
    b->len--; /* keep the NUL out of len so more can be appended */
    return CP_OK;
}

int cp_rawlog_restart_create(const char *data_dir, const char *ns, size_t ns_len, const char *pod, size_t pod_len,
                             int64_t restart_ms, cp_rawlog_restart *out)
{
    memset(out, 0, sizeof *out);
    cp_buf p;
    cp_buf_init(&p);
    int created, st = cp_buf_puts(&p, data_dir);
    if (st == CP_OK) st = cp_buf_puts(&p, "/raw");
    if (st == CP_OK) st = buf_cstr(&p);
    if (st == CP_OK) st = mkdir_tracked(&out->unsynced_dirs, (char *)p.data, &created);
    int hashed = 0;
    if (st == CP_OK) st = put_component(&p, ns, ns_len, &hashed);
    if (st == CP_OK) st = buf_cstr(&p);
    if (st == CP_OK) st = mkdir_tracked(&out->unsynced_dirs, (char *)p.data, &created);
    if (st == CP_OK && hashed) st = write_name_file((char *)p.data, ns, ns_len);
    if (st == CP_OK) st = put_component(&p, pod, pod_len, &hashed);
    if (st == CP_OK) st = buf_cstr(&p);
    if (st == CP_OK) st = mkdir_tracked(&out->unsynced_dirs, (char *)p.data, &created);
    if (st == CP_OK && hashed) st = write_name_file((char *)p.data, pod, pod_len);
    size_t base = p.len;
    for (int i = 0; st == CP_OK; i++) {
        if (i == MAX_RESTART_BUMPS) {
            errno = EEXIST;
            st = CP_EIO;
            break;
        }
        p.len = base;
        st = cp_buf_printf(&p, "/%" PRId64, restart_ms);
        if (st == CP_OK) st = buf_cstr(&p);
        if (st != CP_OK) break;
        if (mkdir((char *)p.data, DIR_MODE) == 0) {
            st = dirs_add(&out->unsynced_dirs, (char *)p.data, base);
            break;
        }
        if (errno != EEXIST) st = CP_EIO;
        else restart_ms++;
    }
    if (st != CP_OK) {
        int saved = errno;
        cp_buf_free(&p);
        cp_buf_free(&out->unsynced_dirs);
        errno = saved;
        return st;
    }
    out->dir = (char *)p.data; /* NUL-terminated by buf_cstr */
    out->restart_ms = restart_ms;
    return CP_OK;
}

void cp_rawlog_restart_free(cp_rawlog_restart *r)
{
    free(r->dir);
    r->dir = NULL;
    cp_buf_free(&r->unsynced_dirs);
}

/* ---- the open-file cache ------------------------------------------------------------ */

void cp_rawlog_fdcache_init(cp_rawlog_fdcache *c, size_t limit)
{
    memset(c, 0, sizeof *c);
    c->limit = limit ? limit : 1;
    c->max_open = SIZE_MAX;
}

/* A file is in the LRU list exactly when its fd could be closed right now. */
static int closable(const cp_rawlog_file *f) { return f->fd >= 0 && !f->dirty && f->pins == 0; }

static int in_lru(const cp_rawlog_file *f) { return f->cache && (f->cache->lru_head == f || f->lru_prev); }

static void lru_remove(cp_rawlog_file *f)
{
    cp_rawlog_fdcache *c = f->cache;
    if (!in_lru(f)) return;
    if (f->lru_prev) f->lru_prev->lru_next = f->lru_next;
    else c->lru_head = f->lru_next;
    if (f->lru_next) f->lru_next->lru_prev = f->lru_prev;
    else c->lru_tail = f->lru_prev;
    f->lru_prev = f->lru_next = NULL;
}

static void lru_push_front(cp_rawlog_file *f)
{
    cp_rawlog_fdcache *c = f->cache;
    f->lru_prev = NULL;
    f->lru_next = c->lru_head;
    if (c->lru_head) c->lru_head->lru_prev = f;
    else c->lru_tail = f;
    c->lru_head = f;
}

/* Puts a file that just became closable at the front; does nothing otherwise. */
static void lru_touch(cp_rawlog_file *f)
{
    if (!f->cache || !closable(f)) return;
    lru_remove(f);
    lru_push_front(f);
}

/* Closes the least recently used closable fd. Returns 0 if there was none. */
static int evict_one(cp_rawlog_fdcache *c)
{
    cp_rawlog_file *f = c->lru_tail;
    if (!f) return 0;
    lru_remove(f);
    close(f->fd); /* clean: its bytes were synced, a close error loses nothing */
    f->fd = -1;
    c->open--;
    c->evictions++;
    return 1;
}

/* Closes fds until `room` more fit under the limit (or nothing is closable). */
static void make_room(cp_rawlog_fdcache *c, size_t room)
{
    while (c->open + room > c->limit && evict_one(c)) {
    }
}

void cp_rawlog_fdcache_set_limit(cp_rawlog_fdcache *c, size_t limit)
{
    c->limit = limit ? limit : 1;
    make_room(c, 0);
}

void cp_rawlog_fdcache_set_max_open(cp_rawlog_fdcache *c, size_t max_open)
{
    c->max_open = max_open;
    while (c->open > c->max_open && evict_one(c)) {
    }
}

size_t cp_rawlog_fdcache_shrink(cp_rawlog_fdcache *c, size_t n)
{
    size_t done = 0;
    while (done < n && evict_one(c)) done++;
    return done;
}

/* open() through the cache: makes room first; at the hard cap, or when open() fails
 * with EMFILE/ENFILE, closes clean fds and tries again while there are any. */
static int cache_open(cp_rawlog_fdcache *c, const char *path, int flags, mode_t mode)
{
    make_room(c, 1);
    for (;;) {
        if (c->open >= c->max_open && !evict_one(c)) {
            errno = EMFILE;
            return -1;
        }
        int fd = open(path, flags, mode);
        if (fd >= 0) {
            if (c->open >= c->limit) c->over_limit++;
            c->open++;
            c->opens++;
            return fd;
        }
        if ((errno != EMFILE && errno != ENFILE) || !evict_one(c)) return -1;
    }
}

/* Gives a closed file its fd back, as the most recently used closable file (every
 * caller is about to change it, which makes it dirty). */
static int ensure_open(cp_rawlog_file *f)
{
    if (f->fd >= 0) return CP_OK;
    if (!f->path || !f->cache) {
        errno = EBADF;
        return CP_EIO;
    }
    /* no O_CREAT: the file was created by cp_rawlog_file_open and must still exist */
    int fd = cache_open(f->cache, f->path, O_RDWR | O_APPEND | O_CLOEXEC, 0);
    if (fd < 0) return CP_EIO;
    f->fd = fd;
    lru_touch(f);
    return CP_OK;
}

int cp_rawlog_file_prepare(cp_rawlog_file *f) { return ensure_open(f); }

/* The file is about to change: keep its fd until the change is synced. */
static void mark_dirty(cp_rawlog_file *f)
{
    f->dirty = 1;
    lru_remove(f);
}

/* ---- stream files ----------------------------------------------------------------- */

int cp_rawlog_file_open(cp_rawlog_fdcache *cache, cp_rawlog_restart *r, const char *stream, int64_t file_index,
                        cp_rawlog_file *f)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    cp_buf p;
    cp_buf_init(&p);
    int created, hashed, st = cp_buf_puts(&p, r->dir);
    if (st == CP_OK) st = put_component(&p, stream, strlen(stream), &hashed); /* a known stream name: short */
    if (st == CP_OK) st = buf_cstr(&p);
    if (st == CP_OK) st = mkdir_tracked(&r->unsynced_dirs, (char *)p.data, &created);
    size_t dir_len = p.len;
    if (st == CP_OK) st = cp_buf_printf(&p, "/%" PRId64, file_index);
    if (st == CP_OK) st = buf_cstr(&p);
    if (st != CP_OK) goto fail;
    const char *path = (char *)p.data;
    /* O_EXCL first so we know whether the entry is new (and its directory needs a sync) */
    int fd = cache_open(cache, path, O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, FILE_MODE);
    int existed = fd < 0 && errno == EEXIST;
    if (fd >= 0) {
        st = dirs_add(&r->unsynced_dirs, path, dir_len);
    } else if (existed) {
        fd = cache_open(cache, path, O_RDWR | O_APPEND | O_CLOEXEC, 0);
        struct stat sb;
        if (fd >= 0 && fstat(fd, &sb) == 0) f->size = (uint64_t)sb.st_size;
        else st = CP_EIO;
    } else {
        st = CP_EIO;
    }
    if (st != CP_OK) {
        int saved = errno;
        if (fd >= 0) {
            close(fd);
            cache->open--;
        }
        errno = saved;
        goto fail;
    }
    f->fd = fd;
    f->path = (char *)p.data;
    f->cache = cache;
    f->dirty = f->size > 0; /* bytes we did not write: not known to be durable */
    lru_touch(f);
    return CP_OK;
fail:;
    int saved = errno;
    cp_buf_free(&p);
    errno = saved;
    return st;
}

static void tail_add(cp_rawlog_file *f, const uint8_t *p, size_t n);

int cp_rawlog_file_appendv(cp_rawlog_file *f, const struct iovec *v, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) total += v[i].iov_len;
    if (total == 0) return CP_OK;
    if (ensure_open(f) != CP_OK) return CP_EIO;
    mark_dirty(f);
    int st = cp_writev_all(f->fd, v, n);
    if (st != CP_OK) {
        /* a partial write would leave bytes we never acknowledged: cut them */
        int saved = errno;
        if (ftruncate(f->fd, (off_t)f->size) != 0) { /* the file is failed either way */ }
        errno = saved;
        return st;
    }
    f->size += total;
    for (int i = 0; i < n; i++) tail_add(f, v[i].iov_base, v[i].iov_len);
    return CP_OK;
}

int cp_rawlog_file_append(cp_rawlog_file *f, const void *p, size_t n)
{
    if (n == 0) return CP_OK;
    if (ensure_open(f) != CP_OK) return CP_EIO;
    mark_dirty(f);
    int st = cp_write_all(f->fd, p, n);
    if (st != CP_OK) {
        /* a partial write would leave bytes we never acknowledged: cut them */
        int saved = errno;
        if (ftruncate(f->fd, (off_t)f->size) != 0) { /* the file is failed either way */ }
        errno = saved;
        return st;
    }
    f->size += n;
    tail_add(f, p, n);
    return CP_OK;
}

/* ---- the tail copy ---------------------------------------------------------------- */

static void tail_clear(cp_rawlog_file *f) { f->tail_len = f->tail_head = 0; }

static void tail_add(cp_rawlog_file *f, const uint8_t *p, size_t n)
{
    if (!f->tail_max) return;
    if (!f->tail) {
        if (!cp_membudget_room(f->tail_pool, f->tail_cap)) return; /* reads go to the page cache */
        if (!(f->tail = malloc(f->tail_cap))) return;               /* reads go to the file */
        cp_membudget_add(f->tail_pool, f->tail_cap);
        tail_clear(f);
    }
    if (n >= f->tail_cap) { /* only the last tail_cap bytes matter */
        memcpy(f->tail, p + n - f->tail_cap, f->tail_cap);
        f->tail_head = 0;
        f->tail_len = f->tail_cap;
        return;
    }
    size_t first = f->tail_cap - f->tail_head < n ? f->tail_cap - f->tail_head : n;
    memcpy(f->tail + f->tail_head, p, first);
    memcpy(f->tail, p + first, n - first);
    f->tail_head = (f->tail_head + n) % f->tail_cap;
    f->tail_len = f->tail_len + n > f->tail_cap ? f->tail_cap : f->tail_len + n;
}

/* Copies [off, off + n) from the ring if it holds all of it. */
static int tail_read(const cp_rawlog_file *f, uint64_t off, void *buf, size_t n)
{
    uint64_t end = f->size;
    if (!f->tail || off < end - f->tail_len || off > end || n > end - off) return 0;
    /* the byte at end - 1 sits just before tail_head */
    size_t back = (size_t)(end - off);
    size_t pos = (f->tail_head + f->tail_cap - back % f->tail_cap) % f->tail_cap;
    size_t first = f->tail_cap - pos < n ? f->tail_cap - pos : n;
    memcpy(buf, f->tail + pos, first);
    memcpy((uint8_t *)buf + first, f->tail, n - first);
    return 1;
}

/* A read the copy could not serve: double it (bounded), keeping what it holds. */
static void tail_grow(cp_rawlog_file *f)
{
    if (!f->tail || f->tail_cap >= f->tail_max) return;
    size_t cap = f->tail_cap * 2 > f->tail_max ? f->tail_max : f->tail_cap * 2;
    if (!cp_membudget_room(f->tail_pool, cap - f->tail_cap)) return; /* reads go to the page cache */
    uint8_t *t = malloc(cap);
    if (!t) return;
    cp_membudget_add(f->tail_pool, cap - f->tail_cap);
    if (f->tail_len && !tail_read(f, f->size - f->tail_len, t, f->tail_len)) f->tail_len = 0;
    free(f->tail);
    f->tail = t;
    f->tail_cap = cap;
    f->tail_head = f->tail_len % cap;
}

void cp_rawlog_file_keep_tail_in(cp_rawlog_file *f, size_t initial, size_t max, cp_membudget *pool)
{
    cp_rawlog_file_drop_tail(f);
    f->tail_pool = pool;
    f->tail_cap = initial ? initial : 1;
    f->tail_max = max > f->tail_cap ? max : f->tail_cap;
}

void cp_rawlog_file_keep_tail(cp_rawlog_file *f, size_t initial, size_t max)
{
    cp_rawlog_file_keep_tail_in(f, initial, max, NULL);
}

void cp_rawlog_file_drop_tail(cp_rawlog_file *f)
{
    if (f->tail) cp_membudget_sub(f->tail_pool, f->tail_cap);
    free(f->tail);
    f->tail = NULL;
    tail_clear(f);
}

long cp_rawlog_file_pread(cp_rawlog_file *f, void *buf, size_t n, uint64_t off)
{
    if (off >= f->size) return 0;
    if (n > f->size - off) n = (size_t)(f->size - off);
    if (tail_read(f, off, buf, n)) return (long)n;
    tail_grow(f);
    if (ensure_open(f) != CP_OK) return CP_EIO;
    long got = cp_pread_all(f->fd, buf, n, off);
    return got < 0 ? CP_EIO : got;
}

int cp_rawlog_file_sync(cp_rawlog_file *f)
{
    if (!f->dirty) return CP_OK; /* nothing changed since the last sync (or never opened) */
    if (f->fd < 0) {
        errno = EBADF;
        return CP_EIO;
    }
    while (fdatasync(f->fd) != 0) {
        if (errno != EINTR) return CP_EIO;
    }
    f->dirty = 0;
    lru_touch(f);
    return CP_OK;
}

int cp_rawlog_file_truncate(cp_rawlog_file *f, uint64_t len)
{
    if (len > f->size) {
        errno = EINVAL;
        return CP_EINVAL;
    }
    if (ensure_open(f) != CP_OK) return CP_EIO;
    mark_dirty(f);
    if (ftruncate(f->fd, (off_t)len) != 0) return CP_EIO;
    f->size = len;
    tail_clear(f); /* the copy must end where the file ends; cuts are rare */
    return CP_OK;
}

/* ---- torn tails ------------------------------------------------------------------- */

static int sync_dir_of(const char *path)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return CP_OK;
    *slash = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return CP_EIO;
    int rc = fsync(dfd);
    close(dfd);
    return rc == 0 ? CP_OK : CP_EIO;
}

int cp_rawlog_cut_tail(int fd, const char *path, uint64_t size, uint64_t keep)
{
    if (keep >= size) return CP_OK;
    char side[4200], tmp[4220];
    if ((size_t)snprintf(side, sizeof side, "%s.torn", path) >= sizeof side) {
        errno = ENAMETOOLONG;
        return CP_EIO;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", side);
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, FILE_MODE);
    if (out < 0) return CP_EIO;
    uint8_t buf[65536];
    int st = CP_OK;
    for (uint64_t off = keep; st == CP_OK && off < size;) {
        size_t want = size - off < sizeof buf ? (size_t)(size - off) : sizeof buf;
        long got = cp_pread_all(fd, buf, want, off);
        if (got <= 0) st = CP_EIO;
        else st = cp_write_all(out, buf, (size_t)got), off += (uint64_t)got;
    }
    int saved = errno;
    if (st == CP_OK && fsync(out) != 0) st = CP_EIO, saved = errno;
    close(out);
    if (st == CP_OK && rename(tmp, side) != 0) st = CP_EIO, saved = errno;
    if (st == CP_OK && sync_dir_of(side) != CP_OK) st = CP_EIO, saved = errno;
    if (st != CP_OK) {
        unlink(tmp);
        errno = saved;
        return st;
    }
    if (ftruncate(fd, (off_t)keep) != 0 || fsync(fd) != 0) return CP_EIO;
    return CP_OK;
}

int cp_rawlog_file_cut(cp_rawlog_file *f, uint64_t keep)
{
    if (keep > f->size) {
        errno = EINVAL;
        return CP_EINVAL;
    }
    if (keep == f->size) return CP_OK;
    if (ensure_open(f) != CP_OK) return CP_EIO;
    if (cp_rawlog_cut_tail(f->fd, f->path, f->size, keep) != CP_OK) return CP_EIO;
    f->size = keep;
    tail_clear(f);
    return CP_OK;
}

int cp_rawlog_file_sync_begin(cp_rawlog_file *f)
{
    if (!f->dirty || f->fd < 0) return -1;
    f->dirty = 0;
    f->pins++;
    return f->fd;
}

void cp_rawlog_file_sync_end(cp_rawlog_file *f, int ok)
{
    if (f->pins) f->pins--;
    if (!ok) f->dirty = 1;
    lru_touch(f);
    if (f->cache) make_room(f->cache, 0); /* an fd opened beyond the limit may go now */
}

void cp_rawlog_file_close(cp_rawlog_file *f)
{
    if (f->cache) lru_remove(f);
    if (f->fd >= 0) {
        close(f->fd);
        if (f->cache) f->cache->open--;
    }
    f->fd = -1;
    f->dirty = 0;
    free(f->path);
    f->path = NULL;
    f->cache = NULL;
    cp_rawlog_file_drop_tail(f);
}

/* ---- walking the tree --------------------------------------------------------------- */

/* Parses a non-negative decimal without sign or leading junk; -1 if it is not one. */
static int64_t parse_decimal(const char *s)
{
    if (!*s || strlen(s) > 18) return -1;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

static int skip_dots(const struct dirent *d) { return d->d_name[0] != '.'; }

static int cmp_numeric(const struct dirent **a, const struct dirent **b)
{
    int64_t x = parse_decimal((*a)->d_name), y = parse_decimal((*b)->d_name);
    if (x != y) return x < y ? -1 : 1;
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int cmp_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

typedef struct walk {
    cp_rawlog_visit_fn fn;
    void *ud;
    cp_rawlog_entry e;
    cp_buf ns, pod;   /* unescaped names of the current level */
    char path[4096];
} walk;

typedef int (*level_fn)(walk *w, const char *name);

/* Lists path's entries sorted by cmp and calls next for each. Unreadable or missing
 * directories are skipped (the server may be creating or the tree may be partial). */
static int each_entry(walk *w, int (*cmp)(const struct dirent **, const struct dirent **), level_fn next)
{
    struct dirent **list;
    int n = scandir(w->path, &list, skip_dots, cmp);
    if (n < 0) return CP_OK;
    size_t base = strlen(w->path);
    int st = CP_OK;
    for (int i = 0; i < n; i++) {
        if (st == CP_OK) {
            int len = snprintf(w->path + base, sizeof w->path - base, "/%s", list[i]->d_name);
            if (len > 0 && (size_t)len < sizeof w->path - base) st = next(w, list[i]->d_name);
            w->path[base] = 0;
        }
        free(list[i]);
    }
    free(list);
    return st;
}

static int level_file(walk *w, const char *name)
{
    int64_t idx = parse_decimal(name);
    struct stat sb;
    if (idx < 0 || stat(w->path, &sb) != 0 || !S_ISREG(sb.st_mode)) return CP_OK;
    w->e.file_index = idx;
    w->e.bytes = (uint64_t)sb.st_size;
    w->e.path = w->path;
    return w->fn(w->ud, &w->e);
}

static int level_stream(walk *w, const char *name)
{
    w->e.stream = name;
    return each_entry(w, cmp_numeric, level_file);
}

static int level_restart(walk *w, const char *name)
{
    int64_t ms = parse_decimal(name);
    if (ms < 0) return CP_OK;
    w->e.restart_ms = ms;
    return each_entry(w, cmp_name, level_stream);
}

/* The name a directory stands for: unescaped, or for a hashed one its NAME_FILE. */
static int unescape_into(cp_buf *b, const char *path, const char *name)
{
    cp_buf_reset(b);
    int st;
    if (strchr(name, '~')) {
        char file[4200];
        snprintf(file, sizeof file, "%s/" NAME_FILE, path);
        st = cp_read_file(file, 4096, b);
        if (st != CP_OK) return CP_EPROTO; /* not a directory we wrote (or not finished) */
    } else {
        st = cp_path_unescape(b, name, strlen(name));
    }
    if (st == CP_OK) st = buf_cstr(b);
    return st;
}

static int level_pod(walk *w, const char *name)
{
    int st = unescape_into(&w->pod, w->path, name);
    if (st == CP_EPROTO) return CP_OK; /* not a name we wrote */
    if (st != CP_OK) return st;
    w->e.pod = (char *)w->pod.data;
    w->e.pod_len = w->pod.len;
    return each_entry(w, cmp_numeric, level_restart);
}

static int level_ns(walk *w, const char *name)
{
    int st = unescape_into(&w->ns, w->path, name);
    if (st == CP_EPROTO) return CP_OK;
    if (st != CP_OK) return st;
    w->e.ns = (char *)w->ns.data;
    w->e.ns_len = w->ns.len;
    return each_entry(w, cmp_name, level_pod);
}

int cp_rawlog_walk(const char *data_dir, cp_rawlog_visit_fn fn, void *ud)
{
    walk w;
    memset(&w, 0, sizeof w);
    w.fn = fn;
    w.ud = ud;
    int len = snprintf(w.path, sizeof w.path, "%s/raw", data_dir);
    if (len < 0 || (size_t)len >= sizeof w.path) return CP_EINVAL;
    struct stat sb;
    if (stat(w.path, &sb) != 0 || !S_ISDIR(sb.st_mode)) return CP_ENOTFOUND;
    int st = each_entry(&w, cmp_name, level_ns);
    cp_buf_free(&w.ns);
    cp_buf_free(&w.pod);
    return st;
}
