/* cp_rawlog.h -- the raw log: every stream file's bytes, appended as they arrive, at
 *
 *     <data>/raw/<namespace>/<pod>/<restart_ms>/<stream>/<file_index>
 *
 * (storage.md "Ingest path"). namespace and pod are escaped with cp_path_component;
 * file_index = rollingSequenceId + 1 in decimal. The raw log is the source of truth
 * until compaction, so its durability rules matter: file data is made durable with
 * fdatasync, and every directory entry created on the way (a new namespace, pod,
 * restart or stream directory, a new file) is made durable by fsyncing the directory
 * that holds it. The directories that need that fsync are collected per pod restart
 * (cp_rawlog_restart.unsynced_dirs) so a sync can do each exactly once.
 *
 * Functions return CP_OK or a negative status with errno set; they never print.
 * Nothing here blocks on anything but the local file system.
 */
#ifndef CP_RAWLOG_H
#define CP_RAWLOG_H

#include "common/cp_common.h"

#include <stdint.h>

/* Longest escaped namespace/pod component we create (NAME_MAX is 255). */
#define CP_RAWLOG_MAX_COMPONENT 255

/* One pod restart (one agent connection): its directory and the directories whose new
 * entries are not yet fsynced. */
typedef struct cp_rawlog_restart {
    char *dir;             /* <data>/raw/<ns>/<pod>/<restart_ms> */
    int64_t restart_ms;    /* as created: bumped past any existing directory */
    cp_buf unsynced_dirs;  /* NUL-terminated paths, back to back */
} cp_rawlog_restart;

/* Creates <data>/raw/<ns>/<pod>/<restart_ms>, bumping restart_ms by 1 while that
 * directory already exists (two connections of one pod in one millisecond, or a
 * restarted server), so a restart directory is never reused. A name whose escaped form
 * is longer than CP_RAWLOG_MAX_COMPONENT gets a directory "<escaped prefix>~<hash>" with
 * the full name in its ".name" file (the catalog keeps full names; cp_rawlog_walk reads
 * the file). */
int cp_rawlog_restart_create(const char *data_dir, const char *ns, size_t ns_len, const char *pod, size_t pod_len,
                             int64_t restart_ms, cp_rawlog_restart *out);
void cp_rawlog_restart_free(cp_rawlog_restart *r);

/* Moves the restart's pending directory list into *dirs (appending) and clears it. */
int cp_rawlog_restart_take_dirs(cp_rawlog_restart *r, cp_buf *dirs);

/* fsyncs every NUL-terminated directory path in dirs[0..len). Continues past errors;
 * returns the first error. */
int cp_rawlog_sync_dirs(const uint8_t *dirs, size_t len);

/* Makes the files nfds[0..nfds) (fdatasync) and the directories in dirs[0..len)
 * (fsync) durable. When there are at least CP_RAWLOG_SYNCFS_MIN of them and all are on
 * the file system of fs_fd (a descriptor of the data directory; -1 = never), one
 * syncfs(fs_fd) does it: one journal commit and one cache flush instead of one per
 * file, which is what a burst of new connections needs. Continues past errors; returns
 * the first (errno set). Thread-safe: touches only its arguments. */
#define CP_RAWLOG_SYNCFS_MIN 8
int cp_rawlog_sync_all(int fs_fd, const int *fds, size_t nfds, const uint8_t *dirs, size_t len);

/* ---- the open-file cache ------------------------------------------------------------
 *
 * A stream file keeps its path and size; its fd is opened when a write or truncate
 * needs it and stays open in a cache capped by `limit`. The files whose fd may be
 * closed are kept in an LRU list: those that are *clean* (nothing written or cut since
 * their last successful sync began) and not *pinned* (their fd is not in a sync batch).
 * Opening an fd beyond the limit first closes the least recently used of them. A dirty
 * or pinned fd is never closed by the cache, so the limit is soft: it is exceeded while
 * every open fd is dirty or pinned -- up to `max_open`, a hard cap the owner keeps
 * below the process's fd limit: beyond it an open fails with EMFILE. An open() that
 * fails with EMFILE/ENFILE closes clean fds and retries while there are any.
 *
 * One cache serves many files; it is not thread-safe (the server uses it on its loop
 * thread only; a sync worker only fdatasyncs the fds it was handed while they are
 * pinned). */
typedef struct cp_rawlog_file cp_rawlog_file;

typedef struct cp_rawlog_fdcache {
    cp_rawlog_file *lru_head;  /* closable files, most recently used first */
    cp_rawlog_file *lru_tail;
    size_t limit;              /* open fds wanted at most (>= 1) */
    size_t max_open;           /* never more fds than this (default SIZE_MAX) */
    size_t open;               /* fds open now, closable or not */
    uint64_t opens;            /* statistics: open() calls (creation and reopens) */
    uint64_t evictions;        /* fds closed to make room */
    uint64_t over_limit;       /* opens done beyond the limit (nothing was closable) */
} cp_rawlog_fdcache;

void cp_rawlog_fdcache_init(cp_rawlog_fdcache *c, size_t limit);
/* Changes the limit (>= 1) and closes clean fds down to it. */
void cp_rawlog_fdcache_set_limit(cp_rawlog_fdcache *c, size_t limit);
/* Sets the hard cap (closing clean fds down to it); opens beyond it fail with EMFILE. */
void cp_rawlog_fdcache_set_max_open(cp_rawlog_fdcache *c, size_t max_open);
/* Closes up to n closable fds, least recently used first; returns how many it closed.
 * For a process that ran out of descriptors elsewhere (e.g. accept). */
size_t cp_rawlog_fdcache_shrink(cp_rawlog_fdcache *c, size_t n);

/* One stream file. The fd belongs to the cache: never close or keep it yourself. */
struct cp_rawlog_file {
    int fd;                /* -1 while closed (evicted, or not opened yet) */
    uint8_t dirty;         /* written or cut since its last sync began: fd kept open */
    uint16_t pins;         /* syncs holding the fd (cp_rawlog_file_sync_begin): kept open */
    uint64_t size;         /* bytes in the file */
    char *path;
    cp_rawlog_fdcache *cache;
    cp_rawlog_file *lru_prev, *lru_next;
    /* An optional copy of the last bytes appended (cp_rawlog_file_keep_tail): a ring
     * holding [size - tail_len, size), kept true by append and truncate. */
    uint8_t *tail;
    size_t tail_cap, tail_len, tail_head, tail_max;
    cp_membudget *tail_pool; /* the memory all tail copies of one thread's files may hold
                              * together; NULL = not accounted (set before keep_tail) */
};

/* Creates <restart>/<stream>/<file_index> (or opens it if it exists: then its bytes
 * count as dirty) with its fd in the cache. New directories and the new file's entry
 * are added to r->unsynced_dirs; a later reopen creates nothing. */
int cp_rawlog_file_open(cp_rawlog_fdcache *cache, cp_rawlog_restart *r, const char *stream, int64_t file_index,
                        cp_rawlog_file *f);
/* Opens the fd now if the cache closed it, so that an append or truncate right after
 * (with no other cache use in between) cannot fail for lack of a descriptor. Fails
 * with errno EMFILE/ENFILE when no descriptor can be had: every open one is dirty or
 * pinned. */
int cp_rawlog_file_prepare(cp_rawlog_file *f);
/* Appends n bytes with plain write()s (short writes and EINTR retried), reopening the
 * fd (O_WRONLY|O_APPEND) if the cache closed it. The file becomes dirty. */
int cp_rawlog_file_append(cp_rawlog_file *f, const void *p, size_t n);
/* The same for n pieces (n <= CP_IOV_MAX) in one writev: all of them or, on failure,
 * none (a partial write is cut back). */
struct iovec;
int cp_rawlog_file_appendv(cp_rawlog_file *f, const struct iovec *v, int n);
/* Reads up to n bytes at off (never past the bytes appended): from the tail copy when it
 * holds them, else from the file, reopening the fd if the cache closed it (fds are
 * O_RDWR). Returns the bytes read or a negative status. */
long cp_rawlog_file_pread(cp_rawlog_file *f, void *buf, size_t n, uint64_t off);
/* Keeps a copy of the last `initial` bytes appended from now on, so reads of what was
 * just written (call assembly) cost no system call. A read the copy cannot serve
 * doubles it, up to `max` (an agent sending more per flush cycle). Best effort: without
 * memory, reads go to the file. */
void cp_rawlog_file_keep_tail(cp_rawlog_file *f, size_t initial, size_t max);
/* The same, the copy's memory counted in pool (which must outlive the copy). */
void cp_rawlog_file_keep_tail_in(cp_rawlog_file *f, size_t initial, size_t max, cp_membudget *pool);
/* Gives the copy's memory back (a quiet file); the next append starts it again. */
void cp_rawlog_file_drop_tail(cp_rawlog_file *f);
/* fdatasync on the calling thread: the file's bytes (and size) are durable when this
 * returns CP_OK, and the file is clean. */
int cp_rawlog_file_sync(cp_rawlog_file *f);
/* Cuts the file to len bytes (len <= size), dropping a torn or corrupt tail; reopens
 * the fd if needed. The file becomes dirty. */
int cp_rawlog_file_truncate(cp_rawlog_file *f, uint64_t len);
/* Cuts a torn tail off a stream file so that what stays decodes whole, keeping the cut
 * bytes: [keep, size) go to "<path>.torn" first (written, fsynced, renamed into place,
 * its directory fsynced), then the file is truncated to keep and fsynced. A flush ack
 * may have covered those bytes (a client that flushes mid-record); they stay in the raw
 * log, beside the file (cp_rawlog_walk and the decoders see only the file). CP_OK or
 * CP_EIO (errno set). */
int cp_rawlog_cut_tail(int fd, const char *path, uint64_t size, uint64_t keep);
/* cp_rawlog_cut_tail on an open stream file (it stays open and becomes clean). */
int cp_rawlog_file_cut(cp_rawlog_file *f, uint64_t keep);

/* Asynchronous sync, in two halves. begin: if the file is dirty, pins its fd (the cache
 * will not close it), marks the file clean and returns the fd for another thread to
 * fdatasync; returns -1 if there is nothing to sync. end (after the fdatasync): unpins;
 * ok = 0 marks the file dirty again (its bytes are not known to be durable). Writes
 * between begin and end would make the file dirty again; the server never does that. */
int cp_rawlog_file_sync_begin(cp_rawlog_file *f);
void cp_rawlog_file_sync_end(cp_rawlog_file *f, int ok);

/* Closes the fd (if open) and frees the path. Must not be pinned. */
void cp_rawlog_file_close(cp_rawlog_file *f);

/* ---- reading the tree back (the `raw` CLI) ---------------------------------------- */

typedef struct cp_rawlog_entry {
    const char *ns;        /* unescaped, NUL-terminated (ns_len excludes the NUL) */
    size_t ns_len;
    const char *pod;
    size_t pod_len;
    int64_t restart_ms;
    const char *stream;    /* directory name: the wire stream name */
    int64_t file_index;
    uint64_t bytes;
    const char *path;
} cp_rawlog_entry;

/* Calls fn for every stored stream file, ordered by namespace, pod, restart (numeric),
 * stream, index (numeric). Entries whose names do not parse are skipped. A non-zero
 * return from fn stops the walk and is returned. CP_ENOTFOUND if <data>/raw is absent. */
typedef int (*cp_rawlog_visit_fn)(void *ud, const cp_rawlog_entry *e);
int cp_rawlog_walk(const char *data_dir, cp_rawlog_visit_fn fn, void *ud);

#endif
