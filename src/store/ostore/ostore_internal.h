/* ostore_internal.h -- what ostore.c (the dispatcher) needs from the two object-store
 * implementations. Not part of the public API: include cp_ostore.h instead. */
#ifndef CP_OSTORE_INTERNAL_H
#define CP_OSTORE_INTERNAL_H

#include "store/cp_ostore.h"

/* A store over the local directory root (created if missing). */
int cp_ostore_dir_open(const char *root, cp_ostore **out, char *err, size_t errlen);

/* A store over s3://bucket[/prefix]; bucket and prefix are already split out of
 * cfg->url (prefix "" for none, no leading or trailing '/'). */
int cp_ostore_s3_open(const cp_ostore_config *cfg, const char *bucket, const char *prefix, cp_ostore **out,
                      char *err, size_t errlen);

/* 1 if prefix is acceptable as a list prefix: "" or the characters of a key, at most
 * CP_OSTORE_MAX_KEY bytes (it may end in '/' or in the middle of a component). */
int cp_ostore_prefix_ok(const char *prefix);

/* Formats the reason into err (when errlen > 0) and returns st. */
int cp_ostore_fail(char *err, size_t errlen, int st, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- local temporary files ------------------------------------------------------ */

/* Temporary files are named "<dir>/.cp-tmp~<16 hex>": '~' is not a key character, so a
 * directory store's list never shows them, whatever the name of the final file. */
#define CP_OSTORE_TMP_PREFIX ".cp-tmp~"

/* Creates a new temporary file in dir for writing: *fd and *tmp (malloc'ed path).
 * CP_EIO with errno set on failure. */
int cp_ostore_tmp_create(const char *dir, char **tmp, int *fd);
/* fsyncs and closes fd, renames tmp over path, fsyncs dir (path's directory). Frees tmp.
 * On failure the temporary file is removed; CP_EIO with errno set. */
int cp_ostore_tmp_commit(int fd, char *tmp, const char *path, const char *dir);
/* Closes fd (if >= 0), removes tmp and frees it; errno is preserved. */
void cp_ostore_tmp_discard(int fd, char *tmp);
/* strerror that is safe in threads; returns a pointer to buf or to a static string. */
const char *cp_ostore_errno_str(int e, char *buf, size_t len);

#endif
