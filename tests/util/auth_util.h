/* auth_util.h -- what the tests of --auth basic share: the users file (bcrypt lines written
 * with crypt_r), the groups file, and request headers for a user (password = user + "-pw"),
 * an upload token or nobody. */
#ifndef AUTH_UTIL_H
#define AUTH_UTIL_H

#include "common/cp_common.h"

#include <stddef.h>

/* Writes text to path (fails the test when it cannot). */
void auth_write_text(const char *path, const char *text);
/* Appends "user:<bcrypt hash of password>\n" (cost 4: tests, not secrets). */
void auth_hash_line(cp_buf *out, const char *user, const char *password);
/* The files of --auth-users, --auth-groups and --upload-token in dir: <dir>/htpasswd with
 * users[i] whose password is users[i] + "-pw" (users ends with NULL), <dir>/groups with
 * groups, <dir>/token with token; their paths in users_path, groups_path, token_path
 * (cap bytes each). */
void auth_files(const char *dir, const char *const *users, const char *groups, const char *token, char *users_path,
                char *groups_path, char *token_path, size_t cap);
/* "Authorization: ...\r\n" for user: Basic user:user-pw; Bearer token when user is
 * "token"; "" for NULL. */
void auth_header(const char *user, const char *token, char *out, size_t outlen);

#endif
