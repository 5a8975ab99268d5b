/* cp_fsutil.h -- small POSIX file-system helpers: whole writes, directory fsync, atomic
 * file replacement, and the inverse of cp_path_component. They return status codes and
 * leave errno set on CP_EIO; they never print. */
#ifndef CP_FSUTIL_H
#define CP_FSUTIL_H

#include "common/cp_common.h"

/* write() until all n bytes are out, retrying short writes and EINTR. */
int cp_write_all(int fd, const void *p, size_t n);
/* writev() until every byte of v[0..n) is out (n <= IOV_MAX), retrying short writes and
 * EINTR; v is not changed. */
#define CP_IOV_MAX 64
struct iovec;
int cp_writev_all(int fd, const struct iovec *v, int n);

/* pread() until n bytes are in or the file ends, retrying short reads and EINTR: the
 * bytes read, or -1 (errno set). */
long cp_pread_all(int fd, void *p, size_t n, uint64_t off);

/* Opens a directory read-only and fsyncs it, so entries created in it are durable. */
int cp_fsync_dir(const char *path);

/* Replaces path with the n bytes at p: writes "<path>.tmp.<pid>", fsyncs it, renames it
 * over path, then fsyncs the parent directory. Readers never see a partial file. */
int cp_write_file_atomic(const char *path, const void *p, size_t n);

/* Inverse of cp_path_component: %XX becomes the byte 0xXX, other bytes are copied.
 * CP_EPROTO for a malformed escape. Note "_" stays "_": cp_path_component also maps
 * the empty name to "_", and a non-empty name is the likelier one. */
int cp_path_unescape(cp_buf *out, const char *s, size_t n);

#endif
