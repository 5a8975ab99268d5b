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

/* One open stream file. */
typedef struct cp_rawlog_file {
    int fd;                /* -1 when closed */
    uint64_t size;         /* bytes in the file */
    char *path;
} cp_rawlog_file;

/* Creates <data>/raw/<ns>/<pod>/<restart_ms>, bumping restart_ms by 1 while that
 * directory already exists (two connections of one pod in one millisecond, or a
 * restarted server), so a restart directory is never reused. CP_ELIMIT if an escaped
 * name is longer than CP_RAWLOG_MAX_COMPONENT. */
int cp_rawlog_restart_create(const char *data_dir, const char *ns, size_t ns_len, const char *pod, size_t pod_len,
                             int64_t restart_ms, cp_rawlog_restart *out);
void cp_rawlog_restart_free(cp_rawlog_restart *r);

/* Moves the restart's pending directory list into *dirs (appending) and clears it. */
int cp_rawlog_restart_take_dirs(cp_rawlog_restart *r, cp_buf *dirs);

/* fsyncs every NUL-terminated directory path in dirs[0..len). Continues past errors;
 * returns the first error. */
int cp_rawlog_sync_dirs(const uint8_t *dirs, size_t len);

/* Opens (creating if needed) <restart>/<stream>/<file_index> for appending. New
 * directories and the new file's entry are added to r->unsynced_dirs. */
int cp_rawlog_file_open(cp_rawlog_restart *r, const char *stream, int64_t file_index, cp_rawlog_file *f);
/* Appends n bytes with plain write()s (short writes and EINTR retried). */
int cp_rawlog_file_append(cp_rawlog_file *f, const void *p, size_t n);
/* fdatasync: the file's bytes (and size) are durable when this returns CP_OK. */
int cp_rawlog_file_sync(const cp_rawlog_file *f);
/* Cuts the file to len bytes (len <= size), dropping a torn or corrupt tail. */
int cp_rawlog_file_truncate(cp_rawlog_file *f, uint64_t len);
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
